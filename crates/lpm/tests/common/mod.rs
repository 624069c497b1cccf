//! Shared by the tests and the benchmark: reading routes out of the shared
//! MRT RIB dumps, and address sets for differential checks.
#![allow(dead_code)]

use std::path::PathBuf;

use base::{Prefix, Prefix4, Prefix6};
use lpm::NextHop;
use mrt::{Body, MrtReader};

pub fn data_file(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/mrt");
    assert!(
        d.is_dir(),
        "shared MRT data missing: expected {} (see /work/shared/data/mrt/README.md)",
        d.display()
    );
    let p = d.join(name);
    assert!(p.is_file(), "shared MRT file missing: {}", p.display());
    p
}

/// FNV-1a, to turn a route (peer index and attributes) into a next hop.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn nh_of(peer: &[u8], attrs: &[u8]) -> NextHop {
    let h = fnv(fnv(0xcbf2_9ce4_8422_2325, peer), attrs);
    NextHop((h % (u64::from(NextHop::MAX_VALID) + 1)) as u32)
}

/// Every (prefix, next hop) of a RIB dump, in file order: for TABLE_DUMP_V2
/// the first entry of each prefix, for legacy TABLE_DUMP every record (a
/// later record of the same prefix replaces the earlier one when inserted).
/// A truncated file ends at its last complete record.
pub type Routes4 = Vec<(Prefix4, NextHop)>;
pub type Routes6 = Vec<(Prefix6, NextHop)>;

pub fn load_routes(name: &str) -> (Routes4, Routes6) {
    let path = data_file(name);
    let mut r = MrtReader::open(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (mut v4, mut v6) = (Vec::new(), Vec::new());
    while let Some(rec) = r.next_record() {
        let Ok(rec) = rec else { break };
        let (prefix, nh) = match rec.body {
            Body::Rib(rib) => match rib.entries().next() {
                Some(e) => (rib.prefix, nh_of(&e.peer_index.to_be_bytes(), e.attributes)),
                None => continue,
            },
            Body::TableDump(d) => (
                d.prefix,
                nh_of(d.peer_ip.to_string().as_bytes(), d.attributes),
            ),
            _ => continue,
        };
        match prefix {
            Prefix::V4(p) => v4.push((p, nh)),
            Prefix::V6(p) => v6.push((p, nh)),
        }
    }
    (v4, v6)
}

/// xorshift64*, for reproducible random addresses without a dependency.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

fn last4(p: Prefix4) -> u32 {
    let m = p.masked();
    m.addr_bits() | u32::MAX.checked_shr(u32::from(p.len())).unwrap_or(0)
}

fn last6(p: Prefix6) -> u128 {
    let m = p.masked();
    m.addr_bits() | u128::MAX.checked_shr(u32::from(p.len())).unwrap_or(0)
}

/// Addresses at every prefix boundary (first, last, one before, one after)
/// plus `random` uniform addresses.
pub fn probe_addrs4(routes: &[(Prefix4, NextHop)], random: usize, seed: u64) -> Vec<u32> {
    let mut v = Vec::with_capacity(routes.len() * 4 + random);
    for (p, _) in routes {
        let (a, z) = (p.masked().addr_bits(), last4(*p));
        v.extend([a, z, a.wrapping_sub(1), z.wrapping_add(1)]);
    }
    let mut r = XorShift(seed | 1);
    v.extend((0..random).map(|_| r.next() as u32));
    v
}

/// Like [`probe_addrs4`]; random addresses are half uniform, half inside a
/// random route with random host bits (uniform IPv6 addresses almost never
/// hit a route).
pub fn probe_addrs6(routes: &[(Prefix6, NextHop)], random: usize, seed: u64) -> Vec<u128> {
    let mut v = Vec::with_capacity(routes.len() * 4 + random);
    for (p, _) in routes {
        let (a, z) = (p.masked().addr_bits(), last6(*p));
        v.extend([a, z, a.wrapping_sub(1), z.wrapping_add(1)]);
    }
    let mut r = XorShift(seed | 1);
    for i in 0..random {
        let x = (u128::from(r.next()) << 64) | u128::from(r.next());
        if i % 2 == 0 || routes.is_empty() {
            v.push(x);
        } else {
            let (p, _) = routes[r.below(routes.len() as u64) as usize];
            let host = x.checked_shr(u32::from(p.len())).unwrap_or(0);
            v.push(p.masked().addr_bits() | host);
        }
    }
    v
}
