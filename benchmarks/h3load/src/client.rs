//! The load: one QUIC endpoint (its own UDP socket) per connection, `-m` stream workers per
//! connection, each sending one request at a time and reading its answer whole, checking the
//! status and the body (length, SHA-256) of every answer. Requests are handed out from one
//! counter (`-n`) or until a deadline (`-D`); each worker keeps its own tally, merged at the end.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, Bytes};
use sha2::{Digest, Sha256};

use crate::args::Options;
use crate::tally::{Problem, Tally};

pub struct Shared {
    pub opts: Options,
    pub client: quinn::ClientConfig,
    next: AtomicU64,
    pub start: Instant,
    pub deadline: Option<Instant>,
}

impl Shared {
    pub fn new(opts: Options, client: quinn::ClientConfig) -> Self {
        let start = Instant::now();
        let deadline = opts.duration.map(|d| start + d);
        Shared {
            opts,
            client,
            next: AtomicU64::new(0),
            start,
            deadline,
        }
    }

    /// May one more request start?
    fn take(&self) -> bool {
        match self.deadline {
            Some(d) => Instant::now() < d,
            None => self.next.fetch_add(1, Ordering::Relaxed) < self.opts.requests,
        }
    }
}

type Sender = h3::client::SendRequest<h3_quinn::OpenStreams, Bytes>;

/// One connection: handshake, `-m` workers, close. Its tally includes its QUIC statistics.
pub async fn connection(shared: Arc<Shared>) -> Tally {
    let mut tally = Tally::default();
    let opts = &shared.opts;
    let bind = if opts.addr.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    };
    let endpoint = match quinn::Endpoint::client(bind.parse().expect("an address")) {
        Ok(e) => e,
        Err(e) => {
            tally.problem(Problem::Connect, format!("UDP socket: {e}"));
            return tally;
        }
    };
    let conn = match handshake(&shared, &endpoint).await {
        Ok(c) => c,
        Err(why) => {
            tally.problem(Problem::Connect, why);
            return tally;
        }
    };
    let (mut driver, sender) = match h3::client::new(h3_quinn::Connection::new(conn.clone())).await
    {
        Ok(x) => x,
        Err(e) => {
            tally.problem(Problem::Connect, format!("HTTP/3 set-up: {e}"));
            return tally;
        }
    };
    let drive = tokio::spawn(async move { std::future::poll_fn(|cx| driver.poll_close(cx)).await });
    let workers: Vec<_> = (0..opts.streams)
        .map(|_| tokio::spawn(worker(shared.clone(), sender.clone(), conn.clone())))
        .collect();
    drop(sender);
    for w in workers {
        match w.await {
            Ok(t) => tally.merge(t),
            Err(e) => tally.problem(Problem::Stream, format!("worker: {e}")),
        }
    }
    tally.quic.add(&conn.stats());
    conn.close(0u32.into(), b"done");
    drive.abort();
    endpoint.close(0u32.into(), b"done");
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    tally
}

async fn handshake(
    shared: &Shared,
    endpoint: &quinn::Endpoint,
) -> Result<quinn::Connection, String> {
    let opts = &shared.opts;
    let connecting = endpoint
        .connect_with(shared.client.clone(), opts.addr, &opts.server_name)
        .map_err(|e| format!("connect: {e}"))?;
    match tokio::time::timeout(opts.timeout, connecting).await {
        Ok(Ok(c)) => Ok(c),
        Ok(Err(e)) => Err(format!("handshake: {e}")),
        Err(_) => Err(format!("handshake: no answer within {:?}", opts.timeout)),
    }
}

/// One stream slot: requests one after another until `take` says no or the connection dies.
async fn worker(shared: Arc<Shared>, mut sender: Sender, conn: quinn::Connection) -> Tally {
    let mut tally = Tally::default();
    while shared.take() {
        let t0 = Instant::now();
        let limit = t0 + shared.opts.timeout;
        let until = shared.deadline.map_or(limit, |d| d.min(limit));
        let res = tokio::time::timeout_at(until.into(), request(&shared, &mut sender)).await;
        match res {
            Ok(Ok(answer)) => tally.answer(&shared.opts, answer, t0.elapsed()),
            Ok(Err(why)) => tally.problem(Problem::Stream, why),
            // Cut by the end of a timed run: neither counted nor an error.
            Err(_) if shared.deadline.is_some_and(|d| Instant::now() >= d) => tally.cut += 1,
            Err(_) => tally.problem(
                Problem::Timeout,
                format!("no whole answer within {:?}", shared.opts.timeout),
            ),
        }
        if let Some(reason) = conn.close_reason() {
            tally.problem(Problem::Connection, format!("connection closed: {reason}"));
            break;
        }
    }
    tally.finished = Some(Instant::now());
    tally
}

pub struct Answer {
    pub status: u16,
    pub body_len: u64,
    pub sha256: Option<[u8; 32]>,
}

async fn request(shared: &Shared, sender: &mut Sender) -> Result<Answer, String> {
    let opts = &shared.opts;
    let method = if opts.body.is_some() {
        http::Method::POST
    } else {
        http::Method::GET
    };
    let mut req = http::Request::builder()
        .method(method)
        .uri(opts.url.clone());
    for (k, v) in &opts.headers {
        req = req.header(k, v);
    }
    if let Some(b) = &opts.body {
        req = req.header(http::header::CONTENT_LENGTH, b.len());
    }
    let req = req.body(()).map_err(|e| format!("request: {e}"))?;
    let mut stream = sender
        .send_request(req)
        .await
        .map_err(|e| format!("send: {e}"))?;
    if let Some(b) = &opts.body {
        stream
            .send_data(b.clone())
            .await
            .map_err(|e| format!("send body: {e}"))?;
    }
    stream.finish().await.map_err(|e| format!("finish: {e}"))?;
    let resp = stream
        .recv_response()
        .await
        .map_err(|e| format!("response: {e}"))?;
    let mut hasher = opts.expect_sha256.map(|_| Sha256::new());
    let mut body_len = 0u64;
    while let Some(mut chunk) = stream.recv_data().await.map_err(|e| format!("body: {e}"))? {
        body_len += chunk.remaining() as u64;
        while chunk.has_remaining() {
            let c = chunk.chunk();
            let n = c.len();
            if let Some(h) = hasher.as_mut() {
                h.update(c);
            }
            chunk.advance(n);
        }
    }
    let sha256 = hasher.map(|h| h.finalize().into());
    Ok(Answer {
        status: resp.status().as_u16(),
        body_len,
        sha256,
    })
}
