//! The registry: one module per server, each implementing the `Adapter` trait (adapter.rs),
//! picked by a target file's `adapter = "..."`; and the checks that need a server's adapter
//! (a knob's value, the user's own tree), which a target file goes through once read.

pub mod adapter;
mod apache;
mod apache_tree;
mod command;
mod edit;
mod fpm;
mod gunicorn;
mod include;
mod lab;
mod nginx;
mod nginx_tree;
mod phpfpm;
mod phpfpm_tree;
mod starman;
mod uwsgi;

use std::path::Path;

use adapter::{Adapter, is_one_of};

use super::file::{self, AdapterName, TargetFile};
use crate::input::InputError;

impl TargetFile {
    /// Reads and checks the target file at `path`.
    pub fn load(path: &Path) -> Result<TargetFile, InputError> {
        let text = crate::input::read_text(path, "target file")?;
        Self::parse(&text, path)
    }

    /// Checks a target file's text: its values (file.rs), then what its server's adapter
    /// says of them; `path` names it in errors and anchors its relative paths.
    pub fn parse(text: &str, path: &Path) -> Result<TargetFile, InputError> {
        let mut target = TargetFile::read(text, path)?;
        respell_target(&mut target);
        judge(&target, text, path)?;
        Ok(target)
    }
}

/// A knob under its one name: an old spelling (`dirty_kb = 64`) becomes it (`dirty = "64KiB"`).
pub fn respell(adapter: &dyn Adapter, name: &str, value: &str) -> (String, String) {
    match adapter.respell(name, value) {
        Some((new, value)) => (new.to_string(), value),
        None => (name.to_string(), value.to_string()),
    }
}

/// Every knob of a target file under its one name, in [target.config] and in [knobs] (a list
/// whose every value reads in the old unit; else it stays, to be refused with its line).
fn respell_target(target: &mut TargetFile) {
    let adapter = adapter(target.adapter);
    if let file::Config::Settings(settings) = &mut target.config {
        for (k, v) in settings.iter_mut() {
            (*k, *v) = respell(adapter, k, v);
        }
    }
    for (k, values) in target.knobs.iter_mut() {
        let new: Vec<(String, String)> = values.iter().map(|v| respell(adapter, k, v)).collect();
        if let Some((name, _)) = new.first().filter(|(name, _)| name != k && new.iter().all(|(n, _)| n == name)) {
            *k = name.clone();
            *values = new.into_iter().map(|(_, v)| v).collect();
        }
    }
}

/// What the target's adapter says of it, each error at its key's line: the user's own
/// configuration file and the keys that pick its parts (site, pool, front), and every knob's
/// value (a knob rewrites its own value in the server's configuration, nothing more).
fn judge(target: &TargetFile, text: &str, path: &Path) -> Result<(), InputError> {
    let adapter = adapter(target.adapter);
    let key_at = |key: &str| file::key_line(text, path, key);
    if let Some(config) = target.config.file() {
        let written = &config.written;
        adapter
            .check_config_file(&config.path)
            .map_err(|e| InputError(format!("{}: config {written:?}: {e}", key_at("config"))))?;
        if let (Some(site), AdapterName::Apache) = (&target.site, target.adapter) {
            adapter.check_site(&config.path, site).map_err(|e| InputError(format!("{}: {e}", key_at("site"))))?;
        }
    }
    let knobs = target.knobs.iter().flat_map(|(k, vs)| vs.iter().map(move |v| (k, v)));
    for (k, v) in target.config.settings().iter().map(|(k, v)| (k, v)).chain(knobs) {
        check_knob(adapter, k, v).map_err(|e| InputError(format!("{}: {e}", file::line_of(text, path, k))))?;
    }
    if let Err((key, e)) = adapter.check_target(target) {
        return Err(InputError(format!("{}: {key}: {e}", key_at(key))));
    }
    Ok(())
}

/// The adapter for a target file's `adapter = "..."`.
pub fn adapter(name: AdapterName) -> &'static dyn Adapter {
    match name {
        AdapterName::Lab => &lab::Lab,
        AdapterName::Nginx => &nginx::Nginx,
        AdapterName::Apache => &apache::Apache,
        AdapterName::PhpFpm => &phpfpm::PhpFpm,
        AdapterName::Gunicorn => &gunicorn::Gunicorn,
        AdapterName::Uwsgi => &uwsgi::Uwsgi,
        AdapterName::Starman => &starman::Starman,
        AdapterName::Command => &command::Command,
    }
}

/// The rules every adapter shares: a knob's name is a name (a word, or two for Apache's
/// `PerlSetVar Name`), its value one line of at most 1 KiB; then the adapter's own rules.
pub fn check_knob(adapter: &dyn Adapter, name: &str, value: &str) -> Result<(), String> {
    let word = |w: &str| {
        w.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
            && w.chars().all(|c| c.is_ascii_alphanumeric() || "_.-[]".contains(c))
    };
    let words: Vec<&str> = name.split(' ').collect();
    if name.len() > 64 || words.len() > 2 || !words.iter().all(|w| word(w)) {
        let name = crate::input::echo(name);
        return Err(format!("knob name \"{name}\" is not a name (letters, digits, _ . - [ ], one space at most)"));
    }
    if value.len() > 1024 || value.chars().any(|c| c.is_control()) {
        let value = crate::input::echo(value);
        return Err(format!("{name}: value \"{value}\" must be one line of at most 1 KiB"));
    }
    if super::container::is_knob(name) {
        return super::container::check(name, value);
    }
    if name == super::front::KNOB {
        super::front::check(value)?;
        if value != "none" && !adapter.takes_front() {
            return Err(format!("{name} = {value:?}: {} takes no front proxy of webtune's", adapter.name()));
        }
        return Ok(());
    }
    if is_one_of(name, adapter.reserved()) {
        return Err(format!(
            "{name}: webtune writes this directive itself (it opens ports, loads code or files, or writes outside the run directory)"
        ));
    }
    if value.contains(adapter.syntax()) {
        let chars: String = adapter.syntax().iter().map(|c| format!(" {c}")).collect();
        return Err(format!("{name} = {value:?}: a value cannot end the directive or open a block ({})", chars.trim()));
    }
    adapter.check_value(name, value)
}

/// php-fpm: the pools of the tree whose main file is `config`, each with what it listens on
/// as an nginx pass names it (`unix:/run/php/php8.2-fpm.sock`), for `webtune init`.
pub fn fpm_pools(config: &Path) -> Result<Vec<(String, Vec<String>)>, String> {
    let tree = phpfpm_tree::FpmTree::read(config)?;
    Ok(tree.pools().iter().map(|p| (p.name.clone(), tree.listen(&p.name).unwrap_or_default())).collect())
}

/// Whether the nginx configuration at `conf` passes requests to one of `addresses` (its
/// `fastcgi_pass`, `proxy_pass`... or an upstream's `server`).
pub fn nginx_passes_to(conf: &Path, addresses: &[String]) -> bool {
    let moved: Vec<(String, String)> = addresses.iter().map(|a| (a.clone(), String::new())).collect();
    nginx_tree::NginxTree::read(conf).is_ok_and(|t| t.follows(&moved))
}
