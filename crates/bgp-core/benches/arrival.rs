//! The export round's first step ([`bgp_core::arrival_order`]: sort and
//! dedup the round's best-path changes, and list each prefix once in the
//! order of its last change), on rounds of 4,096 and 32,768 changes
//! (`MAX_CHANGED`, where a burst stops for a round) over /24s with
//! repeats, in a pseudo-random order. Two cases per size: IPv4 only (one
//! `u64` sorted per change) and the same round with one IPv6 prefix added
//! (the general path: (prefix, index) pairs), so both are measured in the
//! same run. Throughput in changes/s.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};

use base::{Prefix, Prefix4, Prefix6};
use bgp_core::{arrival_order, ArrivalScratch};

/// `n` changes over about `n / 2` distinct /24s (so about half repeat).
fn round(n: usize) -> Vec<Prefix> {
    let mut x = 0x9e37_79b9_u64;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x % (n as u64 / 2).max(1)) as u32;
            Prefix::V4(Prefix4::new(0x0a00_0000 + (i << 8), 24).expect("valid length"))
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("arrival_order");
    for n in [4096usize, 32_768] {
        let v4 = round(n);
        let mut mixed = v4.clone();
        mixed.push(Prefix::V6(
            Prefix6::new(0x2001_0db8 << 96, 32).expect("valid length"),
        ));
        g.throughput(Throughput::Elements(n as u64));
        for (name, input) in [("ipv4", &v4), ("with-one-ipv6", &mixed)] {
            let mut scratch = ArrivalScratch::default();
            g.bench_function(format!("{name}/{n}"), |b| {
                b.iter_batched_ref(
                    || input.clone(),
                    |changed| {
                        let out = arrival_order(changed, &mut scratch);
                        black_box(out.len());
                        scratch.buf = out;
                    },
                    BatchSize::SmallInput,
                )
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
