//! The views of one RIB part (see [`crate::view_feed`]): their channels,
//! and registration with the part's snapshot.

use std::sync::mpsc::{SyncSender, TrySendError};

use bgp_core::{BestChange, ViewBatch};

use super::RibState;
use crate::fib_feed::{BestSender, SNAPSHOT_BATCH};

/// One view: a name, the neighbours (by `[[neighbor]]` name) whose routes
/// it selects among, and where its changes go.
#[derive(Clone, Debug)]
pub struct ViewSpec {
    /// The view's name (unique; a virtual router's name in tesserad).
    pub name: String,
    /// Neighbour names; one that is not configured or not up contributes
    /// nothing.
    pub neighbors: Vec<String>,
    /// The follower's channel.
    pub tx: SyncSender<Vec<BestChange>>,
}

/// The views of one RIB part.
#[derive(Default)]
pub struct ViewFeed {
    subs: Vec<(String, BestSender)>,
}

impl ViewFeed {
    fn sender(&self, name: &str) -> Option<&BestSender> {
        self.subs.iter().find(|(n, _)| n == name).map(|(_, t)| t)
    }

    fn remove(&mut self, name: &str) {
        self.subs.retain(|(n, _)| n != name);
    }

    /// Sends one export round's batches to their views (blocking while a
    /// channel is full); returns the views whose receiver is gone.
    pub(crate) fn publish(&mut self, batches: &mut Vec<ViewBatch>) -> Vec<String> {
        let mut gone = Vec::new();
        for b in batches.drain(..) {
            let Some(tx) = self.sender(&b.view) else {
                continue;
            };
            let lost = match tx.try_send(b.changes) {
                Ok(()) => false,
                Err(TrySendError::Full(c)) => tx.send(c).is_err(),
                Err(TrySendError::Disconnected(_)) => true,
            };
            if lost {
                gone.push(b.view);
            }
        }
        for n in &gone {
            self.remove(n);
        }
        gone
    }
}

impl RibState {
    /// Registers the view `v` in this part (replacing a view of that name):
    /// this part's snapshot goes to `v.tx` now, then every change. Returns
    /// false when the receiver is gone (nothing is registered then).
    pub fn set_view(&mut self, v: &ViewSpec) -> bool {
        self.view_feed.remove(&v.name);
        let mut batch = Vec::with_capacity(SNAPSHOT_BATCH);
        let mut ok = true;
        let tx = &v.tx;
        self.core.set_view(&v.name, &v.neighbors, |c| {
            if !ok {
                return;
            }
            batch.push(c);
            if batch.len() == SNAPSHOT_BATCH {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(SNAPSHOT_BATCH));
                ok = tx.send(full).is_ok();
            }
        });
        if ok && !batch.is_empty() {
            ok = tx.send(batch).is_ok();
        }
        if ok {
            self.view_feed.subs.push((v.name.clone(), v.tx.clone()));
        } else {
            self.core.remove_view(&v.name);
        }
        ok
    }

    /// Stops the view `name` in this part; whether it was registered.
    pub fn remove_view(&mut self, name: &str) -> bool {
        self.view_feed.remove(name);
        self.core.remove_view(name)
    }

    /// Replaces this part's views by `views`: each gets a snapshot, the
    /// others stop.
    pub fn set_views(&mut self, views: &[ViewSpec]) {
        self.close_views();
        for v in views {
            self.set_view(v);
        }
    }

    /// Stops every view (at shutdown, as [`Self::close_best_feed`]: the
    /// sessions closing then are no routing change for a VR's FIB).
    pub fn close_views(&mut self) {
        let names: Vec<String> = self.core.view_names().map(str::to_string).collect();
        for n in names {
            self.remove_view(&n);
        }
    }

    /// Hands the core's view batches to their channels.
    pub(crate) fn publish_views(&mut self, batches: &mut Vec<ViewBatch>) {
        for n in self.view_feed.publish(batches) {
            self.core.remove_view(&n);
        }
    }
}
