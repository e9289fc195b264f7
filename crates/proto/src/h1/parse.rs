//! Request head parsing: finds the end of the head incrementally (so a client trickling bytes
//! costs O(n), not O(n^2)), then validates it strictly and builds a [`RequestHead`].

use crate::{Limits, ProtoError, RequestHead};

/// Incremental head parser for one connection. Keeps how far it has already scanned for the end
/// of the head, so feeding a growing buffer is linear. `reset()` after each request.
#[derive(Debug, Default)]
pub struct HeadParser {
    scanned: usize,
}

impl HeadParser {
    pub fn new() -> Self {
        HeadParser { scanned: 0 }
    }

    /// Forget progress (call after a head was returned, or when the buffer was replaced).
    pub fn reset(&mut self) {
        self.scanned = 0;
    }

    /// `buf` holds the bytes received so far for this request (it starts at the first byte of
    /// the request line; the caller removed consumed bytes). Returns:
    /// - `Ok(None)`: need more bytes (and no limit was exceeded yet);
    /// - `Ok(Some((head, n)))`: a complete head occupying `buf[..n]`; the body (if any) starts
    ///   at `buf[n]`;
    /// - `Err(e)`: the request is refused with `e.status()`, and the connection closes.
    /// Leading empty lines before the request line (RFC 9112 §2.2) are skipped and counted in n.
    pub fn parse(
        &mut self,
        buf: &[u8],
        limits: &Limits,
    ) -> Result<Option<(RequestHead, usize)>, ProtoError> {
        let _ = (buf, limits);
        todo!()
    }
}
