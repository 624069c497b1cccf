//! The built graph: elements, edges, pending input batches, and the
//! push loop.
//!
//! Every element input has a pending batch sized 256 × (number of
//! connections into it, at least 1) allocated at build time. Running the
//! graph visits elements in a topological order of the edges (back edges,
//! e.g. ICMP errors fed back to the route lookup, are ignored for the
//! order) and hands each non-empty pending batch to its element, which
//! pushes packets straight into downstream pending batches. Passes repeat
//! while a back edge left work behind, up to a bound, so a cycle can never
//! spin the core; leftovers wait for the next poll.
//!
//! A bit per element (by its place in that order) says that one of its
//! inputs may hold packets: set by [`Graph::inject`] and, after an element
//! or a tick ran, for each of its outputs' targets that holds packets. A
//! pass visits only the marked elements, in the same order as a walk over
//! all of them would, so the cost of a run follows the elements a batch
//! goes through, not the size of the graph (a batch of one packet, as a
//! virtual router with batching off runs, crosses a handful of a built-in
//! graph's dozens of elements).

use pkt::{Batch, Pool, MAX_BATCH};

use crate::element::{
    slot_name, DropReason, ElemStats, Element, Factory, Output, Ports, Target, UNCONNECTED,
};
use crate::lang::{parse, Config, ConfigError, Pos};

/// Passes over the graph per `run` at most (bounds work on cycles).
const MAX_PASSES: usize = 8;

/// A graph of elements of type `E`, owned by one core.
pub struct Graph<E: Element> {
    elems: Vec<E>,
    /// Each element's port counts, read once at build (they fix the slot
    /// layout): the run loop does not ask the element again.
    ports: Vec<Ports>,
    names: Vec<String>,
    stats: Vec<ElemStats>,
    /// First input slot of each element; its inputs are consecutive.
    in_base: Vec<u32>,
    /// First output target of each element.
    out_base: Vec<u32>,
    targets: Vec<Target>,
    pending: Vec<Batch>,
    scratch: Vec<Batch>,
    /// Element index owning each slot, and the input port.
    slot_owner: Vec<(u32, u16)>,
    order: Vec<u32>,
    /// Each element's place in `order`.
    place: Vec<u32>,
    /// Per output target (as `targets`): the place in `order` of the
    /// element it feeds (`u32::MAX`: unconnected).
    target_place: Vec<u32>,
    /// Bit `k`: the element at `order[k]` may have pending input (set
    /// whenever one of its input slots is not empty).
    marked: Vec<u64>,
    tickers: Vec<u32>,
    /// Per-packet verdicts and kept packets for `Output::dispatch`, sized
    /// for the largest pending batch.
    verdicts: Vec<u16>,
    keep: Batch,
    pool: Pool,
    now_ns: u64,
    /// Source name and where each element was declared (for
    /// [`Graph::check_connected`]).
    file: String,
    pos: Vec<Pos>,
    /// Whether each input slot has a connection.
    fed: Vec<bool>,
}

impl<E: Element> std::fmt::Debug for Graph<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Graph").field("names", &self.names).finish()
    }
}

fn cfg_err(file: &str, pos: Pos, msg: impl Into<String>) -> ConfigError {
    ConfigError {
        file: file.to_string(),
        pos,
        msg: msg.into(),
    }
}

impl<E: Element> Graph<E> {
    /// Parses `src` and builds the graph with `factory`. `file` names the
    /// source in errors; `pool` is this core's pool.
    pub fn from_str<F: Factory<Elem = E>>(
        src: &str,
        file: &str,
        factory: &mut F,
        pool: Pool,
    ) -> Result<Self, ConfigError> {
        let cfg = parse(src, file)?;
        Self::build(&cfg, file, factory, pool)
    }

    /// Builds a graph from a parsed config.
    pub fn build<F: Factory<Elem = E>>(
        cfg: &Config,
        file: &str,
        factory: &mut F,
        pool: Pool,
    ) -> Result<Self, ConfigError> {
        let mut elems = Vec::with_capacity(cfg.decls.len());
        let mut names = Vec::with_capacity(cfg.decls.len());
        for d in &cfg.decls {
            let e = factory.build(&d.name, &d.class, &d.args).map_err(|e| {
                let pos = e.arg.and_then(|i| d.args.get(i)).map_or(d.pos, |a| a.pos);
                cfg_err(file, pos, format!("{} ({}): {}", d.name, d.class, e.msg))
            })?;
            elems.push(e);
            names.push(d.name.clone());
        }
        let n = elems.len();
        let index = |name: &str| names.iter().position(|x| x == name);
        let (mut in_base, mut out_base) = (Vec::with_capacity(n), Vec::with_capacity(n));
        let (mut slots, mut outs) = (0u32, 0u32);
        for e in &elems {
            let p = e.ports();
            in_base.push(slots);
            out_base.push(outs);
            slots += u32::from(p.inputs);
            outs += u32::from(p.outputs);
        }
        let mut targets = vec![Target { slot: UNCONNECTED }; outs as usize];
        let mut indeg = vec![0usize; slots as usize];
        let mut adj: Vec<Vec<u32>> = vec![Vec::new(); n];
        for c in &cfg.conns {
            let from = index(&c.from)
                .ok_or_else(|| cfg_err(file, c.pos, format!("no element '{}'", c.from)))?;
            let to = index(&c.to)
                .ok_or_else(|| cfg_err(file, c.pos, format!("no element '{}'", c.to)))?;
            let (fp, tp) = (elems[from].ports(), elems[to].ports());
            if c.out >= fp.outputs {
                return Err(cfg_err(
                    file,
                    c.pos,
                    format!(
                        "{} has {} output(s); no output {}",
                        c.from, fp.outputs, c.out
                    ),
                ));
            }
            if c.input >= tp.inputs {
                return Err(cfg_err(
                    file,
                    c.pos,
                    format!("{} has {} input(s); no input {}", c.to, tp.inputs, c.input),
                ));
            }
            let (ko, ki) = (
                elems[from].port_kind(true, c.out),
                elems[to].port_kind(false, c.input),
            );
            if !ki.accepts(ko) {
                return Err(cfg_err(
                    file,
                    c.pos,
                    format!(
                        "type mismatch: {} output {} carries {} packets, {} input {} takes {}",
                        c.from,
                        c.out,
                        ko.name(),
                        c.to,
                        c.input,
                        ki.name()
                    ),
                ));
            }
            let t = &mut targets[(out_base[from] + u32::from(c.out)) as usize];
            if t.slot != UNCONNECTED {
                // Push outputs connect to exactly one input (Click rule).
                return Err(cfg_err(
                    file,
                    c.pos,
                    format!("{} output {} connected twice", c.from, c.out),
                ));
            }
            let slot = in_base[to] + u32::from(c.input);
            t.slot = slot;
            indeg[slot as usize] += 1;
            adj[from].push(to as u32);
        }
        let mut slot_owner = Vec::with_capacity(slots as usize);
        for (i, e) in elems.iter().enumerate() {
            for p in 0..e.ports().inputs {
                slot_owner.push((i as u32, p));
            }
        }
        let cap = |s: usize| MAX_BATCH * indeg[s].max(1) + MAX_BATCH;
        let pending = (0..slots as usize)
            .map(|s| Batch::with_capacity(cap(s)))
            .collect();
        let scratch = (0..slots as usize)
            .map(|s| Batch::with_capacity(cap(s)))
            .collect();
        let max_cap = (0..slots as usize).map(cap).max().unwrap_or(MAX_BATCH);
        let order = topo_order(&adj);
        let mut place = vec![0u32; n];
        for (k, &i) in order.iter().enumerate() {
            place[i as usize] = k as u32;
        }
        let target_place = targets
            .iter()
            .map(|t| match slot_owner.get(t.slot as usize) {
                Some(&(e, _)) if t.slot != UNCONNECTED => place[e as usize],
                _ => u32::MAX,
            })
            .collect();
        let tickers = (0..n as u32)
            .filter(|&i| elems[i as usize].wants_tick())
            .collect();
        let fed = indeg.iter().map(|&d| d > 0).collect();
        Ok(Graph {
            file: file.to_string(),
            pos: cfg.decls.iter().map(|d| d.pos).collect(),
            fed,
            stats: vec![ElemStats::default(); n],
            ports: elems.iter().map(Element::ports).collect(),
            elems,
            names,
            in_base,
            out_base,
            targets,
            pending,
            scratch,
            slot_owner,
            order,
            place,
            target_place,
            marked: vec![0; n.div_ceil(64)],
            tickers,
            verdicts: vec![0; max_cap],
            keep: Batch::with_capacity(max_cap),
            pool,
            now_ns: 0,
        })
    }

    /// The strict check for graphs written by operators: every element
    /// other than a device source is reached by a connection, and every
    /// output is connected unless the element allows it to be left open
    /// ([`Element::optional_output`]). The error is at the element's
    /// declaration.
    pub fn check_connected(&self) -> Result<(), ConfigError> {
        for (i, e) in self.elems.iter().enumerate() {
            let p = e.ports();
            let at = |msg: String| {
                cfg_err(
                    &self.file,
                    self.pos.get(i).copied().unwrap_or_default(),
                    format!("{} ({}): {msg}", self.names[i], e.class()),
                )
            };
            let source = matches!(e.device(), Some(crate::element::DeviceRole::From(_)));
            let base = self.in_base[i] as usize;
            let fed = (0..usize::from(p.inputs)).any(|k| self.fed.get(base + k) == Some(&true));
            if p.inputs > 0 && !source && !fed {
                return Err(at("no connection reaches it".into()));
            }
            let ob = self.out_base[i] as usize;
            for k in 0..p.outputs {
                let open = self
                    .targets
                    .get(ob + usize::from(k))
                    .is_none_or(|t| t.slot == UNCONNECTED);
                if open && !e.optional_output(k) {
                    return Err(at(format!(
                        "output {k} is not connected (connect it, to Discard if its packets are not wanted)"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Where element `i` was declared.
    pub fn pos(&self, i: usize) -> Option<Pos> {
        self.pos.get(i).copied()
    }
    /// The source name the graph was built from (errors start with it).
    pub fn file(&self) -> &str {
        &self.file
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        self.elems.len()
    }
    /// True when the graph has no elements.
    pub fn is_empty(&self) -> bool {
        self.elems.is_empty()
    }
    /// Index of the element called `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
    /// Name of element `i`.
    pub fn name(&self, i: usize) -> Option<&str> {
        self.names.get(i).map(String::as_str)
    }
    /// Element `i`.
    pub fn element(&self, i: usize) -> Option<&E> {
        self.elems.get(i)
    }
    /// Element `i`, writable (e.g. to swap a FIB or add a neighbour).
    pub fn element_mut(&mut self, i: usize) -> Option<&mut E> {
        self.elems.get_mut(i)
    }
    /// Counters of element `i`.
    pub fn stats(&self, i: usize) -> Option<&ElemStats> {
        self.stats.get(i)
    }
    /// Counters of the element called `name`.
    pub fn stats_of(&self, name: &str) -> Option<&ElemStats> {
        self.find(name).and_then(|i| self.stats.get(i))
    }
    /// Iterates `(name, element, stats)`.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &E, &ElemStats)> {
        self.names
            .iter()
            .zip(&self.elems)
            .zip(&self.stats)
            .map(|((n, e), s)| (n.as_str(), e, s))
    }
    /// The drops of element `i` by reason name (generic reasons, then the
    /// element's own), zeros included.
    pub fn drops_of(&self, i: usize) -> impl Iterator<Item = (&'static str, u64)> + '_ {
        let own = self.elems.get(i).map_or(&[][..], |e| e.drop_names());
        let st = self.stats.get(i);
        (0..DropReason::GENERIC + own.len().min(DropReason::MAX_OWN)).map(move |k| {
            (
                slot_name(k, own),
                st.and_then(|s| s.drops.get(k)).copied().unwrap_or(0),
            )
        })
    }
    /// Drops of the element called `elem` for its reason called `reason`
    /// (`None` if there is no such element or reason).
    pub fn dropped_at(&self, elem: &str, reason: &str) -> Option<u64> {
        let i = self.find(elem)?;
        self.drops_of(i).find(|(n, _)| *n == reason).map(|(_, c)| c)
    }
    /// Total drops over all elements for the reason called `name` (a
    /// generic one or any element's own of that name).
    pub fn dropped(&self, name: &str) -> u64 {
        (0..self.elems.len())
            .flat_map(|i| self.drops_of(i))
            .filter(|(n, _)| *n == name)
            .map(|(_, c)| c)
            .sum()
    }
    /// Total drops over all elements, whatever the reason.
    pub fn total_drops(&self) -> u64 {
        self.stats.iter().map(ElemStats::total_drops).sum()
    }
    /// The pool this graph allocates from.
    pub fn pool(&self) -> &Pool {
        &self.pool
    }
    /// Sets the clock elements see (nanoseconds, monotonic).
    pub fn set_now_ns(&mut self, ns: u64) {
        self.now_ns = ns;
    }

    /// Moves packets from `batch` into input `input` of element `elem`
    /// (the driver's FromDevice injection). Packets that do not fit are
    /// dropped and counted as overflow on that element.
    pub fn inject(&mut self, elem: usize, input: u16, batch: &mut Batch) {
        let Some(&base) = self.in_base.get(elem) else {
            batch.clear();
            return;
        };
        let slot = base as usize + usize::from(input);
        let n = batch.len();
        let moved = match self.pending.get_mut(slot) {
            Some(p) if input < self.ports[elem].inputs => p.take_from(batch),
            _ => 0,
        };
        if moved > 0 {
            if let Some(&k) = self.place.get(elem) {
                self.mark(k);
            }
        }
        if n > moved {
            if let Some(s) = self.stats.get_mut(elem) {
                s.drops[DropReason::OVERFLOW.slot()] += (n - moved) as u64;
            }
            batch.clear();
        }
    }

    fn run_elem(&mut self, i: usize) {
        let p = self.ports[i];
        let e = &mut self.elems[i];
        let base = self.in_base[i] as usize;
        let ob = self.out_base[i] as usize;
        let targets = &self.targets[ob..ob + usize::from(p.outputs)];
        for port in 0..p.inputs {
            let slot = base + usize::from(port);
            if self.pending[slot].is_empty() {
                continue;
            }
            std::mem::swap(&mut self.pending[slot], &mut self.scratch[slot]);
            let batch = &mut self.scratch[slot];
            let stats = &mut self.stats[i];
            stats.rx += batch.len() as u64;
            let mut out = Output {
                targets,
                pending: &mut self.pending,
                stats,
                pool: &self.pool,
                now_ns: self.now_ns,
                verdicts: &mut self.verdicts,
                keep: &mut self.keep,
            };
            e.process(port, batch, &mut out);
            if !batch.is_empty() {
                out.stats.drops[DropReason::UNPROCESSED.slot()] += batch.len() as u64;
                batch.clear();
            }
        }
    }

    fn mark(&mut self, k: u32) {
        if let Some(w) = self.marked.get_mut((k / 64) as usize) {
            *w |= 1 << (k % 64);
        }
    }

    /// Marks the elements element `i`'s outputs feed whose input now
    /// holds packets (after `i` ran or ticked).
    fn mark_targets(&mut self, i: usize) {
        let ob = self.out_base[i] as usize;
        for k in ob..ob + usize::from(self.ports[i].outputs) {
            let (Some(t), Some(&at)) = (self.targets.get(k), self.target_place.get(k)) else {
                continue;
            };
            if at != u32::MAX
                && self
                    .pending
                    .get(t.slot as usize)
                    .is_some_and(|b| !b.is_empty())
            {
                self.mark(at);
            }
        }
    }

    /// The first marked place at or after `from`.
    fn next_marked(&self, from: usize) -> Option<usize> {
        let mut w = from / 64;
        let mut bits = self.marked.get(w)? & (!0u64 << (from % 64));
        loop {
            if bits != 0 {
                return Some(w * 64 + bits.trailing_zeros() as usize);
            }
            w += 1;
            bits = *self.marked.get(w)?;
        }
    }

    /// Pushes every pending packet through the graph (run to completion).
    pub fn run(&mut self) {
        // Nothing pending (the second run of a poll, after `tick`; a
        // virtual router's decision that found nothing): no pass.
        for _ in 0..MAX_PASSES {
            // One pass: the marked elements in order (an element marked
            // behind the pass, by a back edge or itself, waits for the
            // next one, as in a walk over every element).
            let mut from = 0;
            while let Some(k) = self.next_marked(from) {
                self.marked[k / 64] &= !(1 << (k % 64));
                let i = self.order[k] as usize;
                self.run_elem(i);
                self.mark_targets(i);
                from = k + 1;
            }
            if self.marked.iter().all(|&w| w == 0) {
                return;
            }
        }
    }

    /// Runs `tick` of every element that wants it, then runs the graph.
    pub fn tick(&mut self) {
        for k in 0..self.tickers.len() {
            let i = self.tickers[k] as usize;
            let p = self.ports[i];
            let ob = self.out_base[i] as usize;
            let mut out = Output {
                targets: &self.targets[ob..ob + usize::from(p.outputs)],
                pending: &mut self.pending,
                stats: &mut self.stats[i],
                pool: &self.pool,
                now_ns: self.now_ns,
                verdicts: &mut self.verdicts,
                keep: &mut self.keep,
            };
            self.elems[i].tick(&mut out);
            self.mark_targets(i);
        }
        self.run();
    }

    /// Packets waiting in pending inputs (0 after a complete `run`).
    pub fn pending_len(&self) -> usize {
        if self.marked.iter().all(|&w| w == 0) {
            return 0;
        }
        self.pending.iter().map(Batch::len).sum()
    }

    /// Counts `n` drops for `reason` on element `i` (used by the driver for
    /// transmit failures).
    pub fn count_drops(&mut self, i: usize, reason: DropReason, n: u64) {
        if let Some(s) = self.stats.get_mut(i) {
            s.drops[reason.slot()] += n;
        }
    }

    /// Which element and input port a slot belongs to (for diagnostics).
    pub fn slot_owner(&self, slot: usize) -> Option<(usize, u16)> {
        self.slot_owner.get(slot).map(|&(e, p)| (e as usize, p))
    }
}

/// Reverse post-order DFS from every element in declaration order: a
/// topological order when the graph is acyclic, and a reasonable one
/// (sources first) when it has cycles.
fn topo_order(adj: &[Vec<u32>]) -> Vec<u32> {
    let n = adj.len();
    let mut state = vec![0u8; n]; // 0 new, 1 on stack, 2 done
    let mut post = Vec::with_capacity(n);
    let mut has_pred = vec![false; n];
    for (i, a) in adj.iter().enumerate() {
        for &j in a {
            if j as usize != i {
                has_pred[j as usize] = true;
            }
        }
    }
    let roots: Vec<usize> = (0..n).filter(|&i| !has_pred[i]).chain(0..n).collect();
    for r in roots {
        if state[r] != 0 {
            continue;
        }
        // Iterative DFS: (node, next child index).
        let mut stack = vec![(r, 0usize)];
        state[r] = 1;
        while let Some(&mut (v, ref mut k)) = stack.last_mut() {
            if let Some(&w) = adj[v].get(*k) {
                *k += 1;
                if state[w as usize] == 0 {
                    state[w as usize] = 1;
                    stack.push((w as usize, 0));
                }
            } else {
                state[v] = 2;
                post.push(v as u32);
                stack.pop();
            }
        }
    }
    post.reverse();
    post
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::element::BuildError;
    use crate::lang::Arg;

    /// `Loop`: a packet whose first byte is above 0 goes out of output 1
    /// with it decremented, else out of output 0. `Pass`: output 0.
    /// `Gen`: one packet out of output 0 per tick. `Sink`: counts.
    enum T {
        Pass,
        Loop,
        Gen,
        Sink(u64),
    }

    impl Element for T {
        fn class(&self) -> &'static str {
            "T"
        }
        fn ports(&self) -> Ports {
            match self {
                T::Pass => Ports {
                    inputs: 2,
                    outputs: 1,
                },
                T::Loop => Ports {
                    inputs: 1,
                    outputs: 2,
                },
                T::Gen => Ports {
                    inputs: 0,
                    outputs: 1,
                },
                T::Sink(_) => Ports {
                    inputs: 1,
                    outputs: 0,
                },
            }
        }
        fn process(&mut self, _input: u16, batch: &mut Batch, out: &mut Output<'_>) {
            match self {
                T::Pass => out.forward_all(0, batch),
                T::Loop => {
                    for mut p in batch.drain() {
                        let d = p.data_mut();
                        if d[0] > 0 {
                            d[0] -= 1;
                            out.push(1, p);
                        } else {
                            out.push(0, p);
                        }
                    }
                }
                T::Gen => batch.clear(),
                T::Sink(n) => {
                    *n += batch.len() as u64;
                    batch.clear();
                }
            }
        }
        fn wants_tick(&self) -> bool {
            matches!(self, T::Gen)
        }
        fn tick(&mut self, out: &mut Output<'_>) {
            if let Some(p) = out.pool.alloc_from(&[0]) {
                out.push(0, p);
            }
        }
    }

    struct F;
    impl Factory for F {
        type Elem = T;
        fn build(&mut self, _name: &str, class: &str, _args: &[Arg]) -> Result<T, BuildError> {
            Ok(match class {
                "Pass" => T::Pass,
                "Loop" => T::Loop,
                "Gen" => T::Gen,
                _ => T::Sink(0),
            })
        }
    }

    fn sunk(g: &Graph<T>, name: &str) -> u64 {
        match g.find(name).and_then(|i| g.element(i)) {
            Some(T::Sink(n)) => *n,
            _ => u64::MAX,
        }
    }

    #[test]
    fn a_cycle_runs_max_passes_per_run_and_its_leftovers_on_the_next() {
        // a -> l; l[1] -> [1]a (a back edge: one turn per pass); l[0] -> out.
        let src = "a :: Pass; l :: Loop; out :: Sink; far :: Pass; far2 :: Sink;\n\
                   a -> l; l[1] -> [1]a; l[0] -> out; far -> far2;";
        let pool = Pool::new(16);
        let mut g = Graph::from_str(src, "t", &mut F, pool.clone()).unwrap();
        let mut b = Batch::with_capacity(4);
        // 2 * MAX_PASSES + 3 turns: two full runs and a part of a third.
        let turns = (2 * MAX_PASSES + 3) as u8;
        b.push(pool.alloc_from(&[turns]).unwrap()).unwrap();
        g.inject(g.find("a").unwrap(), 0, &mut b);
        assert_eq!(g.pending_len(), 1);
        for _ in 0..2 {
            g.run();
            assert_eq!((sunk(&g, "out"), g.pending_len()), (0, 1));
        }
        g.run();
        assert_eq!((sunk(&g, "out"), g.pending_len()), (1, 0));
        assert_eq!(sunk(&g, "far2"), 0);
        // Nothing pending: a run changes nothing.
        g.run();
        assert_eq!((sunk(&g, "out"), g.pending_len()), (1, 0));
    }

    #[test]
    fn what_a_tick_emits_runs_in_the_same_call() {
        let src = "g :: Gen; p :: Pass; out :: Sink; g -> p -> out;";
        let mut g = Graph::from_str(src, "t", &mut F, Pool::new(16)).unwrap();
        g.tick();
        g.tick();
        assert_eq!((sunk(&g, "out"), g.pending_len()), (2, 0));
    }

    #[test]
    fn topo() {
        // 0 -> 1 -> 2, 2 -> 1 (cycle), 3 -> 2
        let adj = vec![vec![1], vec![2], vec![1], vec![2]];
        let o = topo_order(&adj);
        assert_eq!(o.len(), 4);
        let pos = |x: u32| o.iter().position(|&y| y == x).unwrap();
        assert!(pos(0) < pos(1));
        assert!(pos(1) < pos(2));
        assert!(pos(3) < pos(2));
    }
}
