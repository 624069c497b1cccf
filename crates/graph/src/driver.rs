//! The run-to-completion driver: one per core.
//!
//! Each [`Runner::poll`] receives up to `burst` packets from every device
//! bound to a `FromDevice` element (RouteBricks' kp, seed 003), pushes
//! them through the graph to completion, runs element ticks (queues,
//! neighbour timers), then hands each `ToDevice` element's batch to its
//! device. Nothing is shared with other cores; counters are plain integers.

use pkt::{Batch, Device, Pool};

use crate::element::{DeviceRole, DropReason, Element};
use crate::graph::Graph;

/// A device name in the graph with no matching device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindError {
    /// The element naming it.
    pub element: String,
    /// The device name.
    pub device: String,
}

impl std::fmt::Display for BindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "element {} names device '{}', which was not given",
            self.element, self.device
        )
    }
}
impl std::error::Error for BindError {}

/// Counters of the driver itself.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct RunnerStats {
    /// Polls done.
    pub polls: u64,
    /// Packets received from devices.
    pub rx: u64,
    /// Packets sent to devices.
    pub tx: u64,
}

/// Drives one graph over a set of devices of type `D` on one core.
pub struct Runner<E: Element, D: Device> {
    /// The graph.
    pub graph: Graph<E>,
    devices: Vec<D>,
    rx: Vec<(usize, usize)>,
    tx: Vec<(usize, usize)>,
    pool: Pool,
    rx_batch: Batch,
    burst: usize,
    stats: RunnerStats,
    clock: std::time::Instant,
}

impl<E: Element, D: Device> Runner<E, D> {
    /// Binds every FromDevice/ToDevice element of `graph` to the device of
    /// the same name. `burst` is the most packets taken per device per poll
    /// (at most 256).
    pub fn new(graph: Graph<E>, devices: Vec<D>, burst: usize) -> Result<Self, BindError> {
        let mut rx = Vec::new();
        let mut tx = Vec::new();
        for (i, (name, e, _)) in graph.iter().enumerate() {
            let (dev, is_rx) = match e.device() {
                Some(DeviceRole::From(d)) => (d, true),
                Some(DeviceRole::To(d)) => (d, false),
                None => continue,
            };
            let di = devices
                .iter()
                .position(|x| x.name() == dev)
                .ok_or_else(|| BindError {
                    element: name.to_string(),
                    device: dev.to_string(),
                })?;
            if is_rx {
                rx.push((di, i));
            } else {
                tx.push((i, di));
            }
        }
        let pool = graph.pool().clone();
        let burst = burst.clamp(1, pkt::MAX_BATCH);
        Ok(Runner {
            graph,
            devices,
            rx,
            tx,
            pool,
            rx_batch: Batch::with_capacity(burst),
            burst,
            stats: RunnerStats::default(),
            clock: std::time::Instant::now(),
        })
    }

    /// One round: receive, process, tick, transmit. Returns the number of
    /// packets received.
    pub fn poll(&mut self) -> usize {
        self.graph
            .set_now_ns(self.clock.elapsed().as_nanos() as u64);
        let mut got = 0;
        for k in 0..self.rx.len() {
            let (di, ei) = self.rx[k];
            let Some(dev) = self.devices.get_mut(di) else {
                continue;
            };
            let n = dev.rx_burst(&self.pool, &mut self.rx_batch, self.burst);
            for p in self.rx_batch.iter_mut() {
                p.anno.in_port = di as u16;
            }
            got += n;
            self.graph.inject(ei, 0, &mut self.rx_batch);
        }
        self.graph.run();
        self.graph.tick();
        self.flush_tx();
        self.stats.polls += 1;
        self.stats.rx += got as u64;
        got
    }

    fn flush_tx(&mut self) {
        for k in 0..self.tx.len() {
            let (ei, di) = self.tx[k];
            let (Some(e), Some(dev)) = (self.graph.element_mut(ei), self.devices.get_mut(di))
            else {
                continue;
            };
            let Some(b) = e.tx_batch() else { continue };
            if b.is_empty() {
                continue;
            }
            let sent = dev.tx_burst(b);
            let left = b.len() as u64;
            b.clear();
            dev.flush();
            self.stats.tx += sent as u64;
            if left > 0 {
                self.graph.count_drops(ei, DropReason::TxFull, left);
            }
        }
    }

    /// Polls until no device has anything to receive and the graph is
    /// idle, at most `max_polls` times. Returns packets received.
    pub fn run_until_idle(&mut self, max_polls: usize) -> usize {
        let mut total = 0;
        for _ in 0..max_polls {
            let n = self.poll();
            total += n;
            if n == 0 && self.graph.pending_len() == 0 {
                break;
            }
        }
        total
    }

    /// The devices.
    pub fn devices(&self) -> &[D] {
        &self.devices
    }
    /// The devices, writable.
    pub fn devices_mut(&mut self) -> &mut [D] {
        &mut self.devices
    }
    /// Driver counters.
    pub fn stats(&self) -> RunnerStats {
        self.stats
    }
}
