//! ESP seal and open per core (RouteBricks' IPsec workload, seed 003):
//! AES-GCM-128 tunnel mode over 64-byte frames and over a size mix,
//! beside the bare `aes-gcm` call on the same bytes (the cipher's own
//! cost, same run) so the ESP framing's share is visible.
//!
//! Sizes are Ethernet frame sizes as RouteBricks counts them (a 64 B
//! frame carries a 50-byte inner IP packet); Gbps = frame bits / time.
//! The mix is the simple IMIX 7:4:1 of 64, 576 and 1500-byte frames
//! (mean 361 B), a stand-in for the Abilene trace, whose size
//! distribution we do not have.
//!
//! `cargo bench -p ipsec --bench esp`

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes128Gcm, KeyInit, Nonce};
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use ipsec::{trailer_len, wire, InboundSa, Key, OutboundSa, Sad, Selector, FRONT};

const PACKETS: usize = 1024;

fn key() -> Key {
    Key::new([7; 16], [1, 2, 3, 4])
}

/// The inner IPv4 packet of a frame of `frame` bytes.
fn inner(frame: usize, id: u16) -> Vec<u8> {
    let n = frame - 14;
    let mut p = vec![0u8; n];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(n as u16).to_be_bytes());
    p[4..6].copy_from_slice(&id.to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&[198, 18, 1, 2]);
    p[16..20].copy_from_slice(&[198, 18, 3, 1]);
    p
}

/// Frame sizes of a workload, `PACKETS` of them.
fn sizes(mix: bool) -> Vec<usize> {
    let imix = [64, 64, 64, 64, 64, 64, 64, 576, 576, 576, 576, 1500];
    (0..PACKETS)
        .map(|i| if mix { imix[i % imix.len()] } else { 64 })
        .collect()
}

/// Buffers laid out for `OutboundSa::seal` (front, inner, trailer room).
fn buffers(sizes: &[usize]) -> Vec<(Vec<u8>, usize)> {
    sizes
        .iter()
        .enumerate()
        .map(|(i, &f)| {
            let p = inner(f, i as u16);
            let mut b = vec![0u8; FRONT + p.len() + trailer_len(p.len())];
            b[FRONT..FRONT + p.len()].copy_from_slice(&p);
            (b, p.len())
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    for (name, mix) in [("64B", false), ("imix", true)] {
        let sz = sizes(mix);
        let bytes: u64 = sz.iter().map(|&s| s as u64).sum();
        let mut g = c.benchmark_group(format!("esp/{name}"));
        g.throughput(Throughput::Bytes(bytes));

        // Seal in place: the whole ESP path of one outbound SA.
        let mut bufs = buffers(&sz);
        let mut sa = OutboundSa::new(0x1001, &key(), [198, 18, 2, 1], [198, 18, 2, 2]);
        g.bench_function("seal", |b| {
            b.iter(|| {
                for (buf, len) in bufs.iter_mut() {
                    if sa.seal(buf, *len, 4, 0, 0).is_err() {
                        // 2^32 packets: start a new SA (never within a run).
                        sa = OutboundSa::new(0x1001, &key(), [198, 18, 2, 1], [198, 18, 2, 2]);
                    }
                }
            })
        });

        // Open in place: fresh copies of sealed packets and a fresh SA
        // each round (the replay window would refuse them again), both
        // made outside the timed part.
        let mut tx = OutboundSa::new(0x1001, &key(), [198, 18, 2, 1], [198, 18, 2, 2]);
        let sealed: Vec<Vec<u8>> = buffers(&sz)
            .into_iter()
            .map(|(mut b, len)| {
                tx.seal(&mut b, len, 4, 0, 0).expect("seal");
                b
            })
            .collect();
        g.bench_function("open", |b| {
            b.iter_batched_ref(
                || {
                    let mut sad = Sad::new();
                    sad.add(
                        InboundSa::new(0x1001, &key(), 64, vec![Selector::V4(0, 0)]).expect("sa"),
                    );
                    (sad, sealed.clone())
                },
                |(sad, pkts)| {
                    for p in pkts.iter_mut() {
                        let r = sad.open(&mut p[wire::IP4_LEN..]);
                        assert!(r.is_ok());
                    }
                },
                BatchSize::LargeInput,
            )
        });

        // Baseline: the bare AEAD on the same plaintext lengths (no ESP
        // header, IV, trailer, outer header or replay window).
        let cipher = Aes128Gcm::new(&[7u8; 16].into());
        let mut plain: Vec<Vec<u8>> = sz.iter().map(|&f| vec![0u8; f - 14 + 2]).collect();
        let mut ctr = 0u64;
        g.bench_function("aes_gcm_only", |b| {
            b.iter(|| {
                for p in plain.iter_mut() {
                    ctr += 1;
                    let mut n = [0u8; 12];
                    n[4..].copy_from_slice(&ctr.to_be_bytes());
                    let t = cipher.encrypt_in_place_detached(Nonce::from_slice(&n), &[0; 8], p);
                    assert!(t.is_ok());
                }
            })
        });
        g.finish();
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
