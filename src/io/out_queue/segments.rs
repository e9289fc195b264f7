//! The output queue's segment storage: a deque that a queue never given storage drops for free
//! (most queues made per request), kept apart from the queue's logic.

use std::collections::VecDeque;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};

use super::Segment;

/// The queue's segments. A deque that never held storage (capacity 0, as most of the queues
/// made and dropped per request) is dropped without the generic deque drop, which walks both
/// of its (empty) halves: about 40 instructions, three times per hello-world request.
#[derive(Default)]
pub(super) struct Segments(ManuallyDrop<VecDeque<Segment>>);

impl From<VecDeque<Segment>> for Segments {
    fn from(d: VecDeque<Segment>) -> Segments {
        Segments(ManuallyDrop::new(d))
    }
}

impl Deref for Segments {
    type Target = VecDeque<Segment>;
    #[inline]
    fn deref(&self) -> &VecDeque<Segment> {
        &self.0
    }
}

impl DerefMut for Segments {
    #[inline]
    fn deref_mut(&mut self) -> &mut VecDeque<Segment> {
        &mut self.0
    }
}

impl Drop for Segments {
    #[inline]
    fn drop(&mut self) {
        // With capacity 0 the deque holds no segment and no memory: nothing to drop.
        if self.0.capacity() != 0 {
            drop(std::mem::take(&mut *self.0));
        }
    }
}
