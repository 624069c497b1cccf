//! The export round's first step ([`bgp_core::arrival_order`]: sort and
//! dedup the round's best-path changes, and list each prefix once in the
//! order of its last change), on rounds of 4,096 and 32,768 changes
//! (`MAX_CHANGED`, where a burst stops for a round) over /24s with
//! repeats, in a pseudo-random order: IPv4 only, and a dual-stack round
//! with every fifth change an IPv6 /48. Each against
//! [`bgp_core::arrival_order_pairs`], the algorithm `arrival_order` had
//! before (one sort of (prefix, index) pairs for every change), as the
//! baseline of the same run.
//! Throughput in changes/s.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};

use base::{Prefix, Prefix4, Prefix6};
use bgp_core::{arrival_order, arrival_order_pairs, ArrivalScratch};

/// `n` changes over about `n / 2` distinct prefixes (so about half
/// repeat); with `v6`, every fifth an IPv6 /48.
fn round(n: usize, v6: bool) -> Vec<Prefix> {
    let mut x = 0x9e37_79b9_u64;
    (0..n)
        .map(|j| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x % (n as u64 / 2).max(1)) as u32;
            if v6 && j % 5 == 0 {
                let a = 0x2001_0db8_u128 << 96 | u128::from(i) << 80;
                Prefix::V6(Prefix6::new(a, 48).expect("valid length"))
            } else {
                Prefix::V4(Prefix4::new(0x0a00_0000 + (i << 8), 24).expect("valid length"))
            }
        })
        .collect()
}

/// `arrival_order` or `arrival_order_pairs`.
type Sort = fn(&mut Vec<Prefix>, &mut ArrivalScratch) -> Vec<Prefix>;

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("arrival_order");
    for n in [4096usize, 32_768] {
        g.throughput(Throughput::Elements(n as u64));
        for (name, input) in [("ipv4", round(n, false)), ("dual-stack", round(n, true))] {
            // The new sort, then the old one (the baseline).
            let ways: [(&str, Sort); 2] = [
                ("", arrival_order),
                ("/pairs (before)", arrival_order_pairs),
            ];
            for (suffix, sort) in ways {
                let mut scratch = ArrivalScratch::default();
                g.bench_function(format!("{name}/{n}{suffix}"), |b| {
                    b.iter_batched_ref(
                        || input.clone(),
                        |changed| {
                            let out = sort(changed, &mut scratch);
                            black_box(out.len());
                            scratch.buf = out;
                        },
                        BatchSize::SmallInput,
                    )
                });
            }
        }
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
