//! A minimal static IPv4 forwarder and the poll loop that drives it: the
//! test and benchmark load for the devices of crate `io` (the `fwd`
//! example, `tests/forward.rs`, `tests/pcap.rs`, the veth benchmarks), not
//! the router: the one forwarding path is crate `elements`' graph. Kept
//! out of the library so that only one forwarder ships. It checks the IPv4
//! header, decrements the TTL with an incremental checksum update
//! (RFC 1624 eqn. 3), looks the destination up in a short static route list,
//! and rewrites both MAC addresses. No ARP, no ICMP errors: frames that
//! need them are dropped and counted.

use base::Prefix4;
use core::sync::atomic::{AtomicBool, Ordering};
use io::{BatchSizes, IoError};
use pkt::{Batch, Device, Pool};

/// A static route: destinations in `prefix` leave by `port` towards the
/// neighbour whose MAC is `next_hop_mac`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Route4 {
    pub prefix: Prefix4,
    pub port: usize,
    pub next_hop_mac: [u8; 6],
}

/// Per-forwarder (so per-core) counters; every drop is counted by reason.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct FwdCounters {
    pub forwarded: u64,
    pub not_ipv4: u64,
    pub bad_header: u64,
    pub ttl_expired: u64,
    pub no_route: u64,
    /// The route points back out of the arrival port.
    pub hairpin: u64,
    pub tx_full: u64,
}

impl FwdCounters {
    pub fn add(&mut self, o: &FwdCounters) {
        self.forwarded += o.forwarded;
        self.not_ipv4 += o.not_ipv4;
        self.bad_header += o.bad_header;
        self.ttl_expired += o.ttl_expired;
        self.no_route += o.no_route;
        self.hairpin += o.hairpin;
        self.tx_full += o.tx_full;
    }
}

/// Static IPv4 forwarder over a handful of routes (linear longest match).
#[derive(Clone, Debug)]
pub struct StaticForwarder {
    port_macs: Vec<[u8; 6]>,
    routes: Vec<Route4>,
    pub counters: FwdCounters,
}

const ETH_HLEN: usize = 14;

impl StaticForwarder {
    /// `port_macs[i]` is the MAC of port `i` (the new source MAC of frames
    /// leaving by it). Routes pointing at unknown ports are rejected.
    pub fn new(port_macs: Vec<[u8; 6]>, mut routes: Vec<Route4>) -> Result<Self, IoError> {
        if routes.iter().any(|r| r.port >= port_macs.len()) {
            return Err(IoError::Config("route to a port that does not exist"));
        }
        // Longest prefix first, so the first match is the longest.
        routes.sort_by_key(|r| core::cmp::Reverse(r.prefix.len()));
        Ok(StaticForwarder {
            port_macs,
            routes,
            counters: FwdCounters::default(),
        })
    }

    /// Rewrites `frame` in place for forwarding and returns its output
    /// port, or `None` (counted) when it is dropped.
    pub fn process(&mut self, frame: &mut [u8]) -> Option<usize> {
        let c = &mut self.counters;
        let Some(eth) = frame.get(12..14) else {
            c.bad_header += 1;
            return None;
        };
        if eth != [0x08, 0x00] {
            c.not_ipv4 += 1;
            return None;
        }
        let Some(ip) = frame.get_mut(ETH_HLEN..) else {
            c.bad_header += 1;
            return None;
        };
        let ihl = match ip.first() {
            Some(&b) if b >> 4 == 4 && b & 0xf >= 5 => usize::from(b & 0xf) * 4,
            _ => {
                c.bad_header += 1;
                return None;
            }
        };
        if ip.len() < ihl {
            c.bad_header += 1;
            return None;
        }
        let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
        if total < ihl || total > ip.len() {
            c.bad_header += 1;
            return None;
        }
        let ttl = ip[8];
        if ttl <= 1 {
            c.ttl_expired += 1;
            return None;
        }
        let dst = u32::from_be_bytes([ip[16], ip[17], ip[18], ip[19]]);
        let Some(r) = self.routes.iter().find(|r| r.prefix.contains_addr(dst)) else {
            c.no_route += 1;
            return None;
        };
        let old = u16::from_be_bytes([ttl, ip[9]]);
        ip[8] = ttl - 1;
        let new = u16::from_be_bytes([ip[8], ip[9]]);
        let hc = u16::from_be_bytes([ip[10], ip[11]]);
        ip[10..12].copy_from_slice(&pkt::checksum::update16(hc, old, new).to_be_bytes());
        let src_mac = self.port_macs.get(r.port).copied().unwrap_or_default();
        frame[0..6].copy_from_slice(&r.next_hop_mac);
        frame[6..12].copy_from_slice(&src_mac);
        Some(r.port)
    }
}

/// How the poll loop behaves when idle.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LoopConfig {
    pub batch: BatchSizes,
    /// Empty rounds to spin before sleeping in `poll(2)`.
    pub idle_spins: u32,
    /// Sleep bound when idle; also how often the stop flag is seen.
    pub sleep_ms: i32,
    /// When non-zero, an idle loop naps this many microseconds instead of
    /// sleeping in `poll(2)`: the rings fill meanwhile and the next round
    /// takes a full batch, so wake-ups (and CPU) per packet drop at
    /// moderate rates, at the price of up to `nap_us` of added latency
    /// (interrupt moderation, done in the poller).
    pub nap_us: u32,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            batch: BatchSizes::default(),
            idle_spins: 64,
            sleep_ms: 10,
            nap_us: 0,
        }
    }
}

/// Packet buffers of [`run`]'s pool.
const POOL_BUFFERS: usize = 4096;

/// Runs one core's poll loop over `ports` until `stop` is set: each round
/// takes at most `kp` frames from every port, forwards them, and sends a
/// port's queued packets whenever `kn` are waiting for it (and at the end
/// of the round). `stop` is read once per round, never per packet. The
/// first I/O error a device reports ends the loop.
pub fn run<D: Device<Error = IoError>>(
    ports: &mut [D],
    fwd: &mut StaticForwarder,
    cfg: LoopConfig,
    stop: &AtomicBool,
) -> Result<(), IoError> {
    let batch = cfg.batch.validate()?;
    let pool = Pool::new(POOL_BUFFERS);
    let mut rx = Batch::with_capacity(batch.kp);
    let mut out: Vec<Batch> = ports
        .iter()
        .map(|_| Batch::with_capacity(batch.kn))
        .collect();
    let mut fds = Vec::with_capacity(ports.len());
    fds.extend(ports.iter().filter_map(|p| p.poll_fd()));
    let mut idle = 0u32;
    while !stop.load(Ordering::Relaxed) {
        let mut got = 0usize;
        for i in 0..ports.len() {
            let Some(me) = ports.get_mut(i) else { break };
            got += me.rx_burst(&pool, &mut rx, batch.kp);
            for mut p in rx.drain() {
                let Some(o) = fwd.process(p.data_mut()) else {
                    continue;
                };
                let (Some(ob), Some(dev)) = (out.get_mut(o), ports.get_mut(o)) else {
                    fwd.counters.hairpin += 1;
                    continue;
                };
                if o == i {
                    fwd.counters.hairpin += 1;
                    continue;
                }
                let _ = ob.push(p);
                if ob.is_full() {
                    send(dev, ob, &mut fwd.counters);
                }
            }
        }
        for (dev, ob) in ports.iter_mut().zip(out.iter_mut()) {
            send(dev, ob, &mut fwd.counters);
        }
        if let Some(e) = ports.iter().find_map(|p| p.last_error()) {
            return Err(e);
        }
        if got > 0 {
            idle = 0;
        } else {
            idle += 1;
            if idle >= cfg.idle_spins {
                if cfg.nap_us > 0 {
                    std::thread::sleep(std::time::Duration::from_micros(u64::from(cfg.nap_us)));
                } else if fds.is_empty() {
                    std::thread::sleep(
                        std::time::Duration::from_millis(cfg.sleep_ms.max(0) as u64),
                    );
                } else {
                    io::sys::poll_many(&fds, cfg.sleep_ms)?;
                }
            }
        }
    }
    Ok(())
}

/// Sends what is queued for `dev` and kicks it; packets the ring had no
/// room for are dropped as `tx_full`.
fn send<D: Device>(dev: &mut D, b: &mut Batch, c: &mut FwdCounters) {
    if b.is_empty() {
        return;
    }
    c.forwarded += dev.tx_burst(b) as u64;
    dev.flush();
    c.tx_full += b.len() as u64;
    b.clear();
}
