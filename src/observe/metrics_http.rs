//! The `--metrics-bind` listener: `GET /metrics` (Prometheus's text format, `observe::prometheus`)
//! and `GET /debug/requests`, on a port of its own, never the app's. The HTTP is proto's: the
//! request head is read by its parser ([`HeadParser`]) and every answer's head written by its
//! encoder ([`simple_response`], [`error_answer`]); [`answer`] is the whole decision for one
//! request, bytes out, so any listener can serve it.
//!
//! The listener here is a thread of its own that polls a non-blocking accept every
//! [`ACCEPT_POLL`] and serves one request per connection: a scrape costs the event loop
//! nothing. (To be served by the event loop as a listener of its own: see
//! docs/architecture.md, "Observability".)

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sluicegate_proto::h1::response::{error_answer, simple_response};
use sluicegate_proto::h1::HeadParser;
use sluicegate_proto::{Limits, ProtoError, RequestHead};

use crate::http_date::http_date;

/// How often the listener's thread looks for a connection (and for the stop).
pub const ACCEPT_POLL: Duration = Duration::from_millis(200);
/// A scraper gets this long to send its request and to take the answer.
pub const IO_TIMEOUT: Duration = Duration::from_secs(2);

/// A page of the listener: its content type and body.
pub type Page = (&'static str, String);

/// The complete answer (head and body) to one request read by proto's parser: `pages(path)`
/// gives the page of a `GET` (None: 404); a `HEAD` gets its head; other methods 405; a
/// request the parser refused, proto's error answer. The connection closes after it.
pub fn answer(
    request: Result<&RequestHead, ProtoError>,
    pages: impl Fn(&[u8]) -> Option<Page>,
) -> Vec<u8> {
    let date = http_date();
    let head = match request {
        Ok(head) => head,
        Err(e) => return error_answer(e.status(), e.reason(), &date, b""),
    };
    let (status, ctype, body) = if head.method() != b"GET" && !head.is_head {
        (405, "text/plain; charset=utf-8", "GET only\n".to_string())
    } else {
        match pages(head.path()) {
            Some((ctype, body)) => (200, ctype, body),
            None => (404, "text/plain; charset=utf-8", "Not Found\n".to_string()),
        }
    };
    let mut out = Vec::with_capacity(160 + body.len());
    let (version, len) = (head.version, body.len() as u64);
    simple_response(
        &mut out,
        version,
        status,
        ctype.as_bytes(),
        len,
        false,
        &date,
        b"",
    );
    if !head.is_head {
        out.extend_from_slice(body.as_bytes());
    }
    out
}

/// A bound metrics listener (TCP or unix).
pub enum MetricsListener {
    Tcp(std::net::TcpListener),
    Unix(std::os::unix::net::UnixListener, PathBuf),
}

impl MetricsListener {
    /// `HOST:PORT` or `unix:PATH`. A unix path is taken over only from a dead socket (one no
    /// server accepts on): any other file there, or a live server's socket, is an error, never
    /// removed.
    pub fn bind(addr: &str) -> std::io::Result<MetricsListener> {
        let l = match addr.strip_prefix("unix:") {
            Some(path) => {
                clear_dead_socket(Path::new(path))?;
                MetricsListener::Unix(
                    std::os::unix::net::UnixListener::bind(path)?,
                    PathBuf::from(path),
                )
            }
            None => MetricsListener::Tcp(std::net::TcpListener::bind(addr)?),
        };
        match &l {
            MetricsListener::Tcp(t) => t.set_nonblocking(true)?,
            MetricsListener::Unix(u, _) => u.set_nonblocking(true)?,
        }
        Ok(l)
    }
}

/// Remove what is at `path` if it is a socket nobody listens on; leave anything else, and say
/// why in the error.
fn clear_dead_socket(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let already = |why: &str| {
        std::io::Error::new(
            std::io::ErrorKind::AddrInUse,
            format!("{} {why}", path.display()),
        )
    };
    if !meta.file_type().is_socket() {
        return Err(already("exists and is not a socket"));
    }
    if std::os::unix::net::UnixStream::connect(path).is_ok() {
        return Err(already("is the socket of a server that is running"));
    }
    std::fs::remove_file(path)
}

impl Drop for MetricsListener {
    fn drop(&mut self) {
        if let MetricsListener::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// The listener's thread: one request per connection, answered by [`answer`]. Polls `stop`
/// every [`ACCEPT_POLL`].
pub fn serve(
    listener: MetricsListener,
    stop: Arc<AtomicBool>,
    pages: impl Fn(&[u8]) -> Option<Page>,
) {
    let limits = Limits::default();
    while !stop.load(Ordering::Relaxed) {
        let conn: Option<Box<dyn ReadWrite>> = match &listener {
            MetricsListener::Tcp(t) => t.accept().ok().map(|(s, _)| Box::new(s) as _),
            MetricsListener::Unix(u, _) => u.accept().ok().map(|(s, _)| Box::new(s) as _),
        };
        let Some(mut conn) = conn else {
            std::thread::sleep(ACCEPT_POLL);
            continue;
        };
        if conn.set_blocking_with_timeout(IO_TIMEOUT).is_err() {
            continue;
        }
        let mut parser = HeadParser::new();
        let mut buf = Vec::with_capacity(1024);
        let mut chunk = [0u8; 4096];
        let parsed = loop {
            match parser.parse(&buf, &limits) {
                Ok(Some((head, _))) => break Some(Ok(head)),
                Err(e) => break Some(Err(e)),
                Ok(None) => {}
            }
            match conn.read(&mut chunk) {
                Ok(0) | Err(_) => break None,
                Ok(n) => buf.extend_from_slice(&chunk[..n]),
            }
        };
        // A client that left (or sent nothing in time) gets nothing.
        if let Some(request) = parsed {
            let _ = conn.write_all(&answer(request.as_ref().map_err(|e| *e), &pages));
        }
    }
}

/// A stream the metrics thread can read and write with a timeout.
trait ReadWrite: Read + Write {
    fn set_blocking_with_timeout(&mut self, t: Duration) -> std::io::Result<()>;
}

impl ReadWrite for std::net::TcpStream {
    fn set_blocking_with_timeout(&mut self, t: Duration) -> std::io::Result<()> {
        self.set_nonblocking(false)?;
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }
}

impl ReadWrite for std::os::unix::net::UnixStream {
    fn set_blocking_with_timeout(&mut self, t: Duration) -> std::io::Result<()> {
        self.set_nonblocking(false)?;
        self.set_read_timeout(Some(t))?;
        self.set_write_timeout(Some(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask(wire: &[u8]) -> String {
        let parsed = HeadParser::new().parse(wire, &Limits::default());
        let request = match &parsed {
            Ok(Some((head, _))) => Ok(head),
            Err(e) => Err(*e),
            Ok(None) => panic!("incomplete"),
        };
        let out = answer(request, |path| {
            (path == b"/metrics").then(|| ("text/x", "m 1\n".to_string()))
        });
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn pages_methods_and_refusals() {
        let ok = ask(b"GET /metrics?x=1 HTTP/1.1\r\nHost: h\r\n\r\n");
        assert!(
            ok.starts_with("HTTP/1.1 200 OK\r\nContent-Type: text/x\r\n"),
            "{ok}"
        );
        assert!(ok.contains("Content-Length: 4\r\n") && ok.ends_with("\r\n\r\nm 1\n"));
        let head = ask(b"HEAD /metrics HTTP/1.1\r\nHost: h\r\n\r\n");
        assert!(head.contains("Content-Length: 4\r\n") && head.ends_with("\r\n\r\n"));
        assert!(ask(b"GET /nope HTTP/1.1\r\nHost: h\r\n\r\n").starts_with("HTTP/1.1 404 "));
        assert!(ask(b"POST /metrics HTTP/1.1\r\nHost: h\r\n\r\n").starts_with("HTTP/1.1 405 "));
        assert!(ask(b"GET /metrics HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 400 "));
        assert!(ask(
            b"GET /metrics HTTP/1.1\r\nHost: h\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n"
        )
        .starts_with("HTTP/1.1 400 "));
    }
}
