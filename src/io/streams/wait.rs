//! An app thread's wait on its stream: [`block_on`] polls a stream handle's future on the app
//! thread itself (the `h2` crate's and quinn's handles are thread-safe), with a waker that
//! unparks the thread ([`Unpark`]), while the connection's task on the loop does the socket
//! I/O. One for both protocols: HTTP/2's body reads and window waits (`io::h2::stream`),
//! HTTP/3's reads and sends (`io::h3::stream`).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::thread::Thread;
use std::time::{Duration, Instant};

use crate::io::inline_call::may_wait;

/// Wakes the app thread parked on a stream.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// The error of a send or read on a stream the `--timeout` watcher cut.
pub fn cut_error() -> io::Error {
    io::Error::new(io::ErrorKind::TimedOut, "the stream was cut (--timeout)")
}

/// Poll `f` on this thread until it is ready, `timeout` passes (`TimedOut`), or `cut` is set
/// (the `--timeout` watcher, which unparks the thread: [`cut_error`]). A call run inline on
/// the loop's thread gives the loop to another thread before it waits (`WouldBlock` if it may
/// not): the loop's tasks are what will move this stream.
pub fn block_on<T>(
    timeout: Duration,
    cut: Option<&AtomicBool>,
    mut f: impl FnMut(&mut Context<'_>) -> Poll<T>,
) -> io::Result<T> {
    // Most polls are ready at once (a DATA frame is there, the window or quinn's send buffer
    // takes the bytes): the first one needs no waker, no clock reading and no allocation.
    if let Poll::Ready(v) = f(&mut Context::from_waker(Waker::noop())) {
        return Ok(v);
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let until = Instant::now() + timeout;
    loop {
        if let Poll::Ready(v) = f(&mut cx) {
            return Ok(v);
        }
        if cut.is_some_and(|c| c.load(Ordering::Acquire)) {
            return Err(cut_error());
        }
        if !may_wait() {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let now = Instant::now();
        if now >= until {
            return Err(io::ErrorKind::TimedOut.into());
        }
        std::thread::park_timeout(until - now);
    }
}
