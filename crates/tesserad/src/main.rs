//! tesserad: the Tessera BGP daemon. Wiring only: arguments, logging, and a
//! call into `bgp_speaker::daemon`; with a `[dataplane]` section, also the
//! forwarding plane of crate `fib` (see `dataplane.rs`); with `[cluster]`,
//! BFD to the other nodes driving the fabric's live set (`liveness.rs`).

mod alloc;
mod dataplane;
mod liveness;
mod logging;
mod vr;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

/// The Tessera BGP daemon.
#[derive(Parser, Debug)]
#[command(name = "tesserad", version, about)]
struct Args {
    /// Configuration file (TOML, see docs/config.md).
    #[arg(
        short = 'c',
        long = "config",
        default_value = "/etc/tessera/tesserad.toml"
    )]
    config: PathBuf,
    /// Only check the configuration and exit (0 when valid).
    #[arg(short = 'p', long = "check")]
    check: bool,
    /// Log filter (tracing `EnvFilter` syntax); overrides `[log] level`
    /// and $RUST_LOG.
    #[arg(long)]
    log: Option<String>,
    /// Run only the forwarding plane of `[dataplane]`, fed by a tesserad
    /// over `[dataplane] feed_socket`.
    #[arg(long)]
    dataplane: bool,
    /// This start follows a restart of tesserad (killed or stopped):
    /// announce the Restart State bit of graceful restart (RFC 4724), and
    /// hold back routes and End-of-RIB until the neighbours' End-of-RIB
    /// or `router.select_defer_time`. With `[dataplane] kernel = true`
    /// the kernel routes the previous run left are kept, and those not
    /// selected again are swept when the deferral ends.
    #[arg(short = 'R', long = "graceful-restart")]
    graceful_restart: bool,
    /// Print the manual page tesserad(8) (roff) and exit; the .deb
    /// (scripts/deb) installs it.
    #[arg(long, hide = true)]
    man: bool,
    /// Print the built-in element graph of `[dataplane]` for this
    /// configuration (docs/elements.md) and exit: the start of an
    /// operator's graph (`[dataplane] graph`).
    #[arg(long = "print-graph")]
    print_graph: bool,
}

fn main() -> ExitCode {
    let args = Args::parse();
    if args.man {
        return print_man();
    }
    if args.check {
        let graph = config::load(&args.config).ok().map_or(Ok(()), |c| {
            vr::check(&c)?;
            c.dataplane.as_ref().map_or(Ok(()), dataplane::check)
        });
        if let Err(e) = graph {
            eprintln!("tesserad: {e}");
            return ExitCode::FAILURE;
        }
        return match bgp_speaker::daemon::check(&args.config) {
            Ok(summary) => {
                println!("{summary}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tesserad: {e}");
                ExitCode::FAILURE
            }
        };
    }
    // The daemon reads the file again; here only `[dataplane]` and
    // `[cluster]` (the fabric, a port of the dataplane) matter.
    let (dp, cluster) = match config::load(&args.config) {
        Ok(c) => {
            // What tesserad cannot run with virtual routers yet.
            if let Err(e) = vr::check(&c) {
                eprintln!("tesserad: {e}");
                return ExitCode::FAILURE;
            }
            (c.dataplane, c.cluster)
        }
        Err(e) => {
            eprintln!("tesserad: {e}");
            return ExitCode::FAILURE;
        }
    };
    if args.print_graph {
        let Some(d) = dp else {
            eprintln!("tesserad: --print-graph needs a [dataplane] section");
            return ExitCode::FAILURE;
        };
        return match dataplane::print_graph(&d) {
            Ok(g) => {
                print!("{g}");
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("tesserad: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.dataplane {
        let Some(d) = dp else {
            eprintln!("tesserad: --dataplane needs a [dataplane] section");
            return ExitCode::FAILURE;
        };
        return match dataplane::run_separate(&d) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("tesserad: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let mut hooks = bgp_speaker::daemon::Hooks {
        logging: Some(logging::init),
        hangup: Some(logging::reopen),
        notify: Some(sd_notify_state),
        watchdog: watchdog_period(),
        graceful_restart: args.graceful_restart,
        // `[api]`: GoBGP's gRPC API (crate `api`).
        api: Some(api::serve),
        ..Default::default()
    };
    let mut running = None;
    if let Some(d) = &dp {
        match dataplane::start(d, cluster.as_ref(), args.graceful_restart) {
            Ok((r, tx, vrs)) => {
                hooks.best_feed = Some(tx);
                hooks.views = vrs.as_ref().map(vr::Vrs::registry);
                hooks.forwarding_kept = Some(dataplane::forwarding_kept(d, &r));
                if let dataplane::Running::InProcess(dp) = &r {
                    hooks.dataplane = Some(std::sync::Arc::new(
                        dataplane::Hook::new(dp, d, cluster.as_ref()).with_vrs(vrs),
                    ));
                }
                // Config validation: `[cluster]` runs in this process.
                if let (Some(k), dataplane::Running::InProcess(dp)) = (&cluster, &r) {
                    match liveness::start(k, dp) {
                        Ok(events) => {
                            hooks.bfd_events = Some(events);
                            hooks.bfd_sessions = liveness::sessions(k);
                        }
                        Err(e) => {
                            eprintln!("tesserad: cluster liveness: {e}");
                            return ExitCode::FAILURE;
                        }
                    }
                }
                running = Some(r);
            }
            Err(e) => {
                eprintln!("tesserad: {e}");
                return ExitCode::FAILURE;
            }
        }
    }
    // A panic while the daemon shuts down must not lose the dataplane's
    // counters (nor leave its threads running): catch it, stop, report.
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        bgp_speaker::daemon::run_with(&args.config, args.log.as_deref(), hooks)
    }))
    .unwrap_or_else(|_| Err("the daemon panicked".into()));
    if let Some(dataplane::Running::InProcess(dp)) = running {
        // The liveness thread holds it only weakly (an upgrade lasts one
        // set_node_live): stop it here, or, in that instant, when the
        // thread lets go (Drop stops it, without the report).
        match std::sync::Arc::try_unwrap(dp) {
            Ok(d) => dataplane::print_report(&d.stop()),
            Err(_) => eprintln!("tesserad: dataplane busy with a liveness change; no report"),
        }
    }
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tesserad: {e}");
            ExitCode::FAILURE
        }
    }
}

/// systemd `Type=notify` (sd_notify(3)): readiness, reloads, stopping and
/// the watchdog pings. Outside systemd (`NOTIFY_SOCKET` unset) nothing is
/// sent.
fn sd_notify_state(n: bgp_speaker::daemon::Notify) {
    use bgp_speaker::daemon::Notify;
    use sd_notify::NotifyState;
    let r = match n {
        Notify::Ready => sd_notify::notify(false, &[NotifyState::Ready]),
        Notify::Reloading => match NotifyState::monotonic_usec_now() {
            Ok(now) => sd_notify::notify(false, &[NotifyState::Reloading, now]),
            Err(_) => sd_notify::notify(false, &[NotifyState::Reloading]),
        },
        Notify::Alive => sd_notify::notify(false, &[NotifyState::Watchdog]),
        Notify::Stopping => sd_notify::notify(false, &[NotifyState::Stopping]),
    };
    if let Err(e) = r {
        eprintln!("tesserad: sd_notify: {e}");
    }
}

/// Half of systemd's `WatchdogSec` (`WATCHDOG_USEC`, for this process),
/// as sd_watchdog_enabled(3) advises; `None` without a watchdog.
fn watchdog_period() -> Option<std::time::Duration> {
    let mut usec = 0u64;
    sd_notify::watchdog_enabled(false, &mut usec).then(|| {
        std::time::Duration::from_micros(usec / 2).max(std::time::Duration::from_millis(10))
    })
}

/// tesserad(8) from the argument definitions above.
fn print_man() -> ExitCode {
    use clap::CommandFactory;
    let cmd = Args::command().about(
        "The Tessera BGP daemon: a BGP-4 speaker with a parallel RIB, an \
         optional forwarding plane ([dataplane]) and cluster fabric ([cluster]). \
         Configuration: tesserad.toml(5); control: tessera(1). SIGHUP reloads \
         the configuration and reopens log.file; SIGTERM and SIGINT stop it \
         with a Cease to every peer.",
    );
    let mut out = Vec::new();
    if let Err(e) = clap_mangen::Man::new(cmd)
        .section("8")
        .manual("Tessera")
        .render(&mut out)
    {
        eprintln!("tesserad: {e}");
        return ExitCode::FAILURE;
    }
    use std::io::Write;
    match std::io::stdout().write_all(&out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(_) => ExitCode::FAILURE,
    }
}
