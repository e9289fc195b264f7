//! sluicegate-proto: the sans-I/O protocol core.
//!
//! Bytes in, events out. Nothing here knows sockets, threads or Python, so every rule of
//! RFC 9112 that the server enforces can be unit-tested and fuzzed on plain byte slices.
//! The request head produced here ([`RequestHead`]) is wire-protocol neutral: HTTP/1.1
//! (`h1/`), an HTTP/2 stream's fields (`h2.rs`) and nginx's uwsgi protocol (`uwsgi.rs`) all
//! produce it, and the WSGI bridge only
//! ever sees this type.

#![forbid(unsafe_code)]

pub mod date;
pub mod error;
pub mod files;
pub mod forwarded;
pub mod h1;
pub mod h2;
pub mod h3;
pub mod head;
pub mod host;
pub mod limits;
pub mod path;
pub mod proxy_protocol;
#[doc(hidden)]
pub mod testing;
mod token;
pub mod uwsgi;

#[cfg(test)]
mod robustness;

pub use error::ProtoError;
pub use head::{BodyFraming, RequestHead, Version};
pub use limits::Limits;
