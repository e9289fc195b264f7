//! The values that cross between the loop and the rest of the server: a stream's
//! call ([`StreamCall`], for the pool), the loop's state as that thread reads it
//! ([`LoopView`]), and who runs a stream ([`StreamRunner`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use std::net::IpAddr;

use sluicegate_proto::forwarded::PeerOrigin;
use sluicegate_proto::h2::StreamRequest;
use sluicegate_proto::RequestHead;

use crate::io::call_io::{CallBody, CallReply};
use crate::io::static_files::Own;
use crate::io::tls_link::TlsFacts;
use crate::observe::counters::Counters;
use crate::peer::Peer;

use super::stop::Stop;

/// One stream's request, ready for the app (the HTTP/2 and HTTP/3 counterpart of the loop's
/// `Work`).
pub struct StreamCall {
    pub head: RequestHead,
    /// The listener the connection came in on (SERVER_NAME/PORT, the environ's template).
    pub listener: usize,
    pub peer: Peer,
    pub peer_origin: PeerOrigin,
    /// The environ's TLS facts (`None` for h2c).
    pub tls_facts: Option<Arc<TlsFacts>>,
    /// HTTP/3: the request came in 0-RTT (early data, replayable) and was served before the
    /// handshake completed (the environ's `sluicegate.early_data`); always false for HTTP/2.
    pub early_data: bool,
    /// `:scheme` said `https` (trusted for h2c only as forwarding headers are).
    pub scheme_https: bool,
    /// The request body's DATA frames (`None`: the HEADERS frame ended the stream).
    pub body: Option<CallBody>,
    pub reply: CallReply,
    /// When the stream's head was decoded (`clock::now_ns`).
    pub parsed_at: u64,
    /// What the upper floors keep per connection (`Conn::upper`: the environ's peer strings),
    /// shared by the connection's streams: made once per connection, not per stream (the
    /// peer address's formatting alone was 3% of a hello world's instructions).
    pub upper: Upper,
    /// Counts the connection's streams in flight; the guard drops with the call.
    pub _live: LiveStream,
}

/// [`StreamCall::upper`]: one per connection. A stream that finds it taken by another stream
/// of its connection (on another thread) does without.
pub type Upper = Arc<std::sync::Mutex<Option<Box<dyn crate::peer::PeerCache>>>>;

/// One stream in flight on a connection (its idle timer waits for none).
pub struct LiveStream(Arc<AtomicUsize>);

impl LiveStream {
    pub fn new(count: &Arc<AtomicUsize>) -> LiveStream {
        count.fetch_add(1, Ordering::SeqCst);
        LiveStream(Arc::clone(count))
    }
}

impl Drop for LiveStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// What the loop reads of the event loop's shared state, passed down as a value (the
/// loop's `LoopCtx` implements it): whether a stop was asked for, and the counters.
pub trait LoopView: Send + Sync + 'static {
    fn stop(&self) -> Stop;
    /// What is left of a graceful stop's time (`--graceful-timeout`, one deadline for the
    /// whole server): streams still open then are cut.
    fn graceful_left(&self) -> std::time::Duration;
    fn counters(&self) -> &Counters;
    /// The loop's own answer to `head` (`--health-path`, `--static`), protocol-neutral,
    /// handed to `frame` (`own_answer.rs` makes HEADERS and DATA of it); `false`: none, the
    /// request is the app's.
    fn own_answer(&self, head: &RequestHead, frame: &mut dyn FnMut(Own<'_>)) -> bool;
    /// The Server header's value (`--server-header`; empty: none).
    fn server_header(&self) -> &[u8];
    /// Count and log an own answer once sent (`sent` body bytes; its request time from
    /// `parsed_at`, a `clock::now_ns` reading).
    fn account_own(
        &self,
        head: RequestHead,
        client: Option<IpAddr>,
        status: u16,
        sent: u64,
        parsed_at: u64,
    );
}

/// Where a stream's app call runs, as the server decides (given down by the server floor,
/// called on the loop).
pub trait StreamRunner: Send + Sync + 'static {
    /// Should a stream whose request is whole (no body to wait for) run inline on the
    /// loop's thread now (`inline.rs`)? The scheduler's mode.
    fn inline_now(&self) -> bool;
    /// Hand the call to the pool.
    fn dispatch(&self, call: StreamCall);
}

/// A stream's request fields as proto reads them (`h2::request_head`, `h3::request_head`), from
/// the `http` parts both protocols' crates decode into: method, path (`/` when absent),
/// `:authority` and the fields. `end_of_stream`: the head came with the stream's end.
pub(crate) fn stream_request(
    parts: &http::request::Parts,
    end_of_stream: bool,
) -> StreamRequest<'_, impl Iterator<Item = (&[u8], &[u8])>> {
    StreamRequest {
        method: parts.method.as_str().as_bytes(),
        path: parts
            .uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .as_bytes(),
        authority: parts.uri.authority().map(|a| a.as_str().as_bytes()),
        fields: parts
            .headers
            .iter()
            .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes())),
        end_of_stream,
    }
}
