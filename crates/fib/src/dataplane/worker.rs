//! One core's forwarder: polls its queue of every port, forwards IPv4 by
//! the published [`FibTables`], answers ARP for the router's addresses and
//! asks ARP for unknown neighbours.
//!
//! Per batch (one `rx_burst` of up to `kp` frames from one port, copied
//! into this core's `pkt::Pool`) the worker enters one left-right read
//! section, so the FIB writer can swap tables between any two batches and
//! never waits for more than one batch; the section is never held while
//! sleeping. Forwarded packets wait in a batch per output port, sent
//! whenever `kn` are queued and at the end of the round. Counters are plain fields of the
//! worker (this core only). Learned neighbours go to the FIB thread on
//! this core's SPSC ring, published once per round.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use io::rss::Producer;
use io::{BatchSizes, IoError};
use lpm::publish::ReadHandle;
use pkt::{Batch, Device, Pool};

use super::arp;
use crate::table::{FibTables, Hop};

/// A port as a worker needs it: MAC and IPv4 addresses with prefix length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortInfo {
    pub name: String,
    pub mac: [u8; 6],
    pub v4: Vec<(Ipv4Addr, u8)>,
}

impl PortInfo {
    /// The port's address on the subnet of `a` (or its first address).
    fn source_for(&self, a: Ipv4Addr) -> Option<Ipv4Addr> {
        self.v4
            .iter()
            .find(|(s, l)| same_subnet(*s, a, *l))
            .or(self.v4.first())
            .map(|(s, _)| *s)
    }
    fn on_link(&self, a: Ipv4Addr) -> bool {
        self.v4.iter().any(|(s, l)| same_subnet(*s, a, *l))
    }
}

fn same_subnet(a: Ipv4Addr, b: Ipv4Addr, len: u8) -> bool {
    let m = if len == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(len.min(32)))
    };
    u32::from(a) & m == u32::from(b) & m
}

/// A neighbour seen in ARP, for the FIB thread.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Learned {
    pub port: u16,
    pub ip: IpAddr,
    pub mac: [u8; 6],
}

/// Per-worker counters; every drop has its reason.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct WorkerCounters {
    pub rx: u64,
    pub forwarded: u64,
    pub not_ip: u64,
    pub bad_header: u64,
    pub ttl_expired: u64,
    pub no_route: u64,
    /// The neighbour's MAC is not known yet (an ARP request was sent).
    pub unresolved: u64,
    /// Addressed to the router itself (no local stack here).
    pub local: u64,
    /// The route leads back out of the arrival port.
    pub hairpin: u64,
    pub tx_full: u64,
    pub ipv6: u64,
    pub arp_in: u64,
    pub arp_replies: u64,
    pub arp_requests: u64,
    /// Learned neighbours lost because the ring to the FIB thread was full.
    pub learn_dropped: u64,
    /// Read sections entered (one per non-empty batch; graph engine:
    /// polls).
    pub sections: u64,
    /// ICMP time-exceeded errors sent (graph engine).
    pub icmp_errors: u64,
}

impl WorkerCounters {
    pub fn add(&mut self, o: &WorkerCounters) {
        let f = |a: &mut u64, b: u64| *a += b;
        f(&mut self.rx, o.rx);
        f(&mut self.forwarded, o.forwarded);
        f(&mut self.not_ip, o.not_ip);
        f(&mut self.bad_header, o.bad_header);
        f(&mut self.ttl_expired, o.ttl_expired);
        f(&mut self.no_route, o.no_route);
        f(&mut self.unresolved, o.unresolved);
        f(&mut self.local, o.local);
        f(&mut self.hairpin, o.hairpin);
        f(&mut self.tx_full, o.tx_full);
        f(&mut self.ipv6, o.ipv6);
        f(&mut self.arp_in, o.arp_in);
        f(&mut self.arp_replies, o.arp_replies);
        f(&mut self.arp_requests, o.arp_requests);
        f(&mut self.learn_dropped, o.learn_dropped);
        f(&mut self.sections, o.sections);
        f(&mut self.icmp_errors, o.icmp_errors);
    }
}

/// Which forwarder the per-core workers run.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Engine {
    /// The element graph of crate `elements` (IPv4 and IPv6, ICMP echo
    /// and time-exceeded, ARP and NDP): see [`super::graph_engine`].
    #[default]
    Graph,
    /// The hand-written IPv4-only forwarder of this module (no ICMP
    /// errors): fewer instructions per packet, kept as an option.
    Fast,
}

/// How the worker's poll loop behaves.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LoopConfig {
    pub batch: BatchSizes,
    /// Empty rounds before sleeping in `poll(2)`.
    pub idle_spins: u32,
    /// Sleep bound when idle (also how often `stop` is seen).
    pub sleep_ms: i32,
    pub engine: Engine,
    /// AF_XDP UMEM frames per socket (power of two; half RX, half TX).
    pub xdp_frames: u32,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            batch: BatchSizes::default(),
            idle_spins: 64,
            sleep_ms: 5,
            engine: Engine::Graph,
            xdp_frames: 4096,
        }
    }
}

/// Control frames (ARP) built during a batch, sent after it: the arrival
/// port is borrowed by its own receive call meanwhile.
const CTL_MAX: usize = 64;

/// One core's state.
pub struct Worker {
    info: Vec<PortInfo>,
    fib: ReadHandle<FibTables>,
    learn: Producer<Learned>,
    /// What this core already told the FIB thread (so a chatty neighbour
    /// does not flood the ring).
    told: HashMap<Ipv4Addr, [u8; 6]>,
    /// When this core last asked ARP for a target (rate limit).
    asked: HashMap<Ipv4Addr, Instant>,
    ctl: Vec<(u16, [u8; arp::FRAME_LEN])>,
    /// Made on the worker's own thread (a pool belongs to one core).
    bufs: Option<Bufs>,
    pub counters: WorkerCounters,
}

/// A core's packet buffers.
struct Bufs {
    pool: Pool,
    rx: Batch,
    /// Forwarded packets queued per output port (capacity `kn`).
    out: Vec<Batch>,
}

/// Packet buffers per core (an RX batch, the output batches, ARP frames).
const POOL_BUFFERS: usize = 4096;

/// Re-ask an unresolved neighbour at most this often per core.
const ARP_RETRY: Duration = Duration::from_millis(200);

enum Verdict {
    Drop,
    Out(usize),
}

impl Worker {
    pub fn new(info: Vec<PortInfo>, fib: ReadHandle<FibTables>, learn: Producer<Learned>) -> Self {
        Worker {
            info,
            fib,
            learn,
            told: HashMap::new(),
            asked: HashMap::new(),
            ctl: Vec::with_capacity(CTL_MAX),
            bufs: None,
            counters: WorkerCounters::default(),
        }
    }

    /// Polls `ports` (this core's queue of each configured port, in port
    /// order) until `stop` is set. `stop` is read once per round.
    pub fn run<D: Device<Error = IoError>>(
        &mut self,
        ports: &mut [D],
        cfg: LoopConfig,
        stop: &AtomicBool,
    ) -> Result<(), IoError> {
        let batch = cfg.batch.validate()?;
        let fds: Vec<_> = ports.iter().filter_map(|p| p.poll_fd()).collect();
        let mut idle = 0u32;
        while !stop.load(Ordering::Relaxed) {
            let got = self.round(ports, batch)?;
            if got > 0 {
                idle = 0;
            } else {
                idle += 1;
                if idle >= cfg.idle_spins {
                    if fds.is_empty() {
                        std::thread::sleep(Duration::from_millis(cfg.sleep_ms.max(0) as u64));
                    } else {
                        io::sys::poll_many(&fds, cfg.sleep_ms)?;
                    }
                }
            }
        }
        Ok(())
    }

    /// One round: a batch from every port, then the queued packets,
    /// control frames, TX kicks and the learned-neighbour ring. Returns
    /// the frames received; the first I/O error a device reports.
    pub fn round<D: Device<Error = IoError>>(
        &mut self,
        ports: &mut [D],
        batch: BatchSizes,
    ) -> Result<usize, IoError> {
        let kp = batch.kp.min(pkt::MAX_BATCH);
        let fits = |b: &Bufs| {
            b.rx.capacity() == kp.max(CTL_MAX)
                && b.out.len() == ports.len()
                && b.out.iter().all(|o| o.capacity() == batch.kn)
        };
        if !self.bufs.as_ref().is_some_and(fits) {
            self.bufs = Some(Bufs {
                pool: Pool::new(POOL_BUFFERS),
                rx: Batch::with_capacity(kp.max(CTL_MAX)),
                out: ports
                    .iter()
                    .map(|_| Batch::with_capacity(batch.kn))
                    .collect(),
            });
        }
        let mut got = 0;
        for i in 0..ports.len() {
            let Worker {
                info,
                fib,
                learn,
                told,
                asked,
                ctl,
                bufs: Some(Bufs { pool, rx, out }),
                counters: c,
            } = self
            else {
                break;
            };
            let Some(me) = ports.get_mut(i) else { break };
            let n = me.rx_burst(pool, rx, kp);
            let table = fib.read();
            c.sections += 1;
            for mut p in rx.drain() {
                c.rx += 1;
                let v = process(
                    p.data_mut(),
                    i,
                    info,
                    &table,
                    c,
                    &mut Ctl {
                        learn,
                        told,
                        asked,
                        ctl,
                    },
                );
                let Verdict::Out(o) = v else { continue };
                let (Some(ob), Some(dev)) = (out.get_mut(o), ports.get_mut(o)) else {
                    c.hairpin += 1;
                    continue;
                };
                let _ = ob.push(p);
                if ob.is_full() {
                    send(dev, ob, c);
                }
            }
            drop(table);
            got += n;
        }
        let Worker {
            ctl,
            bufs: Some(Bufs { pool, rx, out }),
            counters: c,
            ..
        } = self
        else {
            return Ok(got);
        };
        for (dev, ob) in ports.iter_mut().zip(out.iter_mut()) {
            send(dev, ob, c);
        }
        // Control frames (ARP), in the RX batch, now empty: a full ring
        // loses one; ARP retries.
        for (k, dev) in ports.iter_mut().enumerate() {
            for (port, f) in ctl.iter() {
                if usize::from(*port) == k {
                    if let Some(p) = pool.alloc_from(f) {
                        let _ = rx.push(p);
                    }
                }
            }
            if !rx.is_empty() {
                dev.tx_burst(rx);
                rx.clear();
            }
            dev.flush();
        }
        ctl.clear();
        self.learn.publish();
        match ports.iter().find_map(|p| p.last_error()) {
            Some(e) => Err(e),
            None => Ok(got),
        }
    }
}

/// Sends what is queued for `dev`; packets its ring had no room for are
/// dropped as `tx_full`.
fn send<D: Device>(dev: &mut D, b: &mut Batch, c: &mut WorkerCounters) {
    if b.is_empty() {
        return;
    }
    c.forwarded += dev.tx_burst(b) as u64;
    c.tx_full += b.len() as u64;
    b.clear();
}

struct Ctl<'a> {
    learn: &'a mut Producer<Learned>,
    told: &'a mut HashMap<Ipv4Addr, [u8; 6]>,
    asked: &'a mut HashMap<Ipv4Addr, Instant>,
    ctl: &'a mut Vec<(u16, [u8; arp::FRAME_LEN])>,
}

fn process(
    frame: &mut [u8],
    port: usize,
    info: &[PortInfo],
    t: &FibTables,
    c: &mut WorkerCounters,
    x: &mut Ctl<'_>,
) -> Verdict {
    let Some(me) = info.get(port) else {
        return Verdict::Drop;
    };
    let et = match frame.get(12..14) {
        Some(b) => u16::from_be_bytes([b[0], b[1]]),
        None => {
            c.bad_header += 1;
            return Verdict::Drop;
        }
    };
    match et {
        0x0800 => {}
        0x0806 => {
            c.arp_in += 1;
            on_arp(frame, port, me, c, x);
            return Verdict::Drop;
        }
        0x86dd => {
            c.ipv6 += 1;
            return Verdict::Drop;
        }
        _ => {
            c.not_ip += 1;
            return Verdict::Drop;
        }
    }
    // RFC 1812 §5.2.2 / §5.3.1 checks: version, IHL, total length.
    let Some(ip) = frame.get(14..34) else {
        c.bad_header += 1;
        return Verdict::Drop;
    };
    let ihl = usize::from(ip[0] & 0xf) * 4;
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if ip[0] >> 4 != 4 || ihl < 20 || total < ihl || total + 14 > frame.len() {
        c.bad_header += 1;
        return Verdict::Drop;
    }
    let dst = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let ttl = ip[8];
    if info.iter().any(|p| p.v4.iter().any(|(a, _)| *a == dst)) {
        c.local += 1;
        return Verdict::Drop;
    }
    if ttl <= 1 {
        c.ttl_expired += 1;
        return Verdict::Drop;
    }
    let (out, mac) = match t.route4(u32::from(dst)) {
        None => {
            c.no_route += 1;
            return Verdict::Drop;
        }
        Some(Hop::Resolve {
            port,
            target: IpAddr::V4(target),
        }) => {
            c.unresolved += 1;
            ask(usize::from(port), target, info, c, x);
            return Verdict::Drop;
        }
        Some(Hop::Resolve { .. }) => {
            c.unresolved += 1;
            return Verdict::Drop;
        }
        Some(Hop::Ready { port, mac }) => (port, mac),
    };
    let out = usize::from(out);
    if out == port {
        c.hairpin += 1;
        return Verdict::Drop;
    }
    let Some(src) = info.get(out).map(|p| p.mac) else {
        c.no_route += 1;
        return Verdict::Drop;
    };
    // TTL and checksum (RFC 1624 incremental update), then the MACs.
    if let Some(ip) = frame.get_mut(14..34) {
        let old = u16::from_be_bytes([ttl, ip[9]]);
        ip[8] = ttl - 1;
        let new = u16::from_be_bytes([ip[8], ip[9]]);
        let hc = u16::from_be_bytes([ip[10], ip[11]]);
        ip[10..12].copy_from_slice(&pkt::checksum::update16(hc, old, new).to_be_bytes());
    }
    if let Some(h) = frame.get_mut(0..12) {
        h[0..6].copy_from_slice(&mac);
        h[6..12].copy_from_slice(&src);
    }
    Verdict::Out(out)
}

fn on_arp(frame: &[u8], port: usize, me: &PortInfo, c: &mut WorkerCounters, x: &mut Ctl<'_>) {
    let Some(a) = arp::parse(frame) else {
        c.bad_header += 1;
        return;
    };
    // Learn only neighbours on this port's subnets (RFC 826 "merge" for
    // the addresses we could ever send to here).
    if me.on_link(a.spa) && a.spa != Ipv4Addr::UNSPECIFIED && x.told.get(&a.spa) != Some(&a.sha) {
        let l = Learned {
            port: port as u16,
            ip: IpAddr::V4(a.spa),
            mac: a.sha,
        };
        if x.learn.push(l).is_ok() {
            x.told.insert(a.spa, a.sha);
        } else {
            c.learn_dropped += 1;
        }
    }
    if a.op == arp::REQUEST && me.v4.iter().any(|(s, _)| *s == a.tpa) && x.ctl.len() < CTL_MAX {
        x.ctl.push((port as u16, arp::reply(&a, me.mac)));
        c.arp_replies += 1;
    }
}

fn ask(out: usize, target: Ipv4Addr, info: &[PortInfo], c: &mut WorkerCounters, x: &mut Ctl<'_>) {
    let now = Instant::now();
    if let Some(t) = x.asked.get(&target) {
        if now.duration_since(*t) < ARP_RETRY {
            return;
        }
    }
    let Some(p) = info.get(out) else { return };
    let Some(src) = p.source_for(target) else {
        return;
    };
    if x.ctl.len() >= CTL_MAX {
        return;
    }
    x.asked.insert(target, now);
    x.ctl.push((out as u16, arp::request(p.mac, src, target)));
    c.arp_requests += 1;
}
