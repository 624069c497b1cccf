//! Device, counting, dropping, copying and queueing elements.

use std::collections::VecDeque;

use graph::{Arg, BuildError, DeviceRole, DropReason, Output, Ports, Verdict};
use pkt::{Batch, Packet};

use crate::args::{each, keyword, num, unknown};

/// Discard's own drop reasons (see `graph::Element::drop_names`).
pub(crate) const DISCARD_DROPS: &[&str] = &["discarded"];
const DISCARDED: DropReason = DropReason::own(0);
/// Queue's own drop reasons.
pub(crate) const QUEUE_DROPS: &[&str] = &["queue_full"];
const QUEUE_FULL: DropReason = DropReason::own(0);
/// PortFilter's own drop reasons.
pub(crate) const FILTER_DROPS: &[&str] = &["filtered"];
const FILTERED: DropReason = DropReason::own(0);

/// `FromDevice(NAME)`: where packets received on device NAME enter.
///
/// * Ports: the driver injects on input 0; output 0 carries every packet.
/// * Config: the device name (bound by `graph::Runner` to a `pkt::Device`).
/// * Counters: the graph's rx/tx.
///
/// ```text
/// FromDevice(eth0) -> c :: Classifier(arp, ip, ip6, -);
/// ```
#[derive(Debug)]
pub struct FromDevice {
    pub(crate) dev: String,
}

impl FromDevice {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        match args {
            [a] if !a.text.is_empty() => Ok(FromDevice {
                dev: a.text.clone(),
            }),
            _ => Err(BuildError::elem("expected one argument: the device name")),
        }
    }
    pub(crate) fn ports(&self) -> Ports {
        Ports {
            inputs: 1,
            outputs: 1,
        }
    }
    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        out.forward_all(0, batch);
    }
}

/// `ToDevice(NAME [, BURST n])`: packets to transmit on device NAME.
///
/// * Ports: input 0; no outputs. Packets wait in a transmit batch (up to
///   `BURST`, default 1024) that the driver hands to the device each poll;
///   what the device does not take waits for the next poll (the batch is
///   this element's transmit ring, and its length a queue NICBalance can
///   watch).
/// * Counters: drops `tx_full` when the batch is full.
///
/// ```text
/// rw0 :: EtherRewrite(MAC 02:00:00:00:00:01, IP 10.0.0.1) -> ToDevice(eth0);
/// ```
#[derive(Debug)]
pub struct ToDevice {
    pub(crate) dev: String,
    pub(crate) tx: Batch,
}

impl ToDevice {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let Some(first) = args.first().filter(|a| !a.text.is_empty()) else {
            return Err(BuildError::elem("expected the device name"));
        };
        let mut cap = 1024;
        for (i, a) in each(args).skip(1) {
            match keyword(a) {
                ("BURST", v) => cap = num(i, v)?.clamp(1, 65536) as usize,
                (k, _) => return Err(unknown(i, k)),
            }
        }
        Ok(ToDevice {
            dev: first.text.clone(),
            tx: Batch::with_capacity(cap),
        })
    }
    pub(crate) fn ports(&self) -> Ports {
        Ports {
            inputs: 1,
            outputs: 0,
        }
    }
    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        // One bulk move into the transmit ring; what does not fit drops.
        self.tx.take_from(batch);
        for p in batch.drain() {
            out.drop(p, DropReason::TX_FULL);
        }
    }
    pub(crate) fn role(&self) -> DeviceRole<'_> {
        DeviceRole::To(&self.dev)
    }
}

/// `Counter()`: counts packets and bytes, passes them on.
///
/// * Ports: input 0, output 0.
/// * Counters: `packets`, `bytes`.
///
/// ```text
/// c [1] -> Counter -> Discard;
/// ```
#[derive(Debug, Default)]
pub struct Counter {
    /// Packets seen.
    pub packets: u64,
    /// Bytes seen.
    pub bytes: u64,
}

impl Counter {
    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        self.packets += batch.len() as u64;
        self.bytes += batch.iter().map(|p| p.len() as u64).sum::<u64>();
        out.forward_all(0, batch);
    }
}

/// `Discard()`: drops everything, counted as `discarded`.
///
/// * Ports: input 0; no outputs.
///
/// ```text
/// c [3] -> Discard;
/// ```
#[derive(Debug, Default)]
pub struct Discard;

impl Discard {
    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        for p in batch.drain() {
            out.drop(p, DISCARDED);
        }
    }
}

/// `Tee(N)`: copies each packet to N outputs (default 2). Output 0 gets
/// the original, the others copies from the pool.
///
/// * Counters: drops `no_buffer` for each copy the pool could not supply.
///
/// ```text
/// t :: Tee(2); t [0] -> ToDevice(eth0); t [1] -> Counter -> Discard;
/// ```
#[derive(Debug)]
pub struct Tee {
    pub(crate) n: u16,
}

impl Tee {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let n = match args.first() {
            Some(a) => num(0, &a.text)?,
            None => 2,
        };
        if !(1..=64).contains(&n) {
            return Err(BuildError::arg(0, "Tee needs 1 to 64 outputs"));
        }
        Ok(Tee { n: n as u16 })
    }
    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        for p in batch.drain() {
            for port in 1..self.n {
                match p.try_clone() {
                    Some(c) => out.push(port, c),
                    None => out.count_drop(DropReason::NO_BUFFER),
                }
            }
            out.push(0, p);
        }
    }
}

/// `Queue(CAPACITY n, BURST b)`: stores packets; each driver poll (tick)
/// releases up to `BURST` (default 32) in arrival order to output 0.
/// Decouples a fast input from a slower output (seed 004 §2.4: "the only
/// element that can store packets").
///
/// * Ports: input 0, output 0.
/// * Config: `CAPACITY` (default 1000), `BURST`.
/// * Counters: `length` (current), `highwater`; drops `queue_full`.
///
/// ```text
/// rt [1] -> Queue(CAPACITY 512, BURST 64) -> ToDevice(eth1);
/// ```
#[derive(Debug)]
pub struct Queue {
    pub(crate) q: VecDeque<Packet>,
    pub(crate) cap: usize,
    pub(crate) burst: usize,
    pub(crate) highwater: usize,
}

impl Queue {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let (mut cap, mut burst) = (1000usize, 32usize);
        for (i, a) in each(args) {
            match keyword(a) {
                ("CAPACITY", v) => cap = num(i, v)?.clamp(1, 1 << 20) as usize,
                ("BURST", v) => burst = num(i, v)?.clamp(1, 1 << 16) as usize,
                (v, "") if v.chars().all(|c| c.is_ascii_digit()) => {
                    cap = num(i, v)?.clamp(1, 1 << 20) as usize
                }
                (k, _) => return Err(unknown(i, k)),
            }
        }
        Ok(Queue {
            q: VecDeque::with_capacity(cap),
            cap,
            burst,
            highwater: 0,
        })
    }
    /// Packets stored.
    pub fn len(&self) -> usize {
        self.q.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.q.is_empty()
    }
    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        for p in batch.drain() {
            if self.q.len() >= self.cap {
                out.drop(p, QUEUE_FULL);
            } else {
                self.q.push_back(p);
            }
        }
        self.highwater = self.highwater.max(self.q.len());
    }
    pub(crate) fn tick(&mut self, out: &mut Output<'_>) {
        for _ in 0..self.burst {
            match self.q.pop_front() {
                Some(p) => out.push(0, p),
                None => break,
            }
        }
    }
}

/// One PortFilter rule.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct PortRule {
    allow: bool,
    proto: Option<u8>,
    src: bool,
    lo: u16,
    hi: u16,
}

/// `PortFilter(RULE, ..., DEFAULT allow|deny)`: passes or drops IPv4/IPv6
/// UDP and TCP packets by port (seed 002's Port Filter extension). A rule
/// is `allow|deny [tcp|udp] src|dst PORT[-PORT]`; the first matching rule
/// decides; packets no rule matches (including non-UDP/TCP) get the
/// default (allow).
///
/// * Ports: input 0 (Ethernet frames with `anno.l3` set by CheckIpHeader
///   or CheckIp6Header), output 0.
/// * Counters: drops `filtered`.
///
/// ```text
/// PortFilter(deny udp dst 53, allow tcp dst 1-1023, DEFAULT deny)
/// ```
#[derive(Debug)]
pub struct PortFilter {
    pub(crate) rules: Vec<PortRule>,
    pub(crate) default_allow: bool,
}

impl PortFilter {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let mut rules = Vec::new();
        let mut default_allow = true;
        for (i, a) in each(args) {
            let words: Vec<&str> = a.split_whitespace().collect();
            match words.as_slice() {
                ["DEFAULT", v] => default_allow = parse_allow(i, v)?,
                [act, rest @ ..] => {
                    let allow = parse_allow(i, act)?;
                    let (proto, rest) = match rest {
                        ["tcp", r @ ..] => (Some(6), r),
                        ["udp", r @ ..] => (Some(17), r),
                        r => (None, r),
                    };
                    let (src, range) = match rest {
                        ["src", r] => (true, *r),
                        ["dst", r] => (false, *r),
                        _ => return Err(BuildError::arg(i, "expected 'src PORT' or 'dst PORT'")),
                    };
                    let (lo, hi) = match range.split_once('-') {
                        Some((l, h)) => (crate::args::num16(i, l)?, crate::args::num16(i, h)?),
                        None => {
                            let p = crate::args::num16(i, range)?;
                            (p, p)
                        }
                    };
                    rules.push(PortRule {
                        allow,
                        proto,
                        src,
                        lo,
                        hi,
                    });
                }
                [] => return Err(BuildError::arg(i, "empty rule")),
            }
        }
        Ok(PortFilter {
            rules,
            default_allow,
        })
    }

    #[inline]
    fn allows(&self, p: &Packet) -> bool {
        let Some((proto, l4)) = crate::classify::l4_of(p) else {
            return self.default_allow;
        };
        if proto != 6 && proto != 17 {
            return self.default_allow;
        }
        let Some((sp, dp)) = pkt::hdr::l4::ports(l4) else {
            return self.default_allow;
        };
        for r in &self.rules {
            if r.proto.is_some_and(|x| x != proto) {
                continue;
            }
            let port = if r.src { sp } else { dp };
            if (r.lo..=r.hi).contains(&port) {
                return r.allow;
            }
        }
        self.default_allow
    }

    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        out.dispatch(batch, |p| {
            if self.allows(p) {
                Verdict::port(0)
            } else {
                Verdict::drop(FILTERED)
            }
        });
    }
}

fn parse_allow(i: usize, s: &str) -> Result<bool, BuildError> {
    match s {
        "allow" | "ALLOW" => Ok(true),
        "deny" | "DENY" => Ok(false),
        _ => Err(BuildError::arg(
            i,
            format!("expected allow or deny, got '{s}'"),
        )),
    }
}
