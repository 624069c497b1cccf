//! UPDATE parsing throughput on real RIPE RIS updates, in prefixes/s.
//!
//! The input is every BGP4MP UPDATE of `updates.20190101.0000.gz`. The
//! "lazy" bench frames each message and iterates all NLRI (classic and
//! MP_REACH/MP_UNREACH); the "validate" bench adds the RFC 7606 pass.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

use bgp_wire::{Message, ParseCtx};

#[path = "../tests/common/mrt.rs"]
mod mrt;

fn load_updates() -> Option<Vec<(Vec<u8>, ParseCtx)>> {
    let data = mrt::load("updates.20190101.0000.gz")?;
    let mut v = Vec::new();
    for r in mrt::records(&data) {
        if let Some((msg, ctx)) = mrt::bgp4mp_message(&r) {
            if msg.get(18) == Some(&2) {
                v.push((msg.to_vec(), ctx));
            }
        }
    }
    Some(v)
}

fn count_prefixes(msgs: &[(Vec<u8>, ParseCtx)], validate: bool) -> u64 {
    let mut n = 0u64;
    for (m, ctx) in msgs {
        let Ok((Message::Update(u), _)) = Message::parse(m, *ctx) else {
            continue;
        };
        if validate && u.validate().is_err() {
            continue;
        }
        n += u.withdrawn().filter(Result::is_ok).count() as u64;
        n += u.nlri().filter(Result::is_ok).count() as u64;
        if let Some(Ok(mp)) = u.mp_reach() {
            n += mp.nlri().filter(Result::is_ok).count() as u64;
        }
        if let Some(Ok(mp)) = u.mp_unreach() {
            n += mp.withdrawn().filter(Result::is_ok).count() as u64;
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let Some(msgs) = load_updates() else {
        eprintln!(
            "update_parse: {} not found; skipping the benchmark",
            mrt::data_dir().join("updates.20190101.0000.gz").display()
        );
        return;
    };
    let prefixes = count_prefixes(&msgs, false);
    let mut g = c.benchmark_group("update_parse");
    g.throughput(Throughput::Elements(prefixes));
    g.bench_function("lazy_iterate", |b| {
        b.iter(|| black_box(count_prefixes(black_box(&msgs), false)))
    });
    g.bench_function("validate_and_iterate", |b| {
        b.iter(|| black_box(count_prefixes(black_box(&msgs), true)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
