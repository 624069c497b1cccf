//! The element interface, drop reasons and per-element counters.

use pkt::{Batch, Packet, Pool};

use crate::lang::Arg;

/// Why a packet was dropped. Every drop in the graph is counted under one
/// of these, per element (see [`ElemStats::drops`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum DropReason {
    /// Sent to an output port with no connection.
    Unconnected,
    /// The downstream input was full (more than its in-degree × 256).
    Overflow,
    /// Left in a batch by an element that did not consume it (a bug).
    Unprocessed,
    /// The pool had no buffer for a new packet (ICMP error, ARP request,
    /// Tee copy).
    NoBuffer,
    /// The device's transmit ring was full.
    TxFull,
    /// Shorter than an Ethernet header, or an unknown EtherType.
    BadEther,
    /// IPv4 header fails RFC 1812 §5.2.2 checks (length, version, IHL).
    BadIpHeader,
    /// IPv4 header checksum wrong.
    BadIpChecksum,
    /// IPv4 source address invalid for forwarding (RFC 1812 §5.3.7).
    BadIpSource,
    /// IPv6 header malformed (RFC 8200 §3).
    BadIp6Header,
    /// IPv6 source or destination invalid (multicast source, loopback).
    BadIp6Address,
    /// No route to the destination.
    NoRoute,
    /// TTL or hop limit expired (an ICMP error may have been sent instead
    /// of this when enabled: then this is not counted).
    TtlExpired,
    /// An ICMP error was not generated (RFC 1812 §4.3.2.7: never about an
    /// ICMP error, a non-first fragment, or a multicast/broadcast).
    IcmpSuppressed,
    /// Malformed or foreign ARP.
    BadArp,
    /// Malformed or foreign Neighbor Discovery message.
    BadNd,
    /// Neighbour unresolved and its hold queue full.
    Unresolved,
    /// Not for one of the element's addresses.
    NotForUs,
    /// Matched no classifier pattern.
    NoMatch,
    /// A Queue was full.
    QueueFull,
    /// Rejected by a filter.
    Filtered,
    /// Dropped on purpose (Discard).
    Discarded,
}

impl DropReason {
    /// Number of reasons.
    pub const COUNT: usize = DropReason::Discarded as usize + 1;
    /// Every reason, in order.
    pub const ALL: [DropReason; DropReason::COUNT] = [
        DropReason::Unconnected,
        DropReason::Overflow,
        DropReason::Unprocessed,
        DropReason::NoBuffer,
        DropReason::TxFull,
        DropReason::BadEther,
        DropReason::BadIpHeader,
        DropReason::BadIpChecksum,
        DropReason::BadIpSource,
        DropReason::BadIp6Header,
        DropReason::BadIp6Address,
        DropReason::NoRoute,
        DropReason::TtlExpired,
        DropReason::IcmpSuppressed,
        DropReason::BadArp,
        DropReason::BadNd,
        DropReason::Unresolved,
        DropReason::NotForUs,
        DropReason::NoMatch,
        DropReason::QueueFull,
        DropReason::Filtered,
        DropReason::Discarded,
    ];
    /// A stable lower-case name for counters.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Unconnected => "unconnected",
            DropReason::Overflow => "overflow",
            DropReason::Unprocessed => "unprocessed",
            DropReason::NoBuffer => "no_buffer",
            DropReason::TxFull => "tx_full",
            DropReason::BadEther => "bad_ether",
            DropReason::BadIpHeader => "bad_ip_header",
            DropReason::BadIpChecksum => "bad_ip_checksum",
            DropReason::BadIpSource => "bad_ip_source",
            DropReason::BadIp6Header => "bad_ip6_header",
            DropReason::BadIp6Address => "bad_ip6_address",
            DropReason::NoRoute => "no_route",
            DropReason::TtlExpired => "ttl_expired",
            DropReason::IcmpSuppressed => "icmp_suppressed",
            DropReason::BadArp => "bad_arp",
            DropReason::BadNd => "bad_nd",
            DropReason::Unresolved => "unresolved",
            DropReason::NotForUs => "not_for_us",
            DropReason::NoMatch => "no_match",
            DropReason::QueueFull => "queue_full",
            DropReason::Filtered => "filtered",
            DropReason::Discarded => "discarded",
        }
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
    /// Drops by reason, indexed by `DropReason as usize`.
    pub drops: [u64; DropReason::COUNT],
}

impl ElemStats {
    /// Drops for one reason.
    pub fn dropped(&self, r: DropReason) -> u64 {
        self.drops[r as usize]
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
        Verdict(Self::DROP | reason as u16)
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
        let mut first = u16::MAX;
        let mut uniform = true;
        for (p, v) in batch.as_mut_slice().iter_mut().zip(vs.iter_mut()) {
            let x = f(p).0;
            if first == u16::MAX {
                first = x;
            }
            uniform &= x == first;
            *v = x;
        }
        if n == 0 {
            self.verdicts = all;
            return;
        }
        if uniform && first < Verdict::DROP {
            self.verdicts = all;
            self.forward_all(first, batch);
            return;
        }
        // Mixed verdicts: distribute one by one; kept packets go back.
        for (p, &v) in batch.drain().zip(vs.iter()) {
            match v {
                u16::MAX => {
                    let _ = self.keep.push(p);
                }
                v if v >= Verdict::DROP => {
                    let r = usize::from(v & !Verdict::DROP);
                    if let Some(c) = self.stats.drops.get_mut(r) {
                        *c += 1;
                    }
                    drop(p);
                }
                port => self.push(port, p),
            }
        }
        self.verdicts = all;
        if !self.keep.is_empty() {
            batch.take_from(self.keep);
            self.keep.clear();
        }
    }

    #[inline]
    fn apply(&mut self, v: Verdict, p: Packet, keep: &mut Batch) {
        match v.0 {
            u16::MAX => {
                let _ = keep.push(p);
            }
            x if x >= Verdict::DROP => {
                let r = usize::from(x & !Verdict::DROP);
                if let Some(c) = self.stats.drops.get_mut(r) {
                    *c += 1;
                }
            }
            port => self.push(port, p),
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
                self.stats.drops[DropReason::Unconnected as usize] += n;
                batch.clear();
                return;
            }
        };
        let Some(dst) = self.pending.get_mut(slot) else {
            self.stats.drops[DropReason::Unconnected as usize] += n;
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
            self.stats.drops[DropReason::Overflow as usize] += left;
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
                self.stats.drops[DropReason::Unconnected as usize] += 1;
                return;
            }
        };
        match self.pending.get_mut(slot) {
            Some(b) => match b.push(p) {
                Ok(()) => self.stats.tx += 1,
                Err(_) => self.stats.drops[DropReason::Overflow as usize] += 1,
            },
            None => self.stats.drops[DropReason::Unconnected as usize] += 1,
        }
    }
    /// Drops `p` (its buffer returns to the pool), counting `reason`.
    #[inline(always)]
    pub fn drop(&mut self, p: Packet, reason: DropReason) {
        self.stats.drops[reason as usize] += 1;
        drop(p);
    }
    /// Counts a drop for a packet that was never allocated or was already
    /// consumed (e.g. an ICMP error that could not be built).
    #[inline]
    pub fn count_drop(&mut self, reason: DropReason) {
        self.stats.drops[reason as usize] += 1;
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
            30 => Verdict::drop(DropReason::Filtered),
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
        assert_eq!(stats.dropped(DropReason::Filtered), 1);
        assert_eq!(stats.dropped(DropReason::Unconnected), 1);
        assert_eq!(stats.dropped(DropReason::Overflow), 2);
        drop((b, pending));
        assert_eq!(pool.available(), pool.capacity(), "every buffer returned");
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
