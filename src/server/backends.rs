//! The backends a proxy's copy would send the load to: a tuned copy of an nginx or Apache
//! that proxies (proxy_pass, fastcgi_pass, ProxyPass, BalancerMember...) passes every request
//! it is sent on to the user's backends, which then take the tune's load. They are found in
//! the tree, after the run's own rewrites (a php-fpm socket moved to the run's pool is the
//! run's), and refused unless the target file names them in `upstreams`.

/// One place the copy would pass requests: "FILE:LINE", the directive, and the backend's
/// address as written (`127.0.0.2:8080`, `unix:/run/app.sock`, or with a variable in it).
#[derive(Debug, Clone, PartialEq)]
pub struct Backend {
    pub at: String,
    pub directive: String,
    pub address: String,
}

/// What a pass's URL reaches: an address, or a group defined in the tree itself (an nginx
/// upstream, an Apache balancer), whose members are backends of their own.
#[derive(Debug, Clone, PartialEq)]
pub enum Reach {
    Address(String),
    Group(String),
}

/// The address a pass's URL reaches: its scheme and path dropped (`http://10.0.0.2:8080/api`
/// -> `10.0.0.2:8080`, `proxy:fcgi://127.0.0.1:9000/x` -> `127.0.0.1:9000`, `unix:/a.sock|fcgi://x`
/// and `http://unix:/a.sock:/x` -> `unix:/a.sock`), or the group among `groups` it names.
pub fn reach(url: &str, groups: &[String]) -> Reach {
    let url = url.trim_matches('"');
    let url = url.strip_prefix("proxy:").unwrap_or(url);
    if let Some(name) = url.strip_prefix("balancer://") {
        return Reach::Group(name.split('/').next().unwrap_or(name).to_string());
    }
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    if let Some(path) = rest.strip_prefix("unix:").or_else(|| url.strip_prefix("unix:")) {
        let end = path.find(['|', ':']).unwrap_or(path.len());
        return Reach::Address(format!("unix:{}", &path[..end]));
    }
    let host_port = rest.split('/').next().unwrap_or(rest);
    let host = match host_port.rsplit_once(':') {
        Some((h, p)) if p.bytes().all(|b| b.is_ascii_digit()) => h,
        _ => host_port,
    };
    match groups.iter().find(|g| *g == host) {
        Some(g) => Reach::Group(g.clone()),
        None => Reach::Address(host_port.to_string()),
    }
}

/// Refuses the first backend the target file does not name in `upstreams` ("*" names all),
/// with its line and what to write.
pub fn check(found: &[Backend], upstreams: &[String]) -> Result<(), String> {
    if upstreams.iter().any(|u| u == "*") {
        return Ok(());
    }
    let Some(b) = found.iter().find(|b| !upstreams.contains(&b.address)) else { return Ok(()) };
    let all: Vec<String> = found
        .iter()
        .map(|b| format!("{:?}", b.address))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let variable = if b.address.contains('$') { " (a variable names it: any host could take the load)" } else { "" };
    Err(format!(
        "{}: {} {}: the copy would pass the tune's load on to this backend{variable}; \
         if they may take it, name them in the target file: upstreams = [{}] (\"*\" for any)",
        b.at,
        b.directive,
        b.address,
        all.join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pass_reaches_its_host_and_port_or_socket() {
        let groups = vec!["app_servers".to_string()];
        let address = |a: &str| Reach::Address(a.to_string());
        let group = |g: &str| Reach::Group(g.to_string());
        for (url, want) in [
            ("http://127.0.0.2:8080", address("127.0.0.2:8080")),
            ("http://10.0.0.2:8080/api/", address("10.0.0.2:8080")),
            ("https://api.example.com/x", address("api.example.com")),
            ("127.0.0.1:9000", address("127.0.0.1:9000")),
            ("unix:/run/php/php8.2-fpm.sock", address("unix:/run/php/php8.2-fpm.sock")),
            ("http://unix:/tmp/app.sock:/uri", address("unix:/tmp/app.sock")),
            ("\"proxy:unix:/run/php/php-fpm.sock|fcgi://localhost\"", address("unix:/run/php/php-fpm.sock")),
            ("proxy:fcgi://127.0.0.1:9000/", address("127.0.0.1:9000")),
            ("http://app_servers", group("app_servers")),
            ("http://app_servers/x", group("app_servers")),
            ("http://app", address("app")),
            ("balancer://mycluster/", group("mycluster")),
            ("http://$backend", address("$backend")),
        ] {
            assert_eq!(reach(url, &groups), want, "{url}");
        }
    }

    #[test]
    fn backends_not_named_are_refused_with_their_line() {
        let b = |address: &str| Backend {
            at: "site.conf:3".into(),
            directive: "proxy_pass".into(),
            address: address.into(),
        };
        let found = [b("127.0.0.2:8080"), b("unix:/run/app.sock")];
        let e = check(&found, &[]).unwrap_err();
        assert!(e.starts_with("site.conf:3: proxy_pass 127.0.0.2:8080: the copy would pass"), "{e}");
        assert!(e.contains("upstreams = [\"127.0.0.2:8080\", \"unix:/run/app.sock\"]"), "{e}");
        assert!(check(&found, &["127.0.0.2:8080".into()]).unwrap_err().contains("proxy_pass unix:/run/app.sock"));
        assert_eq!(check(&found, &["127.0.0.2:8080".into(), "unix:/run/app.sock".into()]), Ok(()));
        assert_eq!(check(&found, &["*".into()]), Ok(()));
        assert!(check(&[b("$upstream")], &[]).unwrap_err().contains("a variable names it"));
    }
}
