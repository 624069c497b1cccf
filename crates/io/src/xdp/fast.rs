//! The XDP fast path: IPv4 and IPv6 forwarding inside the kernel's XDP
//! hook, with the dataplane's FIB mirrored into BPF maps, and everything
//! else handed to the element graph through the port's AF_XDP socket as
//! before.
//!
//! ```text
//!  frame --> [Ethernet to our MAC] -- no: redirect to the XSKMAP slot of
//!              |                        the RX queue (the graph)
//!              +-- IPv4: [IHL 5, not a fragment, TTL > 1, RFC 1812 5.2.2
//!              |          length and checksum, 5.3.7 source] no: graph
//!              |         LPM_TRIE (IPv4) lookup --miss / local--> graph
//!              +-- IPv6: [payload length within the frame, no link-local,
//!              |          multicast, unspecified or loopback source or
//!              |          destination, next header we need not parse,
//!              |          not ND, hop limit > 1] no: graph
//!              |         LPM_TRIE (IPv6) lookup --miss / local--> graph
//!              v
//!            ECMP group: the graph's 5-tuple flow hash picks the member
//!            (`pkt::hdr::flow::flow_hash` mod members); unresolved: graph
//!              v
//!            TTL - 1 (checksum by RFC 1624 eqn. 3) or hop limit - 1,
//!            MACs rewritten, bpf_redirect_map(DEVMAP, egress slot)
//! ```
//!
//! The maps ([`FastMaps`]) are shared by every port's program: two
//! `LPM_TRIE`s from IPv4 and IPv6 prefix to [`FastHop`] (egress DEVMAP
//! slot, destination MAC, source MAC; or [`LOCAL`]; or an ECMP group,
//! [`FastHop::group`]), an `ARRAY` of group members ([`MAX_MEMBERS`]
//! slots per group, in the FIB's member order, so that the member index
//! is the one `fib::FibTables::pick` takes), a `DEVMAP` from port index to
//! ifindex, and a `PERCPU_ARRAY` of counters by [`FastReason`] (per CPU,
//! so the program never writes a shared cache line). Each port's program
//! has its own XSKMAP (the one of [`super::XdpProgram`]) and its MAC as
//! immediates. The program is built with [`super::asm`] (why our own
//! builder: see there) and checked by the kernel's verifier at load.
//!
//! What the graph keeps: ARP/ND and every other frame, IPv4 with options
//! or fragments, TTL or hop limit <= 1 (ICMP time exceeded, RFC 1812 5.3.1,
//! RFC 4443 3.3), IPv6 with a next header other than TCP, UDP, ICMPv6,
//! SCTP, GRE or IP-in-IP (extension headers, ESP and AH, unknown: RFC
//! 8200 4; hop-by-hop options must be seen by every router), IPv6 to or
//! from link-local, multicast, unspecified or loopback addresses (RFC 4291
//! 2.5.6: not forwarded), Neighbor Discovery (RFC 4861), destinations with
//! no entry (unresolved neighbours, glean, the fabric, broadcast), ECMP
//! members not resolved yet, and our own addresses (entries [`LOCAL`]).
//! Not done here: ICMPv6 Packet Too Big (a frame larger than the egress
//! MTU is dropped by the redirect; the ports of one dataplane share an MTU).

use super::asm::{Alu, Asm, Cond, Insn, Label, Size};
use super::bpf::{bpf_raw, create_map, load_xdp, xskmap, Attr, XdpMode, XdpProgram};
use crate::error::{IoError, Op};
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;

// <linux/bpf.h>
const BPF_MAP_LOOKUP_ELEM: i64 = 1;
const BPF_MAP_UPDATE_ELEM: i64 = 2;
const BPF_MAP_DELETE_ELEM: i64 = 3;
const BPF_PROG_TEST_RUN: i64 = 10;
const BPF_MAP_UPDATE_BATCH: i64 = 26;
const BPF_MAP_DELETE_BATCH: i64 = 27;
const BPF_MAP_TYPE_ARRAY: u32 = 2;
const BPF_MAP_TYPE_PERCPU_ARRAY: u32 = 6;
const BPF_MAP_TYPE_LPM_TRIE: u32 = 11;
const BPF_MAP_TYPE_DEVMAP: u32 = 14;
const BPF_F_NO_PREALLOC: u32 = 1;
const BPF_FUNC_MAP_LOOKUP_ELEM: i32 = 1;
const BPF_FUNC_REDIRECT_MAP: i32 = 51;
/// XDP verdicts (`enum xdp_action`).
pub const XDP_ABORTED: u32 = 0;
pub const XDP_DROP: u32 = 1;
pub const XDP_PASS: u32 = 2;
pub const XDP_REDIRECT: u32 = 4;

/// The DEVMAP slot of an entry that is one of our own addresses: its
/// packets go to the graph.
pub const LOCAL: u32 = u32::MAX;
/// The slot of an ECMP member whose neighbour is not resolved: the flows
/// that hash to it go to the graph (which resolves it).
pub const UNRESOLVED: u32 = u32::MAX - 1;
/// The flag of a group entry's slot: `GROUP | members` ([`FastHop::group`]).
pub const GROUP: u32 = 1 << 31;
/// Members per group at most (`router.multipath` is at most 64), and the
/// stride of the member array: group `g`'s members are at `g * 64 ..`.
pub const MAX_MEMBERS: u32 = 64;
/// Groups the member array has room for (group ids `0..MAX_GROUPS`; a
/// group beyond stays with the graph).
pub const MAX_GROUPS: u32 = 1024;

/// Entries per batched map call.
const BATCH: usize = 1024;

/// Where a packet went, the index of its per-CPU counter (the order is
/// the counters' layout: new reasons go at the end).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FastReason {
    /// IPv4 forwarded in XDP.
    Forwarded = 0,
    /// To the graph: shorter than the headers the checks read.
    Short,
    /// To the graph: destination MAC not the port's (broadcast, multicast).
    OtherMac,
    /// To the graph: neither IPv4 nor IPv6 (ARP, VLAN tags, ...).
    NotIp,
    /// To the graph: IPv4 header with options (IHL != 5) or version != 4.
    Options,
    /// To the graph: a fragment (MF set or offset non-zero).
    Fragment,
    /// To the graph: TTL <= 1 (the graph sends time exceeded).
    Ttl,
    /// To the graph: no entry for the destination.
    NoRoute,
    /// To the graph: the destination is one of our addresses.
    Local,
    /// To the graph: a header RFC 1812 §5.2.2 refuses (total length
    /// below 20 or beyond the frame, bad checksum) or a source §5.3.7
    /// does not forward (0/8, 127/8, 224/3); an IPv6 header with a
    /// version other than 6, or a payload beyond the frame; the graph
    /// drops it by reason.
    BadHeader,
    /// IPv6 forwarded in XDP.
    Forwarded6,
    /// To the graph: IPv6 hop limit <= 1 (the graph sends time exceeded,
    /// RFC 4443 §3.3).
    HopLimit,
    /// To the graph: an IPv6 next header the program does not forward
    /// (extension headers, hop-by-hop options first: RFC 8200 §4).
    ExtHeader,
    /// To the graph: an IPv6 source or destination that is link-local,
    /// multicast, unspecified or loopback (RFC 4291 §2.5.6, §2.7).
    Scope,
    /// To the graph: ICMPv6 Neighbor Discovery (RFC 4861, types 133-137).
    Nd,
    /// To the graph: the ECMP member the flow hashes to is not resolved.
    Unresolved,
}

impl FastReason {
    pub const ALL: [FastReason; 16] = [
        FastReason::Forwarded,
        FastReason::Short,
        FastReason::OtherMac,
        FastReason::NotIp,
        FastReason::Options,
        FastReason::Fragment,
        FastReason::Ttl,
        FastReason::NoRoute,
        FastReason::Local,
        FastReason::BadHeader,
        FastReason::Forwarded6,
        FastReason::HopLimit,
        FastReason::ExtHeader,
        FastReason::Scope,
        FastReason::Nd,
        FastReason::Unresolved,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FastReason::Forwarded => "forwarded",
            FastReason::Short => "short",
            FastReason::OtherMac => "other_mac",
            FastReason::NotIp => "not_ip",
            FastReason::Options => "options",
            FastReason::Fragment => "fragment",
            FastReason::Ttl => "ttl",
            FastReason::NoRoute => "no_route",
            FastReason::Local => "local",
            FastReason::BadHeader => "bad_header",
            FastReason::Forwarded6 => "forwarded_ipv6",
            FastReason::HopLimit => "hop_limit",
            FastReason::ExtHeader => "ext_header",
            FastReason::Scope => "scope",
            FastReason::Nd => "nd",
            FastReason::Unresolved => "unresolved",
        }
    }

    /// Whether the packet was forwarded in XDP (else the graph got it).
    pub fn is_forwarded(self) -> bool {
        matches!(self, FastReason::Forwarded | FastReason::Forwarded6)
    }
}

/// The fast path's counters summed over the CPUs, by [`FastReason`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FastCounters(pub [u64; 16]);

impl FastCounters {
    pub fn get(&self, r: FastReason) -> u64 {
        self.0.get(r as usize).copied().unwrap_or(0)
    }
    /// Forwarded in XDP, both families.
    pub fn forwarded(&self) -> u64 {
        self.get(FastReason::Forwarded) + self.get(FastReason::Forwarded6)
    }
    /// Everything handed to the graph.
    pub fn to_graph(&self) -> u64 {
        FastReason::ALL
            .iter()
            .filter(|r| !r.is_forwarded())
            .map(|r| self.get(*r))
            .sum()
    }
}

/// An IPv4 prefix, the address in host order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Route4 {
    pub addr: u32,
    pub len: u8,
}

impl Route4 {
    /// The LPM_TRIE key: `struct bpf_lpm_trie_key_u8` with four bytes of
    /// data in network order, host bits cleared.
    fn key(self) -> [u8; 8] {
        let len = self.len.min(32);
        let mask = if len == 0 { 0 } else { u32::MAX << (32 - len) };
        let mut k = [0u8; 8];
        k[..4].copy_from_slice(&u32::from(len).to_ne_bytes());
        k[4..].copy_from_slice(&(self.addr & mask).to_be_bytes());
        k
    }
}

/// An IPv6 prefix, the address in host order.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Route6 {
    pub addr: u128,
    pub len: u8,
}

impl Route6 {
    /// The LPM_TRIE key: prefix length, then 16 bytes in network order,
    /// host bits cleared.
    fn key(self) -> [u8; 20] {
        let len = self.len.min(128);
        let mask = if len == 0 {
            0
        } else {
            u128::MAX << (128 - u32::from(len))
        };
        let mut k = [0u8; 20];
        k[..4].copy_from_slice(&u32::from(len).to_ne_bytes());
        k[4..].copy_from_slice(&(self.addr & mask).to_be_bytes());
        k
    }
}

/// A map entry as the program reads it: a next hop, [`LOCAL`],
/// [`UNRESOLVED`] (members only) or an ECMP group ([`FastHop::group`]).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastHop {
    /// The egress port's DEVMAP slot (the dataplane's port index),
    /// [`LOCAL`], [`UNRESOLVED`], or `GROUP | members`.
    pub slot: u32,
    /// The neighbour's MAC (a group: the first member's index, native
    /// order, in the first four bytes).
    pub dmac: [u8; 6],
    /// The egress port's MAC.
    pub smac: [u8; 6],
}

impl FastHop {
    /// One of our own addresses.
    pub const fn local() -> Self {
        FastHop {
            slot: LOCAL,
            dmac: [0; 6],
            smac: [0; 6],
        }
    }
    /// An ECMP member not resolved yet.
    pub const fn unresolved() -> Self {
        FastHop {
            slot: UNRESOLVED,
            dmac: [0; 6],
            smac: [0; 6],
        }
    }
    /// An ECMP group of `members` (1..=[`MAX_MEMBERS`]) entries of the
    /// member array from index `first`: a packet takes member
    /// `first + flow_hash % members`.
    pub fn group(first: u32, members: u32) -> Self {
        let f = first.to_ne_bytes();
        FastHop {
            slot: GROUP | members.min(MAX_MEMBERS),
            dmac: [f[0], f[1], f[2], f[3], 0, 0],
            smac: [0; 6],
        }
    }
    /// The map value: slot (native order), destination MAC, source MAC.
    fn value(self) -> [u8; 16] {
        let mut v = [0u8; 16];
        v[..4].copy_from_slice(&self.slot.to_ne_bytes());
        v[4..10].copy_from_slice(&self.dmac);
        v[10..].copy_from_slice(&self.smac);
        v
    }
    fn from_value(v: &[u8; 16]) -> Self {
        let mut h = FastHop {
            slot: u32::from_ne_bytes([v[0], v[1], v[2], v[3]]),
            dmac: [0; 6],
            smac: [0; 6],
        };
        h.dmac.copy_from_slice(&v[4..10]);
        h.smac.copy_from_slice(&v[10..]);
        h
    }
}

/// One change to the maps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FastOp {
    Set(Route4, FastHop),
    Remove(Route4),
    Set6(Route6, FastHop),
    Remove6(Route6),
    /// Writes index `u32` of the group member array.
    Member(u32, FastHop),
}

/// What [`FastMaps::apply`] did.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ApplyStats {
    /// Entries written and removed.
    pub set: u64,
    pub removed: u64,
    /// Entries the kernel refused (map full, ...): their packets keep
    /// going to the graph.
    pub failed: u64,
    /// bpf(2) calls made (batched calls count one each).
    pub calls: u64,
}

impl ApplyStats {
    pub fn add(&mut self, o: &ApplyStats) {
        self.set += o.set;
        self.removed += o.removed;
        self.failed += o.failed;
        self.calls += o.calls;
    }
}

/// Whether this kernel takes batched calls on a map (probed on the
/// first apply).
const BATCH_UNKNOWN: u8 = 0;
const BATCH_YES: u8 = 1;
const BATCH_NO: u8 = 2;

/// A map and whether batched calls work on it.
struct Map {
    fd: OwnedFd,
    batch: AtomicU8,
}

impl Map {
    fn new(fd: OwnedFd) -> Self {
        Map {
            fd,
            batch: AtomicU8::new(BATCH_UNKNOWN),
        }
    }
}

/// The fast path's maps, shared by every port's program and written by
/// one thread (the dataplane's FIB thread).
pub struct FastMaps {
    lpm: Map,
    lpm6: Map,
    members: Map,
    devmap: OwnedFd,
    counters: OwnedFd,
    ports: u32,
}

#[derive(Copy, Clone, PartialEq, Eq)]
enum Kind {
    Set4,
    Del4,
    Set6,
    Del6,
    Member,
}

fn kind(o: &FastOp) -> Kind {
    match o {
        FastOp::Set(..) => Kind::Set4,
        FastOp::Remove(_) => Kind::Del4,
        FastOp::Set6(..) => Kind::Set6,
        FastOp::Remove6(_) => Kind::Del6,
        FastOp::Member(..) => Kind::Member,
    }
}

impl FastMaps {
    /// Creates the maps: room for `routes` IPv4 and `routes` IPv6
    /// entries, [`MAX_GROUPS`] ECMP groups and `ports` egress ports.
    pub fn create(routes: u32, ports: u32) -> Result<Self, IoError> {
        if routes == 0 || ports == 0 || ports > 1024 {
            return Err(IoError::Config(
                "fast path: routes must be > 0, ports in 1..=1024",
            ));
        }
        Ok(FastMaps {
            lpm: Map::new(create_map(
                BPF_MAP_TYPE_LPM_TRIE,
                8,
                16,
                routes,
                BPF_F_NO_PREALLOC,
            )?),
            lpm6: Map::new(create_map(
                BPF_MAP_TYPE_LPM_TRIE,
                20,
                16,
                routes,
                BPF_F_NO_PREALLOC,
            )?),
            members: Map::new(create_map(
                BPF_MAP_TYPE_ARRAY,
                4,
                16,
                MAX_GROUPS * MAX_MEMBERS,
                0,
            )?),
            devmap: create_map(BPF_MAP_TYPE_DEVMAP, 4, 4, ports, 0)?,
            counters: create_map(
                BPF_MAP_TYPE_PERCPU_ARRAY,
                4,
                8,
                FastReason::ALL.len() as u32,
                0,
            )?,
            ports,
        })
    }

    /// Points DEVMAP slot `slot` (a port index) at interface `ifindex`.
    pub fn set_port(&self, slot: u32, ifindex: u32) -> Result<(), IoError> {
        if slot >= self.ports {
            return Err(IoError::Config("fast path: port slot beyond the DEVMAP"));
        }
        update(&self.devmap, &slot.to_ne_bytes(), &ifindex.to_ne_bytes())
    }

    /// Whether batched updates are in use on the IPv4 LPM map (`None`:
    /// not probed yet).
    pub fn batched(&self) -> Option<bool> {
        match self.lpm.batch.load(Ordering::Relaxed) {
            BATCH_YES => Some(true),
            BATCH_NO => Some(false),
            _ => None,
        }
    }

    /// Applies `ops` in order: runs of sets with `BPF_MAP_UPDATE_BATCH`
    /// and runs of removals with `BPF_MAP_DELETE_BATCH` when the kernel
    /// has them for the map, else one call per entry. Removing an entry
    /// that is not there counts as removed.
    pub fn apply(&self, ops: &[FastOp]) -> ApplyStats {
        let mut st = ApplyStats::default();
        let mut i = 0;
        while i < ops.len() {
            let Some(k) = ops.get(i).map(kind) else { break };
            let run = ops
                .get(i..)
                .unwrap_or(&[])
                .iter()
                .take_while(|o| kind(o) == k)
                .take(BATCH)
                .count();
            let chunk = ops.get(i..i + run).unwrap_or(&[]);
            match k {
                Kind::Set4 => {
                    let (keys, vals): (Vec<[u8; 8]>, Vec<[u8; 16]>) = chunk
                        .iter()
                        .filter_map(|o| match o {
                            FastOp::Set(r, h) => Some((r.key(), h.value())),
                            _ => None,
                        })
                        .unzip();
                    set_run(&self.lpm, &keys, &vals, &mut st);
                }
                Kind::Set6 => {
                    let (keys, vals): (Vec<[u8; 20]>, Vec<[u8; 16]>) = chunk
                        .iter()
                        .filter_map(|o| match o {
                            FastOp::Set6(r, h) => Some((r.key(), h.value())),
                            _ => None,
                        })
                        .unzip();
                    set_run(&self.lpm6, &keys, &vals, &mut st);
                }
                Kind::Member => {
                    let (keys, vals): (Vec<[u8; 4]>, Vec<[u8; 16]>) = chunk
                        .iter()
                        .filter_map(|o| match o {
                            FastOp::Member(i, h) => Some((i.to_ne_bytes(), h.value())),
                            _ => None,
                        })
                        .unzip();
                    set_run(&self.members, &keys, &vals, &mut st);
                }
                Kind::Del4 => {
                    let keys: Vec<[u8; 8]> = chunk
                        .iter()
                        .filter_map(|o| match o {
                            FastOp::Remove(r) => Some(r.key()),
                            _ => None,
                        })
                        .collect();
                    remove_run(&self.lpm, &keys, &mut st);
                }
                Kind::Del6 => {
                    let keys: Vec<[u8; 20]> = chunk
                        .iter()
                        .filter_map(|o| match o {
                            FastOp::Remove6(r) => Some(r.key()),
                            _ => None,
                        })
                        .collect();
                    remove_run(&self.lpm6, &keys, &mut st);
                }
            }
            i += run.max(1);
        }
        st
    }

    /// The longest-match entry for address `addr` (host order), as the
    /// program sees it.
    pub fn lookup(&self, addr: u32) -> Option<FastHop> {
        let mut v = [0u8; 16];
        let k = Route4 { addr, len: 32 }.key();
        lookup(&self.lpm.fd, &k, &mut v).ok()?;
        Some(FastHop::from_value(&v))
    }

    /// The longest-match IPv6 entry for `addr` (host order).
    pub fn lookup6(&self, addr: u128) -> Option<FastHop> {
        let mut v = [0u8; 16];
        let k = Route6 { addr, len: 128 }.key();
        lookup(&self.lpm6.fd, &k, &mut v).ok()?;
        Some(FastHop::from_value(&v))
    }

    /// Entry `i` of the group member array.
    pub fn member(&self, i: u32) -> Option<FastHop> {
        let mut v = [0u8; 16];
        lookup(&self.members.fd, &i.to_ne_bytes(), &mut v).ok()?;
        Some(FastHop::from_value(&v))
    }

    /// The counters, summed over the possible CPUs.
    pub fn counters(&self) -> Result<FastCounters, IoError> {
        let mut c = FastCounters::default();
        let cpus = possible_cpus();
        let mut buf = vec![0u8; cpus * 8];
        for (i, slot) in c.0.iter_mut().enumerate() {
            buf.iter_mut().for_each(|b| *b = 0);
            lookup(&self.counters, &(i as u32).to_ne_bytes(), &mut buf)?;
            *slot = buf
                .chunks_exact(8)
                .map(|b| u64::from_ne_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
                .sum();
        }
        Ok(c)
    }

    /// Loads the fast-path program for a port with MAC `mac` whose graph
    /// socket is in XSKMAP `xsk` (not attached: see
    /// [`super::XdpProgram::attach_fast`]).
    pub(crate) fn load_program(&self, xsk: &OwnedFd, mac: [u8; 6]) -> Result<OwnedFd, IoError> {
        let insns = self
            .program(xsk.as_raw_fd(), mac)
            .map_err(|_| IoError::Config("fast path: the XDP program does not assemble"))?;
        load_xdp(&insns, b"tessera_fast")
    }

    /// The program, loaded but not attached, with an XSKMAP of its own
    /// and no socket in it (packets for the graph then give `XDP_PASS`),
    /// for `BPF_PROG_TEST_RUN` (tests, benches).
    pub fn test_program(&self, mac: [u8; 6]) -> Result<FastProgram, IoError> {
        let xsk = xskmap(1)?;
        let prog = self.load_program(&xsk, mac)?;
        Ok(FastProgram { prog, _xsk: xsk })
    }

    fn program(&self, xsk: i32, mac: [u8; 6]) -> Result<Vec<Insn>, super::asm::AsmError> {
        program(
            &Fds {
                lpm: self.lpm.fd.as_raw_fd(),
                lpm6: self.lpm6.fd.as_raw_fd(),
                members: self.members.fd.as_raw_fd(),
                devmap: self.devmap.as_raw_fd(),
                counters: self.counters.as_raw_fd(),
                xsk,
            },
            mac,
        )
    }
}

/// Writes `keys` -> `vals` into `m`: batched while the kernel takes it.
fn set_run<const K: usize>(m: &Map, keys: &[[u8; K]], vals: &[[u8; 16]], st: &mut ApplyStats) {
    let mut done = 0;
    if m.batch.load(Ordering::Relaxed) != BATCH_NO && !keys.is_empty() {
        let (n, r) = batch_call(
            BPF_MAP_UPDATE_BATCH,
            &m.fd,
            keys,
            Some(vals.as_ptr() as u64),
        );
        st.calls += 1;
        done = n.min(keys.len());
        st.set += done as u64;
        match r {
            Ok(()) => m.batch.store(BATCH_YES, Ordering::Relaxed),
            Err(e) if unsupported(e) && done == 0 => m.batch.store(BATCH_NO, Ordering::Relaxed),
            Err(_) => {
                // The entry at `done` failed: skip it, retry the rest
                // one by one below.
                m.batch.store(BATCH_YES, Ordering::Relaxed);
                st.failed += 1;
                done += 1;
            }
        }
    }
    for (k, v) in keys.iter().zip(vals).skip(done) {
        st.calls += 1;
        match update(&m.fd, k, v) {
            Ok(()) => st.set += 1,
            Err(_) => st.failed += 1,
        }
    }
}

/// Removes `keys` from `m`: batched while the kernel takes it.
fn remove_run<const K: usize>(m: &Map, keys: &[[u8; K]], st: &mut ApplyStats) {
    let mut done = 0;
    if m.batch.load(Ordering::Relaxed) != BATCH_NO && !keys.is_empty() {
        let (n, r) = batch_call(BPF_MAP_DELETE_BATCH, &m.fd, keys, None);
        st.calls += 1;
        done = n.min(keys.len());
        st.removed += done as u64;
        match r {
            Ok(()) => m.batch.store(BATCH_YES, Ordering::Relaxed),
            Err(e) if unsupported(e) && done == 0 => m.batch.store(BATCH_NO, Ordering::Relaxed),
            // An absent key stops the batch: the rest one by one.
            Err(_) => {}
        }
    }
    for k in keys.iter().skip(done) {
        st.calls += 1;
        match delete(&m.fd, k) {
            Ok(()) => st.removed += 1,
            Err(e) if e.errno() == Some(libc::ENOENT) => st.removed += 1,
            Err(_) => st.failed += 1,
        }
    }
}

impl XdpProgram {
    /// Like [`XdpProgram::attach`], with the XDP fast path of
    /// [this module](self) in front of the XSKMAP redirect: IPv4 and IPv6
    /// packets with a next hop in `maps` leave through the `DEVMAP` in the
    /// kernel, the rest go to the queue's AF_XDP socket as with
    /// [`XdpProgram::attach`]. `mac` is the interface's MAC (frames to
    /// another MAC are not ours to forward).
    pub fn attach_fast(
        ifname: &str,
        mode: XdpMode,
        queues: u32,
        maps: &FastMaps,
        mac: [u8; 6],
    ) -> Result<Arc<Self>, IoError> {
        Self::attach_with(ifname, mode, queues, |xsk| maps.load_program(xsk, mac))
    }
}

/// A loaded fast-path program for `BPF_PROG_TEST_RUN`.
pub struct FastProgram {
    prog: OwnedFd,
    _xsk: OwnedFd,
}

impl FastProgram {
    /// Runs the program `repeat` times on `frame` in the kernel and gives
    /// the kernel's mean time per run in ns (`BPF_PROG_TEST_RUN`'s
    /// `duration`): the program's own cost, for `examples/xdp_fast_cost`.
    pub fn time(&self, frame: &[u8], repeat: u32) -> Result<u32, IoError> {
        let mut out = vec![0u8; frame.len() + 256];
        let mut attr = Attr::new();
        attr.u32(0, self.prog.as_raw_fd() as u32)
            .u32(8, frame.len() as u32)
            .u32(12, out.len() as u32)
            .u64(16, frame.as_ptr() as u64)
            .u64(24, out.as_mut_ptr() as u64)
            .u32(32, repeat.max(1));
        bpf_raw(BPF_PROG_TEST_RUN, &mut attr, Op::BpfProgTestRun)?;
        Ok(attr
            .0
            .get(36..40)
            .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]])))
    }

    /// Runs the program once on `frame` in the kernel: the verdict and the
    /// frame as the program left it.
    pub fn run(&self, frame: &[u8]) -> Result<(u32, Vec<u8>), IoError> {
        let mut out = vec![0u8; frame.len() + 256];
        let mut attr = Attr::new();
        attr.u32(0, self.prog.as_raw_fd() as u32)
            .u32(8, frame.len() as u32)
            .u32(12, out.len() as u32)
            .u64(16, frame.as_ptr() as u64)
            .u64(24, out.as_mut_ptr() as u64)
            .u32(32, 1);
        bpf_raw(BPF_PROG_TEST_RUN, &mut attr, Op::BpfProgTestRun)?;
        let rd = |o: usize| {
            attr.0
                .get(o..o + 4)
                .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
        };
        let (ret, len) = (rd(4), rd(12) as usize);
        out.truncate(len);
        Ok((ret, out))
    }
}

/// The map descriptors a program refers to.
struct Fds {
    lpm: i32,
    lpm6: i32,
    members: i32,
    devmap: i32,
    counters: i32,
    xsk: i32,
}

// Registers: r1-r5 arguments and scratch, r0 results; r6-r9 survive calls.
const CTX: u8 = 6;
const DATA: u8 = 7;
const END: u8 = 8;
/// The counter index (a [`FastReason`]) until the lookup hits, then the
/// egress slot.
const R9: u8 = 9;
const FP: u8 = 10;
// Stack slots (offsets from the frame pointer; every access aligned).
/// The IPv4 LPM key: prefix length at -8, address at -4.
const KEY4: i16 = -8;
/// The counter index.
const CKEY: i16 = -16;
/// The IPv6 LPM key: prefix length at -40, address at -36..-20.
const KEY6: i16 = -40;
/// A group's member count and first index while the hash is computed.
const GN: i16 = -48;
const GFIRST: i16 = -44;
/// The member array key.
const MKEY: i16 = -56;

/// Byte offsets in the frame (Ethernet without a tag).
const IP: i16 = 14;
const IP6_PLEN: i16 = IP + 4;
const IP6_NH: i16 = IP + 6;
const IP6_HLIM: i16 = IP + 7;
const IP6_SRC: i16 = IP + 8;
const IP6_DST: i16 = IP + 24;
const L4_6: i16 = IP + 40;

/// The fast-path program (see the module doc for its flow).
fn program(m: &Fds, mac: [u8; 6]) -> Result<Vec<Insn>, super::asm::AsmError> {
    let mut a = Asm::new();
    let graph = a.label();
    let v6 = a.label();
    a.mov(CTX, 1);
    // struct xdp_md: data at 0, data_end at 4, rx_queue_index at 16.
    a.ldx(Size::W, DATA, CTX, 0).ldx(Size::W, END, CTX, 4);
    reason(&mut a, FastReason::Short);
    bound(&mut a, 14, graph);
    // Destination MAC: ours (loads are little-endian on the hosts we run
    // on; the immediates are the same bytes read the same way).
    reason(&mut a, FastReason::OtherMac);
    let lo = u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]) as i32;
    let hi = u16::from_le_bytes([mac[4], mac[5]]) as i32;
    a.ldx(Size::W, 2, DATA, 0).jmp32_imm(Cond::Ne, 2, lo, graph);
    a.ldx(Size::H, 2, DATA, 4).jmp32_imm(Cond::Ne, 2, hi, graph);
    // EtherType 0x86dd or 0x0800.
    a.ldx(Size::H, 2, DATA, 12);
    a.jmp32_imm(Cond::Eq, 2, u16::from_le_bytes([0x86, 0xdd]) as i32, v6);
    reason(&mut a, FastReason::NotIp);
    a.jmp32_imm(Cond::Ne, 2, u16::from_le_bytes([0x08, 0x00]) as i32, graph);
    ipv4(&mut a, m, graph);
    a.bind(v6);
    ipv6(&mut a, m, graph);
    // To the graph: this queue's AF_XDP socket, or the kernel's stack when
    // the slot is empty (as the plain program does).
    a.bind(graph);
    count(&mut a, m.counters, R9);
    a.ldx(Size::W, 2, CTX, 16);
    a.ld_map(1, m.xsk).mov_imm(3, XDP_PASS as i32);
    a.call(BPF_FUNC_REDIRECT_MAP).exit();
    a.finish()
}

/// `if data + n > data_end goto l` (after it, the verifier knows the
/// first `n` bytes are readable).
fn bound(a: &mut Asm, n: i32, l: Label) {
    a.mov(2, DATA).alu_imm(Alu::Add, 2, n);
    a.jmp(Cond::Gt, 2, END, l);
}

/// The IPv4 half, from a frame with EtherType 0x0800 to its verdict.
fn ipv4(a: &mut Asm, m: &Fds, graph: Label) {
    // Ethernet (14) + IPv4 without options (20) must be in the frame.
    reason(a, FastReason::Short);
    bound(a, 34, graph);
    // Version 4, IHL 5: anything else (options) is the graph's.
    reason(a, FastReason::Options);
    a.ldx(Size::B, 2, DATA, 14)
        .jmp32_imm(Cond::Ne, 2, 0x45, graph);
    // RFC 1812 §5.2.2: total length at least the header and within the
    // frame (the bound first, so that the verifier accepts the pointer
    // sum), header checksum; §5.3.7: a forwardable source.
    reason(a, FastReason::BadHeader);
    a.ldx(Size::B, 2, DATA, 16).alu_imm(Alu::Lsh, 2, 8);
    a.ldx(Size::B, 3, DATA, 17).alu(Alu::Or, 2, 3);
    a.jmp_imm(Cond::Le, 2, 19, graph);
    a.jmp_imm(Cond::Gt, 2, 9216, graph);
    a.mov(3, DATA).alu(Alu::Add, 3, 2).alu_imm(Alu::Add, 3, 14);
    a.jmp(Cond::Gt, 3, END, graph);
    a.mov_imm(4, 0);
    for off in (14..34).step_by(2) {
        // One's-complement sums do not depend on the byte order.
        a.ldx(Size::H, 2, DATA, off).alu(Alu::Add, 4, 2);
    }
    for _ in 0..2 {
        a.mov(5, 4).alu_imm(Alu::Rsh, 5, 16);
        a.alu_imm(Alu::And, 4, 0xffff).alu(Alu::Add, 4, 5);
    }
    a.jmp_imm(Cond::Ne, 4, 0xffff, graph);
    a.ldx(Size::B, 2, DATA, 26);
    a.jmp_imm(Cond::Eq, 2, 0, graph);
    a.jmp_imm(Cond::Eq, 2, 127, graph);
    a.jmp_imm(Cond::Gt, 2, 223, graph);
    // Flags and fragment offset: MF or a non-zero offset is a fragment.
    reason(a, FastReason::Fragment);
    let frag = u16::from_le_bytes([0x3f, 0xff]) as i32;
    a.ldx(Size::H, 2, DATA, 20).alu_imm(Alu::And, 2, frag);
    a.jmp_imm(Cond::Ne, 2, 0, graph);
    // TTL <= 1: the graph sends time exceeded (RFC 1812 5.3.1).
    reason(a, FastReason::Ttl);
    a.ldx(Size::B, 2, DATA, 22).jmp32_imm(Cond::Le, 2, 1, graph);
    // The LPM key on the stack: prefix length 32, the destination.
    reason(a, FastReason::NoRoute);
    a.st(Size::W, FP, KEY4, 32);
    a.ldx(Size::W, 2, DATA, 30).stx(Size::W, FP, KEY4 + 4, 2);
    a.ld_map(1, m.lpm)
        .mov(2, FP)
        .alu_imm(Alu::Add, 2, i32::from(KEY4));
    a.call(BPF_FUNC_MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, 0, 0, graph);
    let hop = a.label();
    group(a, m, false, hop, graph);
    a.bind(hop);
    rewrite_macs(a);
    // RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m the 16-bit word holding
    // TTL and protocol, m' the same word with TTL - 1, in network order.
    a.ldx(Size::B, 2, DATA, 22); // TTL
    a.ldx(Size::B, 3, DATA, 23); // protocol
    a.ldx(Size::B, 4, DATA, 24).alu_imm(Alu::Lsh, 4, 8);
    a.ldx(Size::B, 5, DATA, 25).alu(Alu::Or, 4, 5); // HC
    a.alu_imm(Alu::Xor, 4, 0xffff); // ~HC
    a.mov(5, 2).alu_imm(Alu::Lsh, 5, 8).alu(Alu::Or, 5, 3); // m
    a.alu_imm(Alu::Xor, 5, 0xffff).alu(Alu::Add, 4, 5); // + ~m
    a.alu_imm(Alu::Sub, 2, 1).stx(Size::B, DATA, 22, 2); // TTL - 1
    a.alu_imm(Alu::Lsh, 2, 8)
        .alu(Alu::Or, 2, 3)
        .alu(Alu::Add, 4, 2); // + m'
    for _ in 0..2 {
        // End-around carry.
        a.mov(5, 4).alu_imm(Alu::Rsh, 5, 16);
        a.alu_imm(Alu::And, 4, 0xffff).alu(Alu::Add, 4, 5);
    }
    a.alu_imm(Alu::Xor, 4, 0xffff); // HC'
    a.stx(Size::B, DATA, 25, 4);
    a.alu_imm(Alu::Rsh, 4, 8).stx(Size::B, DATA, 24, 4);
    count_const(a, m.counters, FastReason::Forwarded);
    redirect(a, m);
}

/// The IPv6 half, from a frame with EtherType 0x86dd to its verdict.
fn ipv6(a: &mut Asm, m: &Fds, graph: Label) {
    reason(a, FastReason::Short);
    bound(a, i32::from(L4_6), graph);
    // RFC 8200 §3: version 6; the payload within the frame (the bound
    // first, for the verifier's pointer sum).
    reason(a, FastReason::BadHeader);
    a.ldx(Size::B, 2, DATA, IP)
        .alu_imm(Alu::Rsh, 2, 4)
        .jmp_imm(Cond::Ne, 2, 6, graph);
    a.ldx(Size::B, 2, DATA, IP6_PLEN).alu_imm(Alu::Lsh, 2, 8);
    a.ldx(Size::B, 3, DATA, IP6_PLEN + 1).alu(Alu::Or, 2, 3);
    a.jmp_imm(Cond::Gt, 2, 9216 - 40, graph);
    a.mov(3, DATA)
        .alu(Alu::Add, 3, 2)
        .alu_imm(Alu::Add, 3, i32::from(L4_6));
    a.jmp(Cond::Gt, 3, END, graph);
    // RFC 4291 §2.5.6, §2.7: link-local and multicast addresses (and the
    // unspecified and loopback ones) are never forwarded; the graph
    // decides (ours, or a drop).
    reason(a, FastReason::Scope);
    for at in [IP6_DST, IP6_SRC] {
        let next = a.label();
        a.ldx(Size::B, 2, DATA, at)
            .jmp_imm(Cond::Eq, 2, 0xff, graph);
        let not_fe = a.label();
        a.jmp_imm(Cond::Ne, 2, 0xfe, not_fe);
        a.ldx(Size::B, 3, DATA, at + 1)
            .alu_imm(Alu::And, 3, 0xc0)
            .jmp_imm(Cond::Eq, 3, 0x80, graph);
        a.bind(not_fe);
        // :: and ::1: the first eight bytes zero, the last eight (as a
        // big-endian number) at most 1.
        a.ldx(Size::DW, 2, DATA, at).jmp_imm(Cond::Ne, 2, 0, next);
        a.ldx(Size::DW, 2, DATA, at + 8).be(2, 64);
        a.jmp_imm(Cond::Le, 2, 1, graph);
        a.bind(next);
    }
    // RFC 8200 §4: what follows the header must be something a router
    // passes without looking (hop-by-hop options must be processed, and
    // other extension headers are not parsed here).
    reason(a, FastReason::ExtHeader);
    let ok = a.label();
    a.ldx(Size::B, 2, DATA, IP6_NH);
    for nh in [6, 17, 58, 132, 47, 4, 41] {
        a.jmp_imm(Cond::Eq, 2, nh, ok);
    }
    a.ja(graph);
    a.bind(ok);
    // RFC 4861: Neighbor Discovery (types 133-137) is the graph's.
    let not_nd = a.label();
    a.jmp_imm(Cond::Ne, 2, 58, not_nd);
    reason(a, FastReason::BadHeader);
    bound(a, i32::from(L4_6) + 1, graph);
    reason(a, FastReason::Nd);
    a.ldx(Size::B, 2, DATA, L4_6);
    a.jmp_imm(Cond::Gt, 2, 137, not_nd);
    a.jmp_imm(Cond::Ge, 2, 133, graph);
    a.bind(not_nd);
    // Hop limit <= 1: the graph sends time exceeded (RFC 4443 §3.3).
    reason(a, FastReason::HopLimit);
    a.ldx(Size::B, 2, DATA, IP6_HLIM)
        .jmp32_imm(Cond::Le, 2, 1, graph);
    // The LPM key on the stack: prefix length 128, the destination.
    reason(a, FastReason::NoRoute);
    a.st(Size::W, FP, KEY6, 128);
    for i in 0..4 {
        a.ldx(Size::W, 2, DATA, IP6_DST + 4 * i)
            .stx(Size::W, FP, KEY6 + 4 + 4 * i, 2);
    }
    a.ld_map(1, m.lpm6)
        .mov(2, FP)
        .alu_imm(Alu::Add, 2, i32::from(KEY6));
    a.call(BPF_FUNC_MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, 0, 0, graph);
    let hop = a.label();
    group(a, m, true, hop, graph);
    a.bind(hop);
    rewrite_macs(a);
    a.ldx(Size::B, 2, DATA, IP6_HLIM)
        .alu_imm(Alu::Sub, 2, 1)
        .stx(Size::B, DATA, IP6_HLIM, 2);
    count_const(a, m.counters, FastReason::Forwarded6);
    redirect(a, m);
}

/// With r0 the LPM entry (not null): [`LOCAL`] goes to the graph, a port
/// slot on to `hop` with r3 = the slot, a group picks its member by the
/// flow hash and goes on to `hop` with r0 = the member, r3 = its slot.
fn group(a: &mut Asm, m: &Fds, v6: bool, hop: Label, graph: Label) {
    reason(a, FastReason::Local);
    a.ldx(Size::W, 3, 0, 0)
        .jmp32_imm(Cond::Eq, 3, LOCAL as i32, graph);
    reason(a, FastReason::Unresolved);
    a.jmp32_imm(Cond::Eq, 3, UNRESOLVED as i32, graph);
    a.jmp32_imm(Cond::Le, 3, 0xffff, hop);
    // A group: members and first index kept on the stack across the hash.
    reason(a, FastReason::NoRoute);
    a.mov(4, 3).alu_imm(Alu::And, 4, 0xffff);
    a.stx(Size::W, FP, GN, 4);
    a.ldx(Size::W, 5, 0, 4).stx(Size::W, FP, GFIRST, 5);
    flow_hash(a, v6);
    a.ldx(Size::W, 3, FP, GN).jmp_imm(Cond::Eq, 3, 0, graph);
    // `hash as usize % members`, as fib::FibTables::pick.
    a.alu(Alu::Mod, 4, 3);
    a.ldx(Size::W, 5, FP, GFIRST).alu(Alu::Add, 4, 5);
    a.stx(Size::W, FP, MKEY, 4);
    a.ld_map(1, m.members)
        .mov(2, FP)
        .alu_imm(Alu::Add, 2, i32::from(MKEY));
    a.call(BPF_FUNC_MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, 0, 0, graph);
    reason(a, FastReason::Unresolved);
    a.ldx(Size::W, 3, 0, 0)
        .jmp32_imm(Cond::Eq, 3, UNRESOLVED as i32, graph);
    a.jmp32_imm(Cond::Eq, 3, LOCAL as i32, graph);
}

/// r9 = the slot in r3; the MACs from the entry at r0: destination at
/// 4..10, source at 10..16.
fn rewrite_macs(a: &mut Asm) {
    a.mov(R9, 3);
    a.ldx(Size::W, 2, 0, 4).stx(Size::W, DATA, 0, 2);
    a.ldx(Size::H, 2, 0, 8).stx(Size::H, DATA, 4, 2);
    a.ldx(Size::H, 2, 0, 10).stx(Size::H, DATA, 6, 2);
    a.ldx(Size::W, 2, 0, 12).stx(Size::W, DATA, 8, 2);
}

/// Out of the egress port in r9; an empty slot (never, while the
/// dataplane runs) aborts, which the xdp:xdp_exception tracepoint shows.
fn redirect(a: &mut Asm, m: &Fds) {
    a.ld_map(1, m.devmap)
        .mov(2, R9)
        .mov_imm(3, XDP_ABORTED as i32);
    a.call(BPF_FUNC_REDIRECT_MAP).exit();
}

/// r4 = `pkt::hdr::flow::flow_hash` of the frame (the element graph's
/// ECMP hash, so that a flow takes the same member with and without the
/// fast path): the addresses, then the TCP/UDP/SCTP ports when the frame
/// holds them, then the protocol, each folded in by [`mix`]; the result
/// is `(h ^ h >> 32) as u32`. The checks before made the frame an IPv4
/// header without options that is not a fragment, or an IPv6 header.
/// Clobbers r0-r5.
fn flow_hash(a: &mut Asm, v6: bool) {
    let (proto, l4) = if v6 {
        (IP6_NH, L4_6)
    } else {
        (IP + 9, IP + 20)
    };
    a.mov_imm(4, 0);
    if v6 {
        for at in [IP6_SRC, IP6_SRC + 8, IP6_DST, IP6_DST + 8] {
            a.ldx(Size::DW, 2, DATA, at).be(2, 64);
            mix(a);
        }
    } else {
        // Source and destination as one big-endian u64.
        a.ldx(Size::DW, 2, DATA, IP + 12).be(2, 64);
        mix(a);
    }
    let ports = a.label();
    let no_ports = a.label();
    a.ldx(Size::B, 2, DATA, proto);
    for p in [6, 17, 132] {
        a.jmp_imm(Cond::Eq, 2, p, ports);
    }
    a.ja(no_ports);
    a.bind(ports);
    bound(a, i32::from(l4) + 4, no_ports);
    a.ldx(Size::W, 2, DATA, l4).be(2, 32);
    mix(a);
    a.bind(no_ports);
    a.ldx(Size::B, 2, DATA, proto);
    mix(a);
    a.mov(2, 4).alu_imm(Alu::Rsh, 2, 32).alu(Alu::Xor, 4, 2);
    a.alu_imm(Alu::Lsh, 4, 32).alu_imm(Alu::Rsh, 4, 32);
}

/// r4 = `mix(r2, r4)`: `pkt::hdr::flow`'s round (SplitMix64's finaliser
/// over `v ^ seed.rotate_left(23) ^ golden ratio`). Clobbers r1-r3, r5.
fn mix(a: &mut Asm) {
    a.mov(3, 4).alu_imm(Alu::Lsh, 3, 23);
    a.mov(5, 4).alu_imm(Alu::Rsh, 5, 41);
    a.alu(Alu::Or, 3, 5).alu(Alu::Xor, 2, 3);
    a.ld_imm64(1, 0x9e37_79b9_7f4a_7c15).alu(Alu::Xor, 2, 1);
    a.mov(3, 2).alu_imm(Alu::Rsh, 3, 30).alu(Alu::Xor, 2, 3);
    a.ld_imm64(1, 0xbf58_476d_1ce4_e5b9).alu(Alu::Mul, 2, 1);
    a.mov(3, 2).alu_imm(Alu::Rsh, 3, 27).alu(Alu::Xor, 2, 3);
    a.ld_imm64(1, 0x94d0_49bb_1331_11eb).alu(Alu::Mul, 2, 1);
    a.mov(3, 2).alu_imm(Alu::Rsh, 3, 31).alu(Alu::Xor, 2, 3);
    a.mov(4, 2);
}

/// `r9 = r` (the counter index if the next jump goes to the graph).
fn reason(a: &mut Asm, r: FastReason) {
    a.mov_imm(R9, r as i32);
}

/// `counters[reg]++` for this CPU. Clobbers r0-r5.
fn count(a: &mut Asm, counters: i32, reg: u8) {
    a.stx(Size::W, FP, CKEY, reg);
    bump(a, counters);
}

/// `counters[r]++` for this CPU. Clobbers r0-r5.
fn count_const(a: &mut Asm, counters: i32, r: FastReason) {
    a.st(Size::W, FP, CKEY, r as i32);
    bump(a, counters);
}

fn bump(a: &mut Asm, counters: i32) {
    let skip = a.label();
    a.ld_map(1, counters)
        .mov(2, FP)
        .alu_imm(Alu::Add, 2, i32::from(CKEY));
    a.call(BPF_FUNC_MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, 0, 0, skip);
    a.ldx(Size::DW, 1, 0, 0)
        .alu_imm(Alu::Add, 1, 1)
        .stx(Size::DW, 0, 0, 1);
    a.bind(skip);
}

fn update(map: &OwnedFd, key: &[u8], val: &[u8]) -> Result<(), IoError> {
    bpf_raw(
        BPF_MAP_UPDATE_ELEM,
        Attr::new()
            .u32(0, map.as_raw_fd() as u32)
            .u64(8, key.as_ptr() as u64)
            .u64(16, val.as_ptr() as u64),
        Op::BpfMapUpdate,
    )
    .map(|_| ())
}

fn delete(map: &OwnedFd, key: &[u8]) -> Result<(), IoError> {
    bpf_raw(
        BPF_MAP_DELETE_ELEM,
        Attr::new()
            .u32(0, map.as_raw_fd() as u32)
            .u64(8, key.as_ptr() as u64),
        Op::BpfMapDelete,
    )
    .map(|_| ())
}

fn lookup(map: &OwnedFd, key: &[u8], out: &mut [u8]) -> Result<(), IoError> {
    bpf_raw(
        BPF_MAP_LOOKUP_ELEM,
        Attr::new()
            .u32(0, map.as_raw_fd() as u32)
            .u64(8, key.as_ptr() as u64)
            .u64(16, out.as_mut_ptr() as u64),
        Op::BpfMapLookup,
    )
    .map(|_| ())
}

/// A batched update or delete of `keys` (and `values`): how many entries
/// the kernel processed, and its answer.
fn batch_call<const K: usize>(
    cmd: i64,
    map: &OwnedFd,
    keys: &[[u8; K]],
    values: Option<u64>,
) -> (usize, Result<(), IoError>) {
    let mut attr = Attr::new();
    attr.u64(16, keys.as_ptr() as u64)
        .u64(24, values.unwrap_or(0))
        .u32(32, keys.len() as u32)
        .u32(36, map.as_raw_fd() as u32);
    let op = if values.is_some() {
        Op::BpfMapUpdate
    } else {
        Op::BpfMapDelete
    };
    let r = bpf_raw(cmd, &mut attr, op).map(|_| ());
    let n = attr
        .0
        .get(32..36)
        .map_or(0, |b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
    (n as usize, r)
}

/// The kernel has no batched form of the call for this map type.
fn unsupported(e: IoError) -> bool {
    // ENOTSUPP (524) is the kernel-internal value some map types return.
    matches!(e.errno(), Some(libc::EINVAL | libc::EOPNOTSUPP | 524))
}

/// The number of possible CPUs (per-CPU map values have one slot each),
/// from /sys/devices/system/cpu/possible ("0-1", "0,2-3"); 4096 when it
/// cannot be read (a larger buffer is harmless: the kernel fills its
/// part, the rest stays zero).
fn possible_cpus() -> usize {
    let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/possible") else {
        return 4096;
    };
    let mut max = 0usize;
    for part in s.trim().split(',') {
        let last = part.rsplit('-').next().unwrap_or(part);
        match last.trim().parse::<usize>() {
            Ok(n) => max = max.max(n + 1),
            Err(_) => return 4096,
        }
    }
    max.max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_clear_host_bits_and_values_round_trip() {
        let k = Route4 {
            addr: 0xc612_0203,
            len: 16,
        }
        .key();
        assert_eq!(&k[..4], &16u32.to_ne_bytes());
        assert_eq!(&k[4..], &[198, 18, 0, 0]);
        let h = FastHop {
            slot: 3,
            dmac: [1, 2, 3, 4, 5, 6],
            smac: [7, 8, 9, 10, 11, 12],
        };
        assert_eq!(FastHop::from_value(&h.value()), h);
    }

    #[test]
    fn v6_keys_and_group_entries() {
        let k = Route6 {
            addr: 0x2001_0db8_0001_0002_0000_0000_0000_0001,
            len: 48,
        }
        .key();
        assert_eq!(&k[..4], &48u32.to_ne_bytes());
        assert_eq!(&k[4..10], &[0x20, 0x01, 0x0d, 0xb8, 0, 1]);
        assert_eq!(&k[10..], &[0; 10]);
        let g = FastHop::group(3 * MAX_MEMBERS, 2);
        assert_eq!(g.slot, GROUP | 2);
        assert_eq!(&g.dmac[..4], &(3 * MAX_MEMBERS).to_ne_bytes());
        assert_eq!(FastHop::from_value(&g.value()), g);
    }

    #[test]
    fn the_program_assembles() {
        let fds = Fds {
            lpm: 3,
            lpm6: 4,
            members: 5,
            devmap: 6,
            counters: 7,
            xsk: 8,
        };
        assert!(program(&fds, [2, 0, 0, 0, 1, 0]).is_ok());
    }
}
