//! A connection's QUIC handshake ([`handshake`], within `--header-timeout`) and 0-RTT
//! (`--http3-0rtt`): which requests that arrive before the handshake completes are served.
//!
//! Without 0-RTT the connection is served once its handshake completed. With it, the
//! connection is served at once (quinn's `into_0rtt`: the server may answer in 0.5-RTT) and
//! the handshake finishes beside it ([`Handshake`]). A request whose head arrives while the
//! handshake is still under way came in early data, which an attacker can replay (RFC 8446
//! §8, RFC 9001 §9.2): an idempotent one (GET, HEAD, OPTIONS, [`idempotent`]) is served at
//! once and the app is told (`sluicegate.early_data`); any other waits until the handshake
//! completes ([`admit`]). RFC 8470 §3 lets a server either answer 425 or wait; waiting costs
//! the client nothing, and a replayed copy never completes a handshake, so it is never served.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::watch;

use crate::config::{ClientAuth, Config};
use crate::io::streams::{tasks, timer, LoopView};
use crate::observe::h3_counters::{H3Counters, H3Event};

/// `H3_NO_ERROR`: the close of a connection whose handshake did not complete in time.
const H3_NO_ERROR: u32 = 0x100;

/// Where a connection's handshake is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    UnderWay,
    Complete,
    /// Failed, or not complete within `--header-timeout` (the connection is closed).
    Failed,
}

/// A connection's handshake as its streams see it.
#[derive(Clone)]
pub(super) struct Handshake(watch::Receiver<Phase>);

impl Handshake {
    fn complete() -> Handshake {
        Handshake(watch::Sender::new(Phase::Complete).subscribe())
    }

    /// The handshake has not completed yet: what arrives now came in 0-RTT.
    pub fn under_way(&self) -> bool {
        *self.0.borrow() == Phase::UnderWay
    }

    /// Wait for its end: whether it completed.
    async fn completed(&mut self) -> bool {
        match self.0.wait_for(|p| *p != Phase::UnderWay).await {
            Ok(p) => *p == Phase::Complete,
            Err(_) => false,
        }
    }
}

/// The methods served from early data: RFC 9110 §9.2.1's safe ones (TRACE aside, which the
/// app answers as any other method). PUT and DELETE are idempotent but change state: a replay
/// that lands between two of the client's own requests undoes the second, so they wait.
pub(super) fn idempotent(method: &[u8]) -> bool {
    matches!(method, b"GET" | b"HEAD" | b"OPTIONS")
}

/// Whether a request whose head just arrived, with `method`, goes on, and whether it came in
/// early data: `Some(true)` served from 0-RTT, `Some(false)` after the handshake (it may have
/// waited for it here), `None` the handshake failed (the connection is gone).
pub(super) async fn admit(
    handshake: &Handshake,
    method: &[u8],
    counters: &H3Counters,
) -> Option<bool> {
    if !handshake.under_way() {
        return Some(false);
    }
    if idempotent(method) {
        counters.count(H3Event::EarlyServed);
        return Some(true);
    }
    counters.count(H3Event::EarlyWaited);
    handshake.clone().completed().await.then_some(false)
}

/// The handshake of `incoming`, within `--header-timeout`: the connection to serve, and its
/// handshake (complete, or still under way with `--http3-0rtt`). `None`: it failed or timed
/// out, and quinn dropped its state with the handshake's handle.
pub(super) async fn handshake(
    config: &Config,
    ctx: &Arc<dyn LoopView>,
    incoming: quinn::Incoming,
) -> Option<(quinn::Connection, Handshake)> {
    let counters = ctx.counters();
    let h3 = &counters.h3;
    h3.handshaking.fetch_add(1, Ordering::Relaxed);
    let connecting = match incoming.accept() {
        Ok(c) => c,
        Err(_) => {
            end(h3, H3Event::HandshakeFailed);
            return None;
        }
    };
    let limit = config.header_timeout;
    // With client certificates asked for, the identity is known only once the handshake
    // completed: no request is served before it (early data still saves the round trip).
    let asks_certificates =
        (config.tls.as_ref()).is_some_and(|t| t.client_auth != ClientAuth::None);
    let connecting = if config.http3_0rtt && !asks_certificates {
        match connecting.into_0rtt() {
            Ok((conn, accepted)) => {
                let (tx, rx) = watch::channel(Phase::UnderWay);
                let ctx = Arc::clone(ctx);
                let closing = conn.clone();
                tasks::current().spawn(async move {
                    // `accepted` ends with the handshake, saying whether 0-RTT was accepted
                    // (false, too, for a connection lost first): the close tells them apart.
                    let outcome = timer::timeout(limit, accepted).await;
                    let outcome = outcome.map(|_| closing.close_reason().is_none());
                    let phase = ended(&*ctx, outcome);
                    if phase == Phase::Failed {
                        closing.close(quinn::VarInt::from_u32(H3_NO_ERROR), b"");
                    }
                    let _ = tx.send(phase);
                });
                return Some((conn, Handshake(rx)));
            }
            Err(connecting) => connecting,
        }
    } else {
        connecting
    };
    match timer::timeout(limit, connecting).await {
        Ok(Ok(conn)) => {
            ended(&**ctx, Ok(true));
            Some((conn, Handshake::complete()))
        }
        Ok(Err(_)) => {
            ended(&**ctx, Ok(false));
            None
        }
        Err(e) => {
            ended(&**ctx, Err(e));
            None
        }
    }
}

/// A handshake's end counted: completed (`Ok(true)`), failed, or timed out.
fn ended(ctx: &dyn LoopView, outcome: Result<bool, timer::Elapsed>) -> Phase {
    let h3 = &ctx.counters().h3;
    match outcome {
        Ok(true) => {
            end(h3, H3Event::Connection);
            Phase::Complete
        }
        Ok(false) => {
            end(h3, H3Event::HandshakeFailed);
            Phase::Failed
        }
        Err(_) => {
            end(h3, H3Event::HandshakeTimeout);
            Phase::Failed
        }
    }
}

fn end(h3: &H3Counters, e: H3Event) {
    h3.handshaking.fetch_sub(1, Ordering::Relaxed);
    h3.count(e);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_head_and_options_are_served_from_early_data() {
        for m in [&b"GET"[..], b"HEAD", b"OPTIONS"] {
            assert!(idempotent(m));
        }
        for m in [
            &b"POST"[..],
            b"PUT",
            b"DELETE",
            b"PATCH",
            b"get",
            b"CONNECT",
        ] {
            assert!(!idempotent(m));
        }
    }
}
