//! Loc-RIB best-route changes for a forwarding plane (the `fib` crate, or
//! anything else that wants to follow the best routes, as BIRD's `kernel`
//! protocol does).
//!
//! A subscriber is a bounded channel of batches. On subscription it gets
//! the whole Loc-RIB (in batches of [`SNAPSHOT_BATCH`]), then, after every
//! export round of the RIB thread, one batch with each prefix whose best
//! path changed, in the order the RIB saw them. The channel is bounded on
//! purpose: a forwarding plane that cannot keep up slows the RIB rather
//! than growing an unbounded queue; a subscriber that hangs up is dropped.
//!
//! Resolution of next hops to interfaces and MAC addresses is the
//! subscriber's business; here the next hop is the BGP NEXT_HOP as stored
//! (post-import-policy), with the IPv6 global address when a link-local one
//! is also present.
//!
//! After a graceful restart (`tesserad -R`) nothing is sent while
//! selection is deferred; when every RIB part's deferral is over and the
//! routes it selected were sent, each subscriber gets one empty batch: the
//! first full sync is complete (the `fib` dataplane then sweeps the kernel
//! routes it kept from before the restart and did not get again).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{SyncSender, TrySendError};
use std::sync::Arc;

pub use bgp_core::{best_next_hop, BestChange};

/// Routes per batch when the whole Loc-RIB is sent at subscription.
pub const SNAPSHOT_BATCH: usize = 4096;

/// The sending half of a subscription.
pub type BestSender = SyncSender<Vec<BestChange>>;

/// The subscribers of one RIB thread.
#[derive(Default)]
pub struct BestFeed {
    subs: Vec<BestSender>,
    batch: Vec<BestChange>,
    /// RIB parts whose first full sync after a graceful restart is not
    /// done yet (shared by the parts); `None` once this part's is.
    sync_gate: Option<Arc<AtomicUsize>>,
}

impl BestFeed {
    /// After a graceful restart: `gate` counts the RIB parts (each with
    /// its own feed) whose first full sync is still to come.
    pub fn await_sync(&mut self, gate: Arc<AtomicUsize>) {
        self.sync_gate = Some(gate);
    }

    /// Whether this part still owes its first full sync.
    pub fn awaiting_sync(&self) -> bool {
        self.sync_gate.is_some()
    }

    /// This part's first full sync was published: the last part to get
    /// here sends the end-of-sync marker (an empty batch) to every
    /// subscriber, after everything the parts sent before.
    pub fn synced(&mut self) {
        let Some(gate) = self.sync_gate.take() else {
            return;
        };
        if gate.fetch_sub(1, Ordering::AcqRel) != 1 {
            return;
        }
        self.subs.retain(|tx| tx.send(Vec::new()).is_ok());
    }

    pub fn is_empty(&self) -> bool {
        self.subs.is_empty()
    }

    /// Sends `snapshot` (the whole Loc-RIB) to `tx`, then registers it.
    pub fn subscribe(&mut self, snapshot: impl Iterator<Item = BestChange>, tx: BestSender) {
        let mut batch = Vec::with_capacity(SNAPSHOT_BATCH);
        for c in snapshot {
            batch.push(c);
            if batch.len() == SNAPSHOT_BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(SNAPSHOT_BATCH));
                if tx.send(full).is_err() {
                    return;
                }
            }
        }
        if !batch.is_empty() && tx.send(batch).is_err() {
            return;
        }
        self.subs.push(tx);
    }

    /// Sends one export round's changes to every subscriber (blocking
    /// while a subscriber's channel is full); `batch` is left empty.
    pub fn publish(&mut self, batch: &mut Vec<BestChange>) {
        if self.subs.is_empty() || batch.is_empty() {
            batch.clear();
            return;
        }
        std::mem::swap(&mut self.batch, batch);
        batch.clear();
        let last = self.subs.len() - 1;
        let mut i = 0;
        while i < self.subs.len() {
            let b = if i == last {
                std::mem::take(&mut self.batch)
            } else {
                self.batch.clone()
            };
            let gone = match self.subs[i].try_send(b) {
                Ok(()) => false,
                Err(TrySendError::Full(b)) => self.subs[i].send(b).is_err(),
                Err(TrySendError::Disconnected(_)) => true,
            };
            if gone {
                self.subs.swap_remove(i);
                if self.subs.is_empty() {
                    break;
                }
            } else {
                i += 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(p: &str) -> BestChange {
        BestChange {
            prefix: p.parse().expect("prefix"),
            next_hop: Some("198.18.1.2".parse().expect("ip")),
            ecmp: Vec::new(),
        }
    }

    /// Two RIB parts after a graceful restart: the end-of-sync marker (an
    /// empty batch) goes out once, when the second part is synced, after
    /// both parts' routes; a part that is synced again sends nothing.
    #[test]
    fn end_of_sync_marker_follows_every_parts_routes() {
        let (tx, rx) = std::sync::mpsc::sync_channel(16);
        let gate = Arc::new(AtomicUsize::new(2));
        let mut parts: Vec<BestFeed> = (0..2).map(|_| BestFeed::default()).collect();
        for p in &mut parts {
            p.subscribe(std::iter::empty(), tx.clone());
            p.await_sync(gate.clone());
            assert!(p.awaiting_sync());
        }
        parts[0].publish(&mut vec![change("198.19.1.0/24")]);
        parts[0].synced();
        parts[0].synced();
        assert!(!parts[0].awaiting_sync());
        parts[1].publish(&mut vec![change("198.19.2.0/24")]);
        assert_eq!(rx.try_recv().map(|b| b.len()), Ok(1));
        assert_eq!(rx.try_recv().map(|b| b.len()), Ok(1));
        assert!(rx.try_recv().is_err(), "no marker before the last part");
        parts[1].synced();
        assert_eq!(rx.try_recv(), Ok(Vec::new()));
        parts[1].synced();
        assert!(rx.try_recv().is_err(), "one marker only");
    }
}
