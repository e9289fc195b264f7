//! The stop as the HTTP/2 and HTTP/3 connections hear it: one watch channel per task set
//! ([`StopSignal`], in `tasks.rs`'s shared part), moved forward by the loop at each turn of a
//! stop (`io::event_loop::events`, `run_tasks`) from its own state (`Shutdown`, read through
//! `LoopView::stop`), so every connection task of either protocol wakes at the move itself.
//! HTTP/1.1's connections are the loop's own and need no signal: its sweep and turn read
//! `Shutdown` directly.

use tokio::sync::watch;

/// How far the server is in stopping, as the streams' connections need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Stop {
    Running,
    /// GOAWAY: in-flight streams finish, no new ones.
    Graceful,
    /// Connections are cut.
    Immediate,
}

/// A connection task's end of the stop ([`StopSignal::subscribe`]).
pub type StopWatch = watch::Receiver<Stop>;

/// The sending end: only moves forward (`Running`, `Graceful`, `Immediate`).
pub struct StopSignal(watch::Sender<Stop>);

impl StopSignal {
    pub fn new() -> StopSignal {
        StopSignal(watch::Sender::new(Stop::Running))
    }

    /// A new connection's (or endpoint's) end of the signal.
    pub fn subscribe(&self) -> StopWatch {
        self.0.subscribe()
    }

    /// Move to `state` if it is further than now; the subscribers are woken only then.
    pub fn set(&self, state: Stop) {
        self.0.send_if_modified(|s| {
            let moved = state > *s;
            if moved {
                *s = state;
            }
            moved
        });
    }
}

impl Default for StopSignal {
    fn default() -> StopSignal {
        StopSignal::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_only_moves_forward_and_wakes_only_on_a_move() {
        let signal = StopSignal::new();
        let mut early = signal.subscribe();
        signal.set(Stop::Graceful);
        assert!(early.has_changed().unwrap());
        assert_eq!(*early.borrow_and_update(), Stop::Graceful);
        // Back to running, or the same state again: no move, no wake.
        signal.set(Stop::Running);
        signal.set(Stop::Graceful);
        assert!(!early.has_changed().unwrap());
        // A connection that subscribes late sees where the stop is.
        assert_eq!(*signal.subscribe().borrow(), Stop::Graceful);
        signal.set(Stop::Immediate);
        assert_eq!(*early.borrow_and_update(), Stop::Immediate);
    }
}
