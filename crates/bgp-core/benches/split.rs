//! Cutting a session's batch of decoded UPDATEs by RIB part
//! ([`bgp_core::split_updates`], run on the session thread for every
//! batch in `sharded` mode), on every UPDATE of the shared RIPE RIS file
//! `updates.20190101.0000.gz` decoded as eBGP, in batches of 256 as a
//! session hands them over, for 1 part (no cut: each batch moves whole;
//! what moving and dropping cost in any case), 2 and 16 parts. Throughput
//! in UPDATEs/s.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};

use bgp_core::decode::{decode_update, Decoded};
use bgp_core::{split_updates, DecodedUpdate};
use bgp_wire::HEADER_LEN;

#[path = "../../bgp-wire/tests/common/mrt.rs"]
mod mrt;

/// A session's batch: up to this many UPDATEs.
const BATCH: usize = 256;

fn load() -> Option<Vec<Vec<DecodedUpdate>>> {
    let data = mrt::load("updates.20190101.0000.gz")?;
    let mut all = Vec::new();
    for r in mrt::records(&data) {
        if let Some((msg, ctx)) = mrt::bgp4mp_message(&r) {
            if msg.get(18) == Some(&2) {
                if let Decoded::Ok(d, _) = decode_update(msg.get(HEADER_LEN..)?, ctx, true) {
                    all.push(d);
                }
            }
        }
    }
    Some(all.chunks(BATCH).map(<[DecodedUpdate]>::to_vec).collect())
}

fn bench(c: &mut Criterion) {
    let Some(batches) = load() else {
        eprintln!("split: updates.20190101.0000.gz not found; skipping the benchmark");
        return;
    };
    let updates: usize = batches.iter().map(Vec::len).sum();
    let mut g = c.benchmark_group("split_updates");
    g.throughput(Throughput::Elements(updates as u64));
    for parts in [1, 2, 16] {
        g.bench_function(format!("{parts}_parts"), |b| {
            b.iter_batched(
                || batches.clone(),
                |batches| {
                    let mut n = 0;
                    for batch in batches {
                        n += split_updates(batch, parts)
                            .iter()
                            .map(Vec::len)
                            .sum::<usize>();
                    }
                    black_box(n)
                },
                BatchSize::LargeInput,
            )
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
