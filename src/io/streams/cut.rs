//! The `--timeout` watcher's hold on a stream of either protocol ([`StreamCut`], the
//! transport's `Cut::Stream`): answer it 504 if nothing was sent, else reset it, from a thread
//! that does not run its call. Each protocol's reply state is the [`CutTarget`] (HTTP/2's in
//! `io::h2::stream`, HTTP/3's in `io::h3::stream`). Dynamic dispatch: a handle is made once
//! per watched call and used at most once, at the cut, never per block.

use std::sync::Arc;

/// A stream's reply as the watcher cuts it.
pub trait CutTarget: Send + Sync + 'static {
    /// `answer`: send `504 Gateway Timeout` if the head was not sent; else reset the stream.
    /// Every later send of the call fails. (By `Arc`: a cut may start a task that keeps the
    /// reply.)
    fn cut(self: Arc<Self>, answer: bool);
}

/// A hold on one stream's reply, for its cut.
#[derive(Clone)]
pub struct StreamCut(Arc<dyn CutTarget>);

impl StreamCut {
    pub fn new(target: Arc<dyn CutTarget>) -> StreamCut {
        StreamCut(target)
    }

    /// See [`CutTarget::cut`].
    pub fn cut(&self, answer: bool) {
        Arc::clone(&self.0).cut(answer);
    }

    /// Only this handle holds the stream still: its call and its answer are over.
    pub fn released(&self) -> bool {
        Arc::strong_count(&self.0) == 1
    }
}

impl std::fmt::Debug for StreamCut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StreamCut")
    }
}
