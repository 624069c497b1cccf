//! `tessera trafgen`: one traffic generator (sender and receiver) on an
//! interface (wiring; the logic is crate `trafgen`). `tessera cluster
//! bench` runs one in each external host namespace.

use std::net::Ipv4Addr;
use std::process::ExitCode;

use clap::Parser;

use super::CmdResult;

#[derive(Parser)]
pub struct Args {
    /// The interface to send and receive on (AF_PACKET; needs root).
    #[arg(long)]
    iface: String,
    /// MAC of the next hop (the router port) the frames go to.
    #[arg(long)]
    dst_mac: String,
    /// Our IPv4 source address.
    #[arg(long)]
    src: Ipv4Addr,
    /// Destination addresses (repeat or comma-separate); flow i goes to
    /// the (i mod n)-th. None: receive only.
    #[arg(long, value_delimiter = ',')]
    dst: Vec<Ipv4Addr>,
    /// Flows (5-tuples: source ports 1024.. to UDP port 5001).
    #[arg(long, default_value_t = 64)]
    flows: u32,
    /// Sender id: the high 16 bits of every flow id (unique per sender).
    #[arg(long, default_value_t = 0)]
    sender_id: u16,
    /// Frame size on the wire with FCS, 64..=1518.
    #[arg(long, default_value_t = 64)]
    size: usize,
    /// Packets per second over all flows; 0 = as fast as the ring takes.
    #[arg(long, default_value_t = 1000)]
    rate: u64,
    /// Seconds of sending.
    #[arg(long, default_value_t = 5.0)]
    duration: f64,
    /// Milliseconds of receiving after the last send.
    #[arg(long, default_value_t = 500)]
    drain_ms: u64,
    /// Start sending at this CLOCK_MONOTONIC time, ns (0: now): the
    /// generators of one run start together.
    #[arg(long, default_value_t = 0)]
    start_mono_ns: u64,
    /// Receive-count bin, ms.
    #[arg(long, default_value_t = 10.0)]
    bin_ms: f64,
    /// No progress line on stderr.
    #[arg(long)]
    quiet: bool,
}

pub fn run(a: Args) -> CmdResult {
    if !(0.0..=3600.0).contains(&a.duration) || !(0.01..=10_000.0).contains(&a.bin_ms) {
        return Err("--duration 0..=3600 s, --bin-ms 0.01..=10000".into());
    }
    if !(trafgen::payload::MIN_SIZE..=trafgen::payload::MAX_SIZE).contains(&a.size) {
        return Err("--size 64..=1518".into());
    }
    if !(1..=65_536).contains(&a.flows) {
        // The flow index is the low 16 bits of the flow id.
        return Err("--flows 1..=65536".into());
    }
    let cfg = trafgen::edge::Config {
        iface: a.iface,
        src_mac: None,
        dst_mac: trafgen::edge::parse_mac(&a.dst_mac).ok_or("--dst-mac: aa:bb:cc:dd:ee:ff")?,
        src: a.src,
        dsts: a.dst,
        flows: a.flows,
        sender_id: a.sender_id,
        size: a.size,
        rate_pps: a.rate,
        start_ns: a.start_mono_ns,
        duration_ns: (a.duration * 1e9) as u64,
        drain_ns: a.drain_ms * 1_000_000,
        bin_ns: (a.bin_ms * 1e6) as u64,
        progress: !a.quiet,
    };
    let rep = trafgen::edge::run(&cfg)?;
    println!("{}", rep.to_json());
    Ok(ExitCode::SUCCESS)
}
