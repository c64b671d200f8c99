//! nginx, started by the test on a free loopback port with a private directory, stopped on drop.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One access-log line per request: connection serial, its request count, status, method,
/// request length, body bytes sent, request Content-Length, protocol.
const LOG_FORMAT: &str = "'$connection $connection_requests $status $request_method $request_length \
     $body_bytes_sent $http_content_length $server_protocol'";

pub struct Nginx {
    pub port: u16,
    pub dir: tempfile::TempDir,
    child: Child,
}

pub struct LogLine {
    pub connection: u64,
    pub status: u16,
    pub method: String,
    pub request_length: u64,
    pub body_bytes: u64,
    /// The request's Content-Length header, "-" when absent.
    pub content_length: String,
    /// "HTTP/1.1", "HTTP/2.0".
    pub protocol: String,
}

impl Nginx {
    /// Starts nginx serving `dir/html` with `server_extra` added to its server block and
    /// `http_extra` to its http block. Returns None (a skip) when nginx is not installed
    /// outside CI.
    pub fn start(server_extra: &str, http_extra: &str) -> Option<Nginx> {
        Self::start_listening("", server_extra, http_extra)
    }

    /// As `start`, with `listen_extra` on the main listen directive (e.g. "http2": h2c with
    /// prior knowledge, on nginx before 1.25).
    pub fn start_listening(listen_extra: &str, server_extra: &str, http_extra: &str) -> Option<Nginx> {
        let Some(bin) = super::find_program("nginx") else {
            super::missing("nginx");
            return None;
        };
        for _attempt in 0..5 {
            let dir = tempfile::tempdir().unwrap();
            std::fs::create_dir_all(dir.path().join("html")).unwrap();
            std::fs::create_dir_all(dir.path().join("tmp")).unwrap();
            // nginx workers may run as another user: let them read the files.
            for d in [dir.path().to_path_buf(), dir.path().join("html"), dir.path().join("tmp")] {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o777)).unwrap();
            }
            let port = free_port();
            let d = dir.path().display();
            let user = if nix::unistd::geteuid().is_root() { "user root;" } else { "" };
            let conf = format!(
                "daemon off;\nmaster_process off;\nworker_processes 1;\n{user}\npid {d}/nginx.pid;\n\
                 error_log {d}/error.log info;\nevents {{ worker_connections 1024; }}\n\
                 http {{\n  log_format wt {LOG_FORMAT};\n  access_log {d}/access.log wt;\n\
                 client_body_temp_path {d}/tmp/body;\n  proxy_temp_path {d}/tmp/proxy;\n\
                 fastcgi_temp_path {d}/tmp/fastcgi;\n  uwsgi_temp_path {d}/tmp/uwsgi;\n  scgi_temp_path {d}/tmp/scgi;\n\
                 {http_extra}\n  server {{\n    listen 127.0.0.1:{port} {listen_extra};\n    root {d}/html;\n{server_extra}\n  }}\n}}\n"
            );
            std::fs::write(dir.path().join("nginx.conf"), conf).unwrap();
            use std::os::unix::process::CommandExt;
            let child = Command::new(&bin)
                .process_group(0)
                .arg("-p")
                .arg(dir.path())
                .arg("-c")
                .arg(dir.path().join("nginx.conf"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("start nginx");
            let mut ng = Nginx { port, dir, child };
            if super::wait_listening(&mut ng.child, port, Duration::from_secs(10)) {
                return Some(ng);
            }
            // Lost the race for the port (or another start-up failure): try another.
            let log = std::fs::read_to_string(ng.dir.path().join("error.log")).unwrap_or_default();
            eprintln!("nginx did not start on port {port}: {log}");
        }
        panic!("nginx did not start after 5 attempts");
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// nginx runs as one process (master_process off): stopping it stops the server.
    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn html(&self) -> PathBuf {
        self.dir.path().join("html")
    }

    pub fn write_file(&self, name: &str, bytes: &[u8]) {
        let path = self.html().join(name);
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(bytes).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The access log once it holds at least `expect` lines (nginx logs just after it sends).
    pub fn access_log(&self, expect: usize) -> Vec<LogLine> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let text = std::fs::read_to_string(self.dir.path().join("access.log")).unwrap_or_default();
            let lines: Vec<LogLine> = text.lines().map(parse_log_line).collect();
            if lines.len() >= expect || Instant::now() > deadline {
                return lines;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn parse_log_line(line: &str) -> LogLine {
    let f: Vec<&str> = line.split(' ').collect();
    LogLine {
        connection: f[0].parse().unwrap(),
        status: f[2].parse().unwrap(),
        method: f[3].to_string(),
        request_length: f[4].parse().unwrap(),
        body_bytes: f[5].parse().unwrap(),
        content_length: f[6].to_string(),
        protocol: f[7].to_string(),
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        super::stop_child(&mut self.child, Duration::from_secs(5));
    }
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A self-signed certificate and key for "localhost", made with the openssl tool (a CA
/// certificate, as `openssl req -x509` makes by default).
pub fn self_signed_cert(dir: &Path) -> Option<(PathBuf, PathBuf)> {
    self_signed(dir, "", &[])
}

/// A self-signed certificate for "localhost" that is not a CA's, as a server's own certificate
/// from an unknown issuer is (files named with `prefix`).
pub fn self_signed_leaf_cert(dir: &Path, prefix: &str) -> Option<(PathBuf, PathBuf)> {
    self_signed(dir, prefix, &["-addext", "basicConstraints=critical,CA:FALSE"])
}

fn self_signed(dir: &Path, prefix: &str, extra: &[&str]) -> Option<(PathBuf, PathBuf)> {
    let Some(openssl) = super::find_program("openssl") else {
        super::missing("openssl");
        return None;
    };
    let (cert, key) = (dir.join(format!("{prefix}cert.pem")), dir.join(format!("{prefix}key.pem")));
    let status = Command::new(openssl)
        .args(["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=localhost"])
        .args(extra)
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "openssl could not make a certificate");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o644)).unwrap();
    Some((cert, key))
}
