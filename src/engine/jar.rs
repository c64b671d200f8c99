//! A virtual client's cookie jar (--cookies), bounded as browsers bound theirs. RFC 6265 §6.1
//! names what a browser must at least keep: 4096 bytes a cookie, 50 cookies a domain, 3000 in
//! all. These are also the limits here: a larger cookie is ignored, and a new cookie past a
//! limit evicts the oldest (by when it was first set) of its domain, or of the jar. Without
//! them, a server that sets a new cookie on every response grows every request's Cookie
//! header without end (1.5 MB after 382 responses of 4 KB cookies).

use std::collections::VecDeque;

use cookie_store::{Cookie, CookieStore};

/// The largest cookie kept, name and value together (RFC 6265 §6.1).
pub const MAX_COOKIE_BYTES: usize = 4096;
/// Cookies kept per domain.
pub const MAX_PER_DOMAIN: usize = 50;
/// Cookies kept in all.
pub const MAX_COOKIES: usize = 3000;

/// Where a cookie lives in the store: (domain, path, name).
type Key = (String, String, String);

/// One client's cookies (`--cookies`), bounded: the oldest go first.
#[derive(Default)]
pub struct Jar {
    store: CookieStore,
    /// The stored cookies' keys, oldest first: eviction takes from the front.
    order: VecDeque<Key>,
}

impl Jar {
    /// Takes a Set-Cookie value received from `url`. A cookie the jar refuses (bad domain,
    /// malformed, too large) is ignored, as browsers do.
    pub fn set(&mut self, set_cookie: &str, url: &url::Url) {
        let Ok(cookie) = Cookie::parse(set_cookie, url) else { return };
        if cookie.name().len() + cookie.value().len() > MAX_COOKIE_BYTES {
            return;
        }
        let Some(domain) = cookie.domain.as_cow().map(|d| d.into_owned()) else { return };
        let key = (domain, cookie.path.as_ref().to_string(), cookie.name().to_string());
        let known = self.store.contains_any(&key.0, &key.1, &key.2);
        if self.store.insert(cookie.into_owned(), url).is_err() || known {
            return;
        }
        let domain = key.0.clone();
        self.order.push_back(key);
        if self.order.iter().filter(|k| k.0 == domain).count() > MAX_PER_DOMAIN
            && let Some(oldest) = self.order.iter().position(|k| k.0 == domain)
        {
            self.evict(oldest);
        }
        if self.order.len() > MAX_COOKIES {
            self.evict(0);
        }
    }

    fn evict(&mut self, index: usize) {
        if let Some((domain, path, name)) = self.order.remove(index) {
            self.store.remove(&domain, &path, &name);
        }
    }

    /// The Cookie header's value for a request to `url`, when any cookie applies.
    pub fn header(&self, url: &url::Url) -> Option<String> {
        let mut value = String::new();
        for (name, v) in self.store.get_request_values(url) {
            if !value.is_empty() {
                value.push_str("; ");
            }
            value.push_str(name);
            value.push('=');
            value.push_str(v);
        }
        (!value.is_empty()).then_some(value)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_jar_keeps_fifty_a_domain_and_drops_the_oldest() {
        let url = url::Url::parse("http://127.0.0.1/").unwrap();
        let mut jar = Jar::default();
        for k in 0..120 {
            jar.set(&format!("c{k}={}", "v".repeat(100)), &url);
        }
        let header = jar.header(&url).unwrap();
        assert_eq!(header.split("; ").count(), MAX_PER_DOMAIN);
        assert!(header.contains("c70="), "the 50 newest stay: {header}");
        assert!(!header.contains("c69="), "{header}");
        // Setting a kept cookie again replaces it, taking no more room.
        jar.set("c119=new", &url);
        assert!(jar.header(&url).unwrap().contains("c119=new"));
        assert_eq!(jar.header(&url).unwrap().split("; ").count(), MAX_PER_DOMAIN);
        // Over 4096 bytes: ignored.
        jar.set(&format!("big={}", "x".repeat(MAX_COOKIE_BYTES)), &url);
        assert!(!jar.header(&url).unwrap().contains("big="));
    }
}
