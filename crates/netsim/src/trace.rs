//! What a simulation leaves behind: the MRT BGP4MP_ET trace of the
//! messages traced ASes receive ([`MrtTrace`]), TABLE_DUMP_V2 snapshots
//! of their RIBs ([`write_snapshot`]) and the realism figures of the
//! trace ([`Realism`]).
//!
//! In the trace a traced AS is the collector and each of its neighbours
//! one MRT peer (STATE_CHANGE records when a session goes down or up, the
//! messages received in between): peer AS = the neighbour's AS, peer address = the
//! neighbour's router address ([`crate::node_addr`]), local AS and address
//! the traced AS's. Times are [`EPOCH`] plus the simulated time, with
//! microseconds (RFC 6396 §3 extended timestamp), as `tessera replay`
//! reads them.

use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::net::IpAddr;

use base::{AfiSafi, Asn, Prefix, Safi};
use bgp_rib::AttrSet;
use bgp_wire::{MpNlri, MpReach, ParseCtx, PathAttr, PathAttribute, UpdateView};
use mrt::bgp4mp::{state, Peering};
use mrt::{MrtWriter, Peer, RibEntry};

use crate::engine::{node_addr, Observer, Sim};
use topo::NodeId;

/// Unix time of simulated time 0 in the records (2025-11-24 16:00:00 UTC).
pub const EPOCH: u32 = 1_764_000_000;

/// Splits simulated nanoseconds into MRT seconds and microseconds.
pub fn mrt_time(t_ns: u64) -> (u32, u32) {
    let us = t_ns / 1000;
    let s = u64::from(EPOCH) + us / 1_000_000;
    (s.min(u64::from(u32::MAX)) as u32, (us % 1_000_000) as u32)
}

/// Writes every received message as a BGP4MP_ET MESSAGE_AS4 record.
pub struct MrtTrace<W: Write> {
    w: MrtWriter<W>,
    asns: Vec<u32>,
    /// The first write error, if any (later records are skipped).
    pub error: Option<io::Error>,
}

impl<W: Write> MrtTrace<W> {
    /// A trace into `w`; `asns` by node ([`Sim::asns`]).
    pub fn new(w: MrtWriter<W>, asns: &[u32]) -> MrtTrace<W> {
        MrtTrace {
            w,
            asns: asns.to_vec(),
            error: None,
        }
    }

    /// Records written.
    pub fn records(&self) -> u64 {
        self.w.records()
    }

    /// Flushes and returns the writer's output (or the first error).
    pub fn finish(self) -> io::Result<W> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.w.finish()
    }
}

impl<W: Write> MrtTrace<W> {
    fn peering(&self, at: NodeId, from: NodeId) -> Peering {
        let asn = |n: NodeId| Asn(self.asns.get(n as usize).copied().unwrap_or(0));
        Peering {
            peer_as: asn(from),
            local_as: asn(at),
            interface_index: 0,
            peer_ip: IpAddr::V4(node_addr(from)),
            local_ip: IpAddr::V4(node_addr(at)),
        }
    }
}

impl<W: Write> Observer for MrtTrace<W> {
    fn received(&mut self, t_ns: u64, at: NodeId, from: NodeId, msg: &[u8]) {
        if self.error.is_some() {
            return;
        }
        let peering = self.peering(at, from);
        let (s, us) = mrt_time(t_ns);
        if let Err(e) = self.w.write_bgp4mp_message(s, Some(us), &peering, msg) {
            self.error = Some(e);
        }
    }

    /// A STATE_CHANGE_AS4 record: OpenConfirm -> Established when the
    /// session comes up, Established -> Idle when it goes down (`tessera
    /// replay` closes and reopens its session there).
    fn session(&mut self, t_ns: u64, at: NodeId, from: NodeId, up: bool) {
        if self.error.is_some() {
            return;
        }
        let peering = self.peering(at, from);
        let (s, us) = mrt_time(t_ns);
        let (old, new) = if up {
            (state::OPEN_CONFIRM, state::ESTABLISHED)
        } else {
            (state::ESTABLISHED, state::IDLE)
        };
        if let Err(e) = self
            .w
            .write_bgp4mp_state_change(s, Some(us), &peering, old, new)
        {
            self.error = Some(e);
        }
    }
}

/// Figures of the trace next to what RIPE RIS sees.
#[derive(Clone, Debug, Default)]
pub struct Realism {
    /// UPDATEs seen (End-of-RIB markers excluded).
    pub updates: u64,
    /// UPDATEs with exactly one prefix.
    pub one_prefix: u64,
    /// Prefixes in them.
    pub prefixes: u64,
    /// AS_PATH length of announcing UPDATEs -> count.
    pub path_len: BTreeMap<usize, u64>,
    /// (traced node, peer, second) -> UPDATEs.
    per_second: HashMap<(NodeId, NodeId, u64), u32>,
}

/// RIPE RIS reference figures (per UPDATE and per peer).
pub const RIS_ONE_NLRI: f64 = 0.72;
/// Mean prefixes per UPDATE at RIS.
pub const RIS_MEAN_NLRI: f64 = 3.2;
/// Median UPDATEs per second per peer at RIS.
pub const RIS_P50: f64 = 3.0;
/// 99th percentile of UPDATEs per second per peer at RIS.
pub const RIS_P99: f64 = 59.0;

fn percentile(sorted: &[u32], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    f64::from(sorted[i.min(sorted.len() - 1)])
}

impl Realism {
    /// Share of UPDATEs with one prefix.
    pub fn one_prefix_share(&self) -> f64 {
        self.one_prefix as f64 / self.updates.max(1) as f64
    }
    /// Mean prefixes per UPDATE.
    pub fn mean_prefixes(&self) -> f64 {
        self.prefixes as f64 / self.updates.max(1) as f64
    }
    /// Median and 99th percentile of UPDATEs per second per peer, over the
    /// seconds in which the peer sent at least one.
    pub fn rate_percentiles(&self) -> (f64, f64) {
        let mut v: Vec<u32> = self.per_second.values().copied().collect();
        v.sort_unstable();
        (percentile(&v, 0.5), percentile(&v, 0.99))
    }

    /// The report, our figures next to RIS's.
    pub fn report(&self) -> String {
        let (p50, p99) = self.rate_percentiles();
        let mut s = String::new();
        s.push_str(&format!(
            "realism ({} UPDATEs)        sim      RIS\n",
            self.updates
        ));
        s.push_str(&format!(
            "  UPDATEs with one prefix  {:5.1}%   {:5.1}%\n",
            100.0 * self.one_prefix_share(),
            100.0 * RIS_ONE_NLRI
        ));
        s.push_str(&format!(
            "  prefixes per UPDATE      {:6.2}   {:6.2}\n",
            self.mean_prefixes(),
            RIS_MEAN_NLRI
        ));
        s.push_str(&format!(
            "  UPDATEs/s per peer p50   {p50:6.1}   {RIS_P50:6.1}\n"
        ));
        s.push_str(&format!(
            "  UPDATEs/s per peer p99   {p99:6.1}   {RIS_P99:6.1}\n"
        ));
        let total: u64 = self.path_len.values().sum();
        s.push_str("  AS-path length:");
        for (l, n) in &self.path_len {
            s.push_str(&format!(
                " {l}:{:.1}%",
                100.0 * *n as f64 / total.max(1) as f64
            ));
        }
        s.push('\n');
        s
    }
}

impl Observer for Realism {
    fn received(&mut self, t_ns: u64, at: NodeId, from: NodeId, msg: &[u8]) {
        if msg.get(18) != Some(&2) || msg.len() < 19 {
            return;
        }
        let ctx = ParseCtx::legacy().with_four_octet_asn(true);
        let Ok(u) = UpdateView::parse(&msg[19..], ctx) else {
            return;
        };
        let n = crate::nlri_count(&msg[19..], ctx);
        if n == 0 {
            return;
        }
        self.updates += 1;
        self.prefixes += n;
        if n == 1 {
            self.one_prefix += 1;
        }
        if let Some(a) = u.find_attr(2) {
            if let Ok(PathAttribute::AsPath(p)) = a.typed(ctx) {
                let len: usize = p.segments().map(|s| s.len()).sum();
                *self.path_len.entry(len).or_default() += 1;
            }
        }
        *self
            .per_second
            .entry((at, from, t_ns / 1_000_000_000))
            .or_default() += 1;
    }
}

/// Attributes of one stored path as a TABLE_DUMP_V2 entry carries them
/// (RFC 6396 §4.3.4: 4-octet AS_PATH, abbreviated MP_REACH_NLRI).
fn rib_attrs(attrs: &AttrSet, af: AfiSafi, out: &mut Vec<u8>) {
    let ctx = ParseCtx::mrt_rib(af);
    for a in attrs.attrs().map_while(Result::ok) {
        if a.type_code == 14 {
            if let Some(nh) = attrs.next_hop() {
                let mp = MpReach {
                    afi_safi: af,
                    next_hop: nh.to_bytes(),
                    reserved: 0,
                    nlri: MpNlri::Prefixes(Vec::new()),
                    abbreviated: true,
                };
                PathAttr::new(bgp_wire::AttrValue::MpReach(mp)).encode(ctx, out);
            }
            continue;
        }
        a.to_owned(AttrSet::ctx()).encode(ctx, out);
    }
}

/// Writes a TABLE_DUMP_V2 RIB snapshot of `nodes` at simulated time
/// `t_ns`: a PEER_INDEX_TABLE with one peer per (node, neighbour), then
/// one RIB record per prefix with every path the nodes hold (their
/// Adj-RIBs-In after import policy; own routes are left out).
pub fn write_snapshot<W: Write>(
    sim: &Sim,
    nodes: &[NodeId],
    t_ns: u64,
    w: &mut MrtWriter<W>,
) -> io::Result<u64> {
    let (ts, _) = mrt_time(t_ns);
    let mut peers = Vec::new();
    let mut index: HashMap<(NodeId, NodeId), u16> = HashMap::new();
    for &x in nodes {
        for (nb, _, _) in sim.neighbours(x) {
            index.insert((x, nb), peers.len() as u16);
            let asn = sim.asns().get(nb as usize).copied().unwrap_or(0);
            peers.push(Peer::new(
                node_addr(nb),
                IpAddr::V4(node_addr(nb)),
                Asn(asn),
            ));
        }
    }
    let collector = nodes.first().map_or(node_addr(0), |&x| node_addr(x));
    w.write_peer_index_table(ts, collector, "tessera-sim", &peers)?;
    // prefix -> (peer index, attribute bytes)
    let mut table: BTreeMap<Prefix, Vec<(u16, Vec<u8>)>> = BTreeMap::new();
    for &x in nodes {
        for r in sim.rib_of(x).iter() {
            let af = match r.prefix {
                Prefix::V4(_) => AfiSafi::IPV4_UNICAST,
                Prefix::V6(_) => AfiSafi::IPV6_UNICAST,
            };
            for (p, a) in r.iter() {
                let Some(nb) = sim.session_of_peer(x, p.peer) else {
                    continue;
                };
                let Some(&pi) = index.get(&(x, nb)) else {
                    continue;
                };
                let mut b = Vec::new();
                rib_attrs(a, af, &mut b);
                table.entry(r.prefix).or_default().push((pi, b));
            }
        }
    }
    write_table(w, ts, &table)
}

/// Writes the stable state an origin-class run ([`crate::fast::run_all`])
/// computed for `nodes` as a TABLE_DUMP_V2 snapshot, in the form of
/// [`write_snapshot`]: one MRT peer per (node, neighbour), one RIB record
/// per prefix (every prefix of each origin: the class expanded) with every
/// path the nodes hold from their neighbours, with the attributes the
/// message-level run stores after import: ORIGIN IGP, the AS_PATH, the
/// neighbour's address as next hop (MP_REACH for IPv6), LOCAL_PREF by its
/// role and, from peers and providers, the [`crate::policy::NOT_UP_TAG`]
/// community. Time 0 (the stable state has no time).
pub fn write_class_snapshot<W: Write>(
    g: &topo::Graph,
    nodes: &[NodeId],
    tables: &[crate::fast::Table],
    w: &mut MrtWriter<W>,
) -> io::Result<u64> {
    use bgp_wire::{AsPath, AttrValue, Origin};
    let adj = g.adjacency();
    let (ts, _) = mrt_time(0);
    let mut peers = Vec::new();
    let mut index: HashMap<(NodeId, NodeId), u16> = HashMap::new();
    for &x in nodes {
        for a in adj.get(x as usize).map_or(&[][..], |v| v.as_slice()) {
            index.insert((x, a.node), peers.len() as u16);
            let asn = g.nodes.get(a.node as usize).map_or(0, |n| n.asn);
            peers.push(Peer::new(
                node_addr(a.node),
                IpAddr::V4(node_addr(a.node)),
                Asn(asn),
            ));
        }
    }
    let collector = nodes.first().map_or(node_addr(0), |&x| node_addr(x));
    w.write_peer_index_table(ts, collector, "tessera-sim", &peers)?;
    let asn = |y: NodeId| Asn(g.nodes.get(y as usize).map_or(0, |n| n.asn));
    let mut table: BTreeMap<Prefix, Vec<(u16, Vec<u8>)>> = BTreeMap::new();
    for (&x, tab) in nodes.iter().zip(tables) {
        for (o, _, held) in tab {
            let Some(origin) = g.nodes.get(*o as usize) else {
                continue;
            };
            for (y, role, path) in held {
                let Some(&pi) = index.get(&(x, *y)) else {
                    continue;
                };
                for &prefix in &origin.prefixes {
                    let af = match prefix {
                        Prefix::V4(_) => AfiSafi::IPV4_UNICAST,
                        Prefix::V6(_) => AfiSafi::IPV6_UNICAST,
                    };
                    let ctx = ParseCtx::mrt_rib(af);
                    let mut b = Vec::new();
                    let mut put = |v: AttrValue| PathAttr::new(v).encode(ctx, &mut b);
                    put(AttrValue::Origin(Origin::Igp));
                    put(AttrValue::AsPath(AsPath::from_sequence(
                        path.iter().map(|&p| asn(p)).collect(),
                    )));
                    match prefix {
                        Prefix::V4(_) => put(AttrValue::NextHop(node_addr(*y))),
                        Prefix::V6(_) => put(AttrValue::MpReach(MpReach {
                            afi_safi: af,
                            next_hop: bgp_wire::NextHop::V6(crate::engine::node_addr6(*y))
                                .to_bytes(),
                            reserved: 0,
                            nlri: MpNlri::Prefixes(Vec::new()),
                            abbreviated: true,
                        })),
                    }
                    put(AttrValue::LocalPref(crate::policy::local_pref(*role)));
                    if *role != topo::Role::Customer {
                        put(AttrValue::LargeCommunities(vec![crate::policy::NOT_UP_TAG]));
                    }
                    table.entry(prefix).or_default().push((pi, b));
                }
            }
        }
    }
    write_table(w, ts, &table)
}

/// Writes one RIB record per prefix of `table` (peer index, attribute
/// bytes per route) stamped `ts`; returns the routes written.
fn write_table<W: Write>(
    w: &mut MrtWriter<W>,
    ts: u32,
    table: &BTreeMap<Prefix, Vec<(u16, Vec<u8>)>>,
) -> std::io::Result<u64> {
    let mut n = 0u64;
    for (seq, (prefix, list)) in table.iter().enumerate() {
        let entries: Vec<RibEntry<'_>> = list
            .iter()
            .map(|(pi, b)| RibEntry {
                peer_index: *pi,
                originated_time: ts,
                path_id: None,
                attributes: b,
            })
            .collect();
        w.write_rib(ts, seq as u32, *prefix, Safi::Unicast, false, &entries)?;
        n += entries.len() as u64;
    }
    Ok(n)
}
