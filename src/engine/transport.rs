//! Plain TCP and TLS behind the same calls, so the connection state machine does not care.

use std::io::{self, IoSliceMut, Read, Write};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::time::Duration;

use nix::sys::socket::{ControlMessageOwned, MsgFlags, TimestampingFlag, recvmsg, setsockopt, sockopt};

use mio::net::TcpStream;

/// A connection: plain TCP, or TLS over it.
pub enum Transport {
    Plain(TcpStream),
    Tls(Box<TlsStream>),
}

/// A TCP socket with its TLS session.
pub struct TlsStream {
    sock: TcpStream,
    tls: rustls::ClientConnection,
}

/// Opens a non-blocking connection to `addr`. The handshake's last ACK is held back to ride
/// on the request (TCP_DEFER_ACCEPT on a connecting socket delays it): one segment less for
/// the client and the server to handle per connection, and the server learns of the
/// connection together with its first request. The request follows at once (or the TLS
/// hello), so the ACK never waits for its timer.
pub fn connect(addr: std::net::SocketAddr) -> io::Result<TcpStream> {
    use socket2::{Domain, Protocol, Socket, Type};
    let s = Socket::new(Domain::for_address(addr), Type::STREAM.nonblocking().cloexec(), Some(Protocol::TCP))?;
    let one: libc::c_int = 1;
    // Best effort: without it the handshake ends with its own ACK, as before.
    // SAFETY: a valid descriptor and an int option of the right size.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_DEFER_ACCEPT,
            (&raw const one).cast(),
            size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
    match s.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(TcpStream::from_std(s.into()))
}

impl Transport {
    /// The connection over `sock`: TLS when `tls` is given, else plain.
    pub fn new(sock: TcpStream, tls: Option<&TlsSettings>) -> io::Result<Transport> {
        Ok(match tls {
            None => Transport::Plain(sock),
            Some(t) => {
                let conn =
                    rustls::ClientConnection::new(t.config.clone(), t.server_name.clone()).map_err(io::Error::other)?;
                Transport::Tls(Box::new(TlsStream { sock, tls: conn }))
            }
        })
    }

    /// The TCP socket underneath.
    pub fn socket(&self) -> &TcpStream {
        match self {
            Transport::Plain(s) => s,
            Transport::Tls(t) => &t.sock,
        }
    }

    /// Writes request bytes. For TLS the bytes are taken whole into the session and
    /// `flush` sends them; call `flush` until it reports nothing pending.
    #[inline]
    pub fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.write(buf),
            Transport::Tls(t) => {
                t.tls.writer().write_all(buf)?;
                t.flush()?;
                Ok(buf.len())
            }
        }
    }

    /// Sends what the TLS session holds. Returns true when nothing is left to send.
    pub fn flush(&mut self) -> io::Result<bool> {
        match self {
            Transport::Plain(_) => Ok(true),
            Transport::Tls(t) => t.flush(),
        }
    }

    /// Reads response bytes. Ok(0) is end of stream; WouldBlock means wait for readiness.
    #[inline]
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Transport::Plain(s) => s.read(buf),
            Transport::Tls(t) => t.read(buf),
        }
    }

    /// Asks the kernel to stamp received data with its arrival time (plain TCP only: with TLS
    /// the bytes read and the records decrypted do not line up). True when it will.
    pub fn enable_rx_stamps(&self) -> bool {
        let Transport::Plain(s) = self else { return false };
        let flags = TimestampingFlag::SOF_TIMESTAMPING_RX_SOFTWARE | TimestampingFlag::SOF_TIMESTAMPING_SOFTWARE;
        setsockopt(s, sockopt::Timestamping, &flags).is_ok()
    }

    /// Reads as `read` does, and also returns the kernel's arrival time of the newest data
    /// read (wall clock since the epoch) when the socket stamps it. `cmsg` holds the stamp
    /// on its way (`RxStampBuf`).
    #[inline]
    pub fn read_stamped(&mut self, buf: &mut [u8], cmsg: &mut RxStampBuf) -> io::Result<(usize, Option<Duration>)> {
        let Transport::Plain(s) = self else { return Ok((self.read(buf)?, None)) };
        let mut iov = [IoSliceMut::new(buf)];
        let msg = recvmsg::<()>(s.as_raw_fd(), &mut iov, Some(&mut cmsg.0), MsgFlags::empty())?;
        let mut stamp = None;
        if let Ok(cmsgs) = msg.cmsgs() {
            for c in cmsgs {
                if let ControlMessageOwned::ScmTimestampsns(t) = c {
                    stamp = Some(Duration::from(t.system));
                }
            }
        }
        Ok((msg.bytes, stamp))
    }

    /// A TLS connection whose handshake has not finished.
    pub fn is_handshaking(&self) -> bool {
        matches!(self, Transport::Tls(t) if t.tls.is_handshaking())
    }

    /// Whether the connection is plain TCP.
    pub fn is_plain(&self) -> bool {
        matches!(self, Transport::Plain(_))
    }

    /// True once a TLS handshake has ended without agreeing on HTTP/2 through ALPN: the
    /// server will not read HTTP/2 frames. Plain TCP (h2c) is taken on trust.
    pub fn refused_h2(&self) -> bool {
        match self {
            Transport::Plain(_) => false,
            Transport::Tls(t) => !t.tls.is_handshaking() && t.tls.alpn_protocol() != Some(b"h2"),
        }
    }

    /// Whether a short read proves the socket is drained. With TLS the session may hold
    /// decrypted bytes beyond what one read returned, so keep reading until WouldBlock.
    #[inline]
    pub fn short_read_drains(&self) -> bool {
        matches!(self, Transport::Plain(_))
    }
}

impl TlsStream {
    fn flush(&mut self) -> io::Result<bool> {
        while self.tls.wants_write() {
            match self.tls.write_tls(&mut self.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            match self.tls.reader().read(buf) {
                Ok(n) => return Ok(n),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            match self.tls.read_tls(&mut self.sock) {
                Ok(0) => return Ok(0),
                Ok(_) => {
                    self.tls.process_new_packets().map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    // Handshake replies and key updates go out as soon as they exist.
                    self.flush()?;
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Why a TLS connection failed, in a user's words: what was wrong with the certificate (and that
/// --insecure accepts it), a handshake the server refused, or a server that does not speak TLS.
pub fn tls_failure(e: &io::Error) -> String {
    match e.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(err) => describe_tls_error(err),
        None => format!("TLS failed: {e}"),
    }
}

fn describe_tls_error(err: &rustls::Error) -> String {
    use rustls::{CertificateError as Cert, Error as E};
    const INSECURE: &str = "; --insecure accepts any certificate (for a test server)";
    match err {
        E::InvalidCertificate(cert) => {
            let why = match cert {
                Cert::UnknownIssuer => {
                    "the server's certificate is not trusted: its issuer is unknown (self-signed, or a private CA)"
                        .into()
                }
                Cert::Expired | Cert::ExpiredContext { .. } => format!("the server's certificate has expired ({err})"),
                Cert::NotValidYet | Cert::NotValidYetContext { .. } => {
                    format!("the server's certificate is not valid yet ({err})")
                }
                Cert::NotValidForName | Cert::NotValidForNameContext { .. } => {
                    format!("the server's certificate is not valid for this host name ({err})")
                }
                // openssl req -x509 makes a CA certificate, which webpki refuses as a server's
                // own before it looks for an issuer (its error type is not ours to name).
                Cert::Other(other) if format!("{other:?}").contains("CaUsedAsEndEntity") => {
                    "the server's certificate is self-signed (a CA certificate used as the server's own)".into()
                }
                _ => format!("the server's certificate was rejected ({err})"),
            };
            format!("{why}{INSECURE}")
        }
        E::AlertReceived(alert) => format!("the server refused the TLS handshake (alert: {alert:?})"),
        E::InvalidMessage(_) | E::InappropriateMessage { .. } | E::InappropriateHandshakeMessage { .. } => {
            "the server did not answer in TLS (plain HTTP on this port? then use http://)".into()
        }
        E::PeerIncompatible(why) => format!("the server and webtune share no TLS version or cipher ({why:?})"),
        other => format!("TLS failed: {other}"),
    }
}

/// Room for one receive timestamp's control message, reused across reads.
pub struct RxStampBuf(Vec<u8>);

impl Default for RxStampBuf {
    fn default() -> Self {
        RxStampBuf(nix::cmsg_space!([nix::libc::timespec; 3]))
    }
}

/// What every TLS connection of a run shares.
#[derive(Clone)]
pub struct TlsSettings {
    pub config: Arc<rustls::ClientConfig>,
    pub server_name: rustls::pki_types::ServerName<'static>,
}

impl TlsSettings {
    /// Verifies servers against the Mozilla roots, or accepts any certificate when `insecure`
    /// (self-signed test servers).
    pub fn new(host: &str, insecure: bool) -> anyhow::Result<TlsSettings> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder =
            rustls::ClientConfig::builder_with_provider(provider.clone()).with_safe_default_protocol_versions()?;
        let mut config = if insecure {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
                .with_no_client_auth()
        } else {
            let roots = rustls::RootCertStore::from_iter(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            builder.with_root_certificates(roots).with_no_client_auth()
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let server_name = rustls::pki_types::ServerName::try_from(host.to_string())
            .map_err(|_| anyhow::anyhow!("invalid TLS server name {host:?}"))?;
        Ok(TlsSettings { config: Arc::new(config), server_name })
    }

    /// The same settings offering only HTTP/2 through ALPN (`--h2`).
    pub fn for_h2(&self) -> TlsSettings {
        let mut config = (*self.config).clone();
        config.alpn_protocols = vec![b"h2".to_vec()];
        TlsSettings { config: Arc::new(config), server_name: self.server_name.clone() }
    }
}

#[derive(Debug)]
struct AcceptAnyCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;
    use std::net::TcpListener;
    use std::time::{Duration, Instant};

    use super::*;
    use crate::engine::coalesce::arrival;

    /// Certificate failures say what is wrong and that --insecure accepts them; others do not
    /// hint at it.
    #[test]
    fn tls_failures_say_why() {
        use rustls::{AlertDescription, CertificateError, Error};
        let say = |e: Error| tls_failure(&io::Error::new(io::ErrorKind::InvalidData, e));
        let cases = [
            (Error::InvalidCertificate(CertificateError::UnknownIssuer), "issuer is unknown"),
            (Error::InvalidCertificate(CertificateError::Expired), "has expired"),
            (Error::InvalidCertificate(CertificateError::NotValidForName), "not valid for this host name"),
        ];
        for (e, says) in cases {
            let line = say(e);
            assert!(
                line.contains(says) && line.ends_with("--insecure accepts any certificate (for a test server)"),
                "{line}"
            );
        }
        let refused = say(Error::AlertReceived(AlertDescription::HandshakeFailure));
        assert_eq!(refused, "the server refused the TLS handshake (alert: HandshakeFailure)");
        let plain = say(Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType));
        assert!(plain.contains("did not answer in TLS") && !plain.contains("--insecure"), "{plain}");
        assert_eq!(tls_failure(&io::Error::other("x")), "TLS failed: x");
    }

    /// Data that waited 30 ms in the socket is dated when it arrived, not when it was read.
    #[test]
    fn a_stamped_read_dates_data_by_its_arrival() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        let mut t = Transport::Plain(TcpStream::from_std(client));
        assert!(t.enable_rx_stamps());
        // The kernel turns stamping on from a work queue: give it a moment.
        std::thread::sleep(Duration::from_millis(20));
        server.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
        let sent = Instant::now();
        std::thread::sleep(Duration::from_millis(30));
        let mut buf = [0u8; 64];
        let mut cmsg = RxStampBuf::default();
        let (n, stamp) = t.read_stamped(&mut buf, &mut cmsg).unwrap();
        let now = Instant::now();
        assert_eq!(&buf[..n], b"HTTP/1.1 200 OK\r\n\r\n");
        let arrived = arrival(now, stamp.expect("a receive timestamp"));
        assert!(arrived <= sent + Duration::from_millis(5), "dated {:?} after the send", arrived - sent);
        assert!(now - arrived >= Duration::from_millis(25), "{:?}", now - arrived);
        // Without stamps enabled there is none.
        let (n, stamp) = Transport::Plain(TcpStream::from_std({
            let c = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
            let (mut s, _) = listener.accept().unwrap();
            s.write_all(b"x").unwrap();
            std::thread::sleep(Duration::from_millis(5));
            c
        }))
        .read_stamped(&mut buf, &mut cmsg)
        .unwrap();
        assert_eq!((n, stamp), (1, None));
    }
}
