//! The reader thread's side of [`super::ReadAhead`]: its loop ([`read_body`]), the choice of
//! what each read goes into (lent buffers, or blocks of its own), the hand-over of what it
//! read to the app's side, and the waits for the app and for the socket.

use super::*;

/// The reader's loop: reads until `until`, at most [`AHEAD_MAX`] ahead, into the lent buffers
/// when there are any (each handed over once full; `partial` holds the one being filled), else
/// into blocks of its own of up to [`BLOCK`] bytes (each handed over as read). Returns how it
/// ended, or None when it was stopped.
pub(super) fn read_body<L: LentBuf>(
    transport: &Transport,
    until: Until,
    pacing: &Pacing,
    shared: &Shared<L>,
    partial: &mut Option<Block<L>>,
) -> Option<Result<(), BodyFailure>> {
    let (mut left, mut shadow) = match until {
        Until::Bytes(n) => (n, None),
        Until::BodyEnd(d) => (u64::MAX, Some(d)),
    };
    let mut read_total = pacing.read_before;
    let mut last_progress = Instant::now();
    let mut own = Vec::new();
    let mut targets: Vec<Block<L>> = Vec::new();
    while left > 0 {
        // None: stopped.
        let own_first = plan_read(
            shared,
            partial,
            &mut targets,
            &mut own,
            left,
            shadow.is_none(),
        )?;
        let mut want = usize::try_from(left).unwrap_or(usize::MAX).min(BLOCK);
        if own_first > 0 {
            want = want.min(own_first);
        }
        let got = if targets.is_empty() {
            own.resize(want, 0);
            transport.read_some(&mut own)
        } else {
            read_into_targets(transport, &mut targets, left)
        };
        let n = match got {
            Ok(n) if n > 0 => n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                give_back(shared, &mut targets, partial, false);
                let waited = wait_for_bytes(
                    transport,
                    pacing,
                    shared,
                    partial,
                    read_total,
                    last_progress,
                );
                if let Err(end) = waited {
                    return end;
                }
                continue;
            }
            _ => {
                // The end of the stream, or an error: what the lent buffer being filled holds
                // was read all the same (`partial`, handed over as the reader ends).
                give_back(shared, &mut targets, partial, false);
                return Some(Err(BodyFailure::Disconnected));
            }
        };
        read_total += n as u64;
        left -= n as u64;
        last_progress = Instant::now();
        crate::observe::counters::BYTES_IN.fetch_add(n as u64, Ordering::Relaxed);
        if targets.is_empty() {
            own.truncate(n);
            if let Some(d) = shadow.as_mut() {
                if body_ends_in(d, &own) {
                    left = 0;
                }
            }
            let block = Block {
                buf: AheadBuf::Own(std::mem::take(&mut own)),
                len: n,
            };
            hand_over(shared, block, left == 0, &mut own);
        } else {
            spread(&mut targets, n);
            give_back(shared, &mut targets, partial, left == 0);
        }
    }
    Some(Ok(()))
}

/// Before each read: wait while [`AHEAD_MAX`] is ahead (until the app is down to
/// [`RESUME_AT`]), then choose what to read into: the lent buffer being filled, then more lent
/// ones (`lend_ok`: a Content-Length body), as many as the body still owes and the room ahead
/// allows, into `targets`; else a block of its own (`own`). Returns how many bytes of its own
/// to read first, so that the next lent buffer starts where one of the app's reads of its size
/// will; None when stopped.
fn plan_read<L: LentBuf>(
    shared: &Shared<L>,
    partial: &mut Option<Block<L>>,
    targets: &mut Vec<Block<L>>,
    own: &mut Vec<u8>,
    left: u64,
    lend_ok: bool,
) -> Option<usize> {
    // Bytes read and not taken: handed over, and in the lent buffer being filled. Only the
    // first go down as the app reads (the lent buffer, up to `LEND_MAX` of `wsgi::body`, may
    // hold more than `RESUME_AT` by itself).
    let part = partial.as_ref().map_or(0, |b| b.len);
    let mut st = shared.state.lock().unwrap();
    if st.buffered + part >= AHEAD_MAX {
        while st.buffered > RESUME_AT && !st.stop {
            st.reader_waits = true;
            st = shared.changed.wait(st).unwrap();
        }
        st.reader_waits = false;
    }
    if st.stop {
        return None;
    }
    // What to read into: the lent buffer being filled, then more lent ones, as many as
    // the body still owes and the room ahead allows.
    let cap = usize::try_from(left)
        .unwrap_or(usize::MAX)
        .min(AHEAD_MAX - (st.buffered + part).min(AHEAD_MAX));
    let mut room = 0;
    if let Some(b) = partial.take() {
        room += b.room();
        targets.push(b);
    }
    // Bytes of the reader's own to read first, so that the next lent buffer starts
    // where one of the app's reads of its size will.
    let own_first = match st.lent.front() {
        Some(b) if lend_ok => {
            let size = b.as_slice().len() as i128;
            let at = i128::from(left) - room as i128;
            (at - i128::from(st.align_left)).rem_euclid(size) as usize
        }
        _ => 0,
    };
    if own_first == 0 && lend_ok {
        while room < cap {
            let Some(buf) = st.lent.pop_front() else {
                break;
            };
            room += buf.as_slice().len();
            targets.push(Block {
                buf: AheadBuf::Lent(buf),
                len: 0,
            });
        }
    }
    if targets.is_empty() && own.capacity() == 0 {
        *own = st.spare.pop().unwrap_or_default();
    }
    Some(own_first)
}

/// One vectored read into the rooms of `targets`, in order, at most `left` bytes in all.
fn read_into_targets<L: LentBuf>(
    transport: &Transport,
    targets: &mut [Block<L>],
    left: u64,
) -> std::io::Result<usize> {
    let mut cap = usize::try_from(left).unwrap_or(usize::MAX);
    let mut slices: Vec<IoSliceMut<'_>> = Vec::with_capacity(targets.len());
    for t in targets.iter_mut() {
        if cap == 0 {
            break;
        }
        let len = t.len;
        let room = &mut t.buf.as_mut_slice()[len..];
        let take = room.len().min(cap);
        cap -= take;
        slices.push(IoSliceMut::new(&mut room[..take]));
    }
    transport.read_vectored(&mut slices)
}

/// Count `n` bytes read into `targets`, in order.
fn spread<L: LentBuf>(targets: &mut [Block<L>], mut n: usize) {
    for t in targets.iter_mut() {
        let take = t.room().min(n);
        t.len += take;
        n -= take;
    }
}

/// Settle the lent buffers a read used: the full ones (and at the body's end the partly
/// filled one) go to the app, the partly filled one stays the reader's (`partial`), the
/// untouched ones go back to the front of the lent queue. Wakes a waiting app as
/// [`hand_over`] does.
fn give_back<L: LentBuf>(
    shared: &Shared<L>,
    targets: &mut Vec<Block<L>>,
    partial: &mut Option<Block<L>>,
    at_end: bool,
) {
    let mut st = shared.state.lock().unwrap();
    let mut untouched = Vec::new();
    for t in targets.drain(..) {
        if t.len > 0 && (t.room() == 0 || at_end) {
            st.buffered += t.len;
            st.blocks.push_back(t);
        } else if t.len > 0 {
            *partial = Some(t);
        } else if let AheadBuf::Lent(buf) = t.buf {
            // Targets are all lent buffers (`plan_read`).
            untouched.push(buf);
        }
    }
    for buf in untouched.into_iter().rev() {
        st.lent.push_front(buf);
    }
    if st.app_waits && (st.buffered >= WAKE_APP_AT || (at_end && st.buffered > 0)) {
        st.app_waits = false;
        // Signalled unlocked: the woken side takes the lock without waiting for it.
        drop(st);
        shared.changed.notify_all();
    }
}

/// Hand a block of the reader's own over, and take a spare into `own` to read the next into
/// (one lock per block); a waiting app is woken once [`WAKE_APP_AT`] is buffered, or at the
/// body's end.
fn hand_over<L: LentBuf>(shared: &Shared<L>, block: Block<L>, at_end: bool, own: &mut Vec<u8>) {
    let mut st = shared.state.lock().unwrap();
    st.buffered += block.len;
    st.blocks.push_back(block);
    *own = st.spare.pop().unwrap_or_default();
    if st.app_waits && (st.buffered >= WAKE_APP_AT || at_end) {
        st.app_waits = false;
        drop(st);
        shared.changed.notify_all();
    }
}

/// The socket has nothing for now: a waiting app takes what there is meanwhile (the lent
/// buffer partly filled too), then wait for bytes, in slices short enough to notice a stop,
/// judging the wait as `wsgi::body` does (read timeout, and the body's pace). Err: the
/// reader's end (None: stopped).
fn wait_for_bytes<L: LentBuf>(
    transport: &Transport,
    pacing: &Pacing,
    shared: &Shared<L>,
    partial: &mut Option<Block<L>>,
    read_total: u64,
    last_progress: Instant,
) -> Result<(), Option<Result<(), BodyFailure>>> {
    let now = Instant::now();
    let by_timeout = last_progress + pacing.read_timeout;
    let (deadline, failure) = match pacing.pace.deadline(pacing.started, read_total) {
        Some(d) if d < by_timeout => (d, BodyFailure::TooSlow),
        _ => (by_timeout, BodyFailure::TimedOut),
    };
    if now >= deadline {
        return Err(Some(Err(failure)));
    }
    {
        let mut st = shared.state.lock().unwrap();
        if st.stop {
            return Err(None);
        }
        if st.app_waits {
            if let Some(block) = partial.take() {
                st.buffered += block.len;
                st.blocks.push_back(block);
            }
            if st.buffered > 0 {
                st.app_waits = false;
                drop(st);
                shared.changed.notify_all();
            }
        }
    }
    match transport.wait_readable((deadline - now).min(STOP_CHECK)) {
        Ok(_) => Ok(()),
        Err(_) => Err(Some(Err(BodyFailure::Disconnected))),
    }
}

/// Run `decoder` over `block`: true if the body ends in it (or its framing is wrong there).
fn body_ends_in(decoder: &mut BodyDecoder, block: &[u8]) -> bool {
    let mut at = 0;
    while at < block.len() && !decoder.is_done() {
        match decoder.decode(&block[at..]) {
            // Every call before the end consumes at least one byte.
            Ok(step) => at += step.consumed.max(1),
            Err(_) => return true,
        }
    }
    decoder.is_done()
}
