//! Per-core packet counters for the management side: packets received
//! and sent, and drops summed by reason name over the core's graph.
//!
//! The worker stores its running totals into [`CoreStats`] with relaxed
//! atomic stores, at most once per non-empty poll (a batch), and the
//! drops only every [`DROPS_EVERY`] busy polls and when it goes idle:
//! nothing is allocated and no lock is taken on the packet path. The
//! reason names are set when a graph is built or replaced (a lock, off
//! the packet path). Readers ([`CoreStats::snapshot`]) see totals that
//! only grow: drops of a replaced graph are kept in a base the worker
//! adds to the new graph's.
//!
//! Per-queue counters (one entry per (port, queue) the core reads, from
//! `pkt::Device::queue_stats`) are stored under a lock with the element
//! counters, every `PUBLISH_ROUNDS` busy rounds and when the core goes
//! idle (`GraphWorker::publish`): reading them may make a system call per
//! queue (the kernel's ring drops), which the per-batch path must not.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use graph::{slot_name, DropReason, Element, Graph};

/// Distinct drop reason names one core publishes; reasons beyond the
/// last slot are counted as `other`.
pub const CORE_REASONS: usize = 48;

/// Busy polls between two stores of the drop counters.
pub const DROPS_EVERY: u64 = 64;

/// One core's published counters (written by that core only).
pub struct CoreStats {
    rx: AtomicU64,
    tx: AtomicU64,
    drops: [AtomicU64; CORE_REASONS],
    names: Mutex<Vec<&'static str>>,
    queues: Mutex<Vec<PortQueue>>,
}

/// One (port, queue)'s counters on the core that reads it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PortQueue {
    /// The port's index (configuration order).
    pub port: usize,
    /// The queue and its counters.
    pub q: pkt::QueueStats,
}

impl Default for CoreStats {
    fn default() -> Self {
        CoreStats {
            rx: AtomicU64::new(0),
            tx: AtomicU64::new(0),
            drops: std::array::from_fn(|_| AtomicU64::new(0)),
            names: Mutex::new(Vec::new()),
            queues: Mutex::new(Vec::new()),
        }
    }
}

/// A reading of one core's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CoreSnapshot {
    /// Packets received from the core's devices.
    pub rx: u64,
    /// Packets sent to them.
    pub tx: u64,
    /// Drops by reason name (every reason the graph can drop for, zeros
    /// included), in the order the reasons were first seen.
    pub drops: Vec<(&'static str, u64)>,
    /// Each (port, queue) this core reads, by port then queue (empty for
    /// devices not bound to queues: AF_PACKET, the fabric socket).
    pub queues: Vec<PortQueue>,
}

impl CoreStats {
    /// Names the drop slots of a core that runs no graph of its own (the
    /// virtual routers' demultiplexer, [`super::vr`]): set once, off the
    /// packet path.
    pub fn set_names(&self, names: &[&'static str]) {
        *self.names.lock().unwrap_or_else(PoisonError::into_inner) =
            names.iter().take(CORE_REASONS).copied().collect();
    }

    /// Stores packets in and out and the drops of the slots named by
    /// [`CoreStats::set_names`], in that order (relaxed stores).
    pub fn store(&self, rx: u64, tx: u64, drops: &[u64]) {
        self.rx.store(rx, Ordering::Relaxed);
        self.tx.store(tx, Ordering::Relaxed);
        for (a, v) in self.drops.iter().zip(drops) {
            a.store(*v, Ordering::Relaxed);
        }
    }

    /// Stores the per-queue counters (off the per-batch path: a lock).
    pub fn set_queues(&self, q: Vec<PortQueue>) {
        *self.queues.lock().unwrap_or_else(PoisonError::into_inner) = q;
    }

    /// The counters now.
    pub fn snapshot(&self) -> CoreSnapshot {
        let names = self
            .names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        CoreSnapshot {
            rx: self.rx.load(Ordering::Relaxed),
            tx: self.tx.load(Ordering::Relaxed),
            drops: names
                .iter()
                .zip(&self.drops)
                .map(|(n, v)| (*n, v.load(Ordering::Relaxed)))
                .collect(),
            queues: self
                .queues
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        }
    }
}

/// The worker's side: where each (element, slot) of its graph adds up,
/// and the drops of the graphs it replaced.
pub struct CorePublisher {
    stats: std::sync::Arc<CoreStats>,
    names: Vec<&'static str>,
    /// (element index, drop slot, reason index).
    map: Vec<(u32, u8, u8)>,
    base: [u64; CORE_REASONS],
    busy: u64,
}

impl CorePublisher {
    pub fn new(stats: std::sync::Arc<CoreStats>) -> Self {
        CorePublisher {
            stats,
            names: Vec::new(),
            map: Vec::new(),
            base: [0; CORE_REASONS],
            busy: 0,
        }
    }

    fn reason(&mut self, name: &'static str) -> u8 {
        if let Some(i) = self.names.iter().position(|n| *n == name) {
            return i as u8;
        }
        if self.names.len() + 1 < CORE_REASONS {
            self.names.push(name);
            return (self.names.len() - 1) as u8;
        }
        if self.names.len() + 1 == CORE_REASONS {
            self.names.push("other");
        }
        (CORE_REASONS - 1) as u8
    }

    /// Indexes the drop slots of `g` (a new graph); names are published.
    pub fn index<E: Element>(&mut self, g: &Graph<E>) {
        self.map.clear();
        for (i, (_, e, _)) in g.iter().enumerate() {
            let own = e.drop_names();
            for k in 0..DropReason::GENERIC + own.len().min(DropReason::MAX_OWN) {
                let r = self.reason(slot_name(k, own));
                self.map.push((i as u32, k as u8, r));
            }
        }
        *self
            .stats
            .names
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = self.names.clone();
    }

    /// Sums the drops of `g` by reason into `out` (from the base).
    fn drops<E: Element>(&self, g: &Graph<E>, out: &mut [u64; CORE_REASONS]) {
        *out = self.base;
        for &(e, s, r) in &self.map {
            if let Some(st) = g.stats(e as usize) {
                out[usize::from(r)] += st.drops[usize::from(s)];
            }
        }
    }

    /// Before `g` is replaced: its drops go into the base.
    pub fn retire<E: Element>(&mut self, g: &Graph<E>) {
        let mut d = [0; CORE_REASONS];
        self.drops(g, &mut d);
        self.base = d;
        self.map.clear();
    }

    /// After a poll that moved packets: rx and tx, and the drops every
    /// [`DROPS_EVERY`] calls (relaxed stores, no allocation, no lock).
    pub fn batch<E: Element>(&mut self, g: &Graph<E>, rx: u64, tx: u64) {
        self.stats.rx.store(rx, Ordering::Relaxed);
        self.stats.tx.store(tx, Ordering::Relaxed);
        self.busy += 1;
        if self.busy % DROPS_EVERY == 0 {
            self.store_drops(g);
        }
    }

    /// Everything now (when the core goes idle or stops).
    pub fn flush<E: Element>(&mut self, g: &Graph<E>, rx: u64, tx: u64) {
        self.stats.rx.store(rx, Ordering::Relaxed);
        self.stats.tx.store(tx, Ordering::Relaxed);
        self.store_drops(g);
    }

    fn store_drops<E: Element>(&self, g: &Graph<E>) {
        let mut d = [0; CORE_REASONS];
        self.drops(g, &mut d);
        for (a, v) in self.stats.drops.iter().zip(d.iter()).take(self.names.len()) {
            a.store(*v, Ordering::Relaxed);
        }
    }
}
