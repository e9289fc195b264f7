//! Unit tests of the output queue: chunk framing merged and closed, cork markers and the
//! closing mark kept through `append` and `clear`, the framing bytes counted as pending, and
//! how much of a queue one write takes.

use super::*;

fn drain(q: &mut OutQueue) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(seg) = q.segs.pop_front() {
        out.extend_from_slice(&seg.bytes()[q.front_pos as usize..]);
        q.front_pos = 0;
    }
    out
}

#[test]
fn consecutive_chunk_data_becomes_one_chunk() {
    let mut q = OutQueue::new();
    q.push_copy(b"HEAD\r\n\r\n");
    q.push_chunk_data(b"hello ");
    q.push_chunk_data(b"world");
    q.close_chunk();
    q.push_static(b"0\r\n\r\n");
    assert_eq!(
        drain(&mut q),
        b"HEAD\r\n\r\n0000000b\r\nhello world\r\n0\r\n\r\n".to_vec()
    );
}

#[test]
fn anything_else_queued_closes_the_chunk() {
    let mut q = OutQueue::new();
    q.push_chunk_data(b"ab");
    q.push_owned(b"X".to_vec());
    q.push_chunk_data(b"c");
    let mut other = OutQueue::new();
    other.append(&mut q);
    assert_eq!(
        drain(&mut other),
        b"00000002\r\nab\r\nX00000001\r\nc\r\n".to_vec()
    );
}

#[test]
fn cork_markers_survive_append_and_count_no_bytes() {
    let mut a = OutQueue::new();
    a.push_cork(true);
    a.push_owned(b"head".to_vec());
    a.push_cork(false);
    let mut b = OutQueue::new();
    b.append(&mut a);
    assert_eq!(b.pending(), 4);
    assert_eq!(b.segs.len(), 3);
    assert!(matches!(b.segs.back(), Some(Segment::Cork(false))));
}

#[test]
fn closing_survives_append_and_clear() {
    // Into an empty queue (swapped in) and into a non-empty one.
    let mut a = OutQueue::new();
    let mut q = OutQueue::new();
    q.push_owned(b"answer".to_vec());
    q.closing = true;
    a.append(&mut q);
    assert!(a.closing);
    let mut b = OutQueue::new();
    b.push_owned(b"head".to_vec());
    let mut q = OutQueue::new();
    q.push_owned(b"body".to_vec());
    q.closing = true;
    b.append(&mut q);
    assert!(b.closing);
    // The queue given back to the connection keeps saying so once written (cleared), so
    // the close half-closes first.
    b.clear();
    assert!(b.closing);
    // A closing queue appended to nothing closing still closes; nothing closing into a
    // closing queue does not undo it.
    let mut c = OutQueue::new();
    c.closing = true;
    let mut d = OutQueue::new();
    d.push_owned(b"x".to_vec());
    c.append(&mut d);
    assert!(c.closing);
}

#[test]
fn pending_counts_framing() {
    let mut q = OutQueue::new();
    q.push_chunk_data(b"abc");
    q.close_chunk();
    assert_eq!(q.pending(), 10 + 3 + 2);
}

#[test]
fn framing_around_referenced_blocks_needs_no_buffer() {
    struct Held(&'static [u8]);
    impl SharedBytes for Held {
        fn bytes(&self) -> &[u8] {
            self.0
        }
    }
    let mut q = OutQueue::new();
    for block in [&b"abcdefgh"[..], b"xyz"] {
        q.push_framing(format!("{:x}\r\n", block.len()).as_bytes());
        q.push_shared(Box::new(Held(block)));
        q.push_framing(b"\r\n");
    }
    // The CRLF ending a block and the next block's size line share one inline segment.
    assert_eq!(q.segs.len(), 5);
    assert!(!q.segs.iter().any(|s| matches!(s, Segment::Owned(_))));
    assert_eq!(q.pending, 21);
    assert_eq!(drain(&mut q), b"8\r\nabcdefgh\r\n3\r\nxyz\r\n".to_vec());
    // After copied bytes, framing extends their segment; a long one gets a buffer of its own.
    q.push_copy(b"head");
    q.push_framing(b"\r\n");
    q.push_shared(Box::new(Held(b"z")));
    q.push_framing(&[b'0'; 30]);
    assert_eq!(q.segs.len(), 3);
    assert_eq!(drain(&mut q).len(), 4 + 2 + 1 + 30);
}

/// A streamed response's referenced blocks as the sender queues them: size line, block, CRLF
/// (the CRLF sharing an inline segment with the next size line).
fn referenced_blocks(q: &mut OutQueue, blocks: usize, size: usize) {
    struct Held(Vec<u8>);
    impl SharedBytes for Held {
        fn bytes(&self) -> &[u8] {
            &self.0
        }
    }
    for _ in 0..blocks {
        q.push_framing(format!("{size:x}\r\n").as_bytes());
        q.push_shared(Box::new(Held(vec![b'x'; size])));
        q.push_framing(b"\r\n");
    }
}

/// The iovecs `write_fd` would pass: (count, bytes).
fn one_write(q: &OutQueue) -> (usize, usize) {
    let mut iov = vec![IoSlice::new(&[]); q.segs.len().clamp(1, MAX_IOV_LARGE)];
    let (count, _) = q.fill_iov(&mut iov);
    (count, iov[..count].iter().map(|s| s.len()).sum())
}

#[test]
fn a_megabyte_of_streamed_blocks_leaves_in_one_write() {
    // 128 blocks of 8 KiB (the high-water mark's worth of S3's): 257 segments. With 64 iovecs
    // a write carried 32 blocks, and the last CRLF took a write of its own.
    let mut q = OutQueue::new();
    referenced_blocks(&mut q, 128, 8192);
    assert_eq!(q.segs.len(), 257);
    assert_eq!(one_write(&q), (257, q.pending() as usize));
}

#[test]
fn a_write_stops_near_its_budget_with_the_framing_that_follows() {
    // 200 blocks: the write ends with the first block past WRITE_CHUNK, whole, and the inline
    // segment after it (its CRLF and the next block's size line); the rest starts with data.
    let mut q = OutQueue::new();
    referenced_blocks(&mut q, 200, 8192);
    let (count, bytes) = one_write(&q);
    let block = 8192 + 4 + 2 + 2; // size line, data, CRLF
    let blocks = (WRITE_CHUNK as usize).div_ceil(block);
    assert_eq!(count, 2 * blocks + 1);
    assert!(bytes > WRITE_CHUNK as usize && bytes < WRITE_CHUNK as usize + block + 8);
    // A large segment is cut at the budget, and nothing follows it in the same write.
    let mut q = OutQueue::new();
    referenced_blocks(&mut q, 1, 3 << 20);
    assert_eq!(one_write(&q), (2, WRITE_CHUNK as usize));
}

/// The owners given back to `note_release` (the release function of the lent-segment test).
static RELEASED: std::sync::Mutex<Vec<usize>> = std::sync::Mutex::new(Vec::new());

fn note_release(owner: std::ptr::NonNull<std::ffi::c_void>) {
    RELEASED.lock().unwrap().push(owner.as_ptr() as usize);
}

#[test]
fn a_lent_segment_gives_its_owner_back_once_and_takes_no_more_room() {
    // A segment is as large as before lent ones (the queue moves them around by value).
    assert!(std::mem::size_of::<Segment>() <= 32);
    set_lent_release(note_release);
    static DATA: [u8; 10] = *b"0123456789";
    let mut q = OutQueue::new();
    for owner in [0x1000usize, 0x2000] {
        let owner = std::ptr::NonNull::new(owner as *mut std::ffi::c_void).unwrap();
        // SAFETY: DATA is static and immutable; `note_release` only records the owner.
        q.push_lent(unsafe { Lent::new(DATA.as_ptr(), DATA.len(), owner) });
        q.push_framing(b"\r\n");
    }
    // Partly written, then appended elsewhere: the written part is gone, the rest copied
    // (and its owner given back then).
    q.advance(4);
    let mut other = OutQueue::new();
    other.push_copy(b"head ");
    other.append(&mut q);
    assert_eq!(drain(&mut other), b"head 456789\r\n0123456789\r\n".to_vec());
    // (Other tests lend owners from 0x10_0000 on.)
    let mine: Vec<usize> = RELEASED
        .lock()
        .unwrap()
        .iter()
        .copied()
        .filter(|&o| o < 0x10_0000)
        .collect();
    assert_eq!(mine, vec![0x1000, 0x2000]);
}

#[test]
fn lent_chunks_share_their_framing_and_pile_up_into_one_write() {
    set_lent_release(note_release);
    static DATA: [u8; 8192] = [b'x'; 8192];
    let lend = |i: usize, n: usize| {
        let owner = std::ptr::NonNull::new((0x10_0000 + 16 * i) as *mut std::ffi::c_void).unwrap();
        // SAFETY: DATA is static and immutable; `note_release` only records the owner.
        unsafe { Lent::new(DATA.as_ptr(), n, owner) }
    };
    let mut q = OutQueue::new();
    q.push_copy(b"HEAD\r\n\r\n");
    q.push_lent_chunk(lend(0, 10)); // the size line extends the head's segment
    q.push_lent_chunk(lend(1, 0)); // nothing: a chunk of size 0 would end the body
    q.push_lent_chunk(lend(2, 300)); // its size line joins the CRLF before it
    q.push_chunk_data(b"ab"); // small data: a chunk of its own, closed by the next block
    q.push_lent_chunk(lend(3, 3));
    let want = [
        &b"HEAD\r\n\r\na\r\n"[..],
        &DATA[..10],
        b"\r\n12c\r\n",
        &DATA[..300],
        b"\r\n00000002\r\nab\r\n3\r\n",
        &DATA[..3],
        b"\r\n",
    ]
    .concat();
    assert_eq!(q.segs.len(), 8);
    assert_eq!(q.pending() as usize, want.len());
    assert_eq!(drain(&mut q), want);
    // 128 blocks of 8 KiB piled up (the high-water mark's worth): one write takes them all.
    let mut q = OutQueue::new();
    for i in 0..128 {
        q.push_lent_chunk(lend(10 + i, 8192));
    }
    assert_eq!(q.segs.len(), 257);
    assert_eq!(one_write(&q), (257, q.pending() as usize));
    drop(q);
    let released = RELEASED.lock().unwrap();
    for i in [0, 1, 2, 3, 10, 137] {
        assert_eq!(
            released
                .iter()
                .filter(|&&o| o == 0x10_0000 + 16 * i)
                .count(),
            1
        );
    }
}
