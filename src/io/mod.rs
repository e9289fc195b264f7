//! The I/O layer: sockets, readiness, timeouts and output queues. Knows sockets, not Python.
//!
//! - [`stream`]: a connected socket (TCP or unix) with the few syscalls the server needs.
//! - [`transport`]: a request's connection as the WSGI bridge sees it: the only way code outside
//!   `io/` reads, writes or ends a client connection (where TLS and HTTP/2 streams plug in).
//! - [`tls`]: TLS sessions over rustls, sans-I/O, and the certificate files' checks.
//! - [`tls_link`]: a TLS connection's session beside its socket (the transport's `Tls`).
//! - [`tls_writer`]: a thread that writes large TLS answers of inline calls off the loop.
//! - [`wakeup`]: eventfds and the signal pipe, how threads wake each other.
//! - [`read_buf`]: a connection's read buffer, held only while bytes are pending.
//! - [`out_queue`]: bytes waiting to be written, written with one `writev` per readiness.
//! - [`shared_out`]: an output queue the app thread and the loop share while a response streams
//!   to a busy socket.
//! - [`conn`]: one client connection and its lifecycle state.
//! - [`error_answer`]: the server's own error answers, built in one place.
//! - [`event_loop`]: the epoll loop (mio) that accepts, reads heads and finishes writes.
//! - [`balance`]: how worker processes sharing a listening socket spread its connections.
//! - [`request_limit`]: when a worker retires (its request limit), checked as requests are counted.
//! - [`listen`]: the listening sockets the Python front hands over.
//! - [`metrics_socket`]: the `--metrics-bind` socket, which the core binds itself.
//! - [`file_body`]: a file the app hands over as its body, made ready for `sendfile`.
//! - [`read_ahead`]: a thread that drains a large request body ahead of the app.
//! - [`streams`]: what HTTP/2 and HTTP/3 share: the loop's task set and timer heap, the stop
//!   their connections hear, the inline queue, a stream's call and its app thread's waits.
//! - [`h2`]: HTTP/2 connections, served by the `h2` crate as tasks of the loop.
//! - [`h3`]: HTTP/3 over QUIC (quinn and `h3`), its endpoints and connections tasks of the loop.
//! - [`call_io`]: a stream call's body and reply, whichever of the two protocols carries it.
//! - [`inline_call`]: the hook around a call run on the loop's thread (the loop moves away
//!   when the call streams or waits for its connection).
//! - [`static_files`]: files the loop serves itself (opening, `sendfile`; decisions in proto).
//! - [`static_cache`]: small static files kept in memory while inotify reports no change.
//! - [`statsd`]: the `--statsd-host` datagram socket the request metrics are sent on.

pub mod balance;
pub mod call_io;
pub mod conn;
pub mod error_answer;
pub mod event_loop;
pub mod file_body;
pub mod h2;
pub mod h3;
pub mod inline_call;
pub mod listen;
pub mod metrics_socket;
pub mod out_queue;
pub mod read_ahead;
pub mod read_buf;
pub mod request_limit;
pub mod shared_out;
pub mod static_cache;
mod static_expires;
pub mod static_files;
mod static_open;
mod static_siblings;
mod static_watch;
pub mod statsd;
pub mod stream;
pub mod streams;
pub mod tls;
pub mod tls_link;
pub mod tls_writer;
pub mod transport;
pub mod wakeup;
