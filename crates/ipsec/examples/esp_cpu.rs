//! ESP seal/open per core in **thread CPU time** (CLOCK_THREAD_CPUTIME_ID),
//! for a shared, oversubscribed machine where criterion's wall time
//! mostly measures the wait for a core. Same workloads as
//! `benches/esp.rs`: 64-byte frames and the simple IMIX 7:4:1 (64, 576,
//! 1500 B), each beside the bare `aes-gcm` call on the same lengths, all
//! in one run, interleaved round by round; the median of the rounds is
//! printed as ns of CPU per packet and Gbps per core (frame bits).
//!
//! `cargo run --release -p ipsec --example esp_cpu [ROUNDS]`

use aes_gcm::aead::AeadInPlace;
use aes_gcm::{Aes128Gcm, KeyInit, Nonce};
use base::thread_cpu_ns;
use ipsec::{trailer_len, wire, InboundSa, Key, OutboundSa, Sad, Selector, FRONT};

const PACKETS: usize = 4096;

fn key() -> Key {
    Key::new([7; 16], [1, 2, 3, 4])
}

fn buffers(sizes: &[usize]) -> Vec<(Vec<u8>, usize)> {
    sizes
        .iter()
        .map(|&f| {
            let n = f - 14;
            let mut b = vec![0u8; FRONT + n + trailer_len(n)];
            let p = &mut b[FRONT..FRONT + n];
            p[0] = 0x45;
            p[2..4].copy_from_slice(&(n as u16).to_be_bytes());
            p[12..16].copy_from_slice(&[198, 18, 1, 2]);
            p[16..20].copy_from_slice(&[198, 18, 3, 1]);
            (b, n)
        })
        .collect()
}

fn median(mut v: Vec<u64>) -> u64 {
    v.sort_unstable();
    v[v.len() / 2]
}

fn main() {
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(200);
    let imix = [64, 64, 64, 64, 64, 64, 64, 576, 576, 576, 576, 1500];
    println!("workload  op            ns/packet(CPU)  Gbps/core  Mpps/core");
    for (name, mix) in [("64B", false), ("imix", true)] {
        let sizes: Vec<usize> = (0..PACKETS)
            .map(|i| if mix { imix[i % imix.len()] } else { 64 })
            .collect();
        let bits: u64 = sizes.iter().map(|&s| s as u64 * 8).sum();
        let mut seal_bufs = buffers(&sizes);
        let fresh = buffers(&sizes);
        let mut out = OutboundSa::new(0x1001, &key(), [198, 18, 2, 1], [198, 18, 2, 2]);
        let cipher = Aes128Gcm::new(&[7u8; 16].into());
        let mut plain: Vec<Vec<u8>> = sizes.iter().map(|&f| vec![0u8; f - 14 + 2]).collect();
        let (mut t_seal, mut t_open, mut t_aead) = (Vec::new(), Vec::new(), Vec::new());
        let mut t_same = Vec::new();
        let mut ctr = 0u64;
        for _ in 0..rounds {
            // The plaintext back (sealing encrypted it in place), untimed.
            for ((b, _), (f, _)) in seal_bufs.iter_mut().zip(&fresh) {
                b.copy_from_slice(f);
            }
            let t = thread_cpu_ns();
            for (b, n) in seal_bufs.iter_mut() {
                out.seal(b, *n, 4, 0, 0).expect("seal");
            }
            t_seal.push(thread_cpu_ns() - t);
            // Open a copy of what was just sealed, with a fresh SA (the
            // copy and the SA outside the timed part).
            let mut copy: Vec<Vec<u8>> = seal_bufs.iter().map(|(b, _)| b.clone()).collect();
            let mut sad = Sad::new();
            sad.add(InboundSa::new(0x1001, &key(), 64, vec![Selector::V4(0, 0)]).expect("sa"));
            // The window starts at the first sequence number of this round.
            let t = thread_cpu_ns();
            for p in copy.iter_mut() {
                let r = sad.open(&mut p[wire::IP4_LEN..]);
                assert!(r.is_ok());
            }
            t_open.push(thread_cpu_ns() - t);
            let t = thread_cpu_ns();
            for p in plain.iter_mut() {
                ctr += 1;
                let mut nonce = [0u8; 12];
                nonce[4..].copy_from_slice(&ctr.to_be_bytes());
                let r = cipher.encrypt_in_place_detached(Nonce::from_slice(&nonce), &[0; 8], p);
                assert!(r.is_ok());
            }
            t_aead.push(thread_cpu_ns() - t);
            // The bare AEAD again, on the sealed buffers where seal
            // encrypts (offset 36 in its buffer, as in a packet).
            let t = thread_cpu_ns();
            for (b, n) in seal_bufs.iter_mut() {
                ctr += 1;
                let mut nonce = [0u8; 12];
                nonce[4..].copy_from_slice(&ctr.to_be_bytes());
                let p = &mut b[FRONT..FRONT + *n + 2];
                let r = cipher.encrypt_in_place_detached(Nonce::from_slice(&nonce), &[0; 8], p);
                assert!(r.is_ok());
            }
            t_same.push(thread_cpu_ns() - t);
        }
        for (op, v) in [
            ("seal", t_seal),
            ("open", t_open),
            ("aes_gcm_only", t_aead),
            ("aes_gcm_at_36", t_same),
        ] {
            let ns = median(v) as f64;
            println!(
                "{name:<9} {op:<13} {:>14.1}  {:>9.2}  {:>9.2}",
                ns / PACKETS as f64,
                bits as f64 / ns,
                PACKETS as f64 / ns * 1000.0
            );
        }
    }
}
