//! The AF_PACKET edge: one [`io::packet::PacketSocket`] (TPACKET_V3 RX and
//! TX rings, the dataplane's own) on an interface of a host namespace,
//! sending paced (or as fast as the ring takes) generator frames and
//! receiving every frame on the same socket (our own transmissions do not
//! come back: `PACKET_IGNORE_OUTGOING`).
//!
//! It sleeps in `ppoll` on the socket until the next send is due, a
//! receive block is retired (1 ms), or the TX ring has room again; it
//! never spins. A progress line goes to stderr once a second.

use std::net::Ipv4Addr;

use io::packet::{PacketConfig, PacketSocket};
use pkt::{Batch, Device, Pool};

use crate::account::{Pacer, RxStats};
use crate::payload::{self, FlowSpec, ParseError, Payload};
use crate::report::Report;

/// What one generator process does.
#[derive(Clone, Debug)]
pub struct Config {
    pub iface: String,
    /// Our MAC; `None`: the interface's.
    pub src_mac: Option<[u8; 6]>,
    /// The next hop's MAC (the router port).
    pub dst_mac: [u8; 6],
    pub src: Ipv4Addr,
    /// Destinations; flow i goes to `dsts[i % len]`. Empty: receive only.
    pub dsts: Vec<Ipv4Addr>,
    pub flows: u32,
    /// High 16 bits of every flow id (unique per sender in a run).
    pub sender_id: u16,
    /// Frame size with FCS, 64..=1518.
    pub size: usize,
    /// Packets per second over all flows; 0 = as fast as possible.
    pub rate_pps: u64,
    /// CLOCK_MONOTONIC ns at which sending starts (0: now), so that the
    /// processes of one run start together.
    pub start_ns: u64,
    pub duration_ns: u64,
    /// How long to keep receiving after the last send.
    pub drain_ns: u64,
    /// Receive-count bins (for the failure experiment).
    pub bin_ns: u64,
    pub progress: bool,
}

/// CLOCK_MONOTONIC in ns (shared by every network namespace).
pub fn mono_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `ts` is.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// `aa:bb:cc:dd:ee:ff`.
pub fn parse_mac(s: &str) -> Option<[u8; 6]> {
    let mut m = [0u8; 6];
    let mut it = s.trim().split(':');
    for b in &mut m {
        *b = u8::from_str_radix(it.next()?, 16).ok()?;
    }
    it.next().is_none().then_some(m)
}

fn iface_mac(iface: &str) -> Result<[u8; 6], String> {
    let p = format!("/sys/class/net/{iface}/address");
    let s = std::fs::read_to_string(&p).map_err(|e| format!("{p}: {e}"))?;
    parse_mac(&s).ok_or_else(|| format!("{p}: not a MAC: {s}"))
}

/// Sleeps until `fd` is readable (or writable with `out`) or `timeout_ns`.
fn wait(fd: i32, out: bool, timeout_ns: u64) {
    let mut pfd = libc::pollfd {
        fd,
        events: libc::POLLIN | if out { libc::POLLOUT } else { 0 },
        revents: 0,
    };
    let ts = libc::timespec {
        tv_sec: (timeout_ns / 1_000_000_000) as libc::time_t,
        tv_nsec: (timeout_ns % 1_000_000_000) as libc::c_long,
    };
    // SAFETY: one valid pollfd and a valid timespec for the call; no
    // signal mask.
    unsafe {
        libc::ppoll(&mut pfd, 1, &ts, std::ptr::null());
    }
}

/// Runs the generator; the report when the drain time is over.
pub fn run(cfg: &Config) -> Result<Report, String> {
    let src_mac = match cfg.src_mac {
        Some(m) => m,
        None => iface_mac(&cfg.iface)?,
    };
    let mut sock = PacketSocket::open(&PacketConfig::new(&cfg.iface))
        .map_err(|e| format!("AF_PACKET on {}: {e:?}", cfg.iface))?;
    let fd = sock
        .poll_fd()
        .ok_or("the AF_PACKET socket has no descriptor")?;
    let pool = Pool::new(4096);
    let mut txb = Batch::new();
    let mut rxb = Batch::new();
    // The flow index is the low 16 bits of the flow id.
    let nflows = if cfg.dsts.is_empty() {
        0
    } else {
        cfg.flows.min(1 << 16)
    };
    let templates: Vec<Vec<u8>> = (0..nflows)
        .map(|i| {
            payload::template(
                &FlowSpec {
                    src_mac,
                    dst_mac: cfg.dst_mac,
                    src: cfg.src,
                    dst: cfg.dsts[i as usize % cfg.dsts.len()],
                    sport: 1024 + (i % 60_000) as u16,
                    dport: payload::DST_PORT,
                },
                cfg.size,
            )
        })
        .collect();
    let mut seqs = vec![0u32; nflows as usize];
    let now = mono_ns();
    let start = cfg.start_ns.max(now);
    let end_send = start + cfg.duration_ns;
    let end = end_send + cfg.drain_ns;
    let mut pacer = Pacer::new(cfg.rate_pps, start);
    let mut rx = RxStats::new(start, cfg.bin_ns);
    let mut rep = Report {
        iface: cfg.iface.clone(),
        sender_id: cfg.sender_id,
        flows: nflows,
        size: cfg.size.clamp(payload::MIN_SIZE, payload::MAX_SIZE),
        rate_pps: cfg.rate_pps,
        ..Default::default()
    };
    let (mut first_send, mut last_send) = (0u64, 0u64);
    let mut next_flow = 0usize;
    let mut next_progress = start + 1_000_000_000;
    let mut last = (0u64, 0u64, start);
    loop {
        let now = mono_ns();
        if now >= end {
            break;
        }
        // Receive everything there is.
        loop {
            let n = sock.rx_burst(&pool, &mut rxb, 256);
            let t = mono_ns();
            for p in rxb.drain() {
                match payload::parse(p.data()) {
                    Ok(pl) => rx.on_packet(t, &pl),
                    Err(ParseError::BadChecksum) => rx.bad_checksum += 1,
                    Err(_) => rx.foreign += 1,
                }
            }
            if n < 256 {
                break;
            }
        }
        let sending = nflows > 0 && now >= start && now < end_send;
        if sending {
            if txb.is_empty() {
                let due = pacer.due(now).min(256);
                let t = mono_ns();
                let mut made = 0;
                for _ in 0..due {
                    let f = next_flow;
                    next_flow = (next_flow + 1) % templates.len();
                    let Some(mut p) = pool.alloc_from(&templates[f]) else {
                        break;
                    };
                    payload::stamp(
                        p.data_mut(),
                        &Payload {
                            flow: (u32::from(cfg.sender_id) << 16) | f as u32,
                            seq: seqs[f],
                            ts_ns: t,
                        },
                    );
                    seqs[f] = seqs[f].wrapping_add(1);
                    if txb.push(p).is_err() {
                        break;
                    }
                    made += 1;
                }
                pacer.sent(made);
            }
            if !txb.is_empty() {
                let n = sock.tx_burst(&mut txb);
                sock.flush();
                rep.sent += n as u64;
                if n > 0 {
                    last_send = mono_ns();
                    if first_send == 0 {
                        first_send = now;
                    }
                }
                if !txb.is_empty() {
                    rep.tx_ring_full += 1;
                }
            }
        }
        if cfg.progress && now >= next_progress {
            let dt = (now - last.2) as f64 / 1e9;
            eprintln!(
                "trafgen {}: {:>5.1} s  tx {} ({:.1} kpps)  rx {} ({:.1} kpps)  reordered {}  gaps {}",
                cfg.iface,
                (now - start) as f64 / 1e9,
                rep.sent,
                (rep.sent - last.0) as f64 / dt / 1e3,
                rx.received,
                (rx.received - last.1) as f64 / dt / 1e3,
                rx.reordered,
                rx.seq_gaps(),
            );
            last = (rep.sent, rx.received, now);
            next_progress += 1_000_000_000;
        }
        // Sleep until something is due.
        let now = mono_ns();
        let mut until = end.min(next_progress.max(now));
        let mut out = false;
        if nflows > 0 && now < end_send {
            if now < start {
                until = until.min(start);
            } else if !txb.is_empty() {
                // The ring is full: wake when it has room.
                out = true;
                until = until.min(now + 1_000_000);
            } else if let Some(n) = pacer.next_ns() {
                until = until.min(n.max(now)).min(end_send);
            } else {
                until = now; // unpaced: send again at once
            }
        }
        if until > now {
            wait(fd, out, until - now);
        }
    }
    sock.flush();
    if first_send > 0 {
        rep.send_s = (last_send.max(first_send) - first_send) as f64 / 1e9;
        // A run of one burst still has a duration: the time it was due.
        if rep.send_s == 0.0 {
            rep.send_s = cfg.duration_ns as f64 / 1e9;
        }
    }
    rep.pacer_late = pacer.late;
    rep.set_rx(&rx);
    Ok(rep)
}
