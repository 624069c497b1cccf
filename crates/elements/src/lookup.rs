//! Ip4Lookup and Ip6Lookup: longest-prefix match over crate `lpm` tables,
//! one batched lookup per batch.

use std::net::IpAddr;
use std::sync::Arc;

use base::{Prefix4, Prefix6};
use graph::{Arg, BuildError, DropReason, Output, Verdict};
use lpm::reference::{Reference4, Reference6};
use lpm::{Lpm, LpmMut, NextHop};
use pkt::hdr::ip4::Ipv4;
use pkt::hdr::ip6::Ipv6;
use pkt::{Batch, MAX_BATCH};

use crate::args::{each, ip, keyword, num16, unknown};

/// Ip4Lookup's and Ip6Lookup's own drop reasons (see
/// `graph::Element::drop_names`).
pub(crate) const LOOKUP_DROPS: &[&str] = &["bad_ip_header", "no_route"];
const BAD_IP_HEADER: DropReason = DropReason::own(0);
const NO_ROUTE: DropReason = DropReason::own(1);

/// A table an element can look addresses up in. Implemented for any
/// shared [`Lpm`] (`Arc<T>`, `Arc<dyn Lpm<A>>`) and for the lock-free
/// `lpm::publish::ReadHandle` (one read section per batch), so the FIB can
/// change under a running graph.
pub trait Table<A: Copy> {
    /// `out[i]` answers `addrs[i]`.
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [Option<NextHop>]);

    /// For a table that carries its own next hops (a live FIB, whose
    /// adjacencies change together with its routes): looks the batch up
    /// and fills `entries[i]` for `out[i]` in the same read section, so a
    /// route and its adjacency come from one published version; returns
    /// `true`. The default returns `false` after a plain lookup: the
    /// element's static [`NextHopTable`] maps the next hops.
    fn lookup_entries(
        &mut self,
        addrs: &[A],
        out: &mut [Option<NextHop>],
        entries: &mut [Option<NhEntry>],
    ) -> bool {
        let _ = entries;
        self.lookup_batch(addrs, out);
        false
    }

    /// [`Self::lookup_entries`] for a table whose routes may name a group
    /// of next hops (multipath): `flow(i)` gives the 5-tuple flow hash of
    /// the packet of `addrs[i]`, asked only for a route with a group, and
    /// the member it picks replaces the group in `out[i]` (so one flow
    /// stays on one next hop). The default ignores `flow`.
    fn lookup_entries_flow(
        &mut self,
        addrs: &[A],
        out: &mut [Option<NextHop>],
        entries: &mut [Option<NhEntry>],
        flow: &mut dyn FnMut(usize) -> u32,
    ) -> bool {
        let _ = flow;
        self.lookup_entries(addrs, out, entries)
    }
}

impl<A: Copy, T: Lpm<A> + ?Sized> Table<A> for Arc<T> {
    #[inline]
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [Option<NextHop>]) {
        self.as_ref().lookup_batch(addrs, out)
    }
}

impl<A: Copy, T: Lpm<A> + Send + Sync> Table<A> for lpm::publish::ReadHandle<T> {
    #[inline]
    fn lookup_batch(&mut self, addrs: &[A], out: &mut [Option<NextHop>]) {
        self.read().lookup_batch(addrs, out)
    }
}

/// Where a next hop leads: an output port of the lookup element and the
/// gateway (network byte order; IPv4 in the first 4 bytes; all zero for a
/// directly connected route, where the destination itself is resolved).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct NhEntry {
    /// Output port.
    pub port: u16,
    /// Gateway address.
    pub gw: [u8; 16],
    /// Non-zero: the `anno.nh` to give the packet instead of the next-hop
    /// index (the cluster fabric's `fabric::egress_tag`, when the route
    /// was resolved to an egress node and port).
    pub tag: u32,
}

/// The next-hop table: `NextHop` index -> [`NhEntry`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NextHopTable {
    entries: Vec<Option<NhEntry>>,
}

impl NextHopTable {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }
    /// Sets entry `nh`.
    pub fn set(&mut self, nh: NextHop, e: NhEntry) {
        let i = nh.0 as usize;
        if self.entries.len() <= i {
            self.entries.resize(i + 1, None);
        }
        if let Some(s) = self.entries.get_mut(i) {
            *s = Some(e);
        }
    }
    /// Entry `nh`.
    #[inline]
    pub fn get(&self, nh: NextHop) -> Option<&NhEntry> {
        self.entries.get(nh.0 as usize).and_then(Option::as_ref)
    }
    /// Index of the entry equal to `e`, adding it if new.
    pub fn intern(&mut self, e: NhEntry) -> NextHop {
        if let Some(i) = self.entries.iter().position(|x| *x == Some(e)) {
            return NextHop(i as u32);
        }
        self.entries.push(Some(e));
        NextHop(self.entries.len() as u32 - 1)
    }
    /// Largest port used, plus one.
    pub fn ports(&self) -> u16 {
        self.entries
            .iter()
            .flatten()
            .map(|e| e.port + 1)
            .max()
            .unwrap_or(0)
    }
}

/// A table handed to the graph by the embedding program (`TABLE name`).
pub struct ProvidedTable<A: Copy> {
    /// The LPM table.
    pub table: Box<dyn Table<A>>,
    /// Its next hops.
    pub nexthops: NextHopTable,
}

/// The state common to both lookups.
pub struct Lookup<A: Copy> {
    pub(crate) table: Box<dyn Table<A>>,
    pub(crate) nh: NextHopTable,
    pub(crate) outputs: u16,
    pub(crate) noroute: Option<u16>,
    addrs: Box<[A; MAX_BATCH]>,
    res: Box<[Option<NextHop>; MAX_BATCH]>,
    /// Entries filled by a table with its own next hops.
    ents: Box<[Option<NhEntry>; MAX_BATCH]>,
}

impl<A: Copy> std::fmt::Debug for Lookup<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lookup")
            .field("outputs", &self.outputs)
            .field("nh", &self.nh)
            .finish()
    }
}

/// `Ip4Lookup(ROUTE PREFIX [GW] PORT, ..., NOROUTE PORT, TABLE NAME,
/// PORTS N)`: looks up the IPv4 destination (at `anno.l3`) and sends the
/// packet to the next hop's output port, with `anno.nh` set to the next-hop
/// index and `anno.gw` to the gateway (or the destination for connected
/// routes).
///
/// Routes come from `ROUTE` arguments (a static table) or from a table the
/// program provides under `TABLE NAME` (see [`crate::Env`]); the lookup is
/// one `lookup_batch` call per batch.
///
/// * Ports: input 0; outputs: one per next-hop port (or `PORTS N`), plus
///   `NOROUTE` if given.
/// * Counters: drops `no_route` (when no `NOROUTE` port), `bad_ip_header`.
///
/// ```text
/// rt :: Ip4Lookup(ROUTE 10.0.1.0/24 0, ROUTE 0.0.0.0/0 10.0.2.1 1, NOROUTE 2);
/// ```
pub type Ip4Lookup = Lookup<u32>;
/// `Ip6Lookup(...)`: the IPv6 twin of [`Ip4Lookup`], same arguments.
///
/// ```text
/// rt6 :: Ip6Lookup(ROUTE 2001:db8:1::/48 0, ROUTE ::/0 fe80::1 1, NOROUTE 2);
/// ```
pub type Ip6Lookup = Lookup<u128>;

/// Parsed lookup arguments.
struct LookupArgs<P> {
    routes: Vec<(P, NhEntry)>,
    noroute: Option<u16>,
    table: Option<String>,
    ports: Option<u16>,
}

fn parse_lookup_args<P>(
    args: &[Arg],
    prefix: impl Fn(usize, &str) -> Result<P, BuildError>,
    v6: bool,
) -> Result<LookupArgs<P>, BuildError> {
    let mut la = LookupArgs {
        routes: Vec::new(),
        noroute: None,
        table: None,
        ports: None,
    };
    for (i, a) in each(args) {
        match keyword(a) {
            ("ROUTE", v) => {
                let w: Vec<&str> = v.split_whitespace().collect();
                let (p, gw, port) = match w.as_slice() {
                    [p, port] => (prefix(i, p)?, [0u8; 16], num16(i, port)?),
                    [p, gw, port] => {
                        let g = match ip(i, gw)? {
                            IpAddr::V4(g) if !v6 => {
                                let mut b = [0u8; 16];
                                b[..4].copy_from_slice(&g.octets());
                                b
                            }
                            IpAddr::V6(g) if v6 => g.octets(),
                            _ => {
                                return Err(BuildError::arg(
                                    i,
                                    "gateway of the wrong address family",
                                ))
                            }
                        };
                        (prefix(i, p)?, g, num16(i, port)?)
                    }
                    _ => return Err(BuildError::arg(i, "expected ROUTE PREFIX [GATEWAY] PORT")),
                };
                la.routes.push((p, NhEntry { port, gw, tag: 0 }));
            }
            ("NOROUTE", v) => la.noroute = Some(num16(i, v)?),
            ("TABLE", v) => la.table = Some(v.to_string()),
            ("PORTS", v) => la.ports = Some(num16(i, v)?),
            (k, _) => return Err(unknown(i, k)),
        }
    }
    Ok(la)
}

impl<A: Copy + Default> Lookup<A> {
    fn assemble(
        table: Box<dyn Table<A>>,
        nh: NextHopTable,
        ports: Option<u16>,
        noroute: Option<u16>,
    ) -> Result<Self, BuildError> {
        let mut outputs = ports.unwrap_or(0).max(nh.ports());
        if let Some(n) = noroute {
            outputs = outputs.max(n + 1);
        }
        if outputs == 0 {
            return Err(BuildError::elem(
                "no routes, no TABLE and no PORTS: the lookup has no outputs",
            ));
        }
        Ok(Lookup {
            table,
            nh,
            outputs,
            noroute,
            addrs: Box::new([A::default(); MAX_BATCH]),
            res: Box::new([None; MAX_BATCH]),
            ents: Box::new([None; MAX_BATCH]),
        })
    }

    /// Replaces the table and its next hops (e.g. a new FIB snapshot).
    pub fn set_table(&mut self, table: Box<dyn Table<A>>, nh: NextHopTable) {
        self.table = table;
        self.nh = nh;
    }

    /// Looks up the batch and emits. `pre` reads a packet's destination
    /// (it may also rewrite the packet), or decides the packet itself
    /// (`Err`: a drop, or another output, e.g. Ip4Forward's `slow`);
    /// `bytes` turns an address into the gateway annotation for connected
    /// routes; `post` may change a routed packet's verdict (Ip4Forward's
    /// MAC rewrite for resolved neighbours). Every packet is read once and
    /// moved once.
    #[inline]
    fn run(
        &mut self,
        batch: &mut Batch,
        out: &mut Output<'_>,
        mut pre: impl FnMut(&mut pkt::Packet) -> Result<A, Verdict>,
        bytes: impl Fn(A) -> [u8; 16],
        mut post: impl FnMut(&mut pkt::Packet, Verdict) -> Verdict,
    ) {
        if batch.len() <= MAX_BATCH {
            // The usual case: one table lookup for the whole batch and one
            // dispatch.
            let n = batch.len();
            let mut early = [None::<Verdict>; MAX_BATCH];
            for ((slot, e), p) in self
                .addrs
                .iter_mut()
                .zip(early.iter_mut())
                .zip(batch.as_mut_slice())
            {
                match pre(p) {
                    Ok(a) => *slot = a,
                    Err(v) => (*slot, *e) = (A::default(), Some(v)),
                }
            }
            // Multipath routes pick their next hop by flow hash, computed
            // only for the packets whose route needs it.
            let pk = batch.as_slice();
            let mut flow = |i: usize| pk.get(i).map_or(0, |p| pkt::hdr::flow::flow_hash(p.data()));
            let own = self.table.lookup_entries_flow(
                &self.addrs[..n],
                &mut self.res[..n],
                &mut self.ents[..n],
                &mut flow,
            );
            let (addrs, res, ents, nh, noroute) =
                (&self.addrs, &self.res, &self.ents, &self.nh, self.noroute);
            let mut k = 0;
            out.dispatch(batch, |p| {
                let i = k;
                k += 1;
                if let Some(v) = early.get(i).copied().flatten() {
                    return v;
                }
                let Some(&a) = addrs.get(i) else {
                    return Verdict::drop(BAD_IP_HEADER);
                };
                let v = route(
                    p,
                    a,
                    res.get(i).copied().flatten(),
                    ents.get(i).copied().flatten(),
                    own,
                    nh,
                    noroute,
                    &bytes,
                );
                post(p, v)
            });
            return;
        }
        // A batch larger than the lookup arrays (several upstreams fed
        // this input): chunk by chunk, one packet at a time.
        while !batch.is_empty() {
            let n = batch.len().min(MAX_BATCH);
            let mut early = [None::<Verdict>; MAX_BATCH];
            for ((slot, e), p) in self
                .addrs
                .iter_mut()
                .zip(early.iter_mut())
                .zip(batch.as_mut_slice().iter_mut().take(n))
            {
                match pre(p) {
                    Ok(a) => *slot = a,
                    Err(v) => (*slot, *e) = (A::default(), Some(v)),
                }
            }
            let (addrs, res, ents) = (&self.addrs[..n], &mut self.res[..n], &mut self.ents[..n]);
            let pk = batch.as_slice();
            let mut flow = |i: usize| pk.get(i).map_or(0, |p| pkt::hdr::flow::flow_hash(p.data()));
            let own = self.table.lookup_entries_flow(addrs, res, ents, &mut flow);
            for (i, mut p) in batch.drain_front(n).enumerate() {
                let v = match early.get(i).copied().flatten() {
                    Some(v) => v,
                    None => {
                        let a = self.addrs.get(i).copied().unwrap_or_default();
                        let r = self.res.get(i).copied().flatten();
                        let e = self.ents.get(i).copied().flatten();
                        let v = route(&mut p, a, r, e, own, &self.nh, self.noroute, &bytes);
                        post(&mut p, v)
                    }
                };
                // Lookups never keep a packet (`route` and `pre` give
                // ports and drops only).
                let _ = out.emit(v, p);
            }
        }
    }
}

/// The verdict for a looked-up packet: its route's port with `anno.nh` and
/// `anno.gw` set, the `NOROUTE` port, or a `no_route` drop.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn route<A: Copy>(
    p: &mut pkt::Packet,
    a: A,
    hop: Option<NextHop>,
    ent: Option<NhEntry>,
    own: bool,
    nh: &NextHopTable,
    noroute: Option<u16>,
    bytes: &impl Fn(A) -> [u8; 16],
) -> Verdict {
    let entry = match (hop, own) {
        (Some(h), true) => ent.map(|e| (h, e)),
        (Some(h), false) => nh.get(h).map(|e| (h, *e)),
        (None, _) => None,
    };
    match entry {
        Some((h, e)) => {
            p.anno.nh = if e.tag != 0 { e.tag } else { h.0 };
            p.anno.gw = if e.gw == [0; 16] { bytes(a) } else { e.gw };
            Verdict::port(e.port)
        }
        None => match noroute {
            Some(port) => Verdict::port(port),
            None => Verdict::drop(NO_ROUTE),
        },
    }
}

/// An IPv4 packet's destination: straight at `anno.l3` when a header
/// check upstream validated the header (it set `l3`; the version is still
/// checked), else parsed after a plain Ethernet header.
#[inline]
fn dst4(p: &pkt::Packet) -> Option<u32> {
    let l3 = usize::from(p.anno.l3);
    if l3 != 0 {
        let h = p.data().get(l3..)?.first_chunk::<20>()?;
        let d = h.last_chunk::<4>()?;
        return (h[0] >> 4 == 4).then(|| u32::from_be_bytes(*d));
    }
    let ip = Ipv4::parse(p.data().get(14..)?).ok()?;
    Some(u32::from_be_bytes(ip.dst()))
}

fn prefix4(i: usize, s: &str) -> Result<Prefix4, BuildError> {
    s.parse()
        .map_err(|_| BuildError::arg(i, format!("expected an IPv4 prefix, got '{s}'")))
}
fn prefix6(i: usize, s: &str) -> Result<Prefix6, BuildError> {
    s.parse()
        .map_err(|_| BuildError::arg(i, format!("expected an IPv6 prefix, got '{s}'")))
}

impl Lookup<u32> {
    pub(crate) fn new4(args: &[Arg], env: &mut crate::Env) -> Result<Self, BuildError> {
        let la = parse_lookup_args(args, prefix4, false)?;
        if let Some(name) = la.table {
            if !la.routes.is_empty() {
                return Err(BuildError::elem(
                    "give either ROUTE arguments or a TABLE, not both",
                ));
            }
            let t = env
                .take4(&name)
                .ok_or_else(|| BuildError::elem(format!("no IPv4 table '{name}' was provided")))?;
            return Self::assemble(t.table, t.nexthops, la.ports, la.noroute);
        }
        let mut nh = NextHopTable::new();
        let mut t = Reference4::default();
        for (i, (p, e)) in la.routes.into_iter().enumerate() {
            t.insert(p, nh.intern(e))
                .map_err(|_| BuildError::arg(i, "route refused"))?;
        }
        Self::assemble(Box::new(Arc::new(t)), nh, la.ports, la.noroute)
    }

    #[inline]
    pub(crate) fn process4(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        self.run4(
            batch,
            out,
            |p| dst4(p).ok_or(Verdict::drop(BAD_IP_HEADER)),
            |_, v| v,
        )
    }

    /// The IPv4 lookup with `pre` reading (or deciding) each packet first
    /// and `post` changing a routed packet's verdict (see [`Lookup::run`];
    /// Ip4Forward's checks and TTL, and its MAC rewrite).
    #[inline]
    pub(crate) fn run4(
        &mut self,
        batch: &mut Batch,
        out: &mut Output<'_>,
        pre: impl FnMut(&mut pkt::Packet) -> Result<u32, Verdict>,
        post: impl FnMut(&mut pkt::Packet, Verdict) -> Verdict,
    ) {
        self.run(
            batch,
            out,
            pre,
            |a| {
                let mut g = [0u8; 16];
                g[..4].copy_from_slice(&a.to_be_bytes());
                g
            },
            post,
        )
    }
}

impl Lookup<u128> {
    pub(crate) fn new6(args: &[Arg], env: &mut crate::Env) -> Result<Self, BuildError> {
        let la = parse_lookup_args(args, prefix6, true)?;
        if let Some(name) = la.table {
            if !la.routes.is_empty() {
                return Err(BuildError::elem(
                    "give either ROUTE arguments or a TABLE, not both",
                ));
            }
            let t = env
                .take6(&name)
                .ok_or_else(|| BuildError::elem(format!("no IPv6 table '{name}' was provided")))?;
            return Self::assemble(t.table, t.nexthops, la.ports, la.noroute);
        }
        let mut nh = NextHopTable::new();
        let mut t = Reference6::default();
        for (i, (p, e)) in la.routes.into_iter().enumerate() {
            t.insert(p, nh.intern(e))
                .map_err(|_| BuildError::arg(i, "route refused"))?;
        }
        Self::assemble(Box::new(Arc::new(t)), nh, la.ports, la.noroute)
    }

    #[inline]
    pub(crate) fn process6(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        self.run(
            batch,
            out,
            |p| {
                let dst = || {
                    let ip = Ipv6::parse(p.data().get(usize::from(p.anno.l3.max(14))..)?).ok()?;
                    Some(u128::from_be_bytes(ip.dst()))
                };
                dst().ok_or(Verdict::drop(BAD_IP_HEADER))
            },
            u128::to_be_bytes,
            |_, v| v,
        )
    }
}
