//! One dataplane core (either engine) on real interfaces with a static
//! setup, for `scripts/bench-fwd-veth`-style measurements of the `fib`
//! dataplane itself (the script's own load is crate `io`'s `fwd` example).
//!
//! ```text
//! dpfwd --engine graph|fast --mode xdp|xdp-drv|packet [--cores N] [--queues Q] \
//!       [--frames 4096] [--kp 32] [--kn 32] \
//!       --port r0=10.1.0.1/24 --port r1=10.2.0.1/24 --neigh 10.2.0.3=02:00:00:00:0b:00 \
//!       [--route 203.0.113.0/24=10.2.0.3[,10.2.0.4...]] [--fastpath xdp|xdp-drv]
//! ```
//! `--cores N` (default 1) runs N dataplane cores over `--queues Q`
//! RX queues of each port (default N; Q >= N), one AF_XDP socket per
//! queue, core `c` reading queues `c, c + N, ...`
//! (`fib::dataplane::core_queues`, as tesserad does), on veth's native
//! hook with `--mode xdp-drv` (needed for several queues on veth) or the
//! generic one with `--mode xdp`; it prints each core's and each queue's
//! counters at the end.
//! `--fastpath` puts the XDP fast path (`io::xdp::fast`, fed by
//! `fib::xdp_mirror`) in front of the AF_XDP sockets, on the generic
//! (`xdp`) or the driver's (`xdp-drv`) hook; it prints the fast path's
//! counters at the end.
//! Ports get the given addresses (their connected prefixes); `--neigh`
//! entries are taught to the FIB as if learned, so nothing needs ARP.
//! Runs until SIGINT/SIGTERM, then prints one line of counters.

use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, Ordering};

use fib::dataplane::{Engine, GraphPort, GraphWorker, Learned, LoopConfig};
use fib::xdp_mirror::FastFeed;
use fib::{Change, Fib, FibTables, PortSpec};
use io::packet::{PacketConfig, PacketSocket};
use io::xdp::fast::FastMaps;
use io::xdp::{XdpMode, XdpProgram, XskConfig, XskQueues, XskSocket};
use io::IoError;
use lpm::publish::left_right;

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn mac(s: &str) -> Option<[u8; 6]> {
    let mut m = [0u8; 6];
    let mut it = s.split(':');
    for b in m.iter_mut() {
        *b = u8::from_str_radix(it.next()?, 16).ok()?;
    }
    it.next().is_none().then_some(m)
}

fn read_mac(name: &str) -> [u8; 6] {
    let p = format!("/sys/class/net/{name}/address");
    std::fs::read_to_string(&p)
        .ok()
        .and_then(|s| mac(s.trim()))
        .unwrap_or_else(|| panic!("cannot read {p}"))
}

struct Args {
    engine: Engine,
    xdp: bool,
    lc: LoopConfig,
    ports: Vec<(String, IpAddr, u8)>,
    neigh: Vec<(IpAddr, [u8; 6])>,
    routes: Vec<Change>,
    /// `--fastpath`: the XDP hook of the fast path.
    fast: Option<XdpMode>,
    /// `--mode xdp-drv`: the AF_XDP sockets' program on the native hook.
    drv: bool,
    /// `--cores`, `--queues` (None: as many as cores).
    cores: Option<usize>,
    queues: Option<u32>,
}

fn args() -> Args {
    let mut a = Args {
        engine: Engine::Graph,
        xdp: true,
        lc: LoopConfig::default(),
        ports: Vec::new(),
        neigh: Vec::new(),
        routes: Vec::new(),
        fast: None,
        drv: false,
        cores: None,
        queues: None,
    };
    let v: Vec<String> = std::env::args().skip(1).collect();
    let mut it = v.iter();
    let bad = |k: &str| -> ! {
        eprintln!("dpfwd: bad or missing value for {k}");
        std::process::exit(2)
    };
    while let Some(k) = it.next() {
        let val = it.next().unwrap_or_else(|| bad(k));
        match k.as_str() {
            "--engine" => {
                a.engine = match val.as_str() {
                    "graph" => Engine::Graph,
                    "fast" => Engine::Fast,
                    _ => bad(k),
                }
            }
            "--mode" => {
                a.xdp = val != "packet";
                a.drv = val == "xdp-drv";
            }
            "--cores" => a.cores = Some(val.parse().unwrap_or_else(|_| bad(k))),
            "--queues" => a.queues = Some(val.parse().unwrap_or_else(|_| bad(k))),
            "--fastpath" => {
                a.fast = Some(match val.as_str() {
                    "xdp" => XdpMode::Skb,
                    "xdp-drv" => XdpMode::Driver,
                    _ => bad(k),
                })
            }
            "--frames" => a.lc.xdp_frames = val.parse().unwrap_or_else(|_| bad(k)),
            "--kp" => a.lc.batch.kp = val.parse().unwrap_or_else(|_| bad(k)),
            "--kn" => a.lc.batch.kn = val.parse().unwrap_or_else(|_| bad(k)),
            "--port" => {
                let (n, pfx) = val.split_once('=').unwrap_or_else(|| bad(k));
                let (ip, len) = pfx.split_once('/').unwrap_or_else(|| bad(k));
                a.ports.push((
                    n.to_string(),
                    ip.parse().unwrap_or_else(|_| bad(k)),
                    len.parse().unwrap_or_else(|_| bad(k)),
                ));
            }
            "--neigh" => {
                let (ip, m) = val.split_once('=').unwrap_or_else(|| bad(k));
                a.neigh.push((
                    ip.parse().unwrap_or_else(|_| bad(k)),
                    mac(m).unwrap_or_else(|| bad(k)),
                ));
            }
            "--route" => {
                // PREFIX=NH[,NH...]: more than one next hop is an ECMP
                // route (the first is `next_hop`, the rest `ecmp`).
                let (p, via) = val.split_once('=').unwrap_or_else(|| bad(k));
                let mut hops = via
                    .split(',')
                    .map(|h| h.parse::<IpAddr>().unwrap_or_else(|_| bad(k)));
                let first = hops.next().unwrap_or_else(|| bad(k));
                a.routes.push(Change {
                    prefix: p.parse().unwrap_or_else(|_| bad(k)),
                    next_hop: Some(first),
                    ecmp: hops.collect(),
                });
            }
            _ => bad(k),
        }
    }
    a
}

fn run<D: pkt::Device<Error = IoError>>(
    a: &Args,
    socks: Vec<D>,
    fast: Option<(&FastMaps, &mut FastFeed)>,
) -> Result<(), IoError> {
    let specs: Vec<PortSpec> = a
        .ports
        .iter()
        .map(|(n, ip, l)| PortSpec {
            name: n.clone(),
            addrs: vec![(*ip, *l)],
        })
        .collect();
    let mut f = Fib::new(&specs, false);
    f.apply(&a.routes);
    for (ip, m) in &a.neigh {
        f.learn(*ip, *m);
    }
    let mut w = left_right(FibTables::new());
    let d = f.take_deltas();
    let _ = w.publish(&d);
    let maps = fast.map(|(m, feed)| {
        println!("dpfwd: fast path map writes {:?}", feed.feed(&d));
        m
    });
    let (p, _c) = io::rss::spsc::<Learned>(256);
    let macs: Vec<[u8; 6]> = a.ports.iter().map(|(n, _, _)| read_mac(n)).collect();
    let stop = &STOP;
    let ports: Vec<GraphPort> = a
        .ports
        .iter()
        .zip(&macs)
        .map(|((_, ip, l), m)| GraphPort {
            mac: *m,
            addrs: vec![(*ip, *l)],
        })
        .collect();
    // `a.lc.engine` picks the graph: the chain, or Ip4Forward (fast).
    let lc = LoopConfig {
        engine: a.engine,
        ..a.lc
    };
    let mut g = GraphWorker::new(
        &ports,
        socks,
        w.reader(),
        w.reader(),
        Some((w.reader(), p)),
        lc,
    )?;
    g.run(lc, stop)?;
    let counters = g.counters();
    println!("dpfwd: {counters:?}");
    if let Some(m) = maps {
        println!("dpfwd: fast path {:?}", m.counters());
    }
    Ok(())
}

/// `--cores N` / `--mode xdp-drv`: N cores, each over its queues of every
/// port (one `XskQueues` per port), sharing one published FIB.
fn run_cores(a: &Args) -> Result<(), IoError> {
    let cores = a.cores.unwrap_or(1).max(1);
    let nq = a.queues.unwrap_or(cores as u32);
    if (nq as usize) < cores {
        return Err(IoError::Config("--queues must be at least --cores"));
    }
    let mode = if a.drv { XdpMode::Driver } else { XdpMode::Skb };
    let progs = a
        .ports
        .iter()
        .map(|(n, _, _)| XdpProgram::attach(n, mode, nq))
        .collect::<Result<Vec<_>, _>>()?;
    let specs: Vec<PortSpec> = a
        .ports
        .iter()
        .map(|(n, ip, l)| PortSpec {
            name: n.clone(),
            addrs: vec![(*ip, *l)],
        })
        .collect();
    let mut f = Fib::new(&specs, false);
    f.apply(&a.routes);
    for (ip, m) in &a.neigh {
        f.learn(*ip, *m);
    }
    let mut w = left_right(FibTables::new());
    let _ = w.publish(&f.take_deltas());
    let ports: Vec<GraphPort> = a
        .ports
        .iter()
        .map(|(n, ip, l)| GraphPort {
            mac: read_mac(n),
            addrs: vec![(*ip, *l)],
        })
        .collect();
    let lc = LoopConfig {
        engine: a.engine,
        ..a.lc
    };
    let mut rings = Vec::new();
    std::thread::scope(|s| {
        let mut hs = Vec::new();
        for core in 0..cores {
            let (v4, v6, share) = (w.reader(), w.reader(), w.reader());
            let (p, c) = io::rss::spsc::<Learned>(256);
            rings.push(c);
            let (progs, ports) = (&progs, &ports);
            hs.push(s.spawn(move || -> Result<String, IoError> {
                let socks = progs
                    .iter()
                    .map(|prog| {
                        let mut qs = Vec::new();
                        for q in fib::dataplane::core_queues(core, cores, nq) {
                            let mut xc = XskConfig::new(q);
                            xc.frame_count = lc.xdp_frames;
                            xc.ring_size = (lc.xdp_frames / 2).max(xc.ring_size.min(lc.xdp_frames));
                            qs.push(XskSocket::open(prog, &xc)?);
                        }
                        let mut d = XskQueues::new(qs)?;
                        d.set_kn(lc.batch.kn);
                        Ok(d)
                    })
                    .collect::<Result<Vec<_>, IoError>>()?;
                let mut g = GraphWorker::new(ports, socks, v4, v6, Some((share, p)), lc)?;
                g.run(lc, &STOP)?;
                let q: Vec<String> = g
                    .queue_counters()
                    .iter()
                    .map(|x| {
                        format!(
                            "port{}q{} rx={} tx={} ring_drops={}",
                            x.port,
                            x.q.queue,
                            x.q.stats.rx,
                            x.q.stats.tx,
                            x.q.ring_drops.unwrap_or(0)
                        )
                    })
                    .collect();
                Ok(format!(
                    "core{core}: {:?}\n  {}",
                    g.counters(),
                    q.join("\n  ")
                ))
            }));
        }
        for h in hs {
            match h.join() {
                Ok(Ok(line)) => println!("dpfwd: {line}"),
                Ok(Err(e)) => {
                    STOP.store(true, Ordering::Relaxed);
                    eprintln!("dpfwd: core: {e}");
                }
                Err(_) => eprintln!("dpfwd: a core panicked"),
            }
        }
    });
    Ok(())
}

/// The fast path's maps with the ports in the DEVMAP, and their feed.
fn fast_maps(a: &Args) -> Result<(std::sync::Arc<FastMaps>, FastFeed), IoError> {
    let maps = std::sync::Arc::new(FastMaps::create(1 << 20, a.ports.len() as u32)?);
    for (i, (n, _, _)) in a.ports.iter().enumerate() {
        maps.set_port(i as u32, io::sys::ifindex(n)?)?;
    }
    let own: Vec<IpAddr> = a.ports.iter().map(|(_, ip, _)| *ip).collect();
    let macs = a.ports.iter().map(|(n, _, _)| read_mac(n)).collect();
    let (feed, _) = FastFeed::new(std::sync::Arc::clone(&maps), macs, &own);
    Ok((maps, feed))
}

fn main() {
    let a = args();
    // SAFETY: installs an async-signal-safe handler (one atomic store).
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    if a.fast.is_some() && !a.xdp {
        eprintln!("dpfwd: --fastpath needs --mode xdp");
        std::process::exit(2);
    }
    if a.cores.is_some() || a.queues.is_some() || a.drv {
        if a.fast.is_some() || !a.xdp {
            eprintln!("dpfwd: --cores/--queues/--mode xdp-drv: AF_XDP without --fastpath");
            std::process::exit(2);
        }
        if let Err(e) = run_cores(&a) {
            eprintln!("dpfwd: {e}");
            std::process::exit(1);
        }
        return;
    }
    let fast = a.fast.map(|_| fast_maps(&a)).transpose();
    let mut fast = match fast {
        Ok(f) => f,
        Err(e) => {
            eprintln!("dpfwd: fast path: {e}");
            std::process::exit(1);
        }
    };
    let r = if a.xdp {
        // The programs stay attached while `progs` lives.
        let progs = a
            .ports
            .iter()
            .map(|(n, _, _)| match (&fast, a.fast) {
                (Some((m, _)), Some(mode)) => XdpProgram::attach_fast(n, mode, 1, m, read_mac(n)),
                _ => XdpProgram::attach(n, XdpMode::Skb, 1),
            })
            .collect::<Result<Vec<_>, _>>();
        progs.and_then(|progs| {
            let socks = progs
                .iter()
                .map(|prog| {
                    let mut xc = XskConfig::new(0);
                    xc.frame_count = a.lc.xdp_frames;
                    xc.ring_size = (a.lc.xdp_frames / 2).max(xc.ring_size.min(a.lc.xdp_frames));
                    let mut s = XskSocket::open(prog, &xc)?;
                    s.set_kn(a.lc.batch.kn);
                    Ok(s)
                })
                .collect::<Result<Vec<_>, _>>()?;
            run(&a, socks, fast.as_mut().map(|(m, f)| (&**m, f)))
        })
    } else {
        let socks = a
            .ports
            .iter()
            .map(|(n, _, _)| {
                let mut s = PacketSocket::open(&PacketConfig::new(n))?;
                s.set_kn(a.lc.batch.kn);
                Ok(s)
            })
            .collect::<Result<Vec<_>, _>>();
        socks.and_then(|s| run(&a, s, None))
    };
    if let Err(e) = r {
        eprintln!("dpfwd: {e}");
        std::process::exit(1);
    }
}
