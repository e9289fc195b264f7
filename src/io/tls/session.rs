//! One TLS connection, sans-I/O: a wrapper around `rustls::ServerConnection` with the
//! operations the event loop needs. It never touches a socket: the loop reads ciphertext into
//! its own buffer and [`TlsSession::feed`]s it, takes plaintext out into the buffer the HTTP
//! parser reads, queues response plaintext with [`TlsSession::write_plaintext`], and writes the
//! ciphertext with [`TlsSession::write_ciphertext_to`].
//!
//! Syscalls: one `read` of up to the loop's read-buffer size per readiness (rustls's own
//! `read_tls` would read 4 KiB at a time, four syscalls for a 16 KiB record), and one `writev`
//! per flush (rustls keeps one buffer per record and hands them all to one `write_vectored`).
//!
//! Memory per connection is bounded by rustls's buffers: received plaintext up to
//! [`RECEIVED_PLAINTEXT_LIMIT`] (rustls's fixed 16 KiB, plus at most one 4 KiB read), one
//! record being reassembled (at most 16 KiB + 2 KiB, 64 KiB for handshake messages), and
//! ciphertext waiting for the socket up to [`SEND_LIMIT`] — past it `write_plaintext` accepts
//! less and the rest stays in the loop's output queue, the same backpressure as plaintext.
//!
//! Record sizes: the first [`SMALL_RECORDS_BYTES`] after
//! [`TlsSession::start_response`] (a new connection, or one idle for a while: the loop decides)
//! leave in records of [`SMALL_RECORD`] bytes, one TCP segment each, so a browser can decrypt and use
//! the first bytes as each segment arrives; then records grow to TLS's maximum, 16 KiB, where
//! the per-record cost (22 bytes, one AEAD call) is smallest. Nothing waits to fill a record:
//! whatever is queued leaves at the next flush. Slices queued together are gathered into one
//! record (a response head and a small body: one record, one AEAD call).

use std::io::{self, IoSlice, Read as _, Write as _};
use std::sync::Arc;

use rustls::{CipherSuite, HandshakeKind, ProtocolVersion, ServerConfig, ServerConnection};

use super::x509;

/// Plaintext bytes per record at the start of a response: 1 360 + 29 bytes of TLS 1.2
/// AES-GCM overhead (22 for TLS 1.3) = 1 389, inside one segment of a 1 428-byte MSS
/// (IPv6 with TCP timestamps) and Cloudflare's 1 400-byte figure.
pub const SMALL_RECORD: usize = 1360;

/// How much of a response after `start_response` leaves in small records: about one initial
/// congestion window (RFC 6928: 10 segments of 1 448 bytes), the bytes that arrive before the
/// first ACK.
pub const SMALL_RECORDS_BYTES: usize = 14 * 1024;

/// Ciphertext waiting for the socket, at most: past it `write_plaintext` accepts less. Four
/// full records, enough for one `writev` to fill a default socket send buffer's free space.
pub const SEND_LIMIT: usize = 64 * 1024;

/// rustls's limit for decrypted bytes not yet taken (fixed inside rustls): [`TlsSession::feed`]
/// stops consuming ciphertext past it until the loop takes plaintext out.
pub const RECEIVED_PLAINTEXT_LIMIT: usize = 16 * 1024;

/// At most this much ciphertext is handed to rustls per call (its deframer reads 4 KiB at a
/// time from any reader; larger slices are consumed in several calls).
const FEED_CHUNK: usize = 4096;

/// The first byte of a TLS handshake record.
const TLS_HANDSHAKE: u8 = 0x16;

/// Why a connection failed; the loop writes any pending ciphertext (rustls has queued an
/// alert) and closes.
#[derive(Debug)]
pub enum TlsError {
    /// The first bytes are a plaintext HTTP request (`GET / HTTP/1.1` on the TLS port): the
    /// loop answers a plaintext 400 and closes (docs/tls.md).
    PlainHttp,
    /// rustls refused the peer's bytes or the handshake.
    Tls(rustls::Error),
}

/// Every label [`TlsError::reason`] gives, in the metric's order (declared with the counters).
pub use crate::observe::counters::TLS_FAILURE_REASONS as FAILURE_REASONS;

impl TlsError {
    /// A short label for the handshake-failure metric (one of [`FAILURE_REASONS`]).
    pub fn reason(&self) -> &'static str {
        use rustls::Error as E;
        match self {
            TlsError::PlainHttp => "plain_http",
            TlsError::Tls(e) => match e {
                E::NoCertificatesPresented => "no_client_certificate",
                E::InvalidCertificate(_) => "bad_client_certificate",
                E::PeerIncompatible(_) => "incompatible",
                E::AlertReceived(_) => "alert_received",
                E::InvalidMessage(_) | E::InappropriateMessage { .. } => "bad_message",
                E::InappropriateHandshakeMessage { .. } => "bad_message",
                E::DecryptError => "decrypt_error",
                E::PeerMisbehaved(_) => "peer_misbehaved",
                _ => "other",
            },
        }
    }
}

impl std::fmt::Display for TlsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TlsError::PlainHttp => f.write_str("a plain HTTP request on a TLS port"),
            TlsError::Tls(e) => write!(f, "TLS: {e}"),
        }
    }
}

impl std::error::Error for TlsError {}

/// Where the session is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TlsState {
    /// Nothing from the peer yet, or the handshake is under way: no plaintext.
    Handshaking,
    /// Application data flows both ways.
    Established,
    /// The peer sent `close_notify`: nothing more will be read (writing may go on).
    PeerClosed,
}

/// What [`TlsSession::read_plaintext`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plaintext {
    /// This many bytes were copied into the caller's buffer.
    Data(usize),
    /// Nothing decrypted yet: feed more ciphertext.
    NeedMore,
    /// The peer closed the TLS session cleanly (`close_notify`) and every byte was taken.
    Closed,
}

/// The facts the WSGI environ carries, named as Apache's mod_ssl names them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsInfo {
    /// `SSL_PROTOCOL`: `TLSv1.2` or `TLSv1.3`.
    pub protocol: &'static str,
    /// `SSL_CIPHER`: OpenSSL's name (`TLS_AES_128_GCM_SHA256`, `ECDHE-ECDSA-AES128-GCM-SHA256`).
    pub cipher: &'static str,
    /// `SSL_TLS_SNI`.
    pub server_name: Option<String>,
    /// The ALPN protocol agreed, if any.
    pub alpn: Option<Vec<u8>>,
    /// `SSL_SESSION_RESUMED`: `Resumed` or `Initial`.
    pub resumed: bool,
    /// A client certificate verified against the CA file. rustls refuses the handshake when a
    /// presented certificate does not verify, so one present here is always verified.
    pub client_cert: Option<ClientCert>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientCert {
    /// `SSL_CLIENT_S_DN`, RFC 2253 as mod_ssl prints it: `CN=alice,O=Example`.
    pub subject_dn: String,
    /// `SSL_CLIENT_I_DN`.
    pub issuer_dn: String,
    /// `SSL_CLIENT_CERT`: the certificate as PEM.
    pub pem: String,
}

impl ClientCert {
    /// The environ's facts of a client's (verified) certificate.
    pub fn of(der: &[u8]) -> ClientCert {
        // webpki verified it; a certificate the strict DER reader cannot print keeps its
        // PEM and `SSL_CLIENT_VERIFY`, with empty names.
        let (subject_dn, issuer_dn) = x509::Cert::parse(der)
            .map(|c| (c.subject_dn(), c.issuer_dn()))
            .unwrap_or_default();
        ClientCert {
            subject_dn,
            issuer_dn,
            pem: x509::pem(der),
        }
    }
}

impl TlsInfo {
    /// `SSL_CLIENT_VERIFY`: `SUCCESS` with a verified certificate, `NONE` without one
    /// (mod_ssl's `FAILED:reason` cannot happen: that handshake was refused).
    pub fn verify(&self) -> &'static str {
        if self.client_cert.is_some() {
            "SUCCESS"
        } else {
            "NONE"
        }
    }
}

pub struct TlsSession {
    conn: ServerConnection,
    /// Plaintext bytes of the current response queued so far, for the record-size ramp.
    response_bytes: usize,
    /// Whether any ciphertext was fed yet (the plain-HTTP check looks at the first byte).
    fed_any: bool,
    /// Decrypted bytes not yet taken, as rustls last said (`process_new_packets`) less what
    /// `read_plaintext` took since: asking rustls again per look cost a
    /// `process_new_packets` call each time the loop asked (`plaintext_pending`).
    plain_left: usize,
    peer_closed: bool,
}

impl TlsSession {
    pub fn new(config: Arc<ServerConfig>) -> Result<TlsSession, TlsError> {
        let mut conn = ServerConnection::new(config).map_err(TlsError::Tls)?;
        conn.set_buffer_limit(Some(SEND_LIMIT));
        Ok(TlsSession {
            conn,
            response_bytes: 0,
            fed_any: false,
            plain_left: 0,
            peer_closed: false,
        })
    }

    pub fn state(&self) -> TlsState {
        if self.peer_closed {
            TlsState::PeerClosed
        } else if self.conn.is_handshaking() {
            TlsState::Handshaking
        } else {
            TlsState::Established
        }
    }

    /// Feeds ciphertext read from the socket and processes it (handshake messages, decryption).
    /// Returns how many bytes were consumed: all of them, unless decrypted plaintext reached
    /// [`RECEIVED_PLAINTEXT_LIMIT`] or the peer closed; the loop keeps the rest and feeds it
    /// again after [`read_plaintext`](Self::read_plaintext). On error, flush pending ciphertext
    /// (an alert) once, then close.
    pub fn feed(&mut self, ciphertext: &[u8]) -> Result<usize, TlsError> {
        if !self.fed_any {
            if let Some(&first) = ciphertext.first() {
                self.fed_any = true;
                // Every HTTP method starts with an upper-case letter; a TLS connection starts
                // with a handshake record. (PROXY protocol headers are taken off by the loop
                // before the session sees any byte.)
                if first != TLS_HANDSHAKE && first.is_ascii_uppercase() {
                    return Err(TlsError::PlainHttp);
                }
            }
        }
        let mut rest = ciphertext;
        while !rest.is_empty() && !self.peer_closed {
            if self.plaintext_pending() >= RECEIVED_PLAINTEXT_LIMIT {
                break;
            }
            let mut chunk = &rest[..rest.len().min(FEED_CHUNK)];
            let n = match self.conn.read_tls(&mut chunk) {
                Ok(n) => n,
                // Only "received plaintext buffer full", excluded above; kept an error rather
                // than a panic should rustls change.
                Err(e) => return Err(TlsError::Tls(rustls::Error::General(e.to_string()))),
            };
            rest = &rest[n..];
            let state = self.conn.process_new_packets().map_err(TlsError::Tls)?;
            self.plain_left = state.plaintext_bytes_to_read();
            if state.peer_has_closed() {
                self.peer_closed = true;
            }
            if n == 0 {
                break;
            }
        }
        Ok(ciphertext.len() - rest.len())
    }

    /// Decrypted bytes waiting to be taken.
    pub fn plaintext_pending(&self) -> usize {
        self.plain_left
    }

    /// Copies decrypted bytes into `out`.
    pub fn read_plaintext(&mut self, out: &mut [u8]) -> Plaintext {
        match self.conn.reader().read(out) {
            Ok(0) if !out.is_empty() => Plaintext::Closed,
            Ok(n) => {
                self.plain_left = self.plain_left.saturating_sub(n);
                Plaintext::Data(n)
            }
            // WouldBlock: nothing yet. UnexpectedEof cannot happen: the session is never told
            // of a TCP EOF (the loop sees that itself).
            Err(_) => Plaintext::NeedMore,
        }
    }

    /// A response on a cold connection starts: its first bytes go in small records again.
    pub fn start_response(&mut self) {
        self.response_bytes = 0;
    }

    /// Encrypts as much of `bufs` (in order, as one stream) as [`SEND_LIMIT`] allows and
    /// returns how many bytes were taken; the caller keeps the rest and offers it again after
    /// [`write_ciphertext_to`](Self::write_ciphertext_to) made room. Before the handshake
    /// completes rustls holds the plaintext back (within the same limit).
    pub fn write_plaintext(&mut self, bufs: &[IoSlice<'_>]) -> usize {
        let total: usize = bufs.iter().map(|b| b.len()).sum();
        let mut taken = 0;
        while taken < total {
            let record = if self.response_bytes < SMALL_RECORDS_BYTES {
                SMALL_RECORD
            } else {
                // rustls cuts at 16 KiB itself.
                total - taken
            };
            let want = record.min(total - taken);
            let slices = window(bufs, taken, want);
            let n = self.conn.writer().write_vectored(&slices).unwrap_or(0);
            taken += n;
            self.response_bytes = self.response_bytes.saturating_add(n);
            if n < want {
                break; // SEND_LIMIT reached
            }
        }
        taken
    }

    /// Whether ciphertext (handshake messages, records, alerts) waits to be written.
    pub fn wants_write(&self) -> bool {
        self.conn.wants_write()
    }

    /// Writes pending ciphertext to `out` with one `write_vectored` call (one `writev` when
    /// `out` is a socket). Returns bytes written; `WouldBlock` and other errors are the
    /// writer's.
    pub fn write_ciphertext_to(&mut self, out: &mut dyn io::Write) -> io::Result<usize> {
        self.conn.write_tls(out)
    }

    /// Moves all pending ciphertext to the end of `out` (for callers that queue bytes
    /// themselves, and for tests).
    pub fn take_ciphertext(&mut self, out: &mut Vec<u8>) -> usize {
        let mut n = 0;
        while self.conn.wants_write() {
            match self.conn.write_tls(out) {
                Ok(0) | Err(_) => break,
                Ok(k) => n += k,
            }
        }
        n
    }

    /// Queues `close_notify`: the loop flushes it, then closes the socket.
    pub fn close_notify(&mut self) {
        self.conn.send_close_notify();
    }

    /// The environ's facts, once the handshake is complete.
    pub fn info(&self) -> Option<TlsInfo> {
        if self.conn.is_handshaking() {
            return None;
        }
        let protocol = match self.conn.protocol_version()? {
            ProtocolVersion::TLSv1_3 => "TLSv1.3",
            ProtocolVersion::TLSv1_2 => "TLSv1.2",
            _ => "unknown",
        };
        let suite = self.conn.negotiated_cipher_suite()?.suite();
        let client_cert = self
            .conn
            .peer_certificates()
            .and_then(|certs| Some(ClientCert::of(certs.first()?)));
        Some(TlsInfo {
            protocol,
            cipher: openssl_cipher_name(suite),
            server_name: self.conn.server_name().map(str::to_owned),
            alpn: self.conn.alpn_protocol().map(<[u8]>::to_vec),
            resumed: self.conn.handshake_kind() == Some(HandshakeKind::Resumed),
            client_cert,
        })
    }
}

/// The first `len` bytes from offset `skip` of the stream `bufs`, as slices.
fn window<'a>(bufs: &'a [IoSlice<'a>], mut skip: usize, mut len: usize) -> Vec<IoSlice<'a>> {
    let mut out = Vec::new();
    for buf in bufs {
        if len == 0 {
            break;
        }
        if skip >= buf.len() {
            skip -= buf.len();
            continue;
        }
        let take = (buf.len() - skip).min(len);
        out.push(IoSlice::new(&buf[skip..skip + take]));
        len -= take;
        skip = 0;
    }
    out
}

/// OpenSSL's name of a cipher suite (what mod_ssl puts in `SSL_CIPHER`): IANA names for TLS
/// 1.3, OpenSSL's own for TLS 1.2. Covers every suite rustls offers.
pub fn openssl_cipher_name(suite: CipherSuite) -> &'static str {
    match suite {
        CipherSuite::TLS13_AES_128_GCM_SHA256 => "TLS_AES_128_GCM_SHA256",
        CipherSuite::TLS13_AES_256_GCM_SHA384 => "TLS_AES_256_GCM_SHA384",
        CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => "TLS_CHACHA20_POLY1305_SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => "ECDHE-ECDSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => "ECDHE-ECDSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => {
            "ECDHE-ECDSA-CHACHA20-POLY1305"
        }
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => "ECDHE-RSA-AES128-GCM-SHA256",
        CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => "ECDHE-RSA-AES256-GCM-SHA384",
        CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => "ECDHE-RSA-CHACHA20-POLY1305",
        other => other.as_str().unwrap_or("unknown"),
    }
}
