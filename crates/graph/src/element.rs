//! The element interface, drop reasons and per-element counters.

use pkt::{Batch, Packet, Pool};

use crate::lang::Arg;

/// Why a packet was dropped: one of the graph's own generic reasons, or
/// one of the element's own, which each element kind registers by name
/// ([`Element::drop_names`]; like the error strings of a VPP node). A
/// reason is a counter slot of [`ElemStats::drops`]: slots
/// `0..GENERIC` are the generic reasons, slot `GENERIC + i` is the
/// element's `drop_names()[i]`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DropReason(u8);

impl DropReason {
    /// Sent to an output port with no connection.
    pub const UNCONNECTED: DropReason = DropReason(0);
    /// The downstream input was full (more than its in-degree × 256).
    pub const OVERFLOW: DropReason = DropReason(1);
    /// Left in a batch by an element that did not consume it (a bug).
    pub const UNPROCESSED: DropReason = DropReason(2);
    /// The pool had no buffer for a new packet (ICMP error, ARP request,
    /// Tee copy).
    pub const NO_BUFFER: DropReason = DropReason(3);
    /// The device's transmit ring was full.
    pub const TX_FULL: DropReason = DropReason(4);
    /// Number of generic reasons.
    pub const GENERIC: usize = 5;
    /// Names of the generic reasons, by slot.
    pub const GENERIC_NAMES: [&'static str; DropReason::GENERIC] = [
        "unconnected",
        "overflow",
        "unprocessed",
        "no_buffer",
        "tx_full",
    ];
    /// Counter slots per element (generic and own reasons).
    pub const SLOTS: usize = 16;
    /// Most reasons an element kind may register.
    pub const MAX_OWN: usize = DropReason::SLOTS - DropReason::GENERIC;

    /// The element's own reason `i`: its `drop_names()[i]`. Fails to
    /// compile in a `const` beyond [`DropReason::MAX_OWN`].
    pub const fn own(i: u8) -> DropReason {
        assert!((i as usize) < DropReason::MAX_OWN, "too many drop reasons");
        DropReason(DropReason::GENERIC as u8 + i)
    }
    /// The counter slot.
    #[inline(always)]
    pub const fn slot(self) -> usize {
        // Masked so that indexing a `[u64; SLOTS]` needs no bounds check.
        self.0 as usize & (DropReason::SLOTS - 1)
    }
    /// The name of this reason for an element whose own reasons are `own`
    /// (`"unknown"` for a slot the element did not register).
    pub fn name(self, own: &[&'static str]) -> &'static str {
        slot_name(self.slot(), own)
    }
}

/// The name of counter slot `slot` for an element registering `own`.
pub fn slot_name(slot: usize, own: &[&'static str]) -> &'static str {
    match DropReason::GENERIC_NAMES.get(slot) {
        Some(n) => n,
        None => own
            .get(slot - DropReason::GENERIC)
            .copied()
            .unwrap_or("unknown"),
    }
}

/// Counters the graph keeps for every element. Plain integers: a graph
/// belongs to one core, so there are no shared atomics on the fast path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ElemStats {
    /// Packets handed to the element.
    pub rx: u64,
    /// Packets the element emitted on any port.
    pub tx: u64,
    /// Drops by reason, indexed by [`DropReason::slot`] (names from
    /// [`slot_name`] and the element's [`Element::drop_names`]).
    pub drops: [u64; DropReason::SLOTS],
}

impl ElemStats {
    /// Drops for one reason.
    pub fn dropped(&self, r: DropReason) -> u64 {
        self.drops[r.slot()]
    }
    /// All drops.
    pub fn total_drops(&self) -> u64 {
        self.drops.iter().sum()
    }
}

/// The role of a device element, so the driver can bind it to a device.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum DeviceRole<'a> {
    /// Receives from the named device (packets are injected on input 0).
    From(&'a str),
    /// Transmits to the named device (see [`Element::tx_batch`]).
    To(&'a str),
}

/// Where a connected output port leads: a downstream input slot.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Target {
    pub(crate) slot: u32,
}

pub(crate) const UNCONNECTED: u32 = u32::MAX;

/// What [`Output::dispatch`] does with one packet: send it on an output
/// port, drop it with a reason, or keep it in the batch for the element's
/// own slow path. Two bytes, so a batch's verdicts fit in a small array.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Verdict(u16);

impl Verdict {
    const DROP: u16 = 0x8000;
    /// Leave the packet in the batch (the element handles it after
    /// `dispatch` returns, e.g. an ARP hold queue).
    pub const KEEP: Verdict = Verdict(u16::MAX);
    /// Send on output `port` (ports are < 0x8000).
    #[inline(always)]
    pub const fn port(port: u16) -> Verdict {
        Verdict(port & 0x7fff)
    }
    /// Drop, counting `reason`.
    #[inline(always)]
    pub const fn drop(reason: DropReason) -> Verdict {
        Verdict(Self::DROP | reason.0 as u16)
    }
    /// The output port, for a verdict that sends the packet on one.
    #[inline(always)]
    pub const fn out_port(self) -> Option<u16> {
        if self.0 < Self::DROP {
            Some(self.0)
        } else {
            None
        }
    }
}

/// What an element uses to emit and drop packets while it runs.
pub struct Output<'a> {
    pub(crate) targets: &'a [Target],
    pub(crate) pending: &'a mut [Batch],
    pub(crate) stats: &'a mut ElemStats,
    pub(crate) pool: &'a Pool,
    pub(crate) now_ns: u64,
    /// One verdict per packet of the batch being dispatched (graph-owned,
    /// sized for the largest batch, so dispatch never allocates).
    pub(crate) verdicts: &'a mut [u16],
    /// Packets a dispatch keeps (graph-owned, as large as any batch).
    pub(crate) keep: &'a mut Batch,
}

impl Output<'_> {
    /// Decides every packet of `batch` with `f` (which may rewrite it in
    /// place) and then moves the packets where their verdicts say, leaving
    /// only the [`Verdict::KEEP`] ones in `batch`, in order.
    ///
    /// This is the fast path of the graph: when every packet of the batch
    /// goes to the same port (the common case on a forwarding path), the
    /// whole batch moves downstream at once (a buffer swap or one
    /// `memcpy`), instead of one 48-byte packet move per push.
    #[inline(always)]
    pub fn dispatch(&mut self, batch: &mut Batch, mut f: impl FnMut(&mut Packet) -> Verdict) {
        let n = batch.len();
        // Borrowed out of `self` so `push` can run while reading them.
        let all = std::mem::take(&mut self.verdicts);
        let Some(vs) = all.get_mut(..n) else {
            self.verdicts = all;
            // Larger than any input batch (cannot happen: the graph sizes
            // the verdicts for its largest batch); decide one by one.
            let mut rest = std::mem::take(batch);
            for mut p in rest.drain() {
                let v = f(&mut p);
                self.apply(v, p, batch);
            }
            return;
        };
        // The first packet's verdict, then whether all agree. (`KEEP` is
        // `u16::MAX`, so it cannot double as "not yet set": a batch that
        // began with kept packets once counted as uniform on the verdict
        // after them, and the kept packets went out on that port.)
        let mut first = None;
        let mut uniform = true;
        for (p, v) in batch.as_mut_slice().iter_mut().zip(vs.iter_mut()) {
            let x = f(p).0;
            let f0 = *first.get_or_insert(x);
            uniform &= x == f0;
            *v = x;
        }
        let first = first.unwrap_or(Verdict::KEEP.0);
        if n == 0 {
            self.verdicts = all;
            return;
        }
        if uniform && first < Verdict::DROP {
            self.verdicts = all;
            self.forward_all(first, batch);
            return;
        }
        if uniform && first == Verdict::KEEP.0 {
            // Everything stays (an element's own second stage follows).
            self.verdicts = all;
            return;
        }
        // Mixed verdicts: move by runs of equal verdict (one bulk copy per
        // run, never a packet through the stack); kept packets go back.
        let keep = &mut *self.keep;
        let (targets, pending, stats) = (self.targets, &mut *self.pending, &mut *self.stats);
        batch.drain_runs(&vs[..n], Verdict::KEEP.0, |v, mut run| {
            let k = run.len() as u64;
            match v {
                u16::MAX => {
                    run.move_into(keep);
                }
                v if v >= Verdict::DROP => {
                    let r = usize::from(v) & (DropReason::SLOTS - 1);
                    stats.drops[r] += k;
                }
                port => {
                    let dst = targets
                        .get(usize::from(port))
                        .filter(|t| t.slot != UNCONNECTED)
                        .and_then(|t| pending.get_mut(t.slot as usize));
                    match dst {
                        Some(b) => {
                            let moved = run.move_into(b) as u64;
                            stats.tx += moved;
                            stats.drops[DropReason::OVERFLOW.slot()] += k - moved;
                        }
                        None => stats.drops[DropReason::UNCONNECTED.slot()] += k,
                    }
                }
            }
        });
        self.verdicts = all;
        if !self.keep.is_empty() {
            batch.take_from(self.keep);
            self.keep.clear();
        }
    }

    /// Applies verdict `v` to the single packet `p`, as
    /// [`Output::dispatch`] does for each packet of a batch: sends it,
    /// drops it, or gives it back for [`Verdict::KEEP`].
    #[inline]
    pub fn emit(&mut self, v: Verdict, p: Packet) -> Option<Packet> {
        match v.0 {
            u16::MAX => Some(p),
            x if x >= Verdict::DROP => {
                let r = usize::from(x) & (DropReason::SLOTS - 1);
                self.stats.drops[r] += 1;
                None
            }
            port => {
                self.push(port, p);
                None
            }
        }
    }

    #[inline]
    fn apply(&mut self, v: Verdict, p: Packet, keep: &mut Batch) {
        if let Some(p) = self.emit(v, p) {
            let _ = keep.push(p);
        }
    }

    /// Moves every packet of `batch` to output `port` at once (see
    /// [`Output::dispatch`]); what does not fit downstream is dropped as
    /// overflow.
    #[inline]
    pub fn forward_all(&mut self, port: u16, batch: &mut Batch) {
        let n = batch.len() as u64;
        let slot = match self.targets.get(usize::from(port)) {
            Some(t) if t.slot != UNCONNECTED => t.slot as usize,
            _ => {
                self.stats.drops[DropReason::UNCONNECTED.slot()] += n;
                batch.clear();
                return;
            }
        };
        let Some(dst) = self.pending.get_mut(slot) else {
            self.stats.drops[DropReason::UNCONNECTED.slot()] += n;
            batch.clear();
            return;
        };
        if dst.is_empty() && dst.capacity() == batch.capacity() {
            // Same-sized buffers: exchange them (no copy at all).
            dst.swap(batch);
        } else {
            dst.take_from(batch);
        }
        let left = batch.len() as u64;
        self.stats.tx += n - left;
        if left > 0 {
            self.stats.drops[DropReason::OVERFLOW.slot()] += left;
            batch.clear();
        }
    }

    /// Emits `p` on output `port`. Always inlined: called once per packet
    /// per element, and an out-of-line call moves the 48-byte packet
    /// through the stack (a third of the graph's time in the benchmark).
    #[inline(always)]
    pub fn push(&mut self, port: u16, p: Packet) {
        let slot = match self.targets.get(usize::from(port)) {
            Some(t) if t.slot != UNCONNECTED => t.slot as usize,
            _ => {
                self.stats.drops[DropReason::UNCONNECTED.slot()] += 1;
                return;
            }
        };
        match self.pending.get_mut(slot) {
            Some(b) => match b.push(p) {
                Ok(()) => self.stats.tx += 1,
                Err(_) => self.stats.drops[DropReason::OVERFLOW.slot()] += 1,
            },
            None => self.stats.drops[DropReason::UNCONNECTED.slot()] += 1,
        }
    }
    /// Drops `p` (its buffer returns to the pool), counting `reason`.
    #[inline(always)]
    pub fn drop(&mut self, p: Packet, reason: DropReason) {
        self.stats.drops[reason.slot()] += 1;
        drop(p);
    }
    /// Counts a drop for a packet that was never allocated or was already
    /// consumed (e.g. an ICMP error that could not be built).
    #[inline]
    pub fn count_drop(&mut self, reason: DropReason) {
        self.stats.drops[reason.slot()] += 1;
    }
    /// The core's pool, for elements that create packets.
    #[inline]
    pub fn pool(&self) -> &Pool {
        self.pool
    }
    /// The driver's clock in nanoseconds (monotonic; set once per poll).
    #[inline]
    pub fn now_ns(&self) -> u64 {
        self.now_ns
    }
    /// True when output `port` is connected to something.
    #[inline]
    pub fn connected(&self, port: u16) -> bool {
        self.targets
            .get(usize::from(port))
            .is_some_and(|t| t.slot != UNCONNECTED)
    }
    /// Number of output ports this element has.
    pub fn ports(&self) -> usize {
        self.targets.len()
    }
}

/// What a port carries, for the build-time check of connections
/// ([`PortKind::accepts`]). Packets are always whole Ethernet frames; the
/// kinds say which network family a port is for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PortKind {
    /// Agnostic: whatever arrives (queues, counters, classifiers,
    /// schedulers); never a mismatch.
    Any,
    /// Ethernet frames of any type (devices, ARP/ND).
    Frame,
    /// IPv4 only.
    Ip4,
    /// IPv6 only.
    Ip6,
}

impl PortKind {
    /// True when an output of kind `out` may feed an input of kind
    /// `self`: only the two IP families exclude each other (IPv6 packets
    /// into an IPv4-only input, or the reverse).
    pub fn accepts(self, out: PortKind) -> bool {
        !matches!(
            (self, out),
            (PortKind::Ip4, PortKind::Ip6) | (PortKind::Ip6, PortKind::Ip4)
        )
    }
    /// The kind's name in errors.
    pub fn name(self) -> &'static str {
        match self {
            PortKind::Any => "any",
            PortKind::Frame => "frames",
            PortKind::Ip4 => "IPv4",
            PortKind::Ip6 => "IPv6",
        }
    }
}

/// Port counts of an element.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Ports {
    /// Inputs.
    pub inputs: u16,
    /// Outputs.
    pub outputs: u16,
}

/// A packet-processing element. The graph calls it with whole batches;
/// dispatch is static when `Self` is an enum of element kinds (crate
/// `elements` has `AnyElement`).
pub trait Element {
    /// Class name as in the config.
    fn class(&self) -> &'static str;
    /// Number of input and output ports.
    fn ports(&self) -> Ports;
    /// What input (`output == false`) or output port `port` carries, for
    /// the build-time check of connections (default: agnostic).
    fn port_kind(&self, _output: bool, _port: u16) -> PortKind {
        PortKind::Any
    }
    /// True when output `port` may be left unconnected on purpose (what
    /// goes there is dropped and counted); [`crate::Graph::check_connected`]
    /// reports every other unconnected output.
    fn optional_output(&self, _port: u16) -> bool {
        false
    }
    /// Processes every packet of `batch` (which arrived on `input`),
    /// emitting each on a port of `out` or dropping it with a reason. The
    /// batch must be left empty.
    fn process(&mut self, input: u16, batch: &mut Batch, out: &mut Output<'_>);
    /// True if [`Element::tick`] should run once per driver poll (queues,
    /// timers).
    fn wants_tick(&self) -> bool {
        false
    }
    /// Periodic work: release queued packets, retransmit requests, age
    /// entries.
    fn tick(&mut self, _out: &mut Output<'_>) {}
    /// The device binding of FromDevice/ToDevice elements.
    fn device(&self) -> Option<DeviceRole<'_>> {
        None
    }
    /// For ToDevice: the packets waiting to be sent.
    fn tx_batch(&mut self) -> Option<&mut Batch> {
        None
    }
    /// Element-specific counters (besides [`ElemStats`]).
    fn counters(&self, _f: &mut dyn FnMut(&'static str, u64)) {}
    /// The names of this element's own drop reasons, by index: reason
    /// `DropReason::own(i)` is counted in slot `DropReason::GENERIC + i`
    /// and reported as `drop_names()[i]`. At most [`DropReason::MAX_OWN`].
    fn drop_names(&self) -> &'static [&'static str] {
        &[]
    }
    /// For queueing elements: packets stored (read by NICBalance).
    fn queue_len(&self) -> Option<usize> {
        None
    }
    /// For a NICBalance element: the correlation the driver enforces (see
    /// [`crate::balance`]).
    fn balance(&self) -> Option<&crate::balance::BalanceSpec> {
        None
    }
}

/// Error from a factory about one element.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildError {
    /// Index of the offending argument, or `None` for the element as a
    /// whole (unknown class, missing argument).
    pub arg: Option<usize>,
    /// What is wrong.
    pub msg: String,
}

impl BuildError {
    /// An error about argument `i`.
    pub fn arg(i: usize, msg: impl Into<String>) -> BuildError {
        BuildError {
            arg: Some(i),
            msg: msg.into(),
        }
    }
    /// An error about the element.
    pub fn elem(msg: impl Into<String>) -> BuildError {
        BuildError {
            arg: None,
            msg: msg.into(),
        }
    }
}

/// Makes elements from class names and arguments.
pub trait Factory {
    /// The element type (an enum of every kind, for static dispatch).
    type Elem: Element;
    /// Builds one element.
    fn build(&mut self, name: &str, class: &str, args: &[Arg]) -> Result<Self::Elem, BuildError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch_of(pool: &Pool, lens: &[usize]) -> Batch {
        let mut b = Batch::with_capacity(8);
        for &l in lens {
            let mut p = pool.alloc().unwrap();
            p.set_len(l).unwrap();
            b.push(p).unwrap();
        }
        b
    }

    #[test]
    fn dispatch_moves_drops_and_keeps() {
        let pool = Pool::new(64);
        // Output 0 -> slot 0 (capacity 4), output 1 -> slot 1, output 2
        // unconnected.
        let targets = [
            Target { slot: 0 },
            Target { slot: 1 },
            Target { slot: UNCONNECTED },
        ];
        let mut pending = vec![Batch::with_capacity(4), Batch::with_capacity(8)];
        let mut stats = ElemStats::default();
        let mut verdicts = vec![0u16; 8];
        let mut keep = Batch::with_capacity(8);
        let mut out = Output {
            targets: &targets,
            pending: &mut pending,
            stats: &mut stats,
            pool: &pool,
            now_ns: 0,
            verdicts: &mut verdicts,
            keep: &mut keep,
        };
        // Mixed: by length 10 -> port 0, 20 -> port 1, 30 -> drop,
        // 40 -> keep, 50 -> unconnected port 2.
        let mut b = batch_of(&pool, &[10, 20, 30, 40, 10, 50, 40]);
        out.dispatch(&mut b, |p| match p.len() {
            10 => Verdict::port(0),
            20 => Verdict::port(1),
            30 => Verdict::drop(DropReason::own(0)),
            40 => Verdict::KEEP,
            _ => Verdict::port(2),
        });
        assert_eq!(b.len(), 2, "kept packets stay in the batch");
        assert!(b.iter().all(|p| p.len() == 40));
        // Uniform: the whole batch moves to port 0; capacity 4 with 2
        // already there, so 2 of 4 overflow.
        let mut u = batch_of(&pool, &[11, 11, 11, 11]);
        out.dispatch(&mut u, |_| Verdict::port(0));
        assert!(u.is_empty());
        assert_eq!(pending[0].len(), 4);
        assert_eq!(pending[1].len(), 1);
        assert_eq!(
            pending[0].iter().map(|p| p.len()).collect::<Vec<_>>(),
            [10, 10, 11, 11]
        );
        assert_eq!(stats.tx, 5);
        assert_eq!(stats.dropped(DropReason::own(0)), 1);
        assert_eq!(stats.dropped(DropReason::UNCONNECTED), 1);
        assert_eq!(stats.dropped(DropReason::OVERFLOW), 2);
        assert_eq!(DropReason::own(0).name(&["filtered"]), "filtered");
        assert_eq!(DropReason::OVERFLOW.name(&[]), "overflow");
        assert_eq!(DropReason::own(1).name(&["filtered"]), "unknown");
        drop((b, pending));
        assert_eq!(pool.available(), pool.capacity(), "every buffer returned");
    }

    #[test]
    fn kept_packets_first_do_not_make_a_batch_uniform() {
        // Regression: `KEEP` first, then one port for the rest, once
        // counted as uniform and sent the kept packets out on that port
        // (Ip4Forward then sent TTL-decremented packets to its slow path).
        let pool = Pool::new(16);
        let targets = [Target { slot: 0 }];
        let mut pending = vec![Batch::with_capacity(8)];
        let mut stats = ElemStats::default();
        let mut verdicts = vec![0u16; 8];
        let mut keep = Batch::with_capacity(8);
        let mut out = Output {
            targets: &targets,
            pending: &mut pending,
            stats: &mut stats,
            pool: &pool,
            now_ns: 0,
            verdicts: &mut verdicts,
            keep: &mut keep,
        };
        let mut b = batch_of(&pool, &[40, 40, 1, 2]);
        out.dispatch(&mut b, |p| {
            if p.len() == 40 {
                Verdict::KEEP
            } else {
                Verdict::port(0)
            }
        });
        assert_eq!(b.iter().map(|p| p.len()).collect::<Vec<_>>(), [40, 40]);
        // All kept: the batch stays as it is.
        out.dispatch(&mut b, |_| Verdict::KEEP);
        assert_eq!(b.len(), 2);
        assert_eq!(
            pending[0].iter().map(|p| p.len()).collect::<Vec<_>>(),
            [1, 2]
        );
    }

    #[test]
    fn forward_all_swaps_into_an_empty_input() {
        let pool = Pool::new(16);
        let targets = [Target { slot: 0 }];
        let mut pending = vec![Batch::with_capacity(8)];
        let mut stats = ElemStats::default();
        let mut verdicts = vec![0u16; 8];
        let mut keep = Batch::with_capacity(8);
        let mut out = Output {
            targets: &targets,
            pending: &mut pending,
            stats: &mut stats,
            pool: &pool,
            now_ns: 0,
            verdicts: &mut verdicts,
            keep: &mut keep,
        };
        let mut b = batch_of(&pool, &[1, 2, 3]);
        out.forward_all(0, &mut b);
        assert!(b.is_empty());
        assert_eq!(b.capacity(), 8);
        assert_eq!(
            pending[0].iter().map(|p| p.len()).collect::<Vec<_>>(),
            [1, 2, 3]
        );
        assert_eq!(stats.tx, 3);
    }
}
