//! The cluster fabric's two elements (crate `cluster`; wire format in
//! `docs/cluster-fabric.md`): [`FabricEncap`] at the ingress (choose the
//! path, pack, encapsulate in GENEVE), [`FabricDecap`] on every node
//! (unpack at the egress, forward on the option's egress tag at an
//! intermediate). Both sit between the graph and a `FromDevice`/`ToDevice`
//! bound to the fabric's UDP socket (`io::fabric::FabricDevice`), which
//! sends each datagram to the node in `anno.nh`.
//!
//! ```text
//! ingress:  ... Ip4Lookup [k] -> FabricEncap(NODE 0, NODES 3, MODE vlb) -> ToDevice(fabric)
//! any node: FromDevice(fabric) -> d :: FabricDecap(NODE 1, PORTS 2)
//!           d[0] -> ToDevice(ext0); d[1] -> ToDevice(ext1)   egress: frames by port tag
//!           d[2] -> ToDevice(fabric)                          intermediate: forwarded
//!           d[3] -> ...                                        BECN (control), optional
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use cluster::fabric::{clear_transit, decode, Message, FLAG_NEIGHBOUR, HDR_MAX, MAX_FRAMES};
use cluster::lb::{on_receive, Balancer, LbConfig, LbStats, Mode, Path, Receive};
use cluster::pack::{PackStats, Packer};
use cluster::FabricError;
use graph::{Arg, BuildError, DropReason, Output};
use pkt::{Batch, Packet};

use crate::args::{boolean, each, keyword, num, unknown};

/// FabricEncap's own drop reasons.
/// FabricEncap's own drop reasons, by index (`DropReason::own(i)`).
pub const ENCAP_DROP_NAMES: &[&str] = &["unreachable", "local", "bad_tag", "queue_full", "loop"];
const UNREACHABLE: DropReason = DropReason::own(0);
const LOCAL: DropReason = DropReason::own(1);
const BAD_TAG: DropReason = DropReason::own(2);
const QUEUE_FULL: DropReason = DropReason::own(3);
const LOOP: DropReason = DropReason::own(4);

/// FabricDecap's own drop reasons.
/// FabricDecap's own drop reasons, by index (`DropReason::own(i)`).
pub const DECAP_DROP_NAMES: &[&str] = &[
    "bad_geneve",
    "foreign_option",
    "bad_option",
    "not_for_us",
    "bad_port",
];
const BAD_GENEVE: DropReason = DropReason::own(0);
const FOREIGN: DropReason = DropReason::own(1);
const BAD_OPTION: DropReason = DropReason::own(2);
const NOT_FOR_US: DropReason = DropReason::own(3);
const BAD_PORT: DropReason = DropReason::own(4);

/// The `anno.nh` of a frame for the fabric when FabricEncap has no fixed
/// `TO`: egress node, its port, and the queue on that port.
pub const fn fabric_tag(egress: u16, port: u8, queue: u8) -> u32 {
    ((egress as u32) << 16) | ((port as u32) << 8) | queue as u32
}

/// Marks an `anno.nh` that carries an egress tag set by the lookup
/// ([`egress_tag`]); distinct from `cc::source_tag`'s bit 31.
const EGRESS_TAGGED: u32 = 1 << 30;

/// The `anno.nh` a lookup gives a frame whose route the ingress resolved
/// to (egress node, its port, queue): the next hop's `NhEntry::tag`.
/// `FabricEncap` and `CcIngress` read it before any `PEER` mapping.
pub const fn egress_tag(egress: u16, port: u8, queue: u8) -> u32 {
    EGRESS_TAGGED | fabric_tag(egress & 0x3f, port, queue)
}

/// The (egress node, port, queue) of an [`egress_tag`], if `nh` is one.
pub const fn egress_of(nh: u32) -> Option<(u16, u8, u8)> {
    if nh >> 30 == 1 && (nh >> 22) & 0xff == 0 {
        Some((((nh >> 16) & 0x3f) as u16, (nh >> 8) as u8, nh as u8))
    } else {
        None
    }
}

/// An address as `anno.gw` holds it: IPv4 in the first 4 bytes.
fn gw_bytes(a: std::net::IpAddr) -> [u8; 16] {
    match a {
        std::net::IpAddr::V4(v) => {
            let mut g = [0u8; 16];
            if let Some(s) = g.get_mut(..4) {
                s.copy_from_slice(&v.octets());
            }
            g
        }
        std::net::IpAddr::V6(v) => v.octets(),
    }
}

/// A queued frame: the packet itself, handed back to the pool once packed.
#[derive(Debug)]
struct Held(Packet);

impl AsRef<[u8]> for Held {
    fn as_ref(&self) -> &[u8] {
        self.0.data()
    }
}

/// `FabricEncap(NODE n, NODES k, ...)`: the ingress side of the fabric.
///
/// * Ports: 1 input (Ethernet frames bound for another node), 1 output
///   (fabric datagrams, `anno.nh` = the node to send to).
/// * Per frame: the egress tag is `TO`/`PORT`/`QUEUE` when given; else
///   an [`egress_tag`] in `anno.nh` (set by the lookup from a route the
///   ingress resolved to (egress node, port)); else, with `PEER id ADDR`
///   arguments, the node whose fabric address is `anno.gw` (port and
///   queue tag 0); else `anno.nh` read as [`fabric_tag`]. With `NEIGHBOUR
///   true` the frame gets its neighbour at the egress (`anno.gw`, the
///   destination's address meaning "the destination") as a trailer and
///   every datagram the flag `cluster::fabric::FLAG_NEIGHBOUR`; a frame
///   without an egress tag is then dropped (`bad_tag`): the egress would
///   not know where to send it. The path (direct, or an
///   intermediate) comes from `cluster::lb::Balancer` with the frame's
///   5-tuple hash (`pkt::hdr::flow::flow_hash`) for flow affinity; the frame
///   waits in its (next hop, egress) packing queue.
/// * Tick (once per driver poll, i.e. when the fabric transmitter is about
///   to send): each non-empty queue in turn is packed into datagrams of at
///   most `PACKING` frames and `MTU` (less IP and UDP headers), up to 256
///   datagrams per tick. No timer: at light load each frame leaves alone.
/// * Config: `NODE` (this node), `NODES` (ids are `0..NODES`), `MODE`
///   `direct|vlb|direct-vlb` (default direct), `PACKING` 1..=29 (default
///   16), `MTU` fabric IP MTU (default 1500), `IP6` true when the fabric is
///   IPv6, `AFFINITY` (default true), `RATE` R in bytes/s for direct-vlb
///   (default 125000000), `SEED`, `VNI`, `LIMIT` frames per queue (default
///   256), `TO`/`PORT`/`QUEUE` a fixed egress tag, `PEER id ADDR` (one per
///   node), `NEIGHBOUR` (default false, see above), `NOLOOP k`: drop (`loop`) frames that arrived on device `k`
///   (the fabric), so a frame never crosses the fabric twice as data.
/// * Counters: `direct`, `via`, `affinity_hits`, `packets`, `frames`;
///   drops `unreachable` (egress dead or unknown), `local` (egress is this
///   node), `bad_tag` (no such node), `queue_full`, `loop`. Per fabric
///   link, for every other node `N` below `NODES`: `toN` datagrams and
///   `bytes_toN` bytes (GENEVE payload of the datagram) sent to it.
#[derive(Debug)]
pub struct FabricEncap {
    me: u16,
    nodes: u16,
    lb: Balancer,
    packer: Packer<Held>,
    fixed: Option<(u16, u8, u8)>,
    /// `PEER id ADDR`: the egress node from `anno.gw` (a route's next hop
    /// is the egress node's fabric address), in `anno.gw`'s layout.
    peers: Vec<([u8; 16], u16)>,
    /// `NOLOOP k`: frames that arrived on device `k` (the fabric) are not
    /// sent back into it.
    noloop: Option<u16>,
    /// `NEIGHBOUR`: frames carry their egress neighbour as a trailer.
    neighbour: bool,
    /// Membership from outside the graph (BFD): bit `i` = node `i` live,
    /// read once per batch; `mask` is the last value applied.
    live: Option<(Arc<AtomicU64>, u64)>,
    scratch: Vec<u8>,
    /// Datagrams and bytes sent to each next-hop node (the load of each
    /// fabric link out of this node).
    sent_to: [(u64, u64); 64],
}

/// Counter names of [`FabricEncap`]'s per-link load, by node id.
const TO_NAMES: [&str; 64] = [
    "to0", "to1", "to2", "to3", "to4", "to5", "to6", "to7", "to8", "to9", "to10", "to11", "to12",
    "to13", "to14", "to15", "to16", "to17", "to18", "to19", "to20", "to21", "to22", "to23", "to24",
    "to25", "to26", "to27", "to28", "to29", "to30", "to31", "to32", "to33", "to34", "to35", "to36",
    "to37", "to38", "to39", "to40", "to41", "to42", "to43", "to44", "to45", "to46", "to47", "to48",
    "to49", "to50", "to51", "to52", "to53", "to54", "to55", "to56", "to57", "to58", "to59", "to60",
    "to61", "to62", "to63",
];
const BYTES_TO_NAMES: [&str; 64] = [
    "bytes_to0",
    "bytes_to1",
    "bytes_to2",
    "bytes_to3",
    "bytes_to4",
    "bytes_to5",
    "bytes_to6",
    "bytes_to7",
    "bytes_to8",
    "bytes_to9",
    "bytes_to10",
    "bytes_to11",
    "bytes_to12",
    "bytes_to13",
    "bytes_to14",
    "bytes_to15",
    "bytes_to16",
    "bytes_to17",
    "bytes_to18",
    "bytes_to19",
    "bytes_to20",
    "bytes_to21",
    "bytes_to22",
    "bytes_to23",
    "bytes_to24",
    "bytes_to25",
    "bytes_to26",
    "bytes_to27",
    "bytes_to28",
    "bytes_to29",
    "bytes_to30",
    "bytes_to31",
    "bytes_to32",
    "bytes_to33",
    "bytes_to34",
    "bytes_to35",
    "bytes_to36",
    "bytes_to37",
    "bytes_to38",
    "bytes_to39",
    "bytes_to40",
    "bytes_to41",
    "bytes_to42",
    "bytes_to43",
    "bytes_to44",
    "bytes_to45",
    "bytes_to46",
    "bytes_to47",
    "bytes_to48",
    "bytes_to49",
    "bytes_to50",
    "bytes_to51",
    "bytes_to52",
    "bytes_to53",
    "bytes_to54",
    "bytes_to55",
    "bytes_to56",
    "bytes_to57",
    "bytes_to58",
    "bytes_to59",
    "bytes_to60",
    "bytes_to61",
    "bytes_to62",
    "bytes_to63",
];

impl FabricEncap {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let (mut me, mut nodes, mut mode, mut packing, mut mtu) =
            (None, None, Mode::Direct, 16, 1500);
        let (mut ip6, mut affinity, mut rate, mut seed, mut vni, mut limit) =
            (false, true, 125_000_000u64, None, 0u32, 256usize);
        let (mut to, mut port, mut queue) = (None, 0u8, 0u8);
        let (mut peers, mut noloop, mut neighbour) = (Vec::new(), None, false);
        let small = |i: usize, v: &str, max: u64| -> Result<u64, BuildError> {
            let n = num(i, v)?;
            if n > max {
                return Err(BuildError::arg(i, format!("at most {max}")));
            }
            Ok(n)
        };
        for (i, a) in each(args) {
            match keyword(a) {
                ("NODE", v) => me = Some(small(i, v, 63)? as u16),
                ("NODES", v) => nodes = Some(small(i, v, 64)? as u16),
                ("MODE", "direct") => mode = Mode::Direct,
                ("MODE", "vlb") => mode = Mode::Vlb,
                ("MODE", "direct-vlb") => mode = Mode::DirectVlb,
                ("MODE", v) => {
                    return Err(BuildError::arg(
                        i,
                        format!("MODE is direct, vlb or direct-vlb, not '{v}'"),
                    ))
                }
                ("PACKING", v) => packing = small(i, v, MAX_FRAMES as u64)?.max(1) as usize,
                ("MTU", v) => mtu = small(i, v, 9216)? as usize,
                ("IP6", v) => ip6 = boolean(i, v)?,
                ("AFFINITY", v) => affinity = boolean(i, v)?,
                ("RATE", v) => rate = num(i, v)?,
                ("SEED", v) => seed = Some(num(i, v)?),
                ("VNI", v) => vni = small(i, v, 0x00ff_ffff)? as u32,
                ("LIMIT", v) => limit = small(i, v, 1 << 16)?.max(1) as usize,
                ("TO", v) => to = Some(small(i, v, 63)? as u16),
                ("PORT", v) => port = small(i, v, 255)? as u8,
                ("QUEUE", v) => queue = small(i, v, 255)? as u8,
                ("PEER", v) => {
                    let (id, a) = v.split_once(char::is_whitespace).unwrap_or((v, ""));
                    let id = small(i, id, 63)? as u16;
                    peers.push((gw_bytes(crate::args::ip(i, a)?), id));
                }
                ("NOLOOP", v) => noloop = Some(small(i, v, u64::from(u16::MAX))? as u16),
                ("NEIGHBOUR", v) => neighbour = boolean(i, v)?,
                (k, _) => return Err(unknown(i, k)),
            }
        }
        let me = me.ok_or_else(|| BuildError::elem("FabricEncap needs NODE"))?;
        let nodes = nodes.ok_or_else(|| BuildError::elem("FabricEncap needs NODES"))?;
        if me >= nodes {
            return Err(BuildError::elem("NODE must be below NODES"));
        }
        // The datagram: the fabric MTU less the outer IP and UDP headers.
        let cap = mtu.saturating_sub(if ip6 { 48 } else { 28 });
        if cap < HDR_MAX {
            return Err(BuildError::elem("MTU too small for the fabric header"));
        }
        let cfg = LbConfig {
            mode,
            me,
            nodes,
            affinity,
            window_ns: cluster::lb::DEFAULT_WINDOW_NS,
            port_rate: rate,
            burst_ns: 1_000_000,
            seed: seed.unwrap_or(u64::from(me)),
        };
        let mut lb = Balancer::new(cfg, base::Instant::ZERO);
        if !peers.is_empty() {
            // Ids between the configured ones are not nodes: never draw
            // them as intermediates.
            for id in (0..nodes).filter(|&id| id != me && !peers.iter().any(|p| p.1 == id)) {
                lb.set_live(base::Instant::ZERO, id, false);
            }
        }
        let mut packer = Packer::new(nodes, me, vni, packing, cap, limit);
        if neighbour {
            packer.set_flags(cluster::fabric::FLAG_NEIGHBOUR);
        }
        Ok(FabricEncap {
            me,
            nodes,
            lb,
            packer,
            fixed: to.map(|t| (t, port, queue)),
            peers,
            noloop,
            neighbour,
            live: None,
            scratch: vec![0u8; HDR_MAX + cap],
            sent_to: [(0, 0); 64],
        })
    }

    /// The balancer, for membership changes (a node failed or rejoined).
    pub fn balancer_mut(&mut self) -> &mut Balancer {
        &mut self.lb
    }

    /// Follows `mask` (bit `i`: node `i` live) for membership: another
    /// thread (BFD) flips bits; the element reads it once per batch and
    /// applies what changed to its balancer (`Balancer::set_live`), so a
    /// failed node leaves the VLB set and the direct targets, and a
    /// rejoining one comes back. Bits of ids that are not nodes are
    /// ignored.
    pub fn follow_live(&mut self, mask: Arc<AtomicU64>) {
        let all = (0..self.nodes).fold(
            0u64,
            |m, i| {
                if self.lb.is_live(i) {
                    m | (1 << i)
                } else {
                    m
                }
            },
        );
        self.live = Some((mask, all));
    }

    fn apply_live(&mut self, now: base::Instant) {
        let Some((mask, seen)) = &mut self.live else {
            return;
        };
        let m = mask.load(Ordering::Relaxed);
        if m == *seen {
            return;
        }
        let changed = m ^ *seen;
        *seen = m;
        for id in (0..self.nodes).filter(|&i| changed & (1 << i) != 0) {
            let is_peer =
                id == self.me || self.peers.is_empty() || self.peers.iter().any(|p| p.1 == id);
            if is_peer {
                self.lb.set_live(now, id, m & (1 << id) != 0);
            }
        }
    }

    /// Balancing counters.
    pub fn lb_stats(&self) -> LbStats {
        self.lb.stats()
    }

    /// Frames waiting to be packed.
    pub fn pack_waiting(&self) -> usize {
        self.packer.waiting()
    }

    /// Packing counters.
    pub fn pack_stats(&self) -> PackStats {
        self.packer.stats()
    }

    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        let now = base::Instant::from_nanos(out.now_ns());
        self.apply_live(now);
        for mut p in batch.drain() {
            if self.noloop == Some(p.anno.in_port) {
                out.drop(p, LOOP);
                continue;
            }
            let tag = match (self.fixed, self.peers.is_empty()) {
                (Some(t), _) => Some(t),
                (None, _) if egress_of(p.anno.nh).is_some() => egress_of(p.anno.nh),
                (None, _) if self.neighbour => None,
                (None, false) => self
                    .peers
                    .iter()
                    .find(|(a, _)| *a == p.anno.gw)
                    .map(|&(_, id)| (id, 0, 0)),
                (None, true) => (p.anno.nh >> 22 == 0).then_some((
                    (p.anno.nh >> 16) as u16,
                    (p.anno.nh >> 8) as u8,
                    p.anno.nh as u8,
                )),
            };
            let Some((egress, port, queue)) = tag.filter(|t| t.0 < self.nodes) else {
                out.drop(p, BAD_TAG);
                continue;
            };
            let flow = pkt::hdr::flow::flow_hash(p.data());
            if self.neighbour && !self.append_neighbour(&mut p) {
                out.drop(p, DropReason::NO_BUFFER);
                continue;
            }
            let next = match self.lb.choose(now, egress, flow, p.len() as u32) {
                Path::Direct => egress,
                Path::Via(i) => i,
                Path::Local => {
                    out.drop(p, LOCAL);
                    continue;
                }
                Path::Unreachable => {
                    out.drop(p, UNREACHABLE);
                    continue;
                }
            };
            if let Err(Held(p)) = self.packer.push(next, egress, port, queue, Held(p)) {
                out.drop(p, QUEUE_FULL);
            }
        }
    }

    /// Appends the frame's neighbour at the egress (`anno.gw`; zero when
    /// it is the inner destination itself) as the trailer of
    /// `cluster::fabric::FLAG_NEIGHBOUR`; `false` when the buffer is full.
    fn append_neighbour(&self, p: &mut Packet) -> bool {
        let n = cluster::fabric::neighbour_len(p.data());
        let dst = inner_dst(p.data());
        let mut t = [0u8; 16];
        if p.anno.gw != dst {
            t = p.anno.gw;
        }
        t.get(..n).is_some_and(|b| p.append(b).is_ok())
    }

    pub(crate) fn tick(&mut self, out: &mut Output<'_>) {
        let mut n = 0;
        while n < pkt::MAX_BATCH && !self.packer.is_empty() {
            if out.pool().available() == 0 {
                out.count_drop(DropReason::NO_BUFFER);
                break;
            }
            let Some(g) = self.packer.pull(&mut self.scratch, drop) else {
                break;
            };
            let bytes = self.scratch.get(g.range).unwrap_or_default();
            match out.pool().alloc_from(bytes) {
                Some(mut d) => {
                    if let Some(c) = self.sent_to.get_mut(usize::from(g.next_hop)) {
                        c.0 += 1;
                        c.1 += d.len() as u64;
                    }
                    d.anno.nh = u32::from(g.next_hop);
                    out.push(0, d);
                }
                None => out.count_drop(DropReason::NO_BUFFER),
            }
            n += 1;
        }
    }

    pub(crate) fn counters(&self, f: &mut dyn FnMut(&'static str, u64)) {
        let l = self.lb.stats();
        let p = self.packer.stats();
        f("direct", l.direct);
        f("via", l.via);
        f("affinity_hits", l.affinity_hits);
        f("packets", p.packets);
        f("frames", p.frames);
        f("waiting", self.packer.waiting() as u64);
        f("node", u64::from(self.me));
        for id in (0..usize::from(self.nodes).min(64)).filter(|&i| i != usize::from(self.me)) {
            let (n, b) = self.sent_to[id];
            f(TO_NAMES[id], n);
            f(BYTES_TO_NAMES[id], b);
        }
    }
}

/// `FabricDecap(NODE n, PORTS p)`: the receive side of the fabric.
///
/// * Ports: 1 input (fabric datagrams); outputs `0..p` the node's
///   external ports (frames whose egress is this node, by their port tag;
///   `anno.nh` = `cc::source_tag(source node, queue tag)`, `anno.gw` = the
///   inner IP destination), `p`
///   datagrams to forward (this node is the intermediate; transit flag
///   cleared, `anno.nh` = the egress node), `p + 1` BECN messages
///   (unconnected: dropped and counted).
/// * Intermediates read only the cluster option, never the inner frames.
///   A datagram for another node without the transit flag is dropped
///   (`not_for_us`), so nothing loops.
/// * A single-frame datagram is unpacked in place (the header is pulled
///   off); a packed one is copied out frame by frame into pool buffers.
/// * Config: `NODE`, `PORTS` (1..=64), `NODES` (default 64; for the
///   live set, all live at start).
/// * Counters: `delivered`, `forwarded`, `becn`; drops `bad_geneve`,
///   `foreign_option` (an unknown critical option, or none of ours),
///   `bad_option`, `not_for_us`, `bad_port`.
#[derive(Debug)]
pub struct FabricDecap {
    me: u16,
    ports: u16,
    live: Vec<bool>,
    mask: Option<Arc<AtomicU64>>,
    delivered: u64,
    forwarded: u64,
    becn: u64,
}

fn drop_reason(e: FabricError) -> DropReason {
    match e {
        FabricError::Short
        | FabricError::BadVersion
        | FabricError::OptionsOverrun
        | FabricError::OptionOverrun => BAD_GENEVE,
        FabricError::UnknownCritical
        | FabricError::NoClusterOption
        | FabricError::DuplicateOption => FOREIGN,
        FabricError::BadOption
        | FabricError::BadOptionVersion
        | FabricError::BadKind
        | FabricError::BadCount
        | FabricError::LengthMismatch
        | FabricError::BadProtocol => BAD_OPTION,
    }
}

/// The inner IP destination of an Ethernet frame (untagged), as `anno.gw`
/// holds it; zero when not IP.
fn inner_dst(frame: &[u8]) -> [u8; 16] {
    let mut gw = [0u8; 16];
    match frame.get(12..14) {
        Some([0x08, 0x00]) => {
            if let (Some(d), Some(s)) = (frame.get(30..34), gw.get_mut(..4)) {
                s.copy_from_slice(d);
            }
        }
        Some([0x86, 0xdd]) => {
            if let Some(d) = frame.get(38..54) {
                gw.copy_from_slice(d);
            }
        }
        _ => {}
    }
    gw
}

/// A delivered frame's length without its neighbour trailer, and the
/// address to resolve on the egress port (`anno.gw`): the trailer's
/// neighbour, or the inner destination when the trailer is zero or the
/// datagram has none (`nbr` false). `None`: a trailer longer than the
/// frame.
fn neighbour(frame: &[u8], nbr: bool) -> Option<(usize, [u8; 16])> {
    if !nbr {
        return Some((frame.len(), inner_dst(frame)));
    }
    let (f, t) = cluster::fabric::split_neighbour(frame)?;
    let mut gw = [0u8; 16];
    if t.iter().all(|&b| b == 0) {
        gw = inner_dst(f);
    } else {
        gw.get_mut(..t.len())?.copy_from_slice(t);
    }
    Some((f.len(), gw))
}

enum Act {
    Drop(DropReason),
    Forward(u16),
    Becn,
    One {
        hdr: usize,
        port: u8,
        queue: u8,
        source: u16,
        nbr: bool,
    },
    Many,
}

impl FabricDecap {
    pub(crate) fn new(args: &[Arg]) -> Result<Self, BuildError> {
        let (mut me, mut ports, mut nodes) = (None, None, 64usize);
        for (i, a) in each(args) {
            match keyword(a) {
                ("NODE", v) => {
                    me = Some(
                        u16::try_from(num(i, v)?)
                            .ok()
                            .filter(|&n| n < 64)
                            .ok_or_else(|| BuildError::arg(i, "NODE is 0..=63"))?,
                    )
                }
                ("PORTS", v) => {
                    ports = Some(
                        u16::try_from(num(i, v)?)
                            .ok()
                            .filter(|n| (1..=64).contains(n))
                            .ok_or_else(|| BuildError::arg(i, "PORTS is 1..=64"))?,
                    )
                }
                ("NODES", v) => {
                    nodes = usize::try_from(num(i, v)?)
                        .ok()
                        .filter(|n| (1..=64).contains(n))
                        .ok_or_else(|| BuildError::arg(i, "NODES is 1..=64"))?
                }
                (k, _) => return Err(unknown(i, k)),
            }
        }
        Ok(FabricDecap {
            me: me.ok_or_else(|| BuildError::elem("FabricDecap needs NODE"))?,
            ports: ports.ok_or_else(|| BuildError::elem("FabricDecap needs PORTS"))?,
            live: vec![true; nodes],
            mask: None,
            delivered: 0,
            forwarded: 0,
            becn: 0,
        })
    }

    /// Outputs: the external ports, then forward, then BECN.
    pub(crate) fn outputs(&self) -> u16 {
        self.ports + 2
    }

    /// Marks a node live or dead: datagrams in transit to a dead egress
    /// are dropped here rather than sent into the void.
    pub fn set_live(&mut self, node: u16, live: bool) {
        if let Some(l) = self.live.get_mut(usize::from(node)) {
            *l = live;
        }
    }

    /// Follows `mask` (bit `i`: node `i` live) as [`FabricEncap::follow_live`]
    /// does: a datagram in transit to a dead egress is dropped.
    pub fn follow_live(&mut self, mask: Arc<AtomicU64>) {
        self.mask = Some(mask);
    }

    fn decide(&self, b: &[u8]) -> Act {
        match decode(b) {
            Err(e) => Act::Drop(drop_reason(e)),
            Ok(Message::Becn(_)) => Act::Becn,
            Ok(Message::Data(d)) => {
                let live = self.live.get(usize::from(d.meta.egress)) == Some(&true);
                let transit = d.meta.flags & cluster::fabric::FLAG_TRANSIT != 0;
                match on_receive(self.me, d.meta.egress, transit, live) {
                    Receive::Forward(e) => Act::Forward(e),
                    Receive::Drop => Act::Drop(NOT_FOR_US),
                    Receive::Deliver => match d.frames().next() {
                        Some(f) if d.len() == 1 => Act::One {
                            hdr: b.len() - f.bytes.len(),
                            port: f.port,
                            queue: f.queue,
                            source: d.meta.source,
                            nbr: d.meta.flags & FLAG_NEIGHBOUR != 0,
                        },
                        _ => Act::Many,
                    },
                }
            }
        }
    }

    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        if let Some(m) = &self.mask {
            let m = m.load(Ordering::Relaxed);
            for (i, l) in self.live.iter_mut().enumerate() {
                *l = i >= 64 || m & (1 << i) != 0;
            }
        }
        for mut p in batch.drain() {
            match self.decide(p.data()) {
                Act::Drop(r) => out.drop(p, r),
                Act::Becn => {
                    self.becn += 1;
                    out.push(self.ports + 1, p);
                }
                Act::Forward(e) => {
                    if clear_transit(p.data_mut()).is_err() {
                        out.drop(p, BAD_OPTION);
                        continue;
                    }
                    p.anno.nh = u32::from(e);
                    self.forwarded += 1;
                    out.push(self.ports, p);
                }
                Act::One {
                    hdr,
                    port,
                    queue,
                    source,
                    nbr,
                } => {
                    if u16::from(port) >= self.ports || p.pull_front(hdr).is_err() {
                        out.drop(p, BAD_PORT);
                        continue;
                    }
                    let Some((len, gw)) = neighbour(p.data(), nbr) else {
                        out.drop(p, BAD_OPTION);
                        continue;
                    };
                    p.truncate(len);
                    p.anno.nh = crate::cc::source_tag(source, queue);
                    p.anno.gw = gw;
                    p.anno.l3 = 0;
                    self.delivered += 1;
                    out.push(u16::from(port), p);
                }
                Act::Many => {
                    let pool = out.pool().clone();
                    if let Ok(Message::Data(d)) = decode(p.data()) {
                        let nbr = d.meta.flags & FLAG_NEIGHBOUR != 0;
                        for f in d.frames() {
                            if u16::from(f.port) >= self.ports {
                                out.count_drop(BAD_PORT);
                                continue;
                            }
                            let Some((len, gw)) = neighbour(f.bytes, nbr) else {
                                out.count_drop(BAD_OPTION);
                                continue;
                            };
                            let Some(mut q) = f.bytes.get(..len).and_then(|b| pool.alloc_from(b))
                            else {
                                out.count_drop(DropReason::NO_BUFFER);
                                continue;
                            };
                            q.anno.in_port = p.anno.in_port;
                            q.anno.nh = crate::cc::source_tag(d.meta.source, f.queue);
                            q.anno.gw = gw;
                            self.delivered += 1;
                            out.push(u16::from(f.port), q);
                        }
                    }
                    drop(p);
                }
            }
        }
    }

    pub(crate) fn counters(&self, f: &mut dyn FnMut(&'static str, u64)) {
        f("delivered", self.delivered);
        f("forwarded", self.forwarded);
        f("becn", self.becn);
    }
}
