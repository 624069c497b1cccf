//! A realistic import/export policy over 100k routes: a 1000-entry prefix
//! list, an AS-path expression and a community match, with edits on the
//! accepted routes.
//!
//! `cargo bench -p bgp-policy --bench policy`

use std::net::Ipv4Addr;

use base::{Afi, Asn, Prefix, Prefix4};
use bgp_policy::{ast::PolicyDef, compile, Policy, RouteCtx};
use bgp_rib::{AttrSet, AttrsBuilder, ExportVerdict, Interner, Verdict};
use bgp_wire::{AsPath, AttrValue, Community, Origin, PathAttr};
use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

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

/// With `edits`, accepted routes get LOCAL_PREF/community/MED changes;
/// without, the same terms only decide.
fn policy(edits: bool) -> Policy {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let prefixes: Vec<String> = (0..1000)
        .map(|_| {
            let a = (rng.next() as u32) & 0xffff_0000;
            let p = Prefix4::new(a, 16).unwrap();
            format!("\"{p} le 24\"")
        })
        .collect();
    let src = format!(
        r#"
default = "reject"
[[term]]
name = "bogon-asns"
match.as_path = "_(0|23456|<64496-65534>)_"
then.action = "reject"
[[term]]
name = "customers"
match.prefix = [{}]
match.as_path = "^65001(_65001)*(_[0-9]+)*$"
then = {{ local_pref = 200, community_add = ["65000:100"], action = "accept" }}
[[term]]
name = "blackhole"
match.community = ["65535:666", "65000:90-99"]
then = {{ community_set = ["no-export"], action = "accept" }}
[[term]]
name = "rest"
match.as_path_len = "<= 6"
then = {{ med = "+10", action = "accept" }}
"#,
        prefixes.join(", ")
    );
    let src = if edits {
        src
    } else {
        src.lines()
            .map(|l| match l.find("action = ") {
                Some(i) if l.starts_with("then = {") => format!("then = {{ {}", &l[i..]),
                _ => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    let def: PolicyDef = toml::from_str(&src).expect("bench policy parses");
    compile(&def).expect("bench policy compiles")
}

fn routes() -> (Vec<Prefix>, Vec<AttrsBuilder>) {
    let mut rng = Rng(42);
    let pool: Vec<u32> = (0..500).map(|i| 1000 + i * 7).collect();
    let mut prefixes = Vec::with_capacity(ROUTES);
    let mut attrs = Vec::with_capacity(ROUTES);
    for _ in 0..ROUTES {
        let len = 16 + rng.below(9) as u8;
        let a = rng.next() as u32;
        prefixes.push(Prefix::V4(Prefix4::new(a, len).unwrap().masked()));
        let n = 2 + rng.below(7) as usize;
        let mut path: Vec<Asn> = (0..n)
            .map(|_| Asn(pool[rng.below(pool.len() as u64) as usize]))
            .collect();
        if rng.below(4) == 0 {
            path[0] = Asn(65001);
        }
        let comms: Vec<Community> = (0..rng.below(4))
            .map(|_| Community((65000 << 16) | rng.below(100) as u32))
            .collect();
        let mut v = vec![
            PathAttr::new(AttrValue::Origin(Origin::Igp)),
            PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(path))),
            PathAttr::new(AttrValue::NextHop(Ipv4Addr::new(192, 0, 2, 1))),
            PathAttr::new(AttrValue::Med(rng.below(50) as u32)),
        ];
        if !comms.is_empty() {
            v.push(PathAttr::new(AttrValue::Communities(comms)));
        }
        let mut b = AttrsBuilder::from_attrs(v);
        b.mark_clean();
        attrs.push(b);
    }
    (prefixes, attrs)
}

fn bench(c: &mut Criterion) {
    let p = policy(true);
    let p_match = policy(false);
    let ctx = RouteCtx {
        neighbor: "192.0.2.1".parse().unwrap(),
        neighbor_asn: Asn(65001),
        local_asn: Asn(64500),
        router_id: Ipv4Addr::new(10, 0, 0, 1),
        local_addr: None,
        afi: Afi::Ipv4,
        rpki: Default::default(),
        aspa: None,
    };
    let (prefixes, builders) = routes();
    let mut interner = Interner::new();
    let sets: Vec<AttrSet> = builders
        .iter()
        .map(|b| {
            let h = interner.intern(b);
            interner.get(h).cloned().unwrap_or_default()
        })
        .collect();

    let (mut acc, mut rep) = (0, 0);
    for (pre, s) in prefixes.iter().zip(&sets) {
        match p.export(&ctx, pre, s) {
            ExportVerdict::Accept => acc += 1,
            ExportVerdict::Replace(_) => rep += 1,
            ExportVerdict::Reject => {}
        }
    }
    eprintln!(
        "routes: {ROUTES}, accepted unchanged {acc}, accepted with edits {rep}, rejected {}",
        ROUTES - acc - rep
    );
    let mut g = c.benchmark_group("policy");
    g.throughput(Throughput::Elements(ROUTES as u64));
    g.sample_size(20);
    // Baseline for import: the per-route copy of the attributes that the
    // import benchmark makes (the RIB makes one only after an edit).
    g.bench_function("clone_only_100k", |bch| {
        let mut work = AttrsBuilder::new();
        bch.iter(|| {
            let mut acc = 0usize;
            for b in &builders {
                work.clone_from(b);
                acc += work.attrs().len();
            }
            acc
        })
    });
    g.bench_function("import_100k", |bch| {
        let mut work = AttrsBuilder::new();
        bch.iter(|| {
            let mut acc = 0usize;
            for (pre, b) in prefixes.iter().zip(&builders) {
                work.clone_from(b);
                acc += usize::from(p.import(&ctx, black_box(pre), &mut work) == Verdict::Accept);
            }
            acc
        })
    });
    g.bench_function("export_100k", |bch| {
        bch.iter(|| {
            let mut acc = 0usize;
            for (pre, s) in prefixes.iter().zip(&sets) {
                acc += match p.export(&ctx, black_box(pre), s) {
                    ExportVerdict::Accept => 1,
                    ExportVerdict::Replace(_) => 2,
                    ExportVerdict::Reject => 0,
                };
            }
            acc
        })
    });
    g.bench_function("export_match_only_100k", |bch| {
        bch.iter(|| {
            let mut acc = 0usize;
            for (pre, s) in prefixes.iter().zip(&sets) {
                acc +=
                    usize::from(p_match.export(&ctx, black_box(pre), s) != ExportVerdict::Reject);
            }
            acc
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
