//! The TLS writer: a thread that finishes large TLS answers of inline calls, so that the loop's
//! thread goes on parsing and running the next requests meanwhile.
//!
//! Why: a TLS answer cannot leave with `sendfile`; its file range is read, encrypted and
//! written with `sendmsg` (`TlsLink::write_some`). For S14's 21 KB file that was about 35 % of
//! the loop thread's time (benchmarks/results/2026-11-25-tls-measurements/), and the loop's
//! one thread was the bound in req/s. An inline call whose TLS answer has at least
//! [`TLS_WRITER_MIN`] bytes left leaves them in the connection's queue
//! (`Sender::flush_pending`), and the connection, still away from the loop's table, is handed
//! here instead of back to the loop when other connections are ready (`LoopCtx::write_away`).
//!
//! Plaintext answers never come here. A file range leaves with `sendfile`, and an answer from
//! memory (S2's 21 KB `[bytes]`) with one `writev` that costs the loop about 9 µs; waking this
//! thread cost the loop 4-5 µs and the writer 7 more (a futex wake of a thread asleep on
//! another core). On S2's app answer the hand-off gave 1.05× the requests per second in one
//! run and 0.92× in another, at 1.3-1.5× the CPU per request
//! (benchmarks/results/2026-11-28-plain-on-loop/).
//!
//! The writer only makes non-blocking writes, as the loop would, up to `FAIR_SHARE` bytes;
//! then the connection goes back to the loop (`LoopCtx::return_conn`), all written or not. On
//! a full socket (a slow reader) the loop finishes it on writable with the write timeout, as
//! before; an error is met again by the loop's next write, which closes. So the writer never
//! waits for a client, and one slow reader cannot hold up the others. While the connection is
//! here it is away from the loop, which therefore reads none of its pipelined requests: they
//! run after this answer is written, in order. The access log line of an answer written here
//! is written here (its send time ends when the last byte was taken).

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, Weak};

use super::conn::Conn;
use super::out_queue::FAIR_SHARE;

/// Who the connections come from and go back to (the loop's context, `LoopCtx`; a trait so
/// that this file needs nothing from the loop).
pub trait Owner: Send + Sync + 'static {
    /// `conn`'s answer is all written: account it (its access log line).
    fn written(&self, conn: &mut Conn);
    /// Give the connection back to the loop (`LoopCtx::return_conn`).
    fn give_back(&self, conn: Box<Conn>);
}

/// TLS answers with at least this many bytes left after an inline call are written by the
/// writer thread. Below it the hand-off (a futex wake when the writer sleeps, about 12 µs of
/// CPU between the two threads on the 2-vCPU VM of the benchmarks; the loop's look at the
/// returned connection) costs about what the write does; a 21 KB file's write (read, encrypt,
/// `sendmsg`) is about 35 µs on the loop's thread.
pub const TLS_WRITER_MIN: u64 = 16 * 1024;

/// The way to the writer thread, started at the first hand-off.
#[derive(Default)]
pub struct TlsWriter {
    tx: Mutex<Option<Sender<Box<Conn>>>>,
}

impl TlsWriter {
    /// Give `conn` (away from the loop, its answer queued) to the writer thread. The thread
    /// holds the loop's context weakly: it ends when the context goes (its channel closes).
    pub fn hand<O: Owner>(&self, conn: Box<Conn>, owner: &Arc<O>) {
        let mut tx = self.tx.lock().unwrap();
        if tx.is_none() {
            let (new_tx, rx) = channel();
            let weak: Weak<dyn Owner> = Arc::downgrade(owner) as Weak<dyn Owner>;
            let spawned = std::thread::Builder::new()
                .name("sg-tls-writer".into())
                .spawn(move || run(rx, weak));
            if let Err(e) = spawned {
                // No thread (a process at its limit): the loop writes the answer, as below.
                eprintln!("sluicegate: cannot start the TLS writer thread: {e}; the loop writes");
                drop(tx);
                owner.give_back(conn);
                return;
            }
            *tx = Some(new_tx);
        }
        let sender = tx.as_ref().expect("set above");
        if let Err(back) = sender.send(conn) {
            // The thread is gone (it ends only with the context): the loop writes the answer.
            *tx = None;
            drop(tx);
            owner.give_back(back.0);
        }
    }
}

fn run(rx: Receiver<Box<Conn>>, owner: Weak<dyn Owner>) {
    while let Ok(mut conn) = rx.recv() {
        let Some(owner) = owner.upgrade() else { return };
        if write(&mut conn) {
            owner.written(&mut conn);
        }
        owner.give_back(conn);
    }
}

/// Write `conn`'s answer while the socket takes it, up to `FAIR_SHARE` bytes; true if it is
/// all written.
fn write(conn: &mut Conn) -> bool {
    let mut written = 0u64;
    loop {
        match conn.write_out() {
            Ok(_) if !conn.has_output() => break,
            // Nothing taken and no error: leave it to the loop rather than spin.
            Ok(0) => return false,
            Ok(n) => {
                written += n as u64;
                if written >= FAIR_SHARE {
                    return false;
                }
            }
            // A full socket: the loop waits for writable; an error: the loop's next write
            // meets it and closes (and logs the answer as cut short).
            Err(_) => return false,
        }
    }
    conn.out.release();
    true
}
