//! What one HTTP/3 connection may keep unacknowledged, and the close of one that stopped
//! acknowledging ([`watch`], a task of the loop beside the connection's own).
//!
//! quinn keeps every byte an answer handed it until the client acknowledges it, up to the
//! connection's send window; its default (10 MiB) let a client that stops acknowledging pin
//! about 11.7 MiB per connection. The window is bounded per connection
//! ([`config::SEND_WINDOW`]) and per process: each connection's is its share of
//! [`config::SEND_WINDOW_PER_PROCESS`] among the connections open ([`config::send_window`]),
//! set again by its watch as they come and go. And a connection that sent what must be
//! acknowledged (data, a ping, a window update) and got no acknowledgement for
//! `--write-timeout` is closed: what it held is let go then, not at QUIC's idle timeout.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use quinn::VarInt;

use super::config;
use crate::io::streams::timer;
use crate::observe::h3_counters::H3Counters;

/// How often the watch looks: the window follows the number of connections this closely.
const LOOK_EVERY: Duration = Duration::from_secs(1);

/// `H3_NO_ERROR`, the close of a connection that stopped acknowledging.
const H3_NO_ERROR: u32 = 0x100;

/// Frames sent that the client must acknowledge, and acknowledgements received.
fn counts(conn: &quinn::Connection) -> (u64, u64) {
    let s = conn.stats();
    let f = &s.frame_tx;
    let eliciting = f.stream
        + f.ping
        + f.max_data
        + f.max_stream_data
        + f.max_streams_bidi
        + f.max_streams_uni
        + f.reset_stream
        + f.stop_sending
        + f.crypto;
    (eliciting, s.frame_rx.acks)
}

/// Watch `conn` until it closes: its send window kept at its share, and the close once what
/// it sent went unacknowledged for `write_timeout`.
pub(super) async fn watch(conn: quinn::Connection, h3: &H3Counters, write_timeout: Duration) {
    let mut window = 0;
    let (mut acked_eliciting, mut acks) = counts(&conn);
    // Since when something sent waits for an acknowledgement that does not come.
    let mut waiting_since: Option<Instant> = None;
    loop {
        let share = config::send_window(h3.open.load(Ordering::Relaxed));
        if share != window {
            conn.set_send_window(share);
            window = share;
        }
        tokio::select! {
            _ = conn.closed() => return,
            _ = timer::sleep(LOOK_EVERY.min(write_timeout)) => {}
        }
        let (eliciting, now_acks) = counts(&conn);
        let now = Instant::now();
        if now_acks != acks {
            (acks, acked_eliciting, waiting_since) = (now_acks, eliciting, None);
        } else if eliciting != acked_eliciting {
            let since = *waiting_since.get_or_insert(now);
            if now.duration_since(since) >= write_timeout {
                conn.close(VarInt::from_u32(H3_NO_ERROR), b"no acknowledgement");
                return;
            }
        }
    }
}
