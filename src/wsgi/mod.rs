//! The WSGI bridge (PEP 3333): environ, `wsgi.input`, `start_response`/`write()`, driving the
//! app's iterable, `close()`, `wsgi.file_wrapper`, the elastic thread pool, and the logs.
//! Knows Python, not sockets: it reads, writes and ends a request's connection only through the
//! `io::transport::Transport` the I/O layer lends it for the request, and makes no system call
//! on a client socket itself (`scripts/check_floors.py` keeps it below `server` and above `io`).

pub mod app_head;
pub mod body;
pub mod body_block;
pub mod body_source;
pub mod bridge;
pub mod call;
pub mod call_setup;
pub mod current;
pub mod deadline;
pub mod driver;
pub mod environ;
pub mod errors;
pub mod file_wrapper;
pub mod input;
pub mod interrupt;
pub mod iterable;
pub mod pool;
pub mod release;
pub mod reply;
pub mod sender;
pub mod short_table;
pub mod start_response;
pub mod streams;

pub use call::run_call;
