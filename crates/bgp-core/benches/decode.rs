//! Decoding received UPDATEs as a session does (`decode_update`: RFC 7606
//! validation, NLRI, typed attributes, eBGP ingress stripping), in one
//! validating pass, against the two-pass decoder it replaced (validate,
//! then walk the NLRI and type the attributes again), on every BGP4MP
//! UPDATE of the shared RIPE RIS file `updates.20190101.0000.gz`, as
//! eBGP. Throughput in UPDATEs/s; the ratio of the two is the figure.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

use bgp_core::decode::{decode_update, decode_update_two_pass, Decoded};
use bgp_wire::{ParseCtx, HEADER_LEN};

#[path = "../../bgp-wire/tests/common/mrt.rs"]
mod mrt;

fn load() -> Option<Vec<(Vec<u8>, ParseCtx)>> {
    let data = mrt::load("updates.20190101.0000.gz")?;
    let mut v = Vec::new();
    for r in mrt::records(&data) {
        if let Some((msg, ctx)) = mrt::bgp4mp_message(&r) {
            if msg.get(18) == Some(&2) {
                v.push((msg.get(HEADER_LEN..)?.to_vec(), ctx));
            }
        }
    }
    Some(v)
}

fn run(msgs: &[(Vec<u8>, ParseCtx)], f: fn(&[u8], ParseCtx, bool) -> Decoded) -> usize {
    let mut n = 0;
    for (body, ctx) in msgs {
        if let Decoded::Ok(d, _) = f(body, *ctx, true) {
            n += d.announce.len() + d.withdraw.len();
        }
    }
    n
}

fn bench(c: &mut Criterion) {
    let Some(msgs) = load() else {
        eprintln!("decode: updates.20190101.0000.gz not found; skipping the benchmark");
        return;
    };
    assert_eq!(
        run(&msgs, decode_update),
        run(&msgs, decode_update_two_pass)
    );
    let mut g = c.benchmark_group("decode_update");
    g.throughput(Throughput::Elements(msgs.len() as u64));
    g.bench_function("one_pass", |b| {
        b.iter(|| black_box(run(black_box(&msgs), decode_update)))
    });
    g.bench_function("two_pass_reference", |b| {
        b.iter(|| black_box(run(black_box(&msgs), decode_update_two_pass)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
