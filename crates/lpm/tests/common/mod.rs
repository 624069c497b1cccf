//! Shared by the tests and the benchmark: reading routes out of the shared
//! MRT RIB dumps, and address sets for differential checks.
#![allow(dead_code)]

use std::path::PathBuf;

use base::thread_cpu_time;
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

/// `n` distinct synthetic IPv4 routes with the length mix of a real full
/// table (`sim::dist::V4_PREFIX_LEN`) placed where real routes are: each
/// takes its leading bits from a random route of `real` and random bits
/// below, so the table clusters like the Internet's instead of spreading
/// uniformly.
pub fn synth4(real: &[(Prefix4, NextHop)], n: usize, seed: u64) -> Routes4 {
    let lens = sim::dist::Discrete::new(sim::dist::V4_PREFIX_LEN);
    let mut rng = sim::Rng::new(seed);
    let mut seen = std::collections::HashSet::with_capacity(n);
    let mut out = Vec::with_capacity(n);
    assert!(
        !real.is_empty(),
        "synth4 needs real routes to place prefixes"
    );
    while out.len() < n {
        let (r, _) = real[rng.below(real.len() as u64) as usize];
        let len = lens.sample(&mut rng);
        let host = rng.next_u32().checked_shr(u32::from(r.len())).unwrap_or(0);
        let Ok(p) = Prefix4::new(r.masked().addr_bits() | host, len) else {
            continue;
        };
        let p = p.masked();
        if seen.insert(p) {
            out.push((p, NextHop(rng.below(1 << 16) as u32)));
        }
    }
    out
}

/// `real` IPv6 routes padded to `n` with synthetic ones, as [`synth4`]
/// does for IPv4 (`sim::dist::V6_PREFIX_LEN`).
pub fn pad6(real: &[(Prefix6, NextHop)], n: usize, seed: u64) -> Routes6 {
    let lens = sim::dist::Discrete::new(sim::dist::V6_PREFIX_LEN);
    let mut rng = sim::Rng::new(seed);
    let mut seen: std::collections::HashSet<Prefix6> =
        real.iter().map(|(p, _)| p.masked()).collect();
    let mut out: Routes6 = real.to_vec();
    assert!(!real.is_empty(), "pad6 needs real routes to place prefixes");
    while seen.len() < n {
        let (r, _) = real[rng.below(real.len() as u64) as usize];
        let len = lens.sample(&mut rng);
        let x = (u128::from(rng.next_u64()) << 64) | u128::from(rng.next_u64());
        let host = x.checked_shr(u32::from(r.len())).unwrap_or(0);
        let Ok(p) = Prefix6::new(r.masked().addr_bits() | host, len) else {
            continue;
        };
        let p = p.masked();
        if seen.insert(p) {
            out.push((p, NextHop(rng.below(1 << 16) as u32)));
        }
    }
    out
}

/// `n` destinations inside the routes: a random route, random host bits.
pub fn dests_in4(routes: &[(Prefix4, NextHop)], n: usize, seed: u64) -> Vec<u32> {
    let mut r = XorShift(seed | 1);
    (0..n)
        .map(|_| {
            let (p, _) = routes[r.below(routes.len() as u64) as usize];
            let host = (r.next() as u32)
                .checked_shr(u32::from(p.len()))
                .unwrap_or(0);
            p.masked().addr_bits() | host
        })
        .collect()
}

/// `n` uniformly random IPv4 destinations.
pub fn dests_uniform4(n: usize, seed: u64) -> Vec<u32> {
    let mut r = XorShift(seed | 1);
    (0..n).map(|_| (r.next() >> 32) as u32).collect()
}

/// `n` destinations inside the IPv6 routes (uniform IPv6 addresses almost
/// never match a route, which would measure only the first table read).
pub fn dests_in6(routes: &[(Prefix6, NextHop)], n: usize, seed: u64) -> Vec<u128> {
    let mut r = XorShift(seed | 1);
    (0..n)
        .map(|_| {
            let (p, _) = routes[r.below(routes.len() as u64) as usize];
            let x = (u128::from(r.next()) << 64) | u128::from(r.next());
            p.masked().addr_bits() | x.checked_shr(u32::from(p.len())).unwrap_or(0)
        })
        .collect()
}

/// The real table used by the benchmarks: the jinx full IPv4 feed.
pub const REAL_V4: &str = "routeviews.route-views.jinx.ribs.1401487200.bz2";
/// The real IPv6 table (route-views6, 2015).
pub const REAL_V6: &str = "rib.bz2";

/// Drops repeated prefixes (a legacy dump can list a prefix several
/// times), keeping the last, so that the route count is the table size.
pub fn dedup4(mut v: Routes4) -> Routes4 {
    let mut seen = std::collections::HashSet::with_capacity(v.len());
    v.reverse();
    v.retain(|(p, _)| seen.insert(p.masked()));
    v.reverse();
    v
}

/// What [`churn4`] measured.
pub struct Churn {
    pub routes: usize,
    pub batch: usize,
    pub changes_per_s: f64,
    /// Changes per second of the writer thread's CPU time
    /// (`CLOCK_THREAD_CPUTIME_ID`, spinning while it waits for the reader
    /// included): what the code costs, without the time other processes
    /// take from it on a loaded machine.
    pub changes_per_cpu_s: f64,
    pub publishes: u64,
    pub lookups: u64,
    pub misses: u64,
}

/// FIB churn: builds the table, then for `secs` seconds publishes batches of
/// `batch` route changes through `lpm::publish` while one reader thread
/// looks up continuously (read sections of 256 lookups). Half the changes
/// are next-hop changes, a quarter withdrawals and a quarter
/// re-announcements, all on odd-indexed routes; the reader's destinations
/// lie in even-indexed routes, which stay, so any miss is a lookup that
/// failed during an update. `reader: false` measures the writer alone.
pub fn churn4(routes: &[(Prefix4, NextHop)], batch: usize, secs: f64, reader: bool) -> Churn {
    let t = lpm::Poptrie4::from_routes(routes.iter().copied()).expect("build");
    churn4_with(t, routes, batch, secs, reader)
}

/// [`churn4`] on a table `t` already holding `routes` (any implementation,
/// so that the benchmark can run a baseline structure the same way).
pub fn churn4_with<T>(
    t: T,
    routes: &[(Prefix4, NextHop)],
    batch: usize,
    secs: f64,
    reader: bool,
) -> Churn
where
    T: lpm::Lpm<u32> + lpm::LpmMut<Prefix4> + Clone + Send + Sync + 'static,
{
    use lpm::publish::{left_right, Delta};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    let mut w = left_right(t);
    let stable: Vec<_> = routes.iter().copied().step_by(2).collect();
    let flappy: Vec<_> = routes.iter().copied().skip(1).step_by(2).collect();
    let addrs = dests_in4(&stable, 1 << 16, 11);
    // Without a reader the loop below runs as if the reader had stopped
    // at once: the writer-only baseline.
    let stop = Arc::new(AtomicBool::new(!reader));
    let (lookups, misses) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut h = w.reader();
    let reader = {
        let (stop, lookups, misses) = (stop.clone(), lookups.clone(), misses.clone());
        std::thread::spawn(move || {
            let mut out = vec![None; 256];
            let (mut n, mut miss) = (0u64, 0u64);
            while !stop.load(Ordering::Relaxed) {
                for chunk in addrs.chunks(256) {
                    let g = h.read();
                    g.lookup_batch(chunk, &mut out);
                    drop(g);
                    miss += out.iter().take(chunk.len()).filter(|o| o.is_none()).count() as u64;
                    n += chunk.len() as u64;
                }
            }
            lookups.store(n, Ordering::Relaxed);
            misses.store(miss, Ordering::Relaxed);
        })
    };
    let mut rng = XorShift(0x5eed);
    let mut down: Vec<Prefix4> = Vec::new();
    let mut deltas = Vec::with_capacity(batch);
    let (mut changes, mut publishes) = (0u64, 0u64);
    let c0 = thread_cpu_time().unwrap_or_default().as_secs_f64();
    let t0 = std::time::Instant::now();
    while t0.elapsed().as_secs_f64() < secs {
        deltas.clear();
        for _ in 0..batch {
            let (p, nh) = flappy[rng.below(flappy.len() as u64) as usize];
            match rng.below(4) {
                0 | 1 => deltas.push(Delta::Insert(p, NextHop((nh.0 + 1) & 0xffff))),
                2 => {
                    deltas.push(Delta::Remove(p));
                    down.push(p);
                }
                _ => match down.pop() {
                    Some(q) => deltas.push(Delta::Insert(q, NextHop(3))),
                    None => deltas.push(Delta::Insert(p, nh)),
                },
            }
        }
        w.publish(&deltas).expect("publish");
        changes += deltas.len() as u64;
        publishes += 1;
    }
    let el = t0.elapsed().as_secs_f64();
    let cpu = thread_cpu_time().unwrap_or_default().as_secs_f64() - c0;
    stop.store(true, Ordering::Relaxed);
    reader.join().expect("reader");
    Churn {
        routes: routes.len(),
        batch,
        changes_per_s: changes as f64 / el,
        changes_per_cpu_s: changes as f64 / cpu.max(1e-9),
        publishes,
        lookups: lookups.load(Ordering::Relaxed),
        misses: misses.load(Ordering::Relaxed),
    }
}
