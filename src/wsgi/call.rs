//! The one entry to the app for a call of any protocol ([`run_call`]): the server calls it the
//! same way inline on the loop's thread or on a pool thread, and it hands the call to its
//! protocol's set-up (HTTP/1.1's `driver::run_request`, an HTTP/2 or HTTP/3 stream's `streams::run_stream`;
//! what both do is `call_setup.rs`). docs/architecture.md, "Known limits", says what stays
//! protocol-specific in each and why.

use pyo3::prelude::*;

use super::bridge::Bridge;
use crate::io::conn::Conn;
use crate::io::event_loop::Call;

/// Run one app call on this thread (the GIL held), inline on the loop's thread or on a pool
/// thread (the inline hook says which: `io::inline_call::holds_the_loop`). Returns an
/// HTTP/1.1 request's connection, for the loop to take back; a stream's connection never left
/// the loop.
pub fn run_call(bridge: &Bridge, py: Python<'_>, call: Call) -> Option<Box<Conn>> {
    match call {
        Call::Request(work) => Some(super::driver::run_request(bridge, py, work)),
        Call::Stream(stream) => {
            super::streams::run_stream(bridge, py, *stream);
            None
        }
    }
}
