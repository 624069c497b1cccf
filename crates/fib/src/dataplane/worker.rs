//! One core's forwarder: polls its queue of every port, forwards IPv4 by
//! the published [`FibTables`], answers ARP for the router's addresses and
//! asks ARP for unknown neighbours.
//!
//! Per batch (one `rx_batch` of up to `kp` frames from one port) the worker
//! enters one left-right read section, so the FIB writer can swap tables
//! between any two batches and never waits for more than one batch; the
//! section is never held while sleeping. Counters are plain fields of the
//! worker (this core only). Learned neighbours go to the FIB thread on
//! this core's SPSC ring, published once per round.

use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use io::rss::Producer;
use io::{Batch, FrameRx, FrameTx, IoError};
use lpm::publish::ReadHandle;

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
    pub batch: Batch,
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
            batch: Batch::default(),
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
    pub counters: WorkerCounters,
}

/// Re-ask an unresolved neighbour at most this often per core.
const ARP_RETRY: Duration = Duration::from_millis(200);

/// RFC 1624 eqn. 3: `HC' = ~(~HC + ~m + m')`.
fn csum_replace(hc: u16, m: u16, m_new: u16) -> u16 {
    let mut s = u32::from(!hc) + u32::from(!m) + u32::from(m_new);
    s = (s & 0xffff) + (s >> 16);
    s = (s & 0xffff) + (s >> 16);
    !(s as u16)
}

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
            counters: WorkerCounters::default(),
        }
    }

    /// Polls `ports` (this core's queue of each configured port, in port
    /// order) until `stop` is set. `stop` is read once per round.
    pub fn run<D: FrameRx + FrameTx>(
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

    /// One round: a batch from every port, then control frames, TX kicks
    /// and the learned-neighbour ring. Returns the frames received.
    pub fn round<D: FrameRx + FrameTx>(
        &mut self,
        ports: &mut [D],
        batch: Batch,
    ) -> Result<usize, IoError> {
        let mut got = 0;
        for i in 0..ports.len() {
            let (left, rest) = ports.split_at_mut(i);
            let Some((me, right)) = rest.split_first_mut() else {
                break;
            };
            let Worker {
                info,
                fib,
                learn,
                told,
                asked,
                ctl,
                counters: c,
            } = self;
            let table = fib.read();
            c.sections += 1;
            let mut err = None;
            let n = me.rx_batch(batch.kp, |frame| {
                c.rx += 1;
                let v = process(
                    frame,
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
                let Verdict::Out(o) = v else { return };
                let out = if o < i {
                    left.get_mut(o)
                } else {
                    right.get_mut(o.wrapping_sub(i + 1))
                };
                let Some(out) = out else {
                    c.hairpin += 1;
                    return;
                };
                match out.tx_push(frame) {
                    Ok(true) => c.forwarded += 1,
                    Ok(false) => c.tx_full += 1,
                    Err(e) => err = Some(e),
                }
                if out.tx_pending() >= batch.kn {
                    if let Err(e) = out.tx_flush() {
                        err = Some(e);
                    }
                }
            })?;
            drop(table);
            got += n;
            if let Some(e) = err {
                return Err(e);
            }
        }
        for (port, f) in self.ctl.drain(..) {
            if let Some(p) = ports.get_mut(usize::from(port)) {
                // A full ring loses a control frame; ARP retries.
                let _ = p.tx_push(&f)?;
            }
        }
        for p in ports.iter_mut() {
            p.tx_flush()?;
        }
        self.learn.publish();
        Ok(got)
    }
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
        ip[10..12].copy_from_slice(&csum_replace(hc, old, new).to_be_bytes());
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
