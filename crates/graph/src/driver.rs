//! The run-to-completion driver: one per core.
//!
//! Each [`Runner::poll`] receives up to `burst` packets from every device
//! bound to a `FromDevice` element (RouteBricks' kp, seed 003), pushes
//! them through the graph to completion, runs element ticks (queues,
//! neighbour timers), then hands each `ToDevice` element's batch to its
//! device. Nothing is shared with other cores; counters are plain integers.
//!
//! Receivers are polled by weight: each has tickets (at most
//! [`MAX_TICKETS`], polled every round) that a `NICBalance` element in the
//! graph lowers, or suspends, under transmit congestion (see
//! [`crate::balance`]). [`Runner::receive`] and [`Runner::process`] are the
//! two halves of a poll, separately callable by the virtual-router
//! scheduler ([`crate::vr`]).

use pkt::{Batch, Device, Pool};

use crate::balance::{decide, ewma, Action, BalanceSpec, BalanceStats, MAX_TICKETS, TICKET_STEP};
use crate::element::{DeviceRole, Element};
use crate::graph::Graph;

/// A receiving device bound to a FromDevice element, with its weight.
#[derive(Copy, Clone, Debug)]
struct RxBind {
    dev: usize,
    elem: usize,
    tickets: u32,
    credit: u32,
    suspended: u32,
    /// Packets received since the last balance evaluation.
    count: u64,
    /// Polls withheld (too few tickets, or suspended), ever.
    skipped: u64,
    /// The correlation that suspended it (meaningful while suspended).
    suspended_by: usize,
}

/// What the driver knows of one receiver (for counters).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct RxState {
    /// The FromDevice element's index in the graph.
    pub elem: usize,
    /// Its device's index (in [`Runner::devices`]).
    pub dev: usize,
    /// Its current tickets (at most [`MAX_TICKETS`]).
    pub tickets: u32,
    /// Polls withheld from it by NICBalance (ticket cuts and suspensions),
    /// since the graph was bound.
    pub skipped: u64,
}

/// A transmitting ToDevice element and its device.
#[derive(Copy, Clone, Debug)]
struct TxBind {
    elem: usize,
    dev: usize,
    /// Packets sent since the last balance evaluation.
    count: u64,
}

/// A NICBalance correlation resolved to indices.
#[derive(Debug)]
struct Balance {
    /// The NICBalance element's index in the graph.
    elem: usize,
    spec: BalanceSpec,
    tx: usize,
    rx: Vec<usize>,
    queues: Vec<usize>,
    ema: u64,
    since: u32,
    stats: BalanceStats,
}

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
    rx: Vec<RxBind>,
    tx: Vec<TxBind>,
    balances: Vec<Balance>,
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
        let (rx, tx, balances) = Self::bind(&graph, &devices)?;
        let pool = graph.pool().clone();
        let burst = burst.clamp(1, pkt::MAX_BATCH);
        Ok(Runner {
            graph,
            devices,
            rx,
            tx,
            balances,
            pool,
            rx_batch: Batch::with_capacity(burst),
            burst,
            stats: RunnerStats::default(),
            clock: std::time::Instant::now(),
        })
    }

    /// Replaces the graph by `graph`, bound to the same devices (and
    /// allocating from its own pool), and returns the old one; on a bind
    /// error nothing changes. Packets still in the old graph's queues go
    /// with it. The driver's counters go on.
    pub fn replace_graph(&mut self, graph: Graph<E>) -> Result<Graph<E>, BindError> {
        let (rx, tx, balances) = Self::bind(&graph, &self.devices)?;
        self.rx = rx;
        self.tx = tx;
        self.balances = balances;
        self.pool = graph.pool().clone();
        Ok(std::mem::replace(&mut self.graph, graph))
    }

    #[allow(clippy::type_complexity)]
    fn bind(
        graph: &Graph<E>,
        devices: &[D],
    ) -> Result<(Vec<RxBind>, Vec<TxBind>, Vec<Balance>), BindError> {
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
                rx.push(RxBind {
                    dev: di,
                    elem: i,
                    tickets: MAX_TICKETS,
                    credit: 0,
                    suspended: 0,
                    count: 0,
                    skipped: 0,
                    suspended_by: 0,
                });
            } else {
                tx.push(TxBind {
                    elem: i,
                    dev: di,
                    count: 0,
                });
            }
        }
        let mut balances = Vec::new();
        for (bi, (name, e, _)) in graph.iter().enumerate() {
            let Some(spec) = e.balance() else { continue };
            let missing = |what: &str| BindError {
                element: name.to_string(),
                device: what.to_string(),
            };
            let tx_i = tx
                .iter()
                .position(|t| graph.name(t.elem) == Some(spec.tx.as_str()))
                .ok_or_else(|| missing(&spec.tx))?;
            let mut rx_i = Vec::new();
            for r in &spec.rx {
                rx_i.push(
                    rx.iter()
                        .position(|b| graph.name(b.elem) == Some(r.as_str()))
                        .ok_or_else(|| missing(r))?,
                );
            }
            let mut queues = Vec::new();
            for q in &spec.queues {
                let qi = graph
                    .find(q)
                    .filter(|&qi| graph.element(qi).and_then(Element::queue_len).is_some())
                    .ok_or_else(|| missing(q))?;
                queues.push(qi);
            }
            balances.push(Balance {
                elem: bi,
                spec: spec.clone(),
                tx: tx_i,
                rx: rx_i,
                queues,
                ema: 0,
                since: 0,
                stats: BalanceStats::default(),
            });
        }
        Ok((rx, tx, balances))
    }

    /// One round: receive, process, tick, transmit. Returns the number of
    /// packets received.
    pub fn poll(&mut self) -> usize {
        let got = self.receive();
        self.process();
        got
    }

    /// The first half of a poll: sets the clock and receives from every
    /// device whose turn it is (by tickets; suspended ones skip), leaving
    /// the packets at the FromDevice inputs. Returns packets received.
    pub fn receive(&mut self) -> usize {
        self.graph
            .set_now_ns(self.clock.elapsed().as_nanos() as u64);
        let mut got = 0;
        for k in 0..self.rx.len() {
            let b = &mut self.rx[k];
            if b.suspended > 0 {
                b.suspended -= 1;
                b.skipped += 1;
                continue;
            }
            b.credit += b.tickets;
            if b.credit < MAX_TICKETS {
                b.skipped += 1;
                continue;
            }
            b.credit -= MAX_TICKETS;
            let (di, ei) = (b.dev, b.elem);
            let Some(dev) = self.devices.get_mut(di) else {
                continue;
            };
            let n = dev.rx_burst(&self.pool, &mut self.rx_batch, self.burst);
            for p in self.rx_batch.iter_mut() {
                p.anno.in_port = di as u16;
            }
            let b = &mut self.rx[k];
            b.count += n as u64;
            if n > 0 {
                // Additive increase (seed 004 §4.4.2).
                b.tickets = (b.tickets + TICKET_STEP).min(MAX_TICKETS);
            }
            got += n;
            self.graph.inject(ei, 0, &mut self.rx_batch);
        }
        self.stats.rx += got as u64;
        got
    }

    /// The second half of a poll: runs the graph to completion, the
    /// element ticks, transmits, and evaluates NICBalance correlations.
    pub fn process(&mut self) {
        self.graph.run();
        self.graph.tick();
        self.flush_tx();
        self.stats.polls += 1;
        if !self.balances.is_empty() {
            self.balance();
        }
    }

    /// Packets waiting at the graph's inputs (received, not processed).
    pub fn staged(&self) -> usize {
        self.graph.pending_len()
    }

    fn flush_tx(&mut self) {
        for k in 0..self.tx.len() {
            let TxBind {
                elem: ei, dev: di, ..
            } = self.tx[k];
            let (Some(e), Some(dev)) = (self.graph.element_mut(ei), self.devices.get_mut(di))
            else {
                continue;
            };
            let Some(b) = e.tx_batch() else { continue };
            if b.is_empty() {
                continue;
            }
            // What the device did not take stays in the element's batch
            // (its transmit ring) for the next poll; the element drops
            // `tx_full` when that batch is full.
            let sent = dev.tx_burst(b);
            dev.flush();
            self.stats.tx += sent as u64;
            self.tx[k].count += sent as u64;
        }
    }

    /// Seed 004 §4.7, once every `interval` polls per correlation.
    fn balance(&mut self) {
        for bi in 0..self.balances.len() {
            let bal = &mut self.balances[bi];
            bal.since += 1;
            if bal.since < bal.spec.params.interval.max(1) {
                continue;
            }
            bal.since = 0;
            bal.stats.evaluations += 1;
            let n = bal.queues.len().max(1) as u64;
            let total: u64 = bal
                .queues
                .iter()
                .filter_map(|&q| self.graph.element(q).and_then(Element::queue_len))
                .map(|l| l as u64)
                .sum();
            bal.ema = ewma(bal.ema, total / n, bal.spec.params.qstability);
            bal.stats.qema = bal.ema >> 8;
            let sent = self.tx.get(bal.tx).map_or(0, |t| t.count);
            // Congested: the EWMA (§4.7) and the queues now both above
            // QTHRESHOLD. The EWMA lags a draining queue by many
            // evaluations; acting on it alone keeps receivers off while
            // the transmitter runs dry (measured: a third of a slow
            // port's rate lost, crates/fib/tests/graph_engine.rs).
            let thr = u64::from(bal.spec.params.qthreshold);
            if (bal.ema >> 8) > thr && total / n > thr {
                bal.stats.congested += 1;
                for &ri in &bal.rx {
                    let Some(r) = self.rx.get_mut(ri) else {
                        continue;
                    };
                    let ratio = r.count as f64 / sent.max(1) as f64;
                    match decide(&bal.spec.params, ratio, r.tickets) {
                        Action::Keep => {}
                        Action::Lower(t) => {
                            r.tickets = t;
                            bal.stats.lowered += 1;
                        }
                        Action::Suspend => {
                            r.suspended = bal.spec.params.suspend;
                            r.suspended_by = bi;
                            bal.stats.suspended += 1;
                        }
                    }
                }
            } else {
                // Not congested (any more): a receiver this correlation
                // suspended comes back now rather than after `suspend`
                // polls (cluster-spec §3.2 GAP: "suspend until the next
                // check that finds Qema <= QTHRESHOLD"; here: or the
                // queues now), so that a long suspension does not idle
                // the transmitter.
                for &ri in &bal.rx {
                    if let Some(r) = self.rx.get_mut(ri) {
                        if r.suspended > 0 && r.suspended_by == bi {
                            r.suspended = 0;
                        }
                    }
                }
            }
        }
        // Rates are per interval: reset the counters every correlation
        // read (correlations share one interval length in practice).
        if self.balances.iter().all(|b| b.since == 0) {
            for r in &mut self.rx {
                r.count = 0;
            }
            for t in &mut self.tx {
                t.count = 0;
            }
        }
    }

    /// Counters of each NICBalance correlation, in config order.
    pub fn balance_stats(&self) -> Vec<BalanceStats> {
        self.balances.iter().map(|b| b.stats).collect()
    }

    /// Each NICBalance correlation as (its element's index in the graph,
    /// its counters), in graph order.
    pub fn balances(&self) -> Vec<(usize, BalanceStats)> {
        self.balances.iter().map(|b| (b.elem, b.stats)).collect()
    }

    /// Each receiver's tickets and withheld polls, in graph order.
    pub fn rx_state(&self) -> Vec<RxState> {
        self.rx
            .iter()
            .map(|r| RxState {
                elem: r.elem,
                dev: r.dev,
                tickets: r.tickets,
                skipped: r.skipped,
            })
            .collect()
    }

    /// Current tickets of each receiver, in config order (for tests).
    pub fn rx_tickets(&self) -> Vec<u32> {
        self.rx.iter().map(|r| r.tickets).collect()
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

    /// Takes the devices out, for another driver to use a while (a core
    /// that switches to virtual routers, [`crate::vr`]); the graph stays
    /// bound to their indices, and a poll without them receives and sends
    /// nothing. [`Runner::put_devices`] gives them back.
    pub fn take_devices(&mut self) -> Vec<D> {
        std::mem::take(&mut self.devices)
    }

    /// Gives back the devices [`Runner::take_devices`] took: the same
    /// devices in the same order (the bindings are by index).
    pub fn put_devices(&mut self, devices: Vec<D>) {
        self.devices = devices;
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
