//! The XDP fast path: IPv4 forwarding inside the kernel's XDP hook, with
//! the dataplane's FIB mirrored into BPF maps, and everything else handed
//! to the element graph through the port's AF_XDP socket as before.
//!
//! ```text
//!  frame --> [Ethernet to our MAC, IPv4, IHL 5, not a fragment, TTL > 1]
//!              | no: redirect to the XSKMAP slot of the RX queue (graph)
//!              v
//!            [RFC 1812 5.2.2 length and checksum, 5.3.7 source] no: graph
//!              v
//!            LPM_TRIE lookup of the destination --miss / local--> graph
//!              v
//!            TTL - 1, checksum by RFC 1624 eqn. 3, MACs rewritten,
//!            bpf_redirect_map(DEVMAP, egress slot)
//! ```
//!
//! The maps ([`FastMaps`]) are shared by every port's program: an
//! `LPM_TRIE` from IPv4 prefix to [`FastHop`] (egress DEVMAP slot,
//! destination MAC, source MAC), a `DEVMAP` from port index to ifindex,
//! and a `PERCPU_ARRAY` of counters by [`FastReason`] (per CPU, so the
//! program never writes a shared cache line). Each port's program has its
//! own XSKMAP (the one of [`super::XdpProgram`]) and its MAC as
//! immediates. The program is built with [`super::asm`] (why our own
//! builder: see there) and checked by the kernel's verifier at load.
//!
//! What the graph keeps: ARP/ND and every non-IPv4 frame, IPv4 with
//! options or fragments, TTL <= 1 (ICMP time exceeded), destinations with
//! no entry (unresolved neighbours, glean, ECMP groups, the fabric,
//! broadcast) and our own addresses (entries with slot [`LOCAL`]).

use super::asm::{Alu, Asm, Cond, Insn, Size};
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

/// Entries per batched map call.
const BATCH: usize = 1024;

/// Where a packet went, the index of its per-CPU counter.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum FastReason {
    /// Forwarded in XDP.
    Forwarded = 0,
    /// To the graph: shorter than Ethernet + a 20-byte IPv4 header.
    Short,
    /// To the graph: destination MAC not the port's (broadcast, multicast).
    OtherMac,
    /// To the graph: not IPv4 (ARP, IPv6, VLAN tags).
    NotIpv4,
    /// To the graph: IPv4 header with options (IHL != 5) or version != 4.
    Options,
    /// To the graph: a fragment (MF set or offset non-zero).
    Fragment,
    /// To the graph: TTL <= 1 (the graph answers time exceeded).
    Ttl,
    /// To the graph: no entry for the destination.
    NoRoute,
    /// To the graph: the destination is one of our addresses.
    Local,
    /// To the graph: a header RFC 1812 §5.2.2 refuses (total length
    /// below 20 or beyond the frame, bad checksum) or a source §5.3.7
    /// does not forward (0/8, 127/8, 224/3); the graph drops it by reason.
    BadHeader,
}

impl FastReason {
    pub const ALL: [FastReason; 10] = [
        FastReason::Forwarded,
        FastReason::Short,
        FastReason::OtherMac,
        FastReason::NotIpv4,
        FastReason::Options,
        FastReason::Fragment,
        FastReason::Ttl,
        FastReason::NoRoute,
        FastReason::Local,
        FastReason::BadHeader,
    ];

    pub fn name(self) -> &'static str {
        match self {
            FastReason::Forwarded => "forwarded",
            FastReason::Short => "short",
            FastReason::OtherMac => "other_mac",
            FastReason::NotIpv4 => "not_ipv4",
            FastReason::Options => "options",
            FastReason::Fragment => "fragment",
            FastReason::Ttl => "ttl",
            FastReason::NoRoute => "no_route",
            FastReason::Local => "local",
            FastReason::BadHeader => "bad_header",
        }
    }
}

/// The fast path's counters summed over the CPUs, by [`FastReason`].
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FastCounters(pub [u64; 10]);

impl FastCounters {
    pub fn get(&self, r: FastReason) -> u64 {
        self.0.get(r as usize).copied().unwrap_or(0)
    }
    /// Everything handed to the graph.
    pub fn to_graph(&self) -> u64 {
        self.0.iter().skip(1).sum()
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

/// A next hop as the program reads it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct FastHop {
    /// The egress port's DEVMAP slot (the dataplane's port index), or
    /// [`LOCAL`].
    pub slot: u32,
    /// The neighbour's MAC.
    pub dmac: [u8; 6],
    /// The egress port's MAC.
    pub smac: [u8; 6],
}

impl FastHop {
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

/// One change to the LPM map.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum FastOp {
    Set(Route4, FastHop),
    Remove(Route4),
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

/// Whether this kernel takes batched updates on an LPM_TRIE (probed on
/// the first apply).
const BATCH_UNKNOWN: u8 = 0;
const BATCH_YES: u8 = 1;
const BATCH_NO: u8 = 2;

/// The fast path's maps, shared by every port's program and written by
/// one thread (the dataplane's FIB thread).
pub struct FastMaps {
    lpm: OwnedFd,
    devmap: OwnedFd,
    counters: OwnedFd,
    ports: u32,
    batch: AtomicU8,
}

impl FastMaps {
    /// Creates the maps: room for `routes` IPv4 entries and `ports` egress
    /// ports.
    pub fn create(routes: u32, ports: u32) -> Result<Self, IoError> {
        if routes == 0 || ports == 0 || ports > 1024 {
            return Err(IoError::Config(
                "fast path: routes must be > 0, ports in 1..=1024",
            ));
        }
        Ok(FastMaps {
            lpm: create_map(BPF_MAP_TYPE_LPM_TRIE, 8, 16, routes, BPF_F_NO_PREALLOC)?,
            devmap: create_map(BPF_MAP_TYPE_DEVMAP, 4, 4, ports, 0)?,
            counters: create_map(
                BPF_MAP_TYPE_PERCPU_ARRAY,
                4,
                8,
                FastReason::ALL.len() as u32,
                0,
            )?,
            ports,
            batch: AtomicU8::new(BATCH_UNKNOWN),
        })
    }

    /// Points DEVMAP slot `slot` (a port index) at interface `ifindex`.
    pub fn set_port(&self, slot: u32, ifindex: u32) -> Result<(), IoError> {
        if slot >= self.ports {
            return Err(IoError::Config("fast path: port slot beyond the DEVMAP"));
        }
        update(&self.devmap, &slot.to_ne_bytes(), &ifindex.to_ne_bytes())
    }

    /// Whether batched updates are in use (`None`: not probed yet).
    pub fn batched(&self) -> Option<bool> {
        match self.batch.load(Ordering::Relaxed) {
            BATCH_YES => Some(true),
            BATCH_NO => Some(false),
            _ => None,
        }
    }

    /// Applies `ops` in order: runs of sets with `BPF_MAP_UPDATE_BATCH`
    /// and runs of removals with `BPF_MAP_DELETE_BATCH` when the kernel
    /// has them for LPM tries, else one call per entry. Removing an entry
    /// that is not there counts as removed.
    pub fn apply(&self, ops: &[FastOp]) -> ApplyStats {
        let mut st = ApplyStats::default();
        let mut i = 0;
        while i < ops.len() {
            let set = matches!(ops.get(i), Some(FastOp::Set(..)));
            let run = ops
                .get(i..)
                .unwrap_or(&[])
                .iter()
                .take_while(|o| matches!(o, FastOp::Set(..)) == set)
                .take(BATCH)
                .count();
            let chunk = ops.get(i..i + run).unwrap_or(&[]);
            if set {
                self.set_run(chunk, &mut st);
            } else {
                self.remove_run(chunk, &mut st);
            }
            i += run.max(1);
        }
        st
    }

    fn set_run(&self, ops: &[FastOp], st: &mut ApplyStats) {
        let mut keys = Vec::with_capacity(ops.len());
        let mut vals = Vec::with_capacity(ops.len());
        for o in ops {
            if let FastOp::Set(r, h) = o {
                keys.push(r.key());
                vals.push(h.value());
            }
        }
        let mut done = 0;
        if self.batch.load(Ordering::Relaxed) != BATCH_NO {
            let (n, r) = batch_call(
                BPF_MAP_UPDATE_BATCH,
                &self.lpm,
                &keys,
                Some(vals.as_ptr() as u64),
            );
            st.calls += 1;
            done = n.min(keys.len());
            st.set += done as u64;
            match r {
                Ok(()) => self.batch.store(BATCH_YES, Ordering::Relaxed),
                Err(e) if unsupported(e) && done == 0 => {
                    self.batch.store(BATCH_NO, Ordering::Relaxed)
                }
                Err(_) => {
                    // The entry at `done` failed: skip it, retry the rest
                    // one by one below.
                    self.batch.store(BATCH_YES, Ordering::Relaxed);
                    st.failed += 1;
                    done += 1;
                }
            }
        }
        for (k, v) in keys.iter().zip(&vals).skip(done) {
            st.calls += 1;
            match update(&self.lpm, k, v) {
                Ok(()) => st.set += 1,
                Err(_) => st.failed += 1,
            }
        }
    }

    fn remove_run(&self, ops: &[FastOp], st: &mut ApplyStats) {
        let keys: Vec<[u8; 8]> = ops
            .iter()
            .filter_map(|o| match o {
                FastOp::Remove(r) => Some(r.key()),
                FastOp::Set(..) => None,
            })
            .collect();
        let mut done = 0;
        if self.batch.load(Ordering::Relaxed) != BATCH_NO {
            let (n, r) = batch_call(BPF_MAP_DELETE_BATCH, &self.lpm, &keys, None);
            st.calls += 1;
            done = n.min(keys.len());
            st.removed += done as u64;
            match r {
                Ok(()) => self.batch.store(BATCH_YES, Ordering::Relaxed),
                Err(e) if unsupported(e) && done == 0 => {
                    self.batch.store(BATCH_NO, Ordering::Relaxed)
                }
                // An absent key stops the batch: the rest one by one.
                Err(_) => {}
            }
        }
        for k in keys.iter().skip(done) {
            st.calls += 1;
            match delete(&self.lpm, k) {
                Ok(()) => st.removed += 1,
                Err(e) if e.errno() == Some(libc::ENOENT) => st.removed += 1,
                Err(_) => st.failed += 1,
            }
        }
    }

    /// The longest-match entry for address `addr` (host order), as the
    /// program sees it.
    pub fn lookup(&self, addr: u32) -> Option<FastHop> {
        let mut v = [0u8; 16];
        let k = Route4 { addr, len: 32 }.key();
        lookup(&self.lpm, &k, &mut v).ok()?;
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
            self.lpm.as_raw_fd(),
            self.devmap.as_raw_fd(),
            self.counters.as_raw_fd(),
            xsk,
            mac,
        )
    }
}

impl XdpProgram {
    /// Like [`XdpProgram::attach`], with the XDP fast path of
    /// [this module](self) in front of the XSKMAP redirect: IPv4 packets with
    /// a next hop in `maps` leave through the `DEVMAP` in the kernel, the
    /// rest go to the queue's AF_XDP socket as with [`XdpProgram::attach`].
    /// `mac` is the interface's MAC (frames to another MAC are not ours to
    /// forward).
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

// Registers: r1-r5 arguments and scratch, r0 results; r6-r9 survive calls.
const CTX: u8 = 6;
const DATA: u8 = 7;
const END: u8 = 8;
/// The counter index (a [`FastReason`]) until the lookup hits, then the
/// egress slot.
const R9: u8 = 9;
const FP: u8 = 10;

/// The fast-path program (see the module doc for its flow).
fn program(
    lpm: i32,
    devmap: i32,
    counters: i32,
    xsk: i32,
    mac: [u8; 6],
) -> Result<Vec<Insn>, super::asm::AsmError> {
    let mut a = Asm::new();
    let graph = a.label();
    a.mov(CTX, 1);
    // struct xdp_md: data at 0, data_end at 4, rx_queue_index at 16.
    a.ldx(Size::W, DATA, CTX, 0).ldx(Size::W, END, CTX, 4);
    reason(&mut a, FastReason::Short);
    // Ethernet (14) + IPv4 without options (20) must be in the frame.
    a.mov(2, DATA).alu_imm(Alu::Add, 2, 34);
    a.jmp(Cond::Gt, 2, END, graph);
    // Destination MAC: ours (loads are little-endian on the hosts we run
    // on; the immediates are the same bytes read the same way).
    reason(&mut a, FastReason::OtherMac);
    let lo = u32::from_le_bytes([mac[0], mac[1], mac[2], mac[3]]) as i32;
    let hi = u16::from_le_bytes([mac[4], mac[5]]) as i32;
    a.ldx(Size::W, 2, DATA, 0).jmp32_imm(Cond::Ne, 2, lo, graph);
    a.ldx(Size::H, 2, DATA, 4).jmp32_imm(Cond::Ne, 2, hi, graph);
    // EtherType 0x0800.
    reason(&mut a, FastReason::NotIpv4);
    let ipv4 = u16::from_le_bytes([0x08, 0x00]) as i32;
    a.ldx(Size::H, 2, DATA, 12)
        .jmp32_imm(Cond::Ne, 2, ipv4, graph);
    // Version 4, IHL 5: anything else (options) is the graph's.
    reason(&mut a, FastReason::Options);
    a.ldx(Size::B, 2, DATA, 14)
        .jmp32_imm(Cond::Ne, 2, 0x45, graph);
    // RFC 1812 §5.2.2: total length at least the header and within the
    // frame (the bound first, so that the verifier accepts the pointer
    // sum), header checksum; §5.3.7: a forwardable source.
    reason(&mut a, FastReason::BadHeader);
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
    reason(&mut a, FastReason::Fragment);
    let frag = u16::from_le_bytes([0x3f, 0xff]) as i32;
    a.ldx(Size::H, 2, DATA, 20).alu_imm(Alu::And, 2, frag);
    a.jmp_imm(Cond::Ne, 2, 0, graph);
    // TTL <= 1: the graph sends time exceeded (RFC 1812 5.3.1).
    reason(&mut a, FastReason::Ttl);
    a.ldx(Size::B, 2, DATA, 22).jmp32_imm(Cond::Le, 2, 1, graph);
    // The LPM key on the stack: prefix length 32, the destination.
    reason(&mut a, FastReason::NoRoute);
    a.st(Size::W, FP, -8, 32);
    a.ldx(Size::W, 2, DATA, 30).stx(Size::W, FP, -4, 2);
    a.ld_map(1, lpm).mov(2, FP).alu_imm(Alu::Add, 2, -8);
    a.call(BPF_FUNC_MAP_LOOKUP_ELEM);
    a.jmp_imm(Cond::Eq, 0, 0, graph);
    reason(&mut a, FastReason::Local);
    a.ldx(Size::W, 3, 0, 0)
        .jmp32_imm(Cond::Eq, 3, LOCAL as i32, graph);
    a.mov(R9, 3);
    // MACs from the entry: destination at 4..10, source at 10..16.
    a.ldx(Size::W, 2, 0, 4).stx(Size::W, DATA, 0, 2);
    a.ldx(Size::H, 2, 0, 8).stx(Size::H, DATA, 4, 2);
    a.ldx(Size::H, 2, 0, 10).stx(Size::H, DATA, 6, 2);
    a.ldx(Size::W, 2, 0, 12).stx(Size::W, DATA, 8, 2);
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
    count(&mut a, counters, None);
    // Out of the egress port; an empty slot (never, while the dataplane
    // runs) aborts, which the xdp:xdp_exception tracepoint shows.
    a.ld_map(1, devmap)
        .mov(2, R9)
        .mov_imm(3, XDP_ABORTED as i32);
    a.call(BPF_FUNC_REDIRECT_MAP).exit();
    // To the graph: this queue's AF_XDP socket, or the kernel's stack when
    // the slot is empty (as the plain program does).
    a.bind(graph);
    count(&mut a, counters, Some(R9));
    a.ldx(Size::W, 2, CTX, 16);
    a.ld_map(1, xsk).mov_imm(3, XDP_PASS as i32);
    a.call(BPF_FUNC_REDIRECT_MAP).exit();
    a.finish()
}

/// `r9 = r` (the counter index if the next jump goes to the graph).
fn reason(a: &mut Asm, r: FastReason) {
    a.mov_imm(R9, r as i32);
}

/// `counters[idx]++` for this CPU (`idx` in a register, or
/// [`FastReason::Forwarded`] when `None`). Clobbers r0-r5.
fn count(a: &mut Asm, counters: i32, idx: Option<u8>) {
    let skip = a.label();
    match idx {
        Some(r) => a.stx(Size::W, FP, -16, r),
        None => a.st(Size::W, FP, -16, FastReason::Forwarded as i32),
    };
    a.ld_map(1, counters).mov(2, FP).alu_imm(Alu::Add, 2, -16);
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
fn batch_call(
    cmd: i64,
    map: &OwnedFd,
    keys: &[[u8; 8]],
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
    fn the_program_assembles() {
        assert!(program(3, 4, 5, 6, [2, 0, 0, 0, 1, 0]).is_ok());
    }
}
