//! What both php-fpm adapters (phpfpm.rs, its own pool; phpfpm_tree.rs, the user's tree)
//! share: the program's name, and webtune's own nginx front before a pool.

use super::adapter::{Ctx, write};
use crate::server::process::{Spawn, find_program};
use crate::server::settings::Typed;

/// webtune's own nginx front for a pool on `sock`: the app directory (or the run
/// directory's html/) as the root, *.php to the pool. Its process and its configuration.
pub fn own_front(ctx: &Ctx, values: &Typed, sock: &str) -> anyhow::Result<(Spawn, String)> {
    let d = ctx.run_dir_text();
    let root = match ctx.app() {
        Some(a) => a.display().to_string(),
        None => format!("{d}/html"),
    };
    // Keep-alive, worker count and the like of the front are not what is tuned here.
    let front_values = values.only(&["keepalive", "keepalive_timeout"]);
    let body = format!(
        "root {root};\n    index index.php index.html;\n    \
         location ~ ^/fpm-status$ {{ include /etc/nginx/fastcgi_params; fastcgi_param SCRIPT_NAME /fpm-status; \
         fastcgi_param SCRIPT_FILENAME /fpm-status; fastcgi_param QUERY_STRING $query_string; fastcgi_pass unix:{sock}; }}\n    \
         location ~ \\.php$ {{ include /etc/nginx/fastcgi_params; \
         fastcgi_param SCRIPT_FILENAME $document_root$fastcgi_script_name; fastcgi_pass unix:{sock}; }}"
    );
    let nginx = super::nginx::server_conf(ctx, &front_values, &body)?;
    write(ctx.dir, "nginx.conf", &nginx)?;
    let spawn = Spawn::new(
        "nginx",
        "nginx",
        vec!["-c".into(), format!("{d}/nginx.conf"), "-p".into(), d.clone(), "-e".into(), format!("{d}/error.log")],
    );
    Ok((spawn, nginx))
}

/// Debian names the binary after the PHP version (php-fpm8.2).
pub fn fpm_program() -> String {
    if find_program("php-fpm").is_some() {
        return "php-fpm".into();
    }
    let mut found: Vec<String> = std::fs::read_dir("/usr/sbin")
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("php-fpm"))
        .collect();
    found.sort();
    found.pop().unwrap_or_else(|| "php-fpm".into())
}
