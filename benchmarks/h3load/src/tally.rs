//! What a run counted: answers, latencies, body checks, errors by kind, QUIC statistics; the
//! merge of the workers' tallies and the report (a human summary, then one JSON line).

use std::fmt::Write as _;
use std::time::Duration;

use crate::args::Options;
use crate::client::Answer;

#[derive(Clone, Copy)]
pub enum Problem {
    Connect,
    Connection,
    Stream,
    Timeout,
}

#[derive(Default)]
pub struct Quic {
    pub udp_tx_bytes: u64,
    pub udp_rx_bytes: u64,
    pub udp_tx_datagrams: u64,
    pub udp_rx_datagrams: u64,
    pub lost_packets: u64,
    pub congestion_events: u64,
    pub rtt_max: Duration,
}

impl Quic {
    pub fn add(&mut self, s: &quinn::ConnectionStats) {
        self.udp_tx_bytes += s.udp_tx.bytes;
        self.udp_rx_bytes += s.udp_rx.bytes;
        self.udp_tx_datagrams += s.udp_tx.datagrams;
        self.udp_rx_datagrams += s.udp_rx.datagrams;
        self.lost_packets += s.path.lost_packets;
        self.congestion_events += s.path.congestion_events;
        self.rtt_max = self.rtt_max.max(s.path.rtt);
    }
}

#[derive(Default)]
pub struct Tally {
    /// Answers complete before the end (whatever their status or body).
    pub done: u64,
    /// Of those, answers with the expected status and body.
    pub ok: u64,
    pub latencies_us: Vec<u32>,
    pub body_bytes: u64,
    pub bad_status: u64,
    pub len_mismatch: u64,
    pub sha_mismatch: u64,
    pub connect_errors: u64,
    pub connection_errors: u64,
    pub stream_errors: u64,
    pub timeouts: u64,
    /// Requests under way when a timed run (`-D`) ended.
    pub cut: u64,
    pub first_problem: Option<String>,
    pub quic: Quic,
    /// When the last worker stopped: the end of the measured time.
    pub finished: Option<std::time::Instant>,
}

impl Tally {
    pub fn problem(&mut self, kind: Problem, why: String) {
        match kind {
            Problem::Connect => self.connect_errors += 1,
            Problem::Connection => self.connection_errors += 1,
            Problem::Stream => self.stream_errors += 1,
            Problem::Timeout => self.timeouts += 1,
        }
        self.first_problem.get_or_insert(why);
    }

    pub fn answer(&mut self, opts: &Options, a: Answer, latency: Duration) {
        self.done += 1;
        self.body_bytes += a.body_len;
        self.latencies_us
            .push(latency.as_micros().min(u32::MAX as u128) as u32);
        let status_ok = match opts.expect_status {
            Some(s) => a.status == s,
            None => (200..300).contains(&a.status),
        };
        let mut good = true;
        if !status_ok {
            self.bad_status += 1;
            self.first_problem
                .get_or_insert(format!("status {}", a.status));
            good = false;
        }
        if let Some(n) = opts.expect_len.filter(|&n| n != a.body_len) {
            self.len_mismatch += 1;
            self.first_problem
                .get_or_insert(format!("body of {} bytes, expected {n}", a.body_len));
            good = false;
        }
        if let (Some(want), Some(got)) = (opts.expect_sha256, a.sha256) {
            if want != got {
                self.sha_mismatch += 1;
                self.first_problem.get_or_insert(format!(
                    "body sha256 {} ({} bytes)",
                    hex(&got),
                    a.body_len
                ));
                good = false;
            }
        }
        self.ok += good as u64;
    }

    pub fn merge(&mut self, o: Tally) {
        self.done += o.done;
        self.ok += o.ok;
        self.latencies_us.extend(o.latencies_us);
        self.body_bytes += o.body_bytes;
        self.bad_status += o.bad_status;
        self.len_mismatch += o.len_mismatch;
        self.sha_mismatch += o.sha_mismatch;
        self.connect_errors += o.connect_errors;
        self.connection_errors += o.connection_errors;
        self.stream_errors += o.stream_errors;
        self.timeouts += o.timeouts;
        self.cut += o.cut;
        if self.first_problem.is_none() {
            self.first_problem = o.first_problem;
        }
        self.finished = self.finished.max(o.finished);
        let q = &mut self.quic;
        q.udp_tx_bytes += o.quic.udp_tx_bytes;
        q.udp_rx_bytes += o.quic.udp_rx_bytes;
        q.udp_tx_datagrams += o.quic.udp_tx_datagrams;
        q.udp_rx_datagrams += o.quic.udp_rx_datagrams;
        q.lost_packets += o.quic.lost_packets;
        q.congestion_events += o.quic.congestion_events;
        q.rtt_max = q.rtt_max.max(o.quic.rtt_max);
    }

    pub fn errors(&self) -> u64 {
        self.connect_errors + self.connection_errors + self.stream_errors + self.timeouts
    }

    pub fn mismatches(&self) -> u64 {
        self.bad_status + self.len_mismatch + self.sha_mismatch
    }

    /// Did every request of the run complete as expected?
    pub fn success(&self, opts: &Options) -> bool {
        let all_done = opts.duration.is_some() || self.done == opts.requests;
        self.done > 0 && all_done && self.errors() == 0 && self.mismatches() == 0
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().fold(String::new(), |mut s, x| {
        let _ = write!(s, "{x:02x}");
        s
    })
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The percentile `p` (0-100) of sorted latencies, nearest rank, in ms.
fn pct_ms(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p / 100.0) * sorted.len() as f64).ceil().max(1.0) as usize;
    sorted[rank.min(sorted.len()) - 1] as f64 / 1000.0
}

/// The human summary and the JSON line, for a run of `elapsed`.
pub fn report(opts: &Options, t: &mut Tally, elapsed: Duration) -> (String, String) {
    t.latencies_us.sort_unstable();
    let l = &t.latencies_us;
    let secs = elapsed.as_secs_f64().max(1e-9);
    let rps = t.done as f64 / secs;
    let (p50, p90, p99) = (pct_ms(l, 50.0), pct_ms(l, 90.0), pct_ms(l, 99.0));
    let max = l.last().copied().unwrap_or(0) as f64 / 1000.0;
    let mean = if l.is_empty() {
        0.0
    } else {
        l.iter().map(|&x| x as f64).sum::<f64>() / l.len() as f64 / 1000.0
    };
    let verified = opts.expect_len.is_some() || opts.expect_sha256.is_some();
    let not_started = if opts.duration.is_some() {
        0
    } else {
        opts.requests
            .saturating_sub(t.done + t.stream_errors + t.timeouts)
    };
    let q = &t.quic;
    let mut h = String::new();
    let _ = writeln!(
        h,
        "finished in {secs:.2}s, {rps:.2} req/s, {:.2}MB/s of body",
        t.body_bytes as f64 / secs / 1e6
    );
    let _ = writeln!(
        h,
        "requests: {} done, {} as expected{}, {} not started, {} cut by the end",
        t.done,
        t.ok,
        if verified {
            " (body checked)"
        } else {
            " (body NOT checked)"
        },
        not_started,
        t.cut
    );
    let _ = writeln!(
        h,
        "errors: {} connect, {} connection, {} stream, {} timeout; mismatches: {} status, {} length, {} sha256",
        t.connect_errors, t.connection_errors, t.stream_errors, t.timeouts, t.bad_status, t.len_mismatch, t.sha_mismatch
    );
    let _ = writeln!(
        h,
        "latency: p50 {p50:.3}ms, p90 {p90:.3}ms, p99 {p99:.3}ms, max {max:.3}ms, mean {mean:.3}ms"
    );
    let _ = writeln!(
        h,
        "bytes: {} of body; UDP {} sent in {} datagrams, {} received in {} datagrams; {} packets lost, {} congestion events, max rtt {:.3}ms",
        t.body_bytes,
        q.udp_tx_bytes,
        q.udp_tx_datagrams,
        q.udp_rx_bytes,
        q.udp_rx_datagrams,
        q.lost_packets,
        q.congestion_events,
        q.rtt_max.as_secs_f64() * 1e3
    );
    if let Some(p) = &t.first_problem {
        let _ = writeln!(h, "first problem: {p}");
    }
    let problem = t
        .first_problem
        .as_deref()
        .map_or("null".to_string(), json_str);
    let json = format!(
        concat!(
            "{{\"tool\":\"h3load\",\"url\":{},\"conns\":{},\"streams\":{},\"seconds\":{:.6},",
            "\"done\":{},\"ok\":{},\"verified\":{},\"req_per_s\":{:.3},",
            "\"latency_ms\":{{\"p50\":{:.3},\"p90\":{:.3},\"p99\":{:.3},\"max\":{:.3},\"mean\":{:.3}}},",
            "\"errors\":{},\"connect_errors\":{},\"connection_errors\":{},\"stream_errors\":{},\"timeouts\":{},",
            "\"bad_status\":{},\"len_mismatch\":{},\"sha_mismatch\":{},\"not_started\":{},\"cut\":{},",
            "\"body_bytes\":{},\"udp_tx_bytes\":{},\"udp_rx_bytes\":{},\"udp_tx_datagrams\":{},\"udp_rx_datagrams\":{},",
            "\"lost_packets\":{},\"congestion_events\":{},\"rtt_max_ms\":{:.3},\"first_problem\":{}}}"
        ),
        json_str(&opts.url.to_string()),
        opts.conns,
        opts.streams,
        secs,
        t.done,
        t.ok,
        verified,
        rps,
        p50,
        p90,
        p99,
        max,
        mean,
        t.errors(),
        t.connect_errors,
        t.connection_errors,
        t.stream_errors,
        t.timeouts,
        t.bad_status,
        t.len_mismatch,
        t.sha_mismatch,
        not_started,
        t.cut,
        t.body_bytes,
        q.udp_tx_bytes,
        q.udp_rx_bytes,
        q.udp_tx_datagrams,
        q.udp_rx_datagrams,
        q.lost_packets,
        q.congestion_events,
        q.rtt_max.as_secs_f64() * 1e3,
        problem
    );
    (h, json)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let v: Vec<u32> = (1..=100).map(|x| x * 1000).collect();
        assert_eq!(pct_ms(&v, 50.0), 50.0);
        assert_eq!(pct_ms(&v, 99.0), 99.0);
        assert_eq!(pct_ms(&[], 99.0), 0.0);
        assert_eq!(pct_ms(&[7000], 1.0), 7.0);
    }

    #[test]
    fn json_strings() {
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
