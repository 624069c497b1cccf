//! One collector's bounded queue: what the RIB threads and sessions hand
//! over (encoded BMP messages) waits here for the collector's task. A
//! producer never waits: a full queue is emptied and marked overflowed,
//! and the task then disconnects the collector (Termination "out of
//! resources"), reconnects and sends a fresh table dump, so what the
//! collector holds is never silently wrong. While no collector is
//! connected the queue is inactive and takes nothing (the dump on the
//! next connection covers it).

use std::collections::VecDeque;
use std::sync::Arc;

/// An encoded BMP message, shared by every collector that takes it.
pub type Msg = Arc<[u8]>;

/// The queue state (behind the collector's lock).
#[derive(Debug, Default)]
pub struct Queue {
    cap: usize,
    active: bool,
    overflowed: bool,
    msgs: VecDeque<Msg>,
    /// Messages dropped by overflows since the start.
    pub dropped: u64,
    /// Overflows since the start.
    pub overflows: u64,
}

/// What [`Queue::push`] did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Pushed {
    /// Not connected (or already overflowed): not taken.
    Ignored,
    /// Queued behind others (the task is already awake).
    Queued,
    /// Queued into an empty queue: wake the task.
    Wake,
    /// The queue overflowed: it is now empty and the collector must be
    /// disconnected, even in the middle of a write.
    Overflow,
}

/// What [`Queue::take`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Take {
    /// Messages to write, in order.
    Msgs(Vec<Msg>),
    /// Nothing queued.
    Empty,
    /// The queue overflowed: disconnect and resync.
    Overflowed,
}

impl Queue {
    /// A queue of at most `cap` messages, inactive.
    pub fn new(cap: usize) -> Queue {
        Queue {
            cap: cap.max(1),
            ..Queue::default()
        }
    }

    /// Starts taking messages (a collector connected): empty, not
    /// overflowed.
    pub fn activate(&mut self) {
        self.active = true;
        self.overflowed = false;
        self.msgs.clear();
    }

    /// Stops taking messages (the collector is gone).
    pub fn deactivate(&mut self) {
        self.active = false;
        self.msgs.clear();
    }

    /// Whether messages are taken now.
    pub fn is_active(&self) -> bool {
        self.active && !self.overflowed
    }

    /// Messages waiting.
    pub fn len(&self) -> usize {
        self.msgs.len()
    }

    /// Whether none wait.
    pub fn is_empty(&self) -> bool {
        self.msgs.is_empty()
    }

    /// Whether the queue overflowed since it was activated.
    pub fn is_overflowed(&self) -> bool {
        self.overflowed
    }

    /// Queues `m`; on overflow drops it and everything queued (counted).
    pub fn push(&mut self, m: Msg) -> Pushed {
        if !self.is_active() {
            return Pushed::Ignored;
        }
        if self.msgs.len() >= self.cap {
            self.dropped += self.msgs.len() as u64 + 1;
            self.overflows += 1;
            self.msgs.clear();
            self.overflowed = true;
            return Pushed::Overflow;
        }
        self.msgs.push_back(m);
        if self.msgs.len() == 1 {
            Pushed::Wake
        } else {
            Pushed::Queued
        }
    }

    /// Up to `max` messages, or the overflow.
    pub fn take(&mut self, max: usize) -> Take {
        if self.overflowed {
            return Take::Overflowed;
        }
        if self.msgs.is_empty() {
            return Take::Empty;
        }
        let n = self.msgs.len().min(max.max(1));
        Take::Msgs(self.msgs.drain(..n).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(b: u8) -> Msg {
        Arc::from(vec![b])
    }

    #[test]
    fn inactive_takes_nothing() {
        let mut q = Queue::new(2);
        assert_eq!(q.push(m(1)), Pushed::Ignored);
        assert_eq!(q.take(10), Take::Empty);
        q.activate();
        assert_eq!(q.push(m(1)), Pushed::Wake);
        assert_eq!(q.push(m(2)), Pushed::Queued);
        assert_eq!(q.take(1), Take::Msgs(vec![m(1)]));
        assert_eq!(q.take(10), Take::Msgs(vec![m(2)]));
        q.deactivate();
        assert_eq!(q.push(m(3)), Pushed::Ignored);
        assert_eq!(q.take(10), Take::Empty);
    }

    #[test]
    fn overflow_drops_everything_and_counts() {
        let mut q = Queue::new(2);
        q.activate();
        q.push(m(1));
        q.push(m(2));
        assert_eq!(q.push(m(3)), Pushed::Overflow);
        assert_eq!((q.dropped, q.overflows), (3, 1));
        assert!(q.is_overflowed());
        assert_eq!(
            q.push(m(4)),
            Pushed::Ignored,
            "an overflowed queue takes nothing more"
        );
        assert_eq!(q.take(10), Take::Overflowed);
        // Reconnected: a fresh start, counters kept.
        q.activate();
        assert!(!q.is_overflowed());
        assert_eq!(q.push(m(5)), Pushed::Wake);
        assert_eq!(q.take(10), Take::Msgs(vec![m(5)]));
        assert_eq!((q.dropped, q.overflows), (3, 1));
    }
}
