//! The I/O layer: sockets, readiness, timeouts and output queues. Knows sockets, not Python.
//!
//! - [`stream`]: a connected socket (TCP or unix) with the few syscalls the server needs.
//! - [`read_buf`]: a connection's read buffer, held only while bytes are pending.
//! - [`out_queue`]: bytes waiting to be written, written with one `writev` per readiness.
//! - [`shared_out`]: an output queue the app thread and the loop share while a response streams
//!   to a busy socket.
//! - [`conn`]: one client connection and its lifecycle state.
//! - [`error_answer`]: the server's own error answers, built in one place.
//! - [`event_loop`]: the epoll loop (mio) that accepts, reads heads and finishes writes.
//! - [`balance`]: how worker processes sharing a listening socket spread its connections.

pub mod balance;
pub mod conn;
pub mod error_answer;
pub mod event_loop;
pub mod out_queue;
pub mod read_buf;
pub mod shared_out;
pub mod stream;
pub mod tls;
