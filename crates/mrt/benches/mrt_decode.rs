//! Records/s decoding from memory: the jinx full IPv4 RIB (TABLE_DUMP_V2)
//! and a RIS updates file (BGP4MP). Decompression is done once up front so
//! that the benchmark measures framing + decoding + RIB entry iteration.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};
use mrt::{Body, MrtReader, MrtWriter};
use std::path::PathBuf;

fn decompressed(name: &str) -> Vec<u8> {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/data/mrt")
        .join(name);
    assert!(p.is_file(), "shared MRT data missing: {}", p.display());
    let mut r = MrtReader::open(&p).expect("open");
    let mut w = MrtWriter::new(Vec::new());
    while let Some(x) = r.next_raw() {
        let x = x.expect("read");
        w.write_raw(&x.header, x.body).expect("write");
    }
    w.finish().expect("finish")
}

/// Walks every record and RIB entry; returns a checksum so nothing is
/// optimised away.
fn walk(data: &[u8]) -> (u64, u64) {
    let mut r = MrtReader::new(data);
    let (mut n, mut acc) = (0u64, 0u64);
    while let Some(x) = r.next_record() {
        let Ok(rec) = x else { continue };
        n += 1;
        match &rec.body {
            Body::Rib(rib) => {
                for e in rib.entries() {
                    acc = acc.wrapping_add(e.attributes.len() as u64 + u64::from(e.peer_index));
                }
            }
            Body::Message(m) => acc = acc.wrapping_add(m.message.len() as u64),
            _ => acc = acc.wrapping_add(1),
        }
    }
    (n, acc)
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("mrt_decode");
    g.sample_size(10);
    for (label, name) in [
        (
            "jinx_rib",
            "routeviews.route-views.jinx.ribs.1401487200.bz2",
        ),
        ("ris_updates", "updates.20190101.0000.gz"),
    ] {
        let data = decompressed(name);
        let (records, _) = walk(&data);
        g.throughput(Throughput::Elements(records));
        g.bench_function(label, |b| b.iter(|| black_box(walk(black_box(&data)))));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
