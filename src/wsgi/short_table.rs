//! A direct-mapped table of short byte strings and what each was turned into last time
//! ([`ShortTable`]), with the word-at-a-time hash and compare it uses. The environ builder keeps
//! its header keys and the header values that repeat between requests in two of them
//! (`wsgi::environ`): a hit costs about 30 instructions instead of a new Python string.

/// Longest key a [`ShortTable`] holds.
pub const SHORT_MAX: usize = 47;

/// What a short byte string (at most [`SHORT_MAX`] bytes) was turned into last time, in a
/// direct-mapped table of pairs of slots: found, it costs a hash and a compare a word at a
/// time (about 30 instructions) instead of the conversion. A key new to its pair takes the
/// pair's first slot and moves the one there to the second, so the table stays its size
/// whatever clients send, and two keys a client sends on every request that land in one pair
/// both stay. (With one slot each, such two put each other out on every request: measured on
/// hello world when `ab`'s `Host` landed on another value's slot, 700 instructions more per
/// request.) Keys made to collide only replace each other: no seed is needed.
pub struct ShortTable<V> {
    slots: Vec<ShortSlot<V>>,
}

struct ShortSlot<V> {
    len: u8,
    bytes: [u8; SHORT_MAX],
    value: Option<V>,
}

impl<V> ShortTable<V> {
    pub fn new(slots: usize) -> ShortTable<V> {
        debug_assert!(slots.is_power_of_two());
        ShortTable {
            slots: (0..slots)
                .map(|_| ShortSlot {
                    len: 0,
                    bytes: [0; SHORT_MAX],
                    value: None,
                })
                .collect(),
        }
    }

    /// What `key` was turned into, if the table has it (a key longer than [`SHORT_MAX`]
    /// never is). The two slots of its pair are looked at one after the other, and the words
    /// walked by index, without `chunks_exact` and `zip`: in a build without cross-unit
    /// inlining their steps stayed calls (with them, the lookups of a hello world over uwsgi
    /// cost 1,650 instructions more; callgrind).
    #[inline]
    pub fn find(&self, key: &[u8]) -> Option<&V> {
        if key.len() > SHORT_MAX {
            return None;
        }
        let first = self.slot_of(key) & !1;
        let pair = &self.slots[first..first + 2];
        for slot in pair {
            if let Some(v) = &slot.value {
                if same_bytes(&slot.bytes[..usize::from(slot.len)], key) {
                    return Some(v);
                }
            }
        }
        None
    }

    /// Keep what `key` (at most [`SHORT_MAX`] bytes) was turned into.
    pub fn insert(&mut self, key: &[u8], value: V) {
        debug_assert!(key.len() <= SHORT_MAX);
        let first = self.slot_of(key) & !1;
        self.slots.swap(first, first + 1);
        let slot = &mut self.slots[first];
        slot.bytes[..key.len()].copy_from_slice(key);
        slot.len = key.len() as u8;
        slot.value = Some(value);
    }

    /// A key's slot: its words folded and multiplied.
    #[inline]
    fn slot_of(&self, b: &[u8]) -> usize {
        let mut h = b.len() as u64;
        let mut i = 0;
        while i + 8 <= b.len() {
            h = (h ^ word_at(b, i)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            i += 8;
        }
        h = (h ^ last_word(b)).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> 57) as usize & (self.slots.len() - 1)
    }
}

/// The eight bytes of `b` from `i` as a word (`i + 8 <= b.len()`).
#[inline(always)]
fn word_at(b: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(b[i..i + 8].try_into().unwrap())
}

/// A word that, with the length, tells apart strings of that length that agree on their whole
/// eight-byte words: the last eight bytes (overlapping the words before) when there are eight,
/// else the bytes themselves, read in at most two loads. No `memcpy` call (a copy into an array
/// compiles to one), which would cost more than these few-byte strings.
#[inline(always)]
fn last_word(b: &[u8]) -> u64 {
    let n = b.len();
    if n >= 8 {
        u64::from_le_bytes(b[n - 8..].try_into().unwrap())
    } else if n >= 4 {
        let first = u32::from_le_bytes(b[..4].try_into().unwrap());
        let last = u32::from_le_bytes(b[n - 4..].try_into().unwrap());
        u64::from(first) | u64::from(last) << 32
    } else if n > 0 {
        u64::from(b[0]) | u64::from(b[n / 2]) << 8 | u64::from(b[n - 1]) << 16
    } else {
        0
    }
}

/// `a == b` for short strings, a word at a time (slice equality calls `memcmp`), in a plain
/// loop (`chunks_exact` and `zip` left calls behind in a build without cross-unit inlining).
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    if n != b.len() {
        return false;
    }
    let mut i = 0;
    while i + 8 <= n {
        if word_at(a, i) != word_at(b, i) {
            return false;
        }
        i += 8;
    }
    last_word(a) == last_word(b)
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn same_bytes_tells_apart_any_one_byte_difference() {
        for len in 0..40usize {
            let a: Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            assert!(same_bytes(&a, &a.clone()));
            for pos in 0..len {
                for delta in [1u8, 0x80, 0xff] {
                    let mut b = a.clone();
                    b[pos] = b[pos].wrapping_add(delta);
                    assert!(!same_bytes(&a, &b), "len {len} pos {pos}");
                }
            }
            let mut longer = a.clone();
            longer.push(0);
            assert!(!same_bytes(&a, &longer));
        }
    }
}
