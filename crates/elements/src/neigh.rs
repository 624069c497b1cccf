//! EtherRewrite: the neighbour table (static entries, ARP for IPv4 per
//! RFC 826, Neighbor Discovery for IPv6 per RFC 4861) and the Ethernet
//! header rewrite of forwarded packets.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::net::IpAddr;
use std::rc::Rc;

use graph::{Arg, BuildError, DropReason, Output, Verdict};
use pkt::checksum;
use pkt::hdr::arp::{self, Arp, ARP_REPLY, ARP_REQUEST};
use pkt::hdr::ether::{parse_l2, EtherMut, Mac, BROADCAST, ETH_ARP, ETH_IPV6};
use pkt::hdr::icmp::{ND_NA, ND_NS};
use pkt::hdr::ip4::PROTO_ICMPV6;
use pkt::hdr::ip6::{solicited_node, Ipv6, Ipv6Mut};
use pkt::{Batch, Packet};

use crate::args::{each, ip, keyword, mac, num, unknown};

/// EtherRewrite's own drop reasons (see `graph::Element::drop_names`).
pub(crate) const REWRITE_DROPS: &[&str] =
    &["unresolved", "bad_arp", "bad_nd", "not_for_us", "bad_ether"];
const UNRESOLVED: DropReason = DropReason::own(0);
const BAD_ARP: DropReason = DropReason::own(1);
const BAD_ND: DropReason = DropReason::own(2);
const NOT_FOR_US: DropReason = DropReason::own(3);
const BAD_ETHER: DropReason = DropReason::own(4);

/// Most neighbour entries per element.
const MAX_NEIGH: usize = 4096;
/// Requests sent for an unresolved neighbour before its held packets are
/// dropped (RFC 4861 §7.3.3 MAX_MULTICAST_SOLICIT = 3).
const MAX_TRIES: u8 = 3;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct Neigh {
    /// Address, network order (IPv4 in the first 4 bytes).
    addr: [u8; 16],
    v6: bool,
    mac: Option<Mac>,
    fixed: bool,
    tries: u8,
    last_req_ns: u64,
}

/// `EtherRewrite(MAC m, IP a, IP6 b, NEIGH addr mac, HOLD n, RETRY_MS t)`:
/// the output side of one interface.
///
/// Input 0 takes routed IP packets (gateway in `anno.gw`) and writes the
/// Ethernet header: destination = the gateway's MAC from the neighbour
/// table, source = `MAC`. An unresolved gateway gets an ARP request
/// (IPv4) or a Neighbor Solicitation (IPv6) and its packets wait in a hold
/// queue of `HOLD` packets (default 64; full: dropped as `unresolved`);
/// requests are repeated every `RETRY_MS` (default 1000) up to 3 times,
/// then the held packets are dropped as `unresolved`.
///
/// Input 1 takes ARP and ICMPv6 ND packets received on this interface:
/// ARP requests and Neighbor Solicitations for the own addresses (`IP`,
/// `IP6`, repeatable) are answered in place; requests, replies and
/// advertisements teach the table. Static entries (`NEIGH addr mac`) are
/// never replaced. A solicited advertisement to an own address for a
/// target not in the table is not added but handed to the [`NeighShare`],
/// if any (another core of the router asked).
///
/// * Ports: inputs 0 (to send) and 1 (ARP/ND received); output 0 to the
///   device.
/// * Counters: `neighbours`, `held`, `requests`; drops `unresolved`,
///   `bad_arp`, `bad_nd`, `not_for_us`, `no_buffer`, `bad_ether`.
///
/// ```text
/// rw0 :: EtherRewrite(MAC 02:00:00:00:00:01, IP 10.0.1.1, IP6 2001:db8:1::1,
///                     NEIGH 10.0.1.2 02:00:00:00:01:02);
/// rw0 -> ToDevice(eth0);  c [0] -> [1] rw0;
/// ```
pub struct EtherRewrite {
    mac: Mac,
    ip4: Vec<[u8; 4]>,
    ip6: Vec<[u8; 16]>,
    table: Vec<Neigh>,
    last: usize,
    held: VecDeque<Packet>,
    hold_cap: usize,
    retry_ns: u64,
    requests: u64,
    /// ARP replies and Neighbor Advertisements sent.
    replies: u64,
    /// Packets received on input 1 (ARP and ND).
    control_in: u64,
    /// Neighbours shared with other cores, if the program set it.
    share: Option<Box<dyn NeighShare>>,
    /// The resolved IPv4 neighbours, for an `Ip4Forward(REWRITE ...)`.
    resolved: Rc<Resolved4>,
}

/// The resolved IPv4 neighbours of one [`EtherRewrite`] and its MAC,
/// shared with an `Ip4Forward(..., REWRITE name)` of the same graph (one
/// core: `Rc`, no lock), which then writes the Ethernet header of the
/// packets it forwards to a resolved gateway itself, in its own pass,
/// exactly as the EtherRewrite would ([`rewrite`]), and hands the rest
/// (unresolved: ARP and the hold queue) to the EtherRewrite. The
/// EtherRewrite keeps it current: it is rewritten whenever an IPv4
/// neighbour gets or changes its MAC (learned, configured, or found
/// through [`NeighShare`]), never on the packet path.
///
/// Lookups go through a small direct-mapped cache by address: with
/// several gateways on a port, packets to them interleave, and a
/// one-entry "last hit" (as `EtherRewrite` keeps) misses on about every
/// other packet, a mispredicted branch each (the profile of issue 19).
#[derive(Debug, Default)]
pub struct Resolved4 {
    mac: Mac,
    entries: RefCell<Vec<([u8; 4], Mac)>>,
    cache: [Cell<Slot>; CACHE],
}

/// Slots of [`Resolved4`]'s cache (a power of two; 32 at most, for
/// `Default`).
const CACHE: usize = 32;

/// One cached neighbour; `ok` false: empty.
#[derive(Copy, Clone, Debug, Default)]
struct Slot {
    addr: [u8; 4],
    mac: Mac,
    ok: bool,
}

impl Resolved4 {
    /// The MAC of IPv4 neighbour `a` (network order), if resolved.
    #[inline]
    pub(crate) fn get(&self, a: [u8; 4]) -> Option<Mac> {
        // Fibonacci hashing of the address to a slot.
        let h = (u32::from_be_bytes(a).wrapping_mul(0x9e37_79b1) >> 27) as usize & (CACHE - 1);
        let slot = self.cache.get(h)?;
        let s = slot.get();
        if s.ok && s.addr == a {
            return Some(s.mac);
        }
        let e = self.entries.try_borrow().ok()?;
        let &(_, mac) = e.iter().find(|(x, _)| *x == a)?;
        slot.set(Slot {
            addr: a,
            mac,
            ok: true,
        });
        Some(mac)
    }
    /// The EtherRewrite's own MAC (the source of rewritten frames).
    #[inline]
    pub(crate) fn mac(&self) -> Mac {
        self.mac
    }
}

/// Neighbours shared beyond one element, e.g. between the cores of a
/// dataplane through its control thread (an ARP reply can reach a core
/// other than the one that asked). Called off the fast path only: when a
/// neighbour is learned, and when an unresolved one is due for a request.
pub trait NeighShare {
    /// The MAC someone else learned for `addr`.
    fn lookup(&mut self, addr: IpAddr) -> Option<Mac>;
    /// This element learned (or relearned) `addr` at `mac`.
    fn learned(&mut self, addr: IpAddr, mac: Mac);
}

impl std::fmt::Debug for EtherRewrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtherRewrite")
            .field("mac", &self.mac)
            .field("neighbours", &self.table.len())
            .field("held", &self.held.len())
            .field("shared", &self.share.is_some())
            .finish()
    }
}

fn ip_of(addr: &[u8; 16], v6: bool) -> IpAddr {
    if v6 {
        IpAddr::from(*addr)
    } else {
        IpAddr::from([addr[0], addr[1], addr[2], addr[3]])
    }
}

fn key4(a: [u8; 4]) -> [u8; 16] {
    let mut k = [0u8; 16];
    k[..4].copy_from_slice(&a);
    k
}

impl EtherRewrite {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let mut e = EtherRewrite {
            mac: Mac::default(),
            ip4: Vec::new(),
            ip6: Vec::new(),
            table: Vec::new(),
            last: 0,
            held: VecDeque::new(),
            hold_cap: 64,
            retry_ns: 1_000_000_000,
            requests: 0,
            replies: 0,
            control_in: 0,
            share: None,
            resolved: Rc::default(),
        };
        let mut have_mac = false;
        for (i, a) in each(args) {
            match keyword(a) {
                ("MAC", v) => {
                    e.mac = mac(i, v)?;
                    have_mac = true;
                }
                ("IP", v) | ("IP6", v) => match ip(i, v)? {
                    IpAddr::V4(x) => e.ip4.push(x.octets()),
                    IpAddr::V6(x) => e.ip6.push(x.octets()),
                },
                ("NEIGH", v) => {
                    let (a, m) = keyword(v);
                    let (addr, v6) = match ip(i, a)? {
                        IpAddr::V4(x) => (key4(x.octets()), false),
                        IpAddr::V6(x) => (x.octets(), true),
                    };
                    e.table.push(Neigh {
                        addr,
                        v6,
                        mac: Some(mac(i, m)?),
                        fixed: true,
                        tries: 0,
                        last_req_ns: 0,
                    });
                }
                ("HOLD", v) => e.hold_cap = num(i, v)?.clamp(0, 65536) as usize,
                ("RETRY_MS", v) => e.retry_ns = num(i, v)?.saturating_mul(1_000_000),
                (k, _) => return Err(unknown(i, k)),
            }
        }
        if !have_mac {
            return Err(BuildError::elem("EtherRewrite needs MAC"));
        }
        e.held = VecDeque::with_capacity(e.hold_cap);
        e.table.reserve(MAX_NEIGH.saturating_sub(e.table.len()));
        e.resolved = Rc::new(Resolved4 {
            mac: e.mac,
            ..Resolved4::default()
        });
        e.sync_resolved();
        Ok(e)
    }

    /// The resolved IPv4 neighbours, shared (see [`Resolved4`]).
    pub fn resolved(&self) -> Rc<Resolved4> {
        Rc::clone(&self.resolved)
    }

    /// Rewrites [`Resolved4`] from the table (after an IPv4 neighbour got
    /// or changed its MAC; off the packet path).
    fn sync_resolved(&mut self) {
        let Ok(mut e) = self.resolved.entries.try_borrow_mut() else {
            return;
        };
        e.clear();
        e.extend(self.table.iter().filter(|n| !n.v6).filter_map(|n| {
            n.mac
                .map(|m| ([n.addr[0], n.addr[1], n.addr[2], n.addr[3]], m))
        }));
        for s in &self.resolved.cache {
            s.set(Slot::default());
        }
    }

    /// Shares learned neighbours through `s` (see [`NeighShare`]).
    pub fn set_share(&mut self, s: Box<dyn NeighShare>) {
        self.share = Some(s);
    }

    /// Adds or replaces a static neighbour.
    pub fn set_static(&mut self, addr: IpAddr, m: Mac) {
        let (a, v6) = match addr {
            IpAddr::V4(x) => (key4(x.octets()), false),
            IpAddr::V6(x) => (x.octets(), true),
        };
        let n = Neigh {
            addr: a,
            v6,
            mac: Some(m),
            fixed: true,
            tries: 0,
            last_req_ns: 0,
        };
        match self.table.iter_mut().find(|x| x.addr == a && x.v6 == v6) {
            Some(x) => *x = n,
            None => self.table.push(n),
        }
        self.sync_resolved();
    }

    /// The MAC learned or configured for `addr`.
    pub fn neighbour(&self, addr: IpAddr) -> Option<Mac> {
        let (a, v6) = match addr {
            IpAddr::V4(x) => (key4(x.octets()), false),
            IpAddr::V6(x) => (x.octets(), true),
        };
        self.table
            .iter()
            .find(|x| x.addr == a && x.v6 == v6)
            .and_then(|x| x.mac)
    }

    pub(crate) fn counters(&self, f: &mut dyn FnMut(&'static str, u64)) {
        f("neighbours", self.table.len() as u64);
        f("held", self.held.len() as u64);
        f("requests", self.requests);
        f("replies", self.replies);
        f("control_in", self.control_in);
    }

    #[inline]
    fn find(&mut self, addr: &[u8; 16], v6: bool) -> Option<usize> {
        if let Some(n) = self.table.get(self.last) {
            if n.addr == *addr && n.v6 == v6 {
                return Some(self.last);
            }
        }
        let i = self
            .table
            .iter()
            .position(|n| n.addr == *addr && n.v6 == v6)?;
        self.last = i;
        Some(i)
    }

    fn learn(&mut self, addr: [u8; 16], v6: bool, m: Mac, create: bool, out: &mut Output<'_>) {
        if m.is_multicast() {
            return;
        }
        let changed = match self.find(&addr, v6) {
            Some(i) => match self.table.get_mut(i) {
                Some(n) if !n.fixed => {
                    let c = n.mac != Some(m);
                    n.mac = Some(m);
                    n.tries = 0;
                    c
                }
                _ => false,
            },
            None if create && self.table.len() < MAX_NEIGH => {
                self.table.push(Neigh {
                    addr,
                    v6,
                    mac: Some(m),
                    fixed: false,
                    tries: 0,
                    last_req_ns: 0,
                });
                true
            }
            None => return,
        };
        if changed {
            if let Some(s) = self.share.as_mut() {
                s.learned(ip_of(&addr, v6), m);
            }
            self.sync_resolved();
        }
        self.release(out);
    }

    /// Sends held packets whose neighbour is now known.
    fn release(&mut self, out: &mut Output<'_>) {
        for _ in 0..self.held.len() {
            let Some(p) = self.held.pop_front() else {
                break;
            };
            let v6 = is_v6(&p);
            match self
                .find(&p.anno.gw, v6)
                .and_then(|i| self.table.get(i))
                .and_then(|n| n.mac)
            {
                Some(m) => self.emit(p, m, out),
                None => self.held.push_back(p),
            }
        }
    }

    #[inline]
    fn emit(&self, mut p: Packet, dst: Mac, out: &mut Output<'_>) {
        match rewrite(&mut p, dst, self.mac) {
            Ok(()) => out.push(0, p),
            Err(r) => out.drop(p, r),
        }
    }

    fn request(&mut self, i: usize, now: u64, out: &mut Output<'_>) {
        if let (Some(s), Some(n)) = (self.share.as_mut(), self.table.get_mut(i)) {
            if let Some(m) = s.lookup(ip_of(&n.addr, n.v6)) {
                // Another core learned it: no request needed.
                n.mac = Some(m);
                n.tries = 0;
                self.sync_resolved();
                self.release(out);
                return;
            }
        }
        let Some(n) = self.table.get_mut(i) else {
            return;
        };
        n.tries = n.tries.saturating_add(1);
        n.last_req_ns = now;
        let (addr, v6) = (n.addr, n.v6);
        let Some(mut p) = out.pool().alloc() else {
            out.count_drop(DropReason::NO_BUFFER);
            return;
        };
        let ok = if v6 {
            self.ip6
                .first()
                .is_some_and(|src| write_ns(&mut p, self.mac, src, &addr))
        } else {
            let spa = self.ip4.first().copied().unwrap_or([0; 4]);
            let tpa = [addr[0], addr[1], addr[2], addr[3]];
            p.set_len(60).is_ok()
                && EtherMut::parse(p.data_mut())
                    .map(|mut e| e.write(BROADCAST, self.mac, ETH_ARP))
                    .is_ok()
                && p.data_mut().get_mut(14..).is_some_and(|b| {
                    arp::write(b, ARP_REQUEST, self.mac, spa, Mac::default(), tpa).is_ok()
                })
                && p.data_mut().get_mut(42..60).map(|b| b.fill(0)).is_some()
        };
        if ok {
            self.requests += 1;
            out.push(0, p);
        }
    }

    #[inline]
    fn send(&mut self, p: Packet, out: &mut Output<'_>) {
        let v6 = is_v6(&p);
        let gw = p.anno.gw;
        let idx = match self.find(&gw, v6) {
            Some(i) => i,
            None if self.table.len() < MAX_NEIGH => {
                self.table.push(Neigh {
                    addr: gw,
                    v6,
                    mac: None,
                    fixed: false,
                    tries: 0,
                    last_req_ns: 0,
                });
                let i = self.table.len() - 1;
                self.request(i, out.now_ns(), out);
                i
            }
            None => {
                out.drop(p, UNRESOLVED);
                return;
            }
        };
        match self.table.get(idx).and_then(|n| n.mac) {
            Some(m) => self.emit(p, m, out),
            None => {
                if self.held.len() < self.hold_cap {
                    self.held.push_back(p);
                } else {
                    out.drop(p, UNRESOLVED);
                }
            }
        }
    }

    fn on_arp(&mut self, mut p: Packet, out: &mut Output<'_>) {
        let Some((oper, sha, spa, tpa)) = p
            .data()
            .get(14..)
            .and_then(|b| Arp::parse(b).ok())
            .map(|a| (a.oper(), a.sha(), a.spa(), a.tpa()))
        else {
            out.drop(p, BAD_ARP);
            return;
        };
        let for_us = self.ip4.contains(&tpa);
        // RFC 826 "merge": update a known sender; add it if we are the target.
        if spa != [0; 4] {
            self.learn(key4(spa), false, sha, for_us, out);
        }
        if oper == ARP_REQUEST && for_us {
            let mine = self.mac;
            let ok = EtherMut::parse(p.data_mut())
                .map(|mut e| e.write(sha, mine, ETH_ARP))
                .is_ok()
                && p.data_mut()
                    .get_mut(14..)
                    .is_some_and(|b| arp::write(b, ARP_REPLY, mine, tpa, sha, spa).is_ok());
            if ok {
                self.replies += 1;
                out.push(0, p);
                return;
            }
        }
        out.drop(
            p,
            if oper == ARP_REPLY || oper == ARP_REQUEST {
                NOT_FOR_US
            } else {
                BAD_ARP
            },
        );
    }

    fn on_nd(&mut self, mut p: Packet, out: &mut Output<'_>) {
        let parsed = (|| {
            let d = p.data();
            let ip = Ipv6::parse(d.get(14..)?).ok()?;
            let icmp = ip.payload();
            // RFC 4861 §7.1.1/§7.1.2: hop limit 255, code 0, length >= 24.
            if ip.next_header() != PROTO_ICMPV6
                || ip.hop_limit() != 255
                || icmp.len() < 24
                || icmp.get(1) != Some(&0)
            {
                return None;
            }
            let c = checksum::finish(checksum::add(
                checksum::pseudo6(&ip.src(), &ip.dst(), PROTO_ICMPV6, icmp.len() as u32),
                icmp,
            ));
            if c != 0 {
                return None;
            }
            let ty = *icmp.first()?;
            let target: [u8; 16] = icmp.get(8..24)?.try_into().ok()?;
            // Link-layer address option: type 1 (source) in NS, 2 (target) in NA.
            let want = if ty == ND_NS { 1 } else { 2 };
            let mut opts = icmp.get(24..)?;
            let mut ll = None;
            while let (Some(&t), Some(&l)) = (opts.first(), opts.get(1)) {
                let len = usize::from(l) * 8;
                if len == 0 {
                    return None;
                }
                if t == want && len >= 8 {
                    ll = opts
                        .get(2..8)
                        .and_then(|m| <[u8; 6]>::try_from(m).ok())
                        .map(Mac);
                }
                opts = opts.get(len..).unwrap_or(&[]);
            }
            let flags = icmp.get(4).copied().unwrap_or(0);
            Some((ty, ip.src(), ip.dst(), flags, target, ll))
        })();
        let Some((ty, src, dst, flags, target, ll)) = parsed else {
            out.drop(p, BAD_ND);
            return;
        };
        let for_us = self.ip6.contains(&target);
        match ty {
            ND_NS => {
                if let (Some(m), false) = (ll, src == [0; 16]) {
                    self.learn(src, true, m, for_us, out);
                }
                if !for_us {
                    out.drop(p, NOT_FOR_US);
                    return;
                }
                let eth_src = pkt::hdr::ether::Ether::parse(p.data())
                    .map(|e| e.src())
                    .unwrap_or_default();
                let (dst, dmac) = if src == [0; 16] {
                    // RFC 4861 §7.2.4: unspecified source -> all-nodes.
                    let mut all = [0u8; 16];
                    all[0] = 0xff;
                    all[1] = 0x02;
                    all[15] = 1;
                    (all, Mac::ipv6_multicast(&all))
                } else {
                    (src, ll.unwrap_or(eth_src))
                };
                let solicited = if src == [0; 16] { 0 } else { 0x40 };
                if write_na(
                    &mut p,
                    self.mac,
                    dmac,
                    &target,
                    &dst,
                    0x80 | solicited | 0x20,
                ) {
                    self.replies += 1;
                    out.push(0, p);
                } else {
                    out.drop(p, BAD_ND);
                }
            }
            ND_NA => {
                let eth_src = pkt::hdr::ether::Ether::parse(p.data())
                    .map(|e| e.src())
                    .unwrap_or_default();
                let m = ll.unwrap_or(eth_src);
                if self.find(&target, true).is_some() {
                    self.learn(target, true, m, false, out);
                } else if flags & 0x40 != 0 && self.ip6.contains(&dst) && !m.is_multicast() {
                    // RFC 4861 §7.2.5 discards an advertisement with no
                    // entry, but a solicited one sent to our own address
                    // answers a solicitation of this router: with several
                    // cores (a hash fanout), another core's. Not created
                    // here; shared so that the core which asked finds it
                    // when its request is due (as an ARP reply is).
                    if let Some(s) = self.share.as_mut() {
                        s.learned(IpAddr::from(target), m);
                    }
                }
                out.drop(p, NOT_FOR_US);
            }
            _ => out.drop(p, BAD_ND),
        }
    }

    #[inline]
    pub(crate) fn process(&mut self, input: u16, batch: &mut Batch, out: &mut Output<'_>) {
        if input == 0 {
            // Resolved neighbours (the fast path) in one dispatch; the
            // rest stay in the batch for the hold queue and requests.
            out.dispatch(batch, |p| {
                let v6 = is_v6(p);
                let g = p.anno.gw;
                // IPv4 through the resolved neighbours' cache (see
                // `Resolved4`: no mispredicted last-hit test per packet).
                let mac = if v6 {
                    self.find(&g, v6)
                        .and_then(|i| self.table.get(i))
                        .and_then(|n| n.mac)
                } else {
                    self.resolved.get([g[0], g[1], g[2], g[3]])
                };
                match mac {
                    Some(m) => match rewrite(p, m, self.mac) {
                        Ok(()) => Verdict::port(0),
                        Err(r) => Verdict::drop(r),
                    },
                    None => Verdict::KEEP,
                }
            });
            for p in batch.drain() {
                self.send(p, out);
            }
            return;
        }
        self.control_in += batch.len() as u64;
        for p in batch.drain() {
            match parse_l2(p.data()).map(|l| l.ethertype) {
                Ok(ETH_ARP) => self.on_arp(p, out),
                Ok(ETH_IPV6) => self.on_nd(p, out),
                _ => out.drop(p, BAD_ETHER),
            }
        }
    }

    pub(crate) fn tick(&mut self, out: &mut Output<'_>) {
        let now = out.now_ns();
        let mut gave_up = false;
        for i in 0..self.table.len() {
            let Some(n) = self.table.get(i).copied() else {
                break;
            };
            if n.mac.is_some() || now.saturating_sub(n.last_req_ns) < self.retry_ns {
                continue;
            }
            if n.tries >= MAX_TRIES {
                gave_up = true;
                continue;
            }
            self.request(i, now, out);
        }
        if gave_up {
            // Drop packets held for neighbours that never answered, and
            // forget those neighbours so a later packet asks again.
            for _ in 0..self.held.len() {
                let Some(p) = self.held.pop_front() else {
                    break;
                };
                let v6 = is_v6(&p);
                let dead = self
                    .find(&p.anno.gw, v6)
                    .and_then(|i| self.table.get(i))
                    .is_none_or(|n| n.mac.is_none() && n.tries >= MAX_TRIES);
                if dead {
                    out.drop(p, UNRESOLVED);
                } else {
                    self.held.push_back(p);
                }
            }
            self.table
                .retain(|n| n.mac.is_some() || n.tries < MAX_TRIES);
            self.last = 0;
        }
    }
}

/// Writes the Ethernet header for the next hop `dst` from `mine`,
/// removing a VLAN tag (the frame leaves untagged).
#[inline]
pub(crate) fn rewrite(p: &mut Packet, dst: Mac, mine: Mac) -> Result<(), DropReason> {
    let l2 = parse_l2(p.data()).map_err(|_| BAD_ETHER)?;
    if l2.l3 == 18 {
        p.pull_front(4).map_err(|_| BAD_ETHER)?;
    }
    p.anno.l3 = 14;
    EtherMut::parse(p.data_mut())
        .map(|mut e| e.write(dst, mine, l2.ethertype))
        .map_err(|_| BAD_ETHER)
}

#[inline]
fn is_v6(p: &Packet) -> bool {
    parse_l2(p.data()).is_ok_and(|l| l.ethertype == ETH_IPV6)
}

/// Writes a Neighbor Solicitation for `target` into an empty packet.
fn write_ns(p: &mut Packet, mine: Mac, src: &[u8; 16], target: &[u8; 16]) -> bool {
    let dst = solicited_node(target);
    if p.set_len(14 + 40 + 32).is_err() {
        return false;
    }
    let d = p.data_mut();
    if EtherMut::parse(d)
        .map(|mut e| e.write(Mac::ipv6_multicast(&dst), mine, ETH_IPV6))
        .is_err()
    {
        return false;
    }
    let Some(l3) = d.get_mut(14..) else {
        return false;
    };
    if Ipv6Mut::parse(l3)
        .map(|mut h| h.write(0, 32, PROTO_ICMPV6, 255, src, &dst))
        .is_err()
    {
        return false;
    }
    let Some(icmp) = l3.get_mut(40..72) else {
        return false;
    };
    icmp.fill(0);
    icmp[0] = ND_NS;
    icmp[8..24].copy_from_slice(target);
    icmp[24] = 1;
    icmp[25] = 1;
    icmp[26..32].copy_from_slice(&mine.0);
    let c = checksum::finish(checksum::add(
        checksum::pseudo6(src, &dst, PROTO_ICMPV6, 32),
        icmp,
    ));
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    true
}

/// Rewrites a packet into a Neighbor Advertisement (RFC 4861 §4.4).
fn write_na(
    p: &mut Packet,
    mine: Mac,
    dmac: Mac,
    target: &[u8; 16],
    dst: &[u8; 16],
    flags: u8,
) -> bool {
    if p.set_len(14 + 40 + 32).is_err() {
        return false;
    }
    let d = p.data_mut();
    if EtherMut::parse(d)
        .map(|mut e| e.write(dmac, mine, ETH_IPV6))
        .is_err()
    {
        return false;
    }
    let Some(l3) = d.get_mut(14..) else {
        return false;
    };
    if Ipv6Mut::parse(l3)
        .map(|mut h| h.write(0, 32, PROTO_ICMPV6, 255, target, dst))
        .is_err()
    {
        return false;
    }
    let Some(icmp) = l3.get_mut(40..72) else {
        return false;
    };
    icmp.fill(0);
    icmp[0] = ND_NA;
    icmp[4] = flags;
    icmp[8..24].copy_from_slice(target);
    icmp[24] = 2;
    icmp[25] = 1;
    icmp[26..32].copy_from_slice(&mine.0);
    let c = checksum::finish(checksum::add(
        checksum::pseudo6(target, dst, PROTO_ICMPV6, 32),
        icmp,
    ));
    icmp[2..4].copy_from_slice(&c.to_be_bytes());
    true
}
