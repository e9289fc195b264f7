//! Client certificates the handshake refused, said in the error log: why (rustls's reason,
//! with a plain word for the common ones) and from which peer, once per peer and reason, and
//! at most [`LINES_PER_MINUTE`] lines a minute in all, so a client retrying in a loop (or
//! many clients) cannot flood the log. Lines past the limit are counted and the count told
//! with the next line that is written. Without this, a refused certificate is seen only by the
//! client (an alert such as "certificate unknown") and in the failure metric.

use std::collections::BTreeSet;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The most refusal lines written in one minute.
pub const LINES_PER_MINUTE: u32 = 10;
/// Peers and reasons remembered as told; past this many the memory starts afresh (a peer
/// told long ago may be told again).
const REMEMBERED_MAX: usize = 4096;
const MINUTE: Duration = Duration::from_secs(60);

struct Told {
    seen: BTreeSet<(Option<IpAddr>, String)>,
    window_start: Option<Instant>,
    in_window: u32,
    suppressed: u64,
}

static TOLD: Mutex<Told> = Mutex::new(Told {
    seen: BTreeSet::new(),
    window_start: None,
    in_window: 0,
    suppressed: 0,
});

/// The error log line for a refused client certificate, if this peer and reason were not told
/// yet and the minute's allowance is not spent (then it is counted for the next line).
pub fn line_for(peer: Option<IpAddr>, reason: &str, now: Instant) -> Option<String> {
    let mut t = TOLD.lock().unwrap_or_else(|e| e.into_inner());
    if t.seen.len() >= REMEMBERED_MAX {
        t.seen.clear();
    }
    if !t.seen.insert((peer, reason.to_string())) {
        return None;
    }
    if t.window_start
        .is_none_or(|s| now.duration_since(s) >= MINUTE)
    {
        t.window_start = Some(now);
        t.in_window = 0;
    }
    if t.in_window >= LINES_PER_MINUTE {
        t.suppressed += 1;
        return None;
    }
    t.in_window += 1;
    let from = peer.map_or_else(|| "a unix-socket client".to_string(), |ip| ip.to_string());
    let mut line = format!(
        "sluicegate: client certificate from {from} refused: {reason}{}",
        hint(reason)
    );
    if t.suppressed > 0 {
        line += &format!(
            " ({} more refusal(s) not logged: at most {LINES_PER_MINUTE} lines a minute)",
            std::mem::take(&mut t.suppressed)
        );
    }
    Some(line)
}

/// Write the line for a refused client certificate to the error log (standard error).
pub fn tell(peer: Option<IpAddr>, reason: &str) {
    if let Some(line) = line_for(peer, reason, Instant::now()) {
        eprintln!("{line}");
    }
}

/// Plain words for reasons rustls words tersely.
fn hint(reason: &str) -> &'static str {
    if reason.contains("UnsupportedCertVersion") {
        " (an X.509 v1 certificate: webpki, which verifies client certificates, accepts only \
         v3 certificates; issue it again as v3, with its extensions)"
    } else if reason.contains("UnknownIssuer") {
        " (not issued by a CA of --ca-certs)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_peer_and_reason_and_ten_a_minute() {
        let now = Instant::now();
        let ip = |n: u8| Some(IpAddr::from([10, 9, 9, n]));
        let first = line_for(ip(1), "other error: UnsupportedCertVersion", now).unwrap();
        assert!(
            first.contains("10.9.9.1") && first.contains("X.509 v1"),
            "{first}"
        );
        assert_eq!(
            line_for(ip(1), "other error: UnsupportedCertVersion", now),
            None
        );
        assert!(line_for(ip(1), "UnknownIssuer", now).is_some());
        let told = (2..40)
            .filter(|&n| line_for(ip(n), "UnknownIssuer", now).is_some())
            .count();
        assert_eq!(told, LINES_PER_MINUTE as usize - 2);
        let later = line_for(ip(200), "UnknownIssuer", now + MINUTE).unwrap();
        assert!(later.contains("more refusal(s) not logged"), "{later}");
    }
}
