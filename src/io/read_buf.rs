//! A connection's read buffer. Held only while a connection has bytes pending (a partial head,
//! a body being read, pipelined requests), and returned to a small pool otherwise, so that an
//! idle keep-alive connection costs no buffer memory (10,000 idle connections stay cheap).

/// Initial size of a read buffer: most request heads fit in one read of this size.
pub const READ_BUF_SIZE: usize = 16 * 1024;

/// Bytes received and not yet consumed live in `data[start..end]`.
pub struct ReadBuf {
    data: Vec<u8>,
    start: usize,
    end: usize,
}

impl ReadBuf {
    pub fn new() -> ReadBuf {
        ReadBuf {
            data: vec![0; READ_BUF_SIZE],
            start: 0,
            end: 0,
        }
    }

    /// The received, unconsumed bytes.
    #[inline(always)]
    pub fn filled(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.start == self.end
    }

    /// Drop the first `n` unconsumed bytes.
    #[inline]
    pub fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.len());
        self.start += n;
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
    }

    /// Space to read into. Moves pending bytes to the front when that frees room, and grows the
    /// buffer (doubling) when it is full, up to `max_len` bytes in all; returns an empty slice
    /// when the buffer holds `max_len` bytes already (the caller's limit check answers that).
    pub fn spare(&mut self, max_len: usize) -> &mut [u8] {
        if self.end == self.data.len() && self.start > 0 {
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.data.len() && self.data.len() < max_len {
            let new_len = (self.data.len() * 2).min(max_len.max(self.data.len()));
            self.data.resize(new_len, 0);
        }
        &mut self.data[self.end..]
    }

    /// Add `bytes` after what is unconsumed, growing the buffer as needed (for bytes read by
    /// someone else: a body's reader thread that read past the body's end).
    pub fn append(&mut self, bytes: &[u8]) {
        if self.start > 0 && self.end + bytes.len() > self.data.len() {
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let need = self.end + bytes.len();
        if need > self.data.len() {
            self.data.resize(need, 0);
        }
        self.data[self.end..need].copy_from_slice(bytes);
        self.end = need;
    }

    /// Mark `n` bytes of the slice returned by `spare` as received.
    #[inline]
    pub fn commit(&mut self, n: usize) {
        self.end += n;
        debug_assert!(self.end <= self.data.len());
    }

    /// True when the buffer is the standard size, so it may go back to the pool.
    pub fn is_standard(&self) -> bool {
        self.data.len() == READ_BUF_SIZE
    }
}

impl Default for ReadBuf {
    fn default() -> Self {
        Self::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn consume_and_compact() {
        let mut b = ReadBuf::new();
        let s = b.spare(usize::MAX);
        s[..5].copy_from_slice(b"hello");
        b.commit(5);
        b.consume(2);
        assert_eq!(b.filled(), b"llo");
        b.consume(3);
        assert!(b.is_empty());
    }

    #[test]
    fn append_keeps_what_is_there_and_grows() {
        let mut b = ReadBuf::new();
        let s = b.spare(READ_BUF_SIZE);
        s[..3].copy_from_slice(b"abc");
        b.commit(3);
        b.consume(1);
        let big = vec![7u8; READ_BUF_SIZE * 2];
        b.append(&big);
        assert_eq!(b.len(), 2 + big.len());
        assert_eq!(&b.filled()[..2], b"bc");
        assert!(b.filled()[2..].iter().all(|&x| x == 7));
    }

    #[test]
    fn grows_up_to_max() {
        let mut b = ReadBuf::new();
        let n = b.spare(usize::MAX).len();
        b.commit(n);
        assert_eq!(b.spare(READ_BUF_SIZE).len(), 0);
        assert_eq!(b.spare(READ_BUF_SIZE * 4).len(), READ_BUF_SIZE);
    }
}
