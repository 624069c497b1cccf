//! Origin-class propagation for Internet-sized graphs (`tessera sim run
//! --origin-classes`).
//!
//! Under Gao-Rexford policies every prefix of one origin AS propagates
//! alike: the prefixes of an origin form one equivalence class. This mode
//! computes, for each class (origin) once, the route every AS settles on,
//! and expands it to the class's prefixes when counting or recording.
//!
//! **What is simulated and what is not.** Nothing here is message level:
//! there are no UPDATEs, no clock, no MRAI and no `RibCore`. Each origin's
//! stable state is computed directly, in three sweeps over the graph
//! (customer routes climb provider links breadth-first, peer routes take
//! one step across, provider routes flow down in order of path length),
//! with the decision order the message-level simulation's `bgp-rib`
//! decision process applies to these routes: LOCAL_PREF by relationship
//! (customer > peer > provider), then the shorter AS_PATH, then the
//! neighbour with the lower BGP Identifier (the lower node index; ORIGIN,
//! MED and IGP cost are equal for all of them). That this is the same
//! decision is not assumed but tested: the final best routes of the
//! message-level simulation (every AS a `RibCore` exchanging real
//! UPDATEs) equal these on random relationship graphs
//! (`tests/origin_classes.rs`). Gao-Rexford policies have one stable
//! state, so MRAI and delays change the way there, not the end.
//!
//! Memory: one working set of 8 bytes per AS per thread (class, length,
//! next hop); routes are streamed into counters and into the tables of the
//! ASes asked for, never stored for every (AS, prefix).

use std::sync::atomic::{AtomicUsize, Ordering};

use topo::{Graph, NodeId, Role};

/// No route.
const NONE: u8 = u8::MAX;

/// Neighbours by role, as compressed rows.
struct Rows {
    start: Vec<u32>,
    to: Vec<NodeId>,
}

impl Rows {
    fn of(adj: &[Vec<topo::Adj>], role: Role) -> Rows {
        let mut start = Vec::with_capacity(adj.len() + 1);
        let mut to = Vec::new();
        start.push(0);
        for list in adj {
            to.extend(list.iter().filter(|a| a.role == role).map(|a| a.node));
            start.push(to.len() as u32);
        }
        Rows { start, to }
    }
    fn get(&self, x: NodeId) -> &[NodeId] {
        let (a, b) = (
            self.start[x as usize] as usize,
            self.start[x as usize + 1] as usize,
        );
        &self.to[a..b]
    }
}

/// A graph prepared for origin-class propagation.
pub struct Classes {
    n: usize,
    providers: Rows,
    peers: Rows,
    customers: Rows,
}

/// The route an AS settled on for one origin.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Route {
    /// What the route was learned from: [`Role::Customer`],
    /// [`Role::Peer`], [`Role::Provider`]; `None` for the origin itself.
    pub from: Option<Role>,
    /// AS_PATH length (hops to the origin).
    pub len: u16,
    /// The neighbour it was learned from (the origin: itself).
    pub next: NodeId,
}

/// Per-thread working set: the routes of the origin last computed.
pub struct Work {
    class: Vec<u8>,
    len: Vec<u16>,
    next: Vec<NodeId>,
    /// Nodes with a route, in the order they got it.
    touched: Vec<NodeId>,
    buckets: Vec<Vec<NodeId>>,
}

impl Work {
    /// The route of `x` for the last origin, if it has one.
    pub fn route(&self, x: NodeId) -> Option<Route> {
        let c = *self.class.get(x as usize)?;
        let from = match c {
            0 => None,
            1 => Some(Role::Customer),
            2 => Some(Role::Peer),
            3 => Some(Role::Provider),
            _ => return None,
        };
        Some(Route {
            from,
            len: self.len[x as usize],
            next: self.next[x as usize],
        })
    }

    /// The nodes that have a route for the last origin (the origin first).
    pub fn reached(&self) -> &[NodeId] {
        &self.touched
    }

    /// The AS path of `x`'s route as node indexes, the neighbour first and
    /// the origin last (empty for the origin; `None` without a route).
    pub fn path(&self, x: NodeId) -> Option<Vec<NodeId>> {
        let mut r = self.route(x)?;
        let mut p = Vec::with_capacity(usize::from(r.len));
        while r.from.is_some() && p.len() <= usize::from(u16::MAX) {
            p.push(r.next);
            r = self.route(r.next)?;
        }
        Some(p)
    }
}

impl Classes {
    /// What `x` holds from its neighbours for the origin last computed in
    /// `w` (its Adj-RIB-In after import): `(neighbour, role of the
    /// neighbour, AS path as node indexes, the neighbour first)` for every
    /// neighbour that exports its route to `x` (all routes to customers;
    /// own and customer routes to everyone) unless `x` is on the path
    /// (AS_PATH loop), in adjacency-role order (providers, peers,
    /// customers).
    pub fn held(&self, w: &Work, x: NodeId) -> Vec<(NodeId, Role, Vec<NodeId>)> {
        let mut v = Vec::new();
        if x as usize >= self.n {
            return v;
        }
        for (rows, role) in [
            (&self.providers, Role::Provider),
            (&self.peers, Role::Peer),
            (&self.customers, Role::Customer),
        ] {
            for &y in rows.get(x) {
                let Some(r) = w.route(y) else { continue };
                let exports =
                    role == Role::Provider || matches!(r.from, None | Some(Role::Customer));
                if !exports {
                    continue;
                }
                let Some(mut p) = w.path(y) else { continue };
                if p.contains(&x) {
                    continue;
                }
                p.insert(0, y);
                v.push((y, role, p));
            }
        }
        v
    }

    /// Prepares `g`. Refused when a link has no relationship: such
    /// neighbours export everything in the message-level simulation, which
    /// has no single stable state to compute.
    pub fn new(g: &Graph) -> Result<Classes, String> {
        if g.links.iter().any(|l| l.rel == topo::Rel::Unknown) {
            return Err(
                "origin classes need relationships on every link (annotate the topology)".into(),
            );
        }
        let adj = g.adjacency();
        Ok(Classes {
            n: g.nodes.len(),
            providers: Rows::of(&adj, Role::Provider),
            peers: Rows::of(&adj, Role::Peer),
            customers: Rows::of(&adj, Role::Customer),
        })
    }

    /// A working set for this graph.
    pub fn work(&self) -> Work {
        Work {
            class: vec![NONE; self.n],
            len: vec![0; self.n],
            next: vec![0; self.n],
            touched: Vec::new(),
            buckets: Vec::new(),
        }
    }

    /// Computes every AS's route towards origin `o` into `w`.
    pub fn propagate(&self, o: NodeId, w: &mut Work) {
        for &x in &w.touched {
            w.class[x as usize] = NONE;
        }
        w.touched.clear();
        if o as usize >= self.n {
            return;
        }
        let take = |w: &mut Work, x: NodeId, c: u8, l: u16, y: NodeId| {
            let i = x as usize;
            w.class[i] = c;
            w.len[i] = l;
            w.next[i] = y;
            w.touched.push(x);
        };
        take(w, o, 0, 0, o);
        // Customer routes: up provider links, breadth-first; ties to the
        // lower neighbour index.
        let mut level: u16 = 0;
        let mut from = 0usize;
        while from < w.touched.len() {
            let upto = w.touched.len();
            level = level.saturating_add(1);
            for k in from..upto {
                let y = w.touched[k];
                for &x in self.providers.get(y) {
                    let i = x as usize;
                    match w.class[i] {
                        NONE => take(w, x, 1, level, y),
                        1 if w.len[i] == level && y < w.next[i] => w.next[i] = y,
                        _ => {}
                    }
                }
            }
            from = upto;
        }
        // Peer routes: one step across from own and customer routes.
        let up = w.touched.len();
        for k in 0..up {
            let y = w.touched[k];
            let l = w.len[y as usize].saturating_add(1);
            for &x in self.peers.get(y) {
                let i = x as usize;
                match w.class[i] {
                    NONE => take(w, x, 2, l, y),
                    2 if (l, y) < (w.len[i], w.next[i]) => {
                        w.len[i] = l;
                        w.next[i] = y;
                    }
                    _ => {}
                }
            }
        }
        // Provider routes: down customer links from every route, shortest
        // first (a bucket queue by path length).
        for b in &mut w.buckets {
            b.clear();
        }
        for k in 0..w.touched.len() {
            let y = w.touched[k];
            let l = usize::from(w.len[y as usize]);
            if w.buckets.len() <= l {
                w.buckets.resize_with(l + 1, Vec::new);
            }
            w.buckets[l].push(y);
        }
        let mut d = 0usize;
        while d < w.buckets.len() {
            let bucket = std::mem::take(&mut w.buckets[d]);
            let l = (d + 1).min(usize::from(u16::MAX)) as u16;
            for &y in &bucket {
                for &x in self.customers.get(y) {
                    let i = x as usize;
                    match w.class[i] {
                        NONE => {
                            take(w, x, 3, l, y);
                            if w.buckets.len() <= d + 1 {
                                w.buckets.resize_with(d + 2, Vec::new);
                            }
                            w.buckets[d + 1].push(x);
                        }
                        3 if w.len[i] == l && y < w.next[i] => w.next[i] = y,
                        _ => {}
                    }
                }
            }
            w.buckets[d] = bucket;
            d += 1;
        }
    }

    /// Number of ASes.
    pub fn len(&self) -> usize {
        self.n
    }

    /// Whether the graph has no AS.
    pub fn is_empty(&self) -> bool {
        self.n == 0
    }
}

/// Totals of a run over all origins, expanded to their prefixes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// Origins (classes) computed.
    pub classes: u64,
    /// Prefixes they stand for.
    pub prefixes: u64,
    /// (AS, prefix) routes: one per AS reached per prefix of the class,
    /// the origin's own included.
    pub routes: u64,
    /// Of those, learned from customers, peers, providers.
    pub by_role: [u64; 3],
    /// (AS, prefix) routes by AS_PATH length (index = length, own = 0).
    pub path_len: Vec<u64>,
    /// (AS, prefix) pairs without a route.
    pub unreachable: u64,
}

impl Totals {
    fn add(&mut self, w: &Work, k: u64, n: usize) {
        self.classes += 1;
        self.prefixes += k;
        let reached = w.touched.len() as u64;
        self.routes += reached * k;
        self.unreachable += (n as u64 - reached) * k;
        for &x in &w.touched {
            let i = x as usize;
            match w.class[i] {
                1 => self.by_role[0] += k,
                2 => self.by_role[1] += k,
                3 => self.by_role[2] += k,
                _ => {}
            }
            let l = usize::from(w.len[i]);
            if self.path_len.len() <= l {
                self.path_len.resize(l + 1, 0);
            }
            self.path_len[l] += k;
        }
    }

    fn merge(&mut self, o: Totals) {
        self.classes += o.classes;
        self.prefixes += o.prefixes;
        self.routes += o.routes;
        self.unreachable += o.unreachable;
        for i in 0..3 {
            self.by_role[i] += o.by_role[i];
        }
        if self.path_len.len() < o.path_len.len() {
            self.path_len.resize(o.path_len.len(), 0);
        }
        for (a, b) in self.path_len.iter_mut().zip(o.path_len) {
            *a += b;
        }
    }
}

/// What a traced AS ends with, by origin: (origin, its best path as node
/// indexes, every path it holds from its neighbours as [`Classes::held`]
/// gives them).
pub type Table = Vec<(NodeId, Vec<NodeId>, Vec<(NodeId, Role, Vec<NodeId>)>)>;

/// Computes every origin of `g` that originates prefixes (each once,
/// counted as many times as it has prefixes) on `threads` threads, and the
/// tables of the `traced` ASes. `progress` is called now and then with the
/// number of origins done (from one thread at a time).
pub fn run_all(
    g: &Graph,
    threads: usize,
    traced: &[NodeId],
    progress: &(dyn Fn(usize) + Sync),
) -> Result<(Totals, Vec<Table>), String> {
    let c = Classes::new(g)?;
    let origins: Vec<(NodeId, u64)> = g
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| !n.prefixes.is_empty())
        .map(|(i, n)| (i as NodeId, n.prefixes.len() as u64))
        .collect();
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    const CHUNK: usize = 64;
    let worker = || {
        let mut w = c.work();
        let mut t = Totals::default();
        let mut tables: Vec<Table> = vec![Vec::new(); traced.len()];
        loop {
            let a = next.fetch_add(CHUNK, Ordering::Relaxed);
            if a >= origins.len() {
                break;
            }
            for &(o, k) in &origins[a..(a + CHUNK).min(origins.len())] {
                c.propagate(o, &mut w);
                t.add(&w, k, c.len());
                for (j, &x) in traced.iter().enumerate() {
                    if let Some(p) = w.path(x) {
                        tables[j].push((o, p, c.held(&w, x)));
                    }
                }
            }
            let d = done.fetch_add(CHUNK, Ordering::Relaxed) + CHUNK;
            if d.is_multiple_of(CHUNK * 64) {
                progress(d.min(origins.len()));
            }
        }
        (t, tables)
    };
    let threads = threads.clamp(1, 64);
    let results: Vec<(Totals, Vec<Table>)> = std::thread::scope(|s| {
        let hs: Vec<_> = (1..threads).map(|_| s.spawn(worker)).collect();
        let mut v = vec![worker()];
        for h in hs {
            match h.join() {
                Ok(r) => v.push(r),
                Err(e) => std::panic::resume_unwind(e),
            }
        }
        v
    });
    let mut total = Totals::default();
    let mut tables: Vec<Table> = vec![Vec::new(); traced.len()];
    for (t, tb) in results {
        total.merge(t);
        for (a, b) in tables.iter_mut().zip(tb) {
            a.extend(b);
        }
    }
    for t in &mut tables {
        t.sort_unstable_by_key(|e| e.0);
    }
    Ok((total, tables))
}
