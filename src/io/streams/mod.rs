//! The stream layer HTTP/2 (`io::h2`) and HTTP/3 (`io::h3`) share: the loop's executor for
//! their connections' tasks and the values a stream's call is made of. Nothing here knows a
//! wire protocol: `io::h2` and `io::h3` build on it, never on each other.
//!
//! - `tasks.rs`: the loop's task set: wakers, the woken list, the sockets' readiness.
//! - `timer.rs`: the tasks' timers, one heap per task set that the loop's wait ends at.
//! - `wait.rs`: an app thread's wait on its stream ([`wait::block_on`]), either protocol's.
//! - `inline.rs`: the queue of whole streams the loop's thread runs itself.
//! - `stop.rs`: the stop, one channel per task set that every connection task of either
//!   protocol hears ([`StopSignal`]).
//! - `cut.rs`: the `--timeout` watcher's hold on a stream of either protocol ([`StreamCut`]).
//! - `head.rs`: a response head as both protocols' crates take it (an `http::Response`).
//! - `own_answer.rs`: `--static` and `--health-path` answers framed for either protocol.
//! - `reply.rs`: a stream's body and response as its app thread uses them ([`reply::StreamIn`],
//!   [`reply::StreamOut`]), implemented by each protocol's stream.
//! - `call.rs`: a stream's call ([`StreamCall`], for the pool or the inline queue), the loop as
//!   its tasks see it ([`LoopView`]), and who runs a stream ([`StreamRunner`]).

mod call;
pub mod cut;
pub mod head;
pub mod inline;
pub mod own_answer;
pub mod reply;
pub mod stop;
pub mod tasks;
pub mod timer;
pub mod wait;

pub(crate) use call::stream_request;
pub use call::{LiveStream, LoopView, StreamCall, StreamRunner, Upper};
pub use cut::{CutTarget, StreamCut};
pub use inline::Inline;
pub use stop::{Stop, StopSignal, StopWatch};
pub use tasks::{Readiness, Task, TaskShared, Tasks, READ, WRITE};
