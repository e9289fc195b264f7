//! `wsgi.early_hints` on HTTP/1.1: a `103 Early Hints` answer written at once, before the
//! response's head. An `impl Sender` block apart from the response's way out (`mod.rs`), since
//! an interim answer is no part of the response: it changes no stage and no framing.
//!
//! While the head is unsent (`Stage::Unsent`) nothing of this response is queued, so the 103
//! is written whole here, ahead of anything else (`Transport::send_all`, GIL released, at most
//! `--write-timeout` per stall, as `100 Continue` is). Which clients get one and its bytes are
//! proto's (`h1::interim`).

use pyo3::prelude::*;
use sluicegate_proto::h1::interim::{encode_early_hints, sends_interim};

use super::{Sender, Stage};
use crate::wsgi::app_head::AppHead;
use crate::wsgi::reply::HintsRefused;

impl Sender {
    /// Send `hints` as a `103 Early Hints` now. Nothing is sent, and no error raised, to an
    /// HTTP/1.0 client (or as a uwsgi answer, framed as HTTP/1.0), after `--timeout` answered
    /// the request, or once the client is gone: hints are advice, and the final answer decides
    /// what the client gets.
    pub fn send_early_hints(
        &mut self,
        py: Python<'_>,
        hints: &AppHead,
    ) -> Result<(), HintsRefused> {
        match self.stage {
            Stage::Ended => return Err(HintsRefused::Finished),
            _ if self.app.started => return Err(HintsRefused::AfterStart),
            Stage::Unsent => {}
            // The head goes out only after start_response.
            Stage::Direct | Stage::Streaming(_) => return Err(HintsRefused::AfterStart),
        }
        if !sends_interim(self.version) || self.client_gone {
            return Ok(());
        }
        // With --timeout, the 103 holds the gate while it is written: the watcher's 504 never
        // lands inside it (past the deadline then, the connection is closed instead).
        if !self.gate.as_ref().is_none_or(|g| g.begin_interim()) {
            return Ok(());
        }
        let mut bytes = Vec::with_capacity(128);
        encode_early_hints(&mut bytes, hints.headers());
        let (transport, timeout) = (&self.transport, self.write_timeout);
        if py.detach(|| transport.send_all(&bytes, timeout)).is_err() {
            // The final answer's write will find the client gone too.
            self.client_gone = true;
        }
        if let Some(g) = &self.gate {
            g.end_interim();
        }
        Ok(())
    }
}
