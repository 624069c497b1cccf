//! The BGP replay client: real BGP sessions from many source addresses to a
//! device under test (DUT), each sending a pre-encoded feed of UPDATEs, and
//! a sink that stands in for a DUT which costs nothing.
//!
//! * [`workload`] builds what each peer sends: synthetic tables from
//!   [`sim::SynthRib`] (shared or unique prefixes), encoded once, packed by
//!   attribute set. MRT RIB dumps ([`mrt_rib`]) and update traces
//!   ([`mrt_updates`]) feed the same [`Feed`]; [`mrt_input`] reads any
//!   number of either kind into one workload (`tessera replay --mrt`).
//! * [`session`] opens one session: bind the source, connect, OPEN with
//!   4-octet AS and multiprotocol IPv4/IPv6 unicast, KEEPALIVE.
//! * [`sender`] drives all sessions in one of the [`SenderVariant`]s
//!   (only one thread per peer so far), then holds them up with keepalives
//!   while reading and discarding whatever the DUT sends.
//! * [`sink`] accepts sessions and counts prefixes and End-of-RIB markers.
//! * [`stats`] has the counters the per-second report reads.
//!
//! Every wait is bounded: connect, OPEN, stalled writes (the DUT stopped
//! reading) and silence beyond the hold time all end a session with a
//! [`ReplayError`] that names the step.

mod attrs;
mod conn;
mod driver;
pub mod dut;
pub mod error;
pub mod feed;
pub mod monitor;
pub mod mrt_input;
pub mod mrt_rib;
pub mod mrt_updates;
mod nexthop;
mod pacing;
mod pack;
pub mod run;
pub mod schedule;
pub mod sender;
pub mod session;
pub mod sink;
pub mod stats;
pub mod workload;

pub use error::{Phase, ReplayError};
pub use monitor::{Monitor, MonitorConfig, MonitorMode, MonitorSnapshot, MonitorStats};
pub use mrt_input::{InputKind, InputOptions, LoadError};
pub use mrt_rib::{
    full_feeds_workload, rib_workload, FullFeedsSummary, RibOptions, RibPeer, RibSummary,
};
pub use mrt_updates::{update_workload, TracePeer, UpdateOptions, UpdateSummary};
pub use run::{run, Progress, RunConfig, RunResult, Sample};
pub use schedule::{schedule, Mix, Order};
pub use sender::{start, step_ases, Pacing, Replay, ReplayConfig, SenderVariant};
pub use session::{Negotiated, SessionConfig};
pub use sink::{Sink, SinkConfig, SinkSnapshot, SinkStats};
pub use stats::{PeerState, ReplayStats, Snapshot};
pub use workload::{
    Event, EventKind, Feed, FeedParams, MsgInfo, Sharing, Source, Step, SyntheticSpec, Workload,
};

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Arc;

/// Parses `PEERSxPREFIXES`, e.g. `10x100000` (underscores allowed).
pub fn parse_synthetic(s: &str) -> Result<(usize, usize), ReplayError> {
    let bad = ReplayError::Config("expected PEERSxPREFIXES, e.g. 10x100000");
    let (a, b) = s.split_once(['x', 'X']).ok_or(bad)?;
    let num = |t: &str| t.trim().replace('_', "").parse::<usize>().map_err(|_| bad);
    let (p, n) = (num(a)?, num(b)?);
    if p == 0 {
        return Err(ReplayError::Config("need at least one peer"));
    }
    Ok((p, n))
}

/// `count` consecutive addresses starting at `base` (127.0.0.2,
/// 127.0.0.3, ...). Fails rather than wrap.
pub fn source_addresses(base: IpAddr, count: usize) -> Result<Vec<IpAddr>, ReplayError> {
    let n = u128::try_from(count).map_err(|_| ReplayError::Config("too many peers"))?;
    match base {
        IpAddr::V4(a) => {
            let b = u32::from(a);
            let last = u128::from(b) + n;
            if last > u128::from(u32::MAX) + 1 {
                return Err(ReplayError::Config(
                    "source addresses run past 255.255.255.255",
                ));
            }
            Ok((0..count as u32)
                .map(|i| IpAddr::V4(Ipv4Addr::from(b + i)))
                .collect())
        }
        IpAddr::V6(a) => {
            let b = u128::from(a);
            b.checked_add(n)
                .ok_or(ReplayError::Config("source addresses overflow"))?;
            Ok((0..n).map(|i| IpAddr::V6(Ipv6Addr::from(b + i))).collect())
        }
    }
}

/// Sets `flag` on the first Ctrl-C (SIGINT) and exits the process on the
/// second, so a stuck shutdown can still be interrupted.
pub fn stop_on_ctrl_c(flag: Arc<AtomicBool>) -> Result<(), ReplayError> {
    stop_on_signals(flag, || {})
}

static EXIT_GATE: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Call before returning from `main` after [`stop_on_signals`]: when a
/// second signal is being handled, blocks until its cleanup has run and
/// the process exits with 128 + the signal (so the orderly path, which
/// the first signal started, cannot end the process first with its own
/// status while the namespaces are still being removed).
pub fn signal_exit_gate() {
    drop(EXIT_GATE.lock().unwrap_or_else(|e| e.into_inner()));
}

/// Sets `flag` on the first SIGINT, SIGTERM or SIGHUP (a terminal closed,
/// `kill`, `timeout`, systemd stopping a unit: all mean "stop and clean
/// up"); on the second runs `last_cleanup` and exits with 128 + the
/// signal number, so a stuck shutdown can still be interrupted without
/// leaving what `last_cleanup` removes (the bench's namespaces) behind.
pub fn stop_on_signals(
    flag: Arc<AtomicBool>,
    last_cleanup: impl FnOnce() + Send + 'static,
) -> Result<(), ReplayError> {
    use tokio::signal::unix::{signal, SignalKind};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ReplayError::io(Phase::Hold, &e))?;
    // Registered here, before returning, so that a signal arriving right
    // after this call is already caught (not the default action: exit).
    let (mut int, mut term, mut hup) = rt
        .block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::interrupt())?,
                signal(SignalKind::terminate())?,
                signal(SignalKind::hangup())?,
            ))
        })
        .map_err(|e| ReplayError::io(Phase::Hold, &e))?;
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            rt.block_on(async {
                for n in 0.. {
                    let sig = tokio::select! {
                        _ = int.recv() => libc::SIGINT,
                        _ = term.recv() => libc::SIGTERM,
                        _ = hup.recv() => libc::SIGHUP,
                    };
                    if n == 0 {
                        flag.store(true, Relaxed);
                        continue;
                    }
                    // Held until exit: the main thread, finishing its
                    // orderly stop meanwhile, waits in `signal_exit_gate`
                    // instead of exiting before the cleanup is done.
                    let _gate = EXIT_GATE.lock().unwrap_or_else(|e| e.into_inner());
                    last_cleanup();
                    std::process::exit(128 + sig);
                }
            })
        })
        .map_err(|e| ReplayError::io(Phase::Hold, &e))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn synthetic_spec_and_sources_parse() {
        assert_eq!(parse_synthetic("10x100000"), Ok((10, 100_000)));
        assert_eq!(parse_synthetic("2X1_000"), Ok((2, 1000)));
        assert!(parse_synthetic("10").is_err());
        assert!(parse_synthetic("0x5").is_err());
        assert!(parse_synthetic("ax5").is_err());
        let s = source_addresses("127.0.0.254".parse().unwrap(), 3).unwrap();
        assert_eq!(s[2], "127.0.1.0".parse::<IpAddr>().unwrap());
        assert!(source_addresses("255.255.255.255".parse().unwrap(), 2).is_err());
        assert_eq!(
            source_addresses("255.255.255.255".parse().unwrap(), 1)
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn variants_parse() {
        assert_eq!("thread-per-peer".parse(), Ok(SenderVariant::ThreadPerPeer));
        assert_eq!(
            "round-robin:8".parse(),
            Ok(SenderVariant::RoundRobin { batch: 8 })
        );
        assert!("round-robin:0".parse::<SenderVariant>().is_err());
        assert!("fastest".parse::<SenderVariant>().is_err());
    }
}
