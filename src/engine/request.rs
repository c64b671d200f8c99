//! Renders the request once, as bytes ready to write.

/// What to send. Header names are kept as given; the defaults (Host, User-Agent, Accept,
/// Connection, Content-Length, Content-Type) are added only when not given.
#[derive(Debug, Clone, Default)]
pub struct RequestSpec {
    pub method: String,
    /// Path and query, e.g. "/index.html?x=1".
    pub path: String,
    /// The Host header value (host, and port when not the scheme's default).
    pub host: String,
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
    pub content_type: Option<String>,
    pub keepalive: bool,
}

impl RequestSpec {
    /// The request as HTTP/1.1 bytes; Host, User-Agent, Accept (and Connection: close without
    /// keep-alive) added unless given.
    pub fn render(&self) -> Vec<u8> {
        let has = |name: &str| self.headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
        let mut out = Vec::with_capacity(128 + self.body.as_ref().map_or(0, Vec::len));
        out.extend_from_slice(format!("{} {} HTTP/1.1\r\n", self.method, self.path).as_bytes());
        let mut header = |name: &str, value: &str| {
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        };
        if !has("host") {
            header("Host", &self.host);
        }
        if !has("user-agent") {
            header("User-Agent", concat!("webtune/", env!("CARGO_PKG_VERSION")));
        }
        if !has("accept") {
            header("Accept", "*/*");
        }
        if !self.keepalive && !has("connection") {
            header("Connection", "close");
        }
        if let Some(body) = &self.body {
            if !has("content-length") {
                header("Content-Length", &body.len().to_string());
            }
            if let Some(ct) = &self.content_type
                && !has("content-type")
            {
                header("Content-Type", ct);
            }
        }
        for (n, v) in &self.headers {
            header(n, v);
        }
        out.extend_from_slice(b"\r\n");
        if let Some(body) = &self.body {
            out.extend_from_slice(body);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_defaults_and_body() {
        let spec = RequestSpec {
            method: "POST".into(),
            path: "/form?a=1".into(),
            host: "127.0.0.1:8080".into(),
            headers: vec![("X-Test".into(), "yes".into()), ("accept".into(), "text/html".into())],
            body: Some(b"k=v".to_vec()),
            content_type: Some("application/x-www-form-urlencoded".into()),
            keepalive: false,
        };
        let text = String::from_utf8(spec.render()).unwrap();
        assert_eq!(
            text,
            format!(
                "POST /form?a=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: webtune/{}\r\n\
                 Connection: close\r\nContent-Length: 3\r\nContent-Type: application/x-www-form-urlencoded\r\n\
                 X-Test: yes\r\naccept: text/html\r\n\r\nk=v",
                env!("CARGO_PKG_VERSION")
            )
        );
    }
}
