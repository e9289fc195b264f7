//! A TLS connection's socket and session together: what `Transport::Tls` holds. It owns the
//! system calls the sans-I/O session (`io::tls::session`) does not make: one `read` of
//! ciphertext, fed to the session, plaintext taken out; response plaintext encrypted from the
//! output queue and one `writev` of the records.
//!
//! One lock around the session: the connection moves between the loop and an app thread (one
//! owner at a time), and the only other caller is the `--timeout` watcher's answer. Nothing
//! blocks while holding it (every call here is non-blocking; waits happen outside).
//!
//! Edge-triggered epoll: decrypted bytes the caller had no room for, and ciphertext the session
//! could not take yet, stay here; [`TlsLink::has_input`] tells the loop to read again without
//! waiting for an edge that will not come.

use std::cell::RefCell;
use std::io::{self, IoSlice};
use std::os::fd::RawFd;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::clock::{now_ns, since};

use rustls::ServerConfig;

use super::out_queue::OutQueue;
use super::stream::{read_fd, wait_fd, writev_fd_flags};
use super::tls::{Plaintext, TlsError, TlsInfo, TlsSession, TlsState};

/// Ciphertext read per `read` call: one full TLS record (16 KiB + its 5-byte header and up to
/// 256 bytes of expansion), so a record never needs two reads.
const CIPHER_READ: usize = 16 * 1024 + 512;

thread_local! {
    /// The ciphertext `read_some` reads into, one per thread, zeroed once: a fresh array per
    /// call cost a 16.5 KiB `memset` per read, 1.1 % of a TLS hello world's loop (`perf`).
    static CIPHER_BUF: RefCell<Vec<u8>> = RefCell::new(vec![0; CIPHER_READ]);
}

/// A response starts with small records again (`TlsSession::start_response`) only after this
/// long without output, as Cloudflare's `ssl_dyn_rec_timeout` (1 s): the small records are for
/// a cold connection, whose congestion window is small again after an idle time (Linux's
/// `tcp_slow_start_after_idle`), and whose client waits for the first bytes. On a connection
/// answering back to back they only cost: S14's 21 KB file left in 13 records instead of 2,
/// and wrk spent about twice the CPU per response decrypting them (docs/tls.md).
const RAMP_RESTART_IDLE: Duration = Duration::from_secs(1);

/// The plaintext answer to an HTTP request sent to the TLS port (docs/tls.md: as nginx does).
pub const PLAIN_HTTP_ANSWER: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 26\r\nConnection: close\r\n\r\nThis port speaks HTTPS.\r\n\r\n";

/// The environ's facts of one TLS connection, as mod_ssl names them, made once after the
/// handshake: plain values for the WSGI bridge.
#[derive(Debug, Clone)]
pub struct TlsFacts {
    /// `(name, value)`: `SSL_PROTOCOL`, `SSL_CIPHER`, `SSL_SESSION_RESUMED`, `SSL_TLS_SNI` when
    /// the client sent a name, and for a client certificate
    /// `SSL_CLIENT_S_DN`, `SSL_CLIENT_I_DN`, `SSL_CLIENT_CERT`; always `SSL_CLIENT_VERIFY`.
    pub vars: Vec<(&'static str, String)>,
}

impl TlsFacts {
    pub fn of(info: TlsInfo) -> TlsFacts {
        let mut vars = vec![
            ("SSL_PROTOCOL", info.protocol.to_string()),
            ("SSL_CIPHER", info.cipher.to_string()),
            (
                "SSL_SESSION_RESUMED",
                if info.resumed { "Resumed" } else { "Initial" }.to_string(),
            ),
        ];
        if let Some(sni) = &info.server_name {
            vars.push(("SSL_TLS_SNI", sni.clone()));
        }
        match &info.client_cert {
            Some(c) => {
                vars.push(("SSL_CLIENT_S_DN", c.subject_dn.clone()));
                vars.push(("SSL_CLIENT_I_DN", c.issuer_dn.clone()));
                vars.push(("SSL_CLIENT_CERT", c.pem.clone()));
                vars.push(("SSL_CLIENT_VERIFY", "SUCCESS".to_string()));
            }
            None => vars.push(("SSL_CLIENT_VERIFY", "NONE".to_string())),
        }
        TlsFacts { vars }
    }
}

struct Inner {
    session: TlsSession,
    /// Ciphertext read but not yet taken by the session (its plaintext buffer was full).
    pending_in: Vec<u8>,
    /// Whether the current response's first bytes were queued (a request's plaintext arriving
    /// starts a new one, which may restart the record-size ramp: `last_sent`).
    responding: bool,
    facts: Option<Arc<TlsFacts>>,
    /// When response bytes were last queued: the record-size ramp restarts only for a response
    /// after [`RAMP_RESTART_IDLE`] without output.
    /// (`clock::now_ns`: one `clock_gettime` per response, no `Instant` arithmetic.)
    last_sent: Option<u64>,
    /// Why the session failed (`TlsError::reason`), for the metric.
    failure: Option<&'static str>,
    /// Why the client's certificate was refused, if that is how the session failed.
    refused_certificate: Option<String>,
    /// A `proxy:` TLS listener: the PROXY header comes in plaintext before the handshake, so
    /// reads pass the socket's bytes through until the loop has taken it (`start_tls`).
    raw: bool,
}

/// One TLS connection's session beside its socket (the socket itself is the `Conn`'s).
pub struct TlsLink {
    fd: RawFd,
    inner: Mutex<Inner>,
}

impl std::fmt::Debug for TlsLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TlsLink({})", self.fd)
    }
}

impl PartialEq for TlsLink {
    fn eq(&self, other: &TlsLink) -> bool {
        std::ptr::eq(self, other)
    }
}
impl Eq for TlsLink {}

fn invalid(why: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, why.to_string())
}

/// Write pending ciphertext, one `writev` per call, until the session has none or the socket
/// is full (`WouldBlock`).
fn flush(fd: RawFd, s: &mut TlsSession) -> io::Result<()> {
    struct Fd(RawFd);
    impl io::Write for Fd {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            writev_fd_flags(self.0, &[IoSlice::new(buf)], 0)
        }
        fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
            writev_fd_flags(self.0, bufs, 0)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    while s.wants_write() {
        s.write_ciphertext_to(&mut Fd(fd))?;
    }
    Ok(())
}

/// Whether a response starting at `now` begins with small records again: first on the
/// connection, or after [`RAMP_RESTART_IDLE`] without output.
fn ramp_restarts(last_sent: Option<u64>, now: u64) -> bool {
    last_sent.is_none_or(|t| since(t, now) >= RAMP_RESTART_IDLE)
}

impl TlsLink {
    /// `proxy_first`: a PROXY protocol header precedes the handshake (`start_tls`).
    pub fn new(fd: RawFd, config: Arc<ServerConfig>, proxy_first: bool) -> io::Result<TlsLink> {
        let session = TlsSession::new(config).map_err(|e| invalid(&e.to_string()))?;
        Ok(TlsLink {
            fd,
            inner: Mutex::new(Inner {
                session,
                pending_in: Vec::new(),
                responding: false,
                last_sent: None,
                facts: None,
                failure: None,
                refused_certificate: None,
                raw: proxy_first,
            }),
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// Decrypted or received bytes wait here: read again without waiting for readiness.
    pub fn has_input(&self) -> bool {
        let s = self.inner.lock().unwrap();
        !s.pending_in.is_empty() || s.session.plaintext_pending() > 0
    }

    /// Ciphertext waits for the socket.
    pub fn has_output(&self) -> bool {
        self.inner.lock().unwrap().session.wants_write()
    }

    /// The environ's facts, once the handshake is done (made on first ask, then shared).
    pub fn facts(&self) -> Option<Arc<TlsFacts>> {
        let mut s = self.inner.lock().unwrap();
        if s.facts.is_none() {
            s.facts = s.session.info().map(|i| Arc::new(TlsFacts::of(i)));
        }
        s.facts.clone()
    }

    /// As `Transport::read_some`: plaintext into `buf`, reading and decrypting ciphertext from
    /// the socket while none is decrypted (the handshake goes on meanwhile, its replies
    /// flushed as they come). `WouldBlock` only once the socket is empty; `Ok(0)` at the end
    /// of the stream or the peer's close_notify; `InvalidData` for a TLS failure (its alert
    /// sent) or plain HTTP (answered with a plaintext 400).
    pub fn read_some(&self, buf: &mut [u8]) -> io::Result<usize> {
        let mut guard = self.inner.lock().unwrap();
        let s = &mut *guard;
        if s.raw {
            return read_fd(self.fd, buf);
        }
        CIPHER_BUF.with_borrow_mut(|cipher| self.read_locked(s, buf, cipher))
    }

    /// `read_some`'s loop, with the link locked and the thread's ciphertext buffer.
    fn read_locked(&self, s: &mut Inner, buf: &mut [u8], cipher: &mut [u8]) -> io::Result<usize> {
        loop {
            match s.session.read_plaintext(buf) {
                Plaintext::Data(n) => {
                    s.responding = false;
                    return Ok(n);
                }
                Plaintext::Closed => return Ok(0),
                Plaintext::NeedMore => {}
            }
            let fed = if !s.pending_in.is_empty() {
                let pending = std::mem::take(&mut s.pending_in);
                let used = self.feed(s, &pending)?;
                s.pending_in = pending[used..].to_vec();
                used
            } else {
                let n = match read_fd(self.fd, cipher) {
                    Ok(n) => n,
                    Err(e) => {
                        let _ = flush(self.fd, &mut s.session);
                        return Err(e);
                    }
                };
                if n == 0 {
                    return Ok(0);
                }
                let used = self.feed(s, &cipher[..n])?;
                s.pending_in.extend_from_slice(&cipher[used..n]);
                n
            };
            // Handshake replies, tickets: written now (a full socket keeps them for the loop's
            // next write turn: `has_output`).
            match flush(self.fd, &mut s.session) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e),
            }
            if fed == 0 {
                // Nothing taken and nothing to give: cannot happen (the session takes
                // ciphertext while its plaintext is empty); never spin.
                return Err(io::ErrorKind::WouldBlock.into());
            }
        }
    }

    /// The PROXY header is read: TLS starts, with `after` (bytes read past the header) as its
    /// first ciphertext.
    pub fn start_tls(&self, after: &[u8]) {
        let mut s = self.inner.lock().unwrap();
        s.raw = false;
        s.pending_in.extend_from_slice(after);
    }

    /// The handshake has not completed yet (nor failed).
    pub fn handshaking(&self) -> bool {
        self.inner.lock().unwrap().session.state() == TlsState::Handshaking
    }

    /// Why the client's certificate was refused, if the session failed on it.
    pub fn refused_certificate(&self) -> Option<String> {
        self.inner.lock().unwrap().refused_certificate.clone()
    }

    /// Why the session failed, once it has (`TlsError::reason`).
    pub fn failure(&self) -> Option<&'static str> {
        self.inner.lock().unwrap().failure
    }

    fn feed(&self, s: &mut Inner, ciphertext: &[u8]) -> io::Result<usize> {
        let result = s.session.feed(ciphertext);
        if let Err(e) = &result {
            s.failure = Some(e.reason());
            if let TlsError::Tls(rustls::Error::InvalidCertificate(why)) = e {
                s.refused_certificate = Some(format!("{why:?}"));
            }
        }
        match result {
            Ok(n) => Ok(n),
            Err(TlsError::PlainHttp) => {
                // One non-blocking send: the answer fits any send buffer.
                // SAFETY: `fd` is the open socket of this connection; the slice is valid.
                unsafe {
                    libc::send(
                        self.fd,
                        PLAIN_HTTP_ANSWER.as_ptr() as *const libc::c_void,
                        PLAIN_HTTP_ANSWER.len(),
                        libc::MSG_NOSIGNAL | libc::MSG_DONTWAIT,
                    )
                };
                Err(invalid("plain HTTP on a TLS port"))
            }
            Err(e) => {
                let _ = flush(self.fd, &mut s.session);
                Err(invalid(&e.to_string()))
            }
        }
    }

    /// As `Transport::write_some`: write pending ciphertext; then encrypt the queue's front
    /// (memory segments as they are, a file range read into a buffer first: no `sendfile`
    /// through user-space TLS) up to the session's `SEND_LIMIT`, and write it. Returns the
    /// plaintext bytes taken from `out`; `WouldBlock` while ciphertext waits for the socket
    /// and nothing could be taken.
    pub fn write_some(&self, out: &mut OutQueue) -> io::Result<usize> {
        let mut guard = self.inner.lock().unwrap();
        let s = &mut *guard;
        flush(self.fd, &mut s.session)?;
        if out.is_empty() {
            return Ok(0);
        }
        let now = now_ns();
        if !s.responding {
            s.responding = true;
            if ramp_restarts(s.last_sent, now) {
                s.session.start_response();
            }
        }
        // Encrypt until the queue is empty or the session full (it took less than offered):
        // memory segments after a file range (a chunked body's end) join the same write.
        let session = &mut s.session;
        let mut taken = 0;
        let mut full = false;
        while !full && !out.is_empty() {
            let n = out.encrypt_with(self.fd, &mut |slices| {
                let offered: usize = slices.iter().map(|b| b.len()).sum();
                let n = session.write_plaintext(slices);
                full = n < offered;
                n
            })?;
            if n == 0 {
                break;
            }
            taken += n;
        }
        if taken > 0 {
            s.last_sent = Some(now);
        }
        match flush(self.fd, &mut s.session) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::WouldBlock && taken > 0 => {}
            Err(e) => return Err(e),
        }
        if taken == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        Ok(taken)
    }

    /// As `Transport::send_all` (`100 Continue`): encrypt `data` and write it, waiting up to
    /// `timeout` per stall.
    pub fn send_all(&self, mut data: &[u8], timeout: Duration) -> io::Result<()> {
        loop {
            {
                let mut s = self.inner.lock().unwrap();
                if !data.is_empty() {
                    let n = s.session.write_plaintext(&[IoSlice::new(data)]);
                    data = &data[n..];
                }
                match flush(self.fd, &mut s.session) {
                    Ok(()) if data.is_empty() => return Ok(()),
                    Ok(()) => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                    Err(e) => return Err(e),
                }
            }
            if !wait_fd(self.fd, true, timeout)? {
                return Err(io::ErrorKind::TimedOut.into());
            }
        }
    }

    /// Wait for readable ciphertext unless bytes already wait here.
    pub fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        if self.has_input() {
            return Ok(true);
        }
        wait_fd(self.fd, false, timeout)
    }

    /// Queue `close_notify`, with `answer` before it, and write what the socket takes now
    /// (never waits: a graceful close, not a guaranteed one). Nothing during a handshake (a
    /// connection cut by the header timeout just closes).
    pub fn close(&self, answer: Option<&[u8]>) {
        let mut s = self.inner.lock().unwrap();
        if s.session.state() != TlsState::Established {
            return;
        }
        if let Some(a) = answer {
            s.session.write_plaintext(&[IoSlice::new(a)]);
        }
        s.session.close_notify();
        let _ = flush(self.fd, &mut s.session);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_start_small_on_a_cold_connection_only() {
        let t = now_ns();
        let ms = 1_000_000;
        assert!(ramp_restarts(None, t));
        assert!(!ramp_restarts(Some(t), t));
        assert!(!ramp_restarts(Some(t), t + 999 * ms));
        assert!(ramp_restarts(Some(t), t + 1000 * ms));
    }
}
