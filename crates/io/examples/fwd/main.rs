//! Static IPv4 forwarder between interfaces, over AF_XDP or AF_PACKET, one
//! thread per queue. The load of `scripts/bench-fwd-veth`.
//!
//! ```text
//! fwd --mode xdp|xdp-drv|packet --port r0 --port r1 \
//!     --route 10.1.0.0/24=0,02:00:00:00:0a:00 --route 10.2.0.0/24=1,02:00:00:00:0b:00 \
//!     [--queues N] [--frames 4096] [--kp 32] [--kn 32] [--idle-spins 64] [--nap-us 0] [--duration SECS]
//! ```
//! Runs until SIGINT/SIGTERM or `--duration`, then prints one line of
//! counters and its own CPU time.

mod forwarder;

use forwarder as fwd;
use fwd::{FwdCounters, LoopConfig, Route4, StaticForwarder};
use io::packet::{Fanout, FanoutMode, PacketConfig, PacketSocket};
use io::xdp::{XdpMode, XdpProgram, XskConfig, XskSocket};
use io::IoError;
use pkt::{DevStats, Device};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut m = [0u8; 6];
    let mut it = s.split(':');
    for b in m.iter_mut() {
        *b = u8::from_str_radix(it.next()?, 16).ok()?;
    }
    it.next().is_none().then_some(m)
}

fn parse_route(s: &str) -> Option<Route4> {
    let (pfx, rest) = s.split_once('=')?;
    let (port, mac) = rest.split_once(',')?;
    let (addr, len) = pfx.split_once('/')?;
    let addr: std::net::Ipv4Addr = addr.parse().ok()?;
    let prefix = base::Prefix4::from_addr(addr, len.parse().ok()?).ok()?;
    Some(Route4 {
        prefix,
        port: port.parse().ok()?,
        next_hop_mac: parse_mac(mac)?,
    })
}

fn if_mac(ifname: &str) -> Result<[u8; 6], String> {
    let s = std::fs::read_to_string(format!("/sys/class/net/{ifname}/address"))
        .map_err(|e| format!("{ifname}: {e}"))?;
    parse_mac(s.trim()).ok_or_else(|| format!("{ifname}: bad MAC {s}"))
}

struct Args {
    mode: String,
    ports: Vec<String>,
    routes: Vec<Route4>,
    queues: u32,
    frames: u32,
    cfg: LoopConfig,
    duration: Option<Duration>,
}

fn parse_args() -> Result<Args, String> {
    let mut a = Args {
        mode: "xdp".into(),
        ports: vec![],
        routes: vec![],
        queues: 1,
        frames: 4096,
        cfg: LoopConfig::default(),
        duration: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(k) = it.next() {
        let mut v = || it.next().ok_or_else(|| format!("{k} needs a value"));
        let num = |s: String| s.parse::<u64>().map_err(|e| format!("{s}: {e}"));
        match k.as_str() {
            "--mode" => a.mode = v()?,
            "--port" => a.ports.push(v()?),
            "--route" => {
                let s = v()?;
                a.routes.push(
                    parse_route(&s)
                        .ok_or_else(|| format!("bad route {s} (want PFX/LEN=PORT,MAC)"))?,
                )
            }
            "--queues" => a.queues = num(v()?)? as u32,
            "--frames" => a.frames = num(v()?)? as u32,
            "--kp" => a.cfg.batch.kp = num(v()?)? as usize,
            "--kn" => a.cfg.batch.kn = num(v()?)? as usize,
            "--nap-us" => a.cfg.nap_us = num(v()?)? as u32,
            "--idle-spins" => a.cfg.idle_spins = num(v()?)? as u32,
            "--duration" => a.duration = Some(Duration::from_secs(num(v()?)?)),
            _ => return Err(format!("unknown argument {k}")),
        }
    }
    if a.ports.len() < 2 || a.queues == 0 {
        return Err("need at least two --port and --queues >= 1".into());
    }
    Ok(a)
}

/// One queue's forwarding loop over any device type.
fn worker<D: Device<Error = IoError>>(
    mut ports: Vec<D>,
    mut f: StaticForwarder,
    cfg: LoopConfig,
) -> Result<(FwdCounters, Vec<DevStats>), IoError> {
    fwd::run(&mut ports, &mut f, cfg, &STOP)?;
    Ok((f.counters, ports.iter().map(|p| p.stats()).collect()))
}

fn cpu_seconds() -> (f64, f64) {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let mut ru: libc::rusage = unsafe { core::mem::zeroed() };
    // SAFETY: valid pointer to a rusage for the call.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(ru.ru_utime), t(ru.ru_stime))
}

fn main() {
    let a = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("fwd: {e}");
            std::process::exit(2);
        }
    };
    // SAFETY: installing an async-signal-safe handler (one atomic store).
    unsafe {
        libc::signal(
            libc::SIGINT,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
        libc::signal(
            libc::SIGTERM,
            on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t,
        );
    }
    let macs: Vec<[u8; 6]> = match a.ports.iter().map(|p| if_mac(p)).collect() {
        Ok(m) => m,
        Err(e) => {
            eprintln!("fwd: {e}");
            std::process::exit(1);
        }
    };
    let f = match StaticForwarder::new(macs, a.routes.clone()) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("fwd: {e}");
            std::process::exit(2);
        }
    };
    let mode = a.mode.clone();
    let progs: Vec<Arc<XdpProgram>> = if mode.starts_with("xdp") {
        let m = if mode == "xdp-drv" {
            XdpMode::Driver
        } else {
            XdpMode::Skb
        };
        match a
            .ports
            .iter()
            .map(|p| XdpProgram::attach(p, m, a.queues))
            .collect()
        {
            Ok(v) => v,
            Err(e) => {
                eprintln!("fwd: attach XDP: {e}");
                std::process::exit(1);
            }
        }
    } else {
        Vec::new()
    };
    let mut handles = Vec::new();
    for q in 0..a.queues {
        let frames = a.frames;
        let (f, cfg, ports, progs, mode) = (
            f.clone(),
            a.cfg,
            a.ports.clone(),
            progs.clone(),
            mode.clone(),
        );
        handles.push(std::thread::spawn(
            move || -> Result<(FwdCounters, Vec<DevStats>), IoError> {
                if mode == "packet" {
                    let mut devs = Vec::new();
                    for (i, p) in ports.iter().enumerate() {
                        let mut c = PacketConfig::new(p);
                        c.fanout = Some(Fanout {
                            group: 0x7e00 + i as u16,
                            mode: FanoutMode::Hash,
                        });
                        devs.push(PacketSocket::open(&c)?);
                    }
                    worker(devs, f, cfg)
                } else {
                    let xc = XskConfig {
                        frame_count: frames,
                        ring_size: (frames / 2).max(64),
                        ..XskConfig::new(q)
                    };
                    let mut devs = progs
                        .iter()
                        .map(|pr| XskSocket::open(pr, &xc))
                        .collect::<Result<Vec<_>, _>>()?;
                    let mut f = f;
                    fwd::run(&mut devs, &mut f, cfg, &STOP)?;
                    for (i, d) in devs.iter().enumerate() {
                        println!("fwd: queue {q} port {i} kernel {:?}", d.kernel_stats());
                    }
                    Ok((f.counters, devs.iter().map(|p| p.stats()).collect()))
                }
            },
        ));
    }
    let start = Instant::now();
    println!(
        "fwd: running mode={mode} queues={} kp={} kn={}",
        a.queues, a.cfg.batch.kp, a.cfg.batch.kn
    );
    while !STOP.load(Ordering::Relaxed) && handles.iter().any(|h| !h.is_finished()) {
        if a.duration.is_some_and(|d| start.elapsed() >= d) {
            STOP.store(true, Ordering::Relaxed);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    STOP.store(true, Ordering::Relaxed);
    let mut total = FwdCounters::default();
    let mut dev = DevStats::default();
    let mut failed = false;
    for h in handles {
        match h.join() {
            Ok(Ok((c, s))) => {
                total.add(&c);
                for d in s {
                    dev.rx += d.rx;
                    dev.tx_kicks += d.tx_kicks;
                    dev.rx_empty_polls += d.rx_empty_polls;
                }
            }
            Ok(Err(e)) => {
                eprintln!("fwd: worker: {e}");
                failed = true;
            }
            Err(_) => failed = true,
        }
    }
    let (u, s) = cpu_seconds();
    println!(
        "fwd: forwarded={} rx={} tx_full={} no_route={} not_ipv4={} bad_header={} ttl_expired={} tx_kicks={} empty_polls={} cpu_user_s={u:.3} cpu_sys_s={s:.3} wall_s={:.3}",
        total.forwarded,
        dev.rx,
        total.tx_full,
        total.no_route,
        total.not_ipv4,
        total.bad_header,
        total.ttl_expired,
        dev.tx_kicks,
        dev.rx_empty_polls,
        start.elapsed().as_secs_f64()
    );
    if failed {
        std::process::exit(1);
    }
}
