//! HTTP/2 streams, inline or on the pool: the server's answer to `io::h2` ([`Runner`]): run a
//! stream inline now (the scheduler's mode, as for an HTTP/1.1 request), or hand it to the pool
//! (`Job::Stream`). The loop's thread runs the inline ones (`drive::run_streams`).
//!
//! Why inline (measured; benchmarks/results/2026-11-25-design-measurements/): handing every
//! stream to the pool cost more server CPU than the HTTP/2 work and the app call together.

use std::sync::Weak;

use super::drive::{dispatch_stream, streams_inline, Shared};
use crate::io::h2::{StreamCall, StreamRunner};

/// The server's answer to the connections' tasks (weak: the tasks hold it, and the server
/// holds the loop).
pub(super) struct Runner(pub(super) Weak<Shared>);

impl StreamRunner for Runner {
    fn inline_now(&self) -> bool {
        self.0.upgrade().is_some_and(|s| streams_inline(&s))
    }

    fn dispatch(&self, call: StreamCall) {
        if let Some(s) = self.0.upgrade() {
            dispatch_stream(&s, call);
        }
    }
}
