//! Route origin validation on a table the size of today's global VRP set
//! (400k IPv4 VRPs), and what a VRP change costs: finding the routes it
//! covers in a 900k-prefix RIB index (one range scan) against the naive
//! alternative, a walk over every prefix (same run, same data).
//!
//! `cargo bench -p rov --bench rov`

use base::{Prefix, Prefix4};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use rov::{PrefixIndex, Vrp, VrpTable};

const VRPS: usize = 400_000;
const RIB: usize = 900_000;
const ROUTES: usize = 100_000;

/// xorshift, so the input is the same on every run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn v4(r: &mut Rng, lo: u8, hi: u8) -> Prefix {
    let len = lo + r.below(u64::from(hi - lo + 1)) as u8;
    let addr = (r.next() as u32) | 0x0100_0000;
    Prefix::V4(Prefix4::new(addr, len).expect("len").masked())
}

fn data() -> (VrpTable, Vec<(Prefix, u32)>, PrefixIndex, Vec<Prefix>) {
    let mut r = Rng(0x9e37_79b9_7f4a_7c15);
    let mut t = VrpTable::default();
    while t.len() < VRPS {
        let p = v4(&mut r, 12, 24);
        let max = p.len() + r.below(u64::from(25 - p.len())) as u8;
        t.insert(Vrp::new(p, max, 64_512 + r.below(1000) as u32).expect("vrp"));
    }
    let routes = (0..ROUTES)
        .map(|_| (v4(&mut r, 16, 24), 64_512 + r.below(1000) as u32))
        .collect();
    let mut ix = PrefixIndex::default();
    let mut all = Vec::with_capacity(RIB);
    for _ in 0..RIB {
        let p = v4(&mut r, 8, 24);
        ix.insert(&p);
        all.push(p);
    }
    (t, routes, ix, all)
}

fn covers(outer: &Prefix, inner: &Prefix) -> bool {
    match (outer, inner) {
        (Prefix::V4(o), Prefix::V4(i)) => o.len() <= i.len() && o.contains_addr(i.addr_bits()),
        _ => false,
    }
}

fn bench(c: &mut Criterion) {
    let (t, routes, ix, all) = data();
    let mut g = c.benchmark_group("rov");
    g.throughput(Throughput::Elements(ROUTES as u64));
    g.bench_function("validate_100k_routes_400k_vrps", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for (p, o) in &routes {
                n += t.validate(p, Some(*o)) as usize;
            }
            black_box(n)
        })
    });
    g.finish();
    // One VRP change of a /20: the routes to re-evaluate.
    let changed: Prefix = "77.16.0.0/20".parse().expect("prefix");
    let mut g = c.benchmark_group("vrp_change_900k_rib");
    g.bench_function("index_range_scan", |b| {
        b.iter(|| black_box(ix.covered_by(black_box(&changed)).count()))
    });
    g.bench_function("full_walk_baseline", |b| {
        b.iter(|| black_box(all.iter().filter(|p| covers(&changed, p)).count()))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
