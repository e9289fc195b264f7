//! The `--metrics-bind` socket: bound by the core itself (the Python front binds the app's
//! listeners and hands them over), in `Server` construction, so a worker says it is ready only
//! once its metrics port is listening. Accepting from it is the event loop's
//! (`event_loop/metrics.rs`); what is answered on it is `observe::metrics_http`'s.

use std::io;
use std::path::{Path, PathBuf};

use mio::net::{TcpListener, UnixListener};

use super::stream::Stream;
use crate::peer::Peer;

/// The bound metrics listener (TCP or unix). A unix socket's file is removed when it is
/// dropped: the core made it.
pub enum MetricsSocket {
    Tcp(TcpListener),
    Unix(UnixListener, PathBuf),
}

impl MetricsSocket {
    /// `HOST:PORT` or `unix:PATH`, non-blocking. A unix path is taken over only from a dead
    /// socket (one no server accepts on): any other file there, or a live server's socket, is
    /// an error, never removed.
    pub fn bind(addr: &str) -> io::Result<MetricsSocket> {
        match addr.strip_prefix("unix:") {
            Some(path) => {
                clear_dead_socket(Path::new(path))?;
                let l = std::os::unix::net::UnixListener::bind(path)?;
                l.set_nonblocking(true)?;
                Ok(MetricsSocket::Unix(
                    UnixListener::from_std(l),
                    PathBuf::from(path),
                ))
            }
            None => {
                // std's bind sets SO_REUSEADDR, as the Python front's probe of the port does.
                let l = std::net::TcpListener::bind(addr)?;
                l.set_nonblocking(true)?;
                Ok(MetricsSocket::Tcp(TcpListener::from_std(l)))
            }
        }
    }

    /// One waiting connection (WouldBlock: none).
    pub fn accept(&self) -> io::Result<(Stream, Peer)> {
        match self {
            MetricsSocket::Tcp(l) => l.accept().map(|(s, a)| (Stream::Tcp(s), Peer::Ip(a))),
            MetricsSocket::Unix(l, _) => l.accept().map(|(s, _)| (Stream::Unix(s), Peer::Unix)),
        }
    }

    /// The socket, for the loop's epoll set.
    pub fn source(&mut self) -> &mut dyn mio::event::Source {
        match self {
            MetricsSocket::Tcp(l) => l,
            MetricsSocket::Unix(l, _) => l,
        }
    }
}

/// Remove what is at `path` if it is a socket nobody listens on; leave anything else, and say
/// why in the error.
fn clear_dead_socket(path: &Path) -> io::Result<()> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Ok(());
    };
    let already = |why: &str| {
        io::Error::new(
            io::ErrorKind::AddrInUse,
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

impl Drop for MetricsSocket {
    fn drop(&mut self) {
        if let MetricsSocket::Unix(_, path) = self {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unix_path_is_taken_only_from_a_dead_socket() {
        let dir = std::env::temp_dir().join(format!("sg-metrics-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // A regular file is refused and kept.
        let file = dir.join("notes.txt");
        std::fs::write(&file, b"keep me").unwrap();
        let e = MetricsSocket::bind(&format!("unix:{}", file.display()))
            .err()
            .unwrap();
        assert!(e.to_string().contains("is not a socket"), "{e}");
        assert_eq!(std::fs::read(&file).unwrap(), b"keep me");
        // A live server's socket is refused and kept.
        let live = dir.join("live.sock");
        let _server = std::os::unix::net::UnixListener::bind(&live).unwrap();
        let e = MetricsSocket::bind(&format!("unix:{}", live.display()))
            .err()
            .unwrap();
        assert!(e.to_string().contains("server that is running"), "{e}");
        assert!(live.exists());
        // A dead socket (its listener gone) is taken over; ours is removed when dropped.
        let dead = dir.join("dead.sock");
        drop(std::os::unix::net::UnixListener::bind(&dead).unwrap());
        assert!(dead.exists());
        let ours = MetricsSocket::bind(&format!("unix:{}", dead.display())).unwrap();
        assert!(std::os::unix::net::UnixStream::connect(&dead).is_ok());
        drop(ours);
        assert!(!dead.exists());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
