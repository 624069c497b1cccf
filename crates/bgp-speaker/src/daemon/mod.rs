//! Daemon assembly: the tokio runtime for sessions, the RIB thread, the
//! control socket, `/metrics`, signals and reload. Everything here is
//! wiring; the behaviour lives in [`crate::rib`], the session tasks and the
//! pure crates.

pub mod control;
pub mod merge;
pub mod metrics;
pub mod query;
mod reload;
mod spec;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bgp_rib::PeerId;
use bgp_wire::consts::notify;
use bgp_wire::NotificationMessage;
use tokio::sync::mpsc;
use tracing::{error, info, warn};

use crate::msg::RibTx;
use crate::pipeline::{Mode, Pipeline};
use crate::rib::RibMsg;
use crate::rib::{self, PeerEntry, PeerHandle, RibState};
use crate::sess::{spawn_session_with, Registry, SessionParams};
pub use spec::{NeighborSpec, Spec};

/// `tesserad -p`: loads and validates the configuration, compiles its
/// policies, and describes it in one line.
pub fn check(path: &Path) -> Result<String, String> {
    let spec = Spec::load(path)?;
    Ok(format!(
        "{}: configuration OK ({} neighbors, {} static routes, {} policies)",
        path.display(),
        spec.neighbors.len(),
        spec.statics.len(),
        spec.policy_count
    ))
}

/// What reload needs to reach: the shared parts of the running daemon.
pub(crate) struct Running {
    pub path: PathBuf,
    pub spec: Spec,
    /// Neighbour name -> the id of its current session.
    pub ids: std::collections::BTreeMap<String, PeerId>,
    pub next_id: u16,
    pub rt: tokio::runtime::Handle,
    /// What sessions send through (split by shard).
    pub rib: RibTx,
    /// One channel per RIB thread, for control jobs.
    pub rib_txs: Vec<mpsc::Sender<RibMsg>>,
    pub registry: Registry,
    pub last_reload_ms: Option<u64>,
    /// Where sessions record received messages (`[mrt] updates`).
    pub mrt: Option<crate::mrt_dump::MrtSink>,
    /// BMP export (`[bmp]`), reported to by sessions and RIB threads.
    pub bmp: Option<crate::bmp::BmpHub>,
    /// Neighbour name -> the command channel of its current session.
    pub cmds: std::collections::BTreeMap<String, mpsc::UnboundedSender<crate::msg::SessionCmd>>,
    /// The BFD task, started with the first neighbour that has `bfd = true`.
    pub bfd: SharedBfd,
    /// Who hears BFD state changes ([`Hooks::bfd_events`]).
    pub bfd_events: Option<mpsc::UnboundedSender<crate::bfd::BfdEvent>>,
    /// The sessions of [`Hooks::bfd_sessions`], by peer: they outlive a
    /// neighbour at the same address that has no (or no longer) `bfd`.
    pub bfd_pinned: std::collections::BTreeMap<std::net::IpAddr, crate::bfd::BfdPeer>,
    /// The forwarding plane's part of a reload ([`Hooks::dataplane`]).
    pub dataplane: Option<Arc<dyn DataplaneHook>>,
    /// Names of the neighbours added at run time (gRPC `AddPeer`): kept in
    /// [`Spec::config`] beside the file's, and kept over a reload
    /// ([`reload::reload`]).
    pub api_neighbors: std::collections::BTreeSet<String>,
}

/// The BFD task's handle, once started; shared with the CLI handler.
pub type SharedBfd = Arc<Mutex<Option<crate::bfd::BfdHandle>>>;

impl Running {
    /// Starts the session task of one neighbour under a fresh id and
    /// registers it with the RIB thread. With `defer`, the session waits
    /// (administratively down, refusing connections) for a
    /// [`crate::msg::SessionCmd::Start`]: a neighbour added to running RIB
    /// threads must not come up before every one of them knows it.
    pub(crate) fn start_neighbor(
        &mut self,
        n: &NeighborSpec,
        defer: bool,
    ) -> Option<(PeerId, PeerHandle)> {
        let id = PeerId(self.next_id);
        self.next_id = self.next_id.checked_add(1)?;
        let params = SessionParams {
            peer: id,
            name: n.meta.name.clone(),
            remote: n.remote,
            local: n.local,
            fsm: n.fsm.clone(),
            md5_password: n.md5_password.clone(),
            ttl: n.ttl,
            ttl_security: n.ttl_security,
            start: n.enabled && !defer,
            confed: n.meta.confed_sender(),
        };
        let h = spawn_session_with(
            &self.rt,
            params,
            self.rib.clone(),
            &self.registry,
            self.mrt.clone(),
            self.bmp.clone(),
        );
        self.ids.insert(n.meta.name.clone(), id);
        self.cmds.insert(n.meta.name.clone(), h.cmd.clone());
        self.bfd_sync(n);
        let mut entry = PeerEntry::new(n.meta.clone(), h.status.clone());
        entry.disabled = !n.enabled;
        Some((
            id,
            PeerHandle {
                entry,
                link: h.link(),
            },
        ))
    }
}

impl Running {
    /// The BFD task, started on first use.
    pub(crate) fn bfd_handle(&self) -> Option<crate::bfd::BfdHandle> {
        let mut slot = self.bfd.lock().ok()?;
        if slot.is_none() {
            match crate::bfd::start(&self.rt) {
                Ok(h) => {
                    if let Some(tx) = &self.bfd_events {
                        h.subscribe_with(tx.clone());
                    }
                    *slot = Some(h);
                }
                Err(e) => error!("cannot start BFD (UDP port 3784): {e}"),
            }
        }
        slot.clone()
    }

    /// Makes the BFD session of `n` match its configuration: added or
    /// updated with `bfd = true` (guarding the current BGP session when
    /// the neighbour is enabled), removed otherwise.
    pub(crate) fn bfd_sync(&mut self, n: &NeighborSpec) {
        let peer = n.remote.ip();
        let Some(b) = n.bfd else {
            if let Some(h) = self.bfd.lock().ok().and_then(|g| g.clone()) {
                match self.bfd_pinned.get(&peer) {
                    // A hook's session stays, without a BGP owner.
                    Some(p) => h.add(p.clone()),
                    None => h.remove(peer),
                }
            }
            return;
        };
        if let Some(h) = self.bfd_handle() {
            h.add(crate::bfd::BfdPeer {
                peer,
                local: n.local,
                config: crate::bfd::session_config(&b),
                neighbor: Some(n.meta.name.clone()),
                owner: if n.enabled {
                    self.cmds.get(&n.meta.name).cloned()
                } else {
                    None
                },
            });
        }
    }
}

/// How long the RIB threads may take for a BMP table dump or the counts.
const BMP_RIB_TIMEOUT: Duration = Duration::from_secs(120);

/// The BMP collectors' way to the RIB threads: control jobs on each,
/// answers concatenated (dump chunks); counts summed from what each
/// thread published (`rib/published.rs`).
fn bmp_access(ribs: Vec<mpsc::Sender<RibMsg>>) -> crate::bmp::RibAccess {
    let slots = crate::pipeline::published_slots(&ribs, BMP_RIB_TIMEOUT);
    let (r1, r2) = (ribs.clone(), ribs);
    crate::bmp::RibAccess {
        dump: Box::new(move |hub, views| {
            let hub = hub.clone();
            crate::pipeline::call_all(&r1, BMP_RIB_TIMEOUT, move |st| st.bmp_dump(&hub, views))
                .map(|parts| parts.into_iter().flatten().collect())
                .map_err(|e| format!("table dump: {e:?}"))
        }),
        // Statistics Reports sum what the RIB threads last published
        // (`rib/published.rs`): they never wait for a thread in a batch.
        counts: Box::new(move || {
            if slots.len() != r2.len() {
                return Err("statistics: a RIB thread published no counts".into());
            }
            let mut sum = crate::bmp::Counts::new();
            for p in crate::rib::published::read_all(&slots) {
                for (&a, &(i, l)) in &p.bmp {
                    let e = sum.entry(a).or_default();
                    e.0 += i;
                    e.1 += l;
                }
            }
            Ok(sum)
        }),
    }
}

/// Runs the daemon until SIGTERM/SIGINT. Returns an error (and starts
/// nothing) when the configuration is invalid.
pub fn run(path: &Path, log: Option<&str>) -> Result<(), String> {
    run_with(path, log, Hooks::default())
}

/// The forwarding plane as the daemon reaches it ([`Hooks::dataplane`];
/// tesserad's `[dataplane]`).
pub trait DataplaneHook: Send + Sync {
    /// `show dataplane` and the element lines of `/metrics`.
    fn show(&self) -> mgmt::proto::DataplaneInfo;
    /// On `configure` and SIGHUP, with the new configuration, before
    /// anything else is applied (`check`: only validate). An error aborts
    /// the reload, and nothing changes; the lines returned join the
    /// reload's messages.
    fn reload(&self, new: &config::Config, check: bool) -> Result<Vec<String>, String>;
}

/// What an embedding binary attaches to the daemon (wiring only).
#[derive(Default)]
pub struct Hooks {
    /// The forwarding plane: `show dataplane`, its `/metrics` lines, and
    /// its part of a reload (the operator's graph).
    pub dataplane: Option<Arc<dyn DataplaneHook>>,
    /// Follows the Loc-RIB's best routes: the whole table first, then the
    /// changes (see [`crate::fib_feed`]). `tesserad` uses it for its
    /// `[dataplane]`.
    pub best_feed: Option<crate::fib_feed::BestSender>,
    /// Views: the best routes among some neighbours' paths, each on its
    /// own channel (see [`crate::view_feed`]); `tesserad` feeds its
    /// virtual routers' FIBs with them. Registrations made before the
    /// start are installed in every RIB part before the first route.
    pub views: Option<Arc<crate::view_feed::ViewRegistry>>,
    /// Installs the log subscriber, given the filter the daemon settled on
    /// (`--log`, else `RUST_LOG`, else `log.level`) and the configuration
    /// (`[log]`: file, format, syslog). The library logs through `tracing`
    /// only; the binary decides where it goes.
    pub logging: Option<LogInit>,
    /// Called on SIGHUP before the configuration is read again: the
    /// binary reopens its log file there (after logrotate moved it).
    pub hangup: Option<fn()>,
    /// Hears the daemon's life-cycle (tesserad turns it into sd_notify(3)
    /// messages for systemd's `Type=notify` and watchdog).
    pub notify: Option<fn(Notify)>,
    /// Every this often, ask every RIB thread for a (no-op) answer; when
    /// all answer within the period, [`Notify::Alive`]. A RIB thread that
    /// is stuck thus stops the pings and systemd's watchdog restarts us.
    pub watchdog: Option<Duration>,
    /// This start is a graceful restart (`tesserad -R`, RFC 4724 §4.1):
    /// the graceful restart capabilities carry the Restart State bit, and
    /// the Forwarding State bit when there is no `[dataplane]` (forwarding
    /// is then not ours, so our restart did not disturb it) or per
    /// [`Self::forwarding_kept`]; export, the
    /// best-route feed and End-of-RIB wait for the neighbours' End-of-RIB
    /// or `router.select_defer_time`.
    pub graceful_restart: bool,
    /// With `graceful_restart` and a `[dataplane]`: the families (IPv4,
    /// IPv6) whose forwarding state the embedding binary kept across the
    /// restart (kernel routes adopted, forwarding by the kernel); their
    /// unicast graceful restart families get the Forwarding State bit.
    pub forwarding_kept: Option<(bool, bool)>,
    /// Hears every BFD session state change (see [`crate::bfd`]): for
    /// code that acts on liveness, such as a cluster's load-balancing set.
    pub bfd_events: Option<mpsc::UnboundedSender<crate::bfd::BfdEvent>>,
    /// BFD sessions that belong to no BGP neighbour (`owner` is ignored):
    /// liveness of other nodes, reported through `bfd_events` only.
    pub bfd_sessions: Vec<crate::bfd::BfdPeer>,
    /// Starts the gRPC API (crate `api`, wired by tesserad) when the
    /// configuration has `[api]`; it reaches the RIB only through the
    /// same [`control::Control`] the CLI socket uses. The returned guard
    /// lives as long as the daemon.
    pub api: Option<ApiInit>,
}

/// [`Hooks::api`].
pub type ApiInit = fn(
    Arc<control::Control>,
    &config::Api,
    &tokio::runtime::Handle,
) -> Result<Box<dyn std::any::Any + Send>, String>;

/// What [`Hooks::notify`] hears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notify {
    /// The listeners, the RIB threads and the control socket are up:
    /// sessions can start (systemd `READY=1`).
    Ready,
    /// A SIGHUP reload starts (`RELOADING=1`); `Ready` follows it.
    Reloading,
    /// Every RIB thread answered within the watchdog period (`WATCHDOG=1`).
    Alive,
    /// Shutting down (`STOPPING=1`).
    Stopping,
}

/// [`Hooks::logging`]: installs the subscriber for a filter and `[log]`.
pub type LogInit = fn(&str, &config::Config) -> Result<(), String>;

/// At most this many configured sessions share one session thread on a
/// machine of 2 CPUs or fewer ([`session_workers`]).
const FEW_SESSIONS: usize = 32;

/// The session threads of the sharded pipeline: as many as it has RIB
/// parts, up to the CPU count, at least 2; but one where two or more RIB
/// parts run on a machine of 2 CPUs or fewer with at most
/// [`FEW_SESSIONS`] configured sessions. There the RIB parts already take
/// the CPUs, and a second session thread only adds preemptions: one
/// session thread cut the default's CPU-s in (f) by 13 % (docs/BENCHMARKS.md,
/// "one session thread on two CPUs"); with 100 route-server clients one
/// thread writing to all of them was slower, hence the bound. One RIB part
/// (`threads = 1`) keeps two session threads, as measured there.
fn session_workers(parts: usize, cpus: usize, sessions: usize) -> usize {
    if parts >= 2 && cpus <= 2 && sessions <= FEW_SESSIONS {
        1
    } else {
        parts.clamp(2, cpus.max(2))
    }
}

/// [`run`] with [`Hooks`].
pub fn run_with(path: &Path, log: Option<&str>, hooks: Hooks) -> Result<(), String> {
    let spec = Spec::load(path)?;
    let filter = log
        .map(str::to_string)
        .or_else(|| std::env::var("RUST_LOG").ok())
        .unwrap_or_else(|| spec.log_level.clone());
    if let Some(init) = hooks.logging {
        init(&filter, &spec.config)?;
    }
    let hangup = hooks.hangup;
    let notify = hooks.notify.unwrap_or(|_| {});
    let watchdog = hooks.watchdog;

    let mode = spec.mode;
    let mut spec = spec;
    let defer = hooks.graceful_restart.then(|| {
        spec::restarting(&mut spec, hooks.forwarding_kept);
        Duration::from_secs(u64::from(spec.config.router.select_defer_time))
    });
    // Sessions read, frame and decode on these threads.
    let workers = match mode {
        Mode::Sequential => 2,
        Mode::Sharded(n) => session_workers(
            n,
            crate::pipeline::default_threads(),
            spec.config.neighbors.len(),
        ),
        Mode::PerPeer(_) | Mode::WorkerPool(..) | Mode::WorkerStreams(..) => 2,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name("session")
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;

    let mut pipeline = Pipeline::new(mode);
    let latency: Arc<mgmt::metrics::LatencyHistogram> = Default::default();
    let registry = Registry::default();
    let rib_settings = spec.rib.clone();

    let listen = spec.listen.clone();
    let control_path = spec.control_socket.clone();
    let metrics_addr = spec.metrics;
    let neighbors = spec.neighbors.clone();
    let statics = spec.statics.clone();
    let api_cfg = spec.config.api.clone();
    // BGP4MP_ET dumps of every received message (RFC 6396 §4.4), written
    // by their own thread.
    let (mrt, mrt_dumper) = match spec
        .config
        .mrt
        .as_ref()
        .and_then(|m| m.updates.clone().map(|t| (t, m.updates_interval)))
    {
        Some((template, every)) => {
            let cfg = crate::mrt_dump::MrtDumpConfig {
                template: template.clone(),
                interval: Some(Duration::from_secs(u64::from(every.max(1)))),
            };
            let (sink, dumper) = crate::mrt_dump::MrtSink::start(cfg)
                .map_err(|e| format!("cannot start MRT dumps to {template}: {e}"))?;
            (Some(sink), Some(dumper))
        }
        None => (None, None),
    };
    // TABLE_DUMP_V2 snapshots, encoded by the RIB thread and written by
    // their own thread.
    let mut rib_dumper = None;
    if let Some((template, every)) = spec
        .config
        .mrt
        .as_ref()
        .and_then(|m| m.rib.clone().map(|t| (t, m.rib_interval)))
    {
        let cfg = crate::rib_dump::RibDumpConfig {
            template: template.clone(),
            interval: Duration::from_secs(u64::from(every.max(1))),
        };
        let d = crate::rib_dump::RibDumper::start(cfg)
            .map_err(|e| format!("cannot start MRT RIB dumps to {template}: {e}"))?;
        rib_dumper = Some(rib::SharedRibDump::new(d, mode.shards()));
    }
    // BMP (RFC 7854): one task per collector, fed by the sessions and the
    // RIB threads through bounded queues.
    let bmp_hub = spec
        .config
        .bmp
        .as_ref()
        .filter(|b| !b.collectors.is_empty())
        .map(|b| crate::bmp::BmpHub::new(b, spec.config.router.id, spec.config.router.asn.0));
    let mut running = Running {
        path: path.to_path_buf(),
        spec,
        ids: Default::default(),
        next_id: 1,
        rt: rt.handle().clone(),
        rib: pipeline.sender(),
        rib_txs: pipeline.senders().to_vec(),
        registry: registry.clone(),
        last_reload_ms: None,
        mrt,
        bmp: bmp_hub.clone(),
        cmds: Default::default(),
        bfd: Default::default(),
        bfd_events: hooks.bfd_events.clone(),
        dataplane: hooks.dataplane.clone(),
        api_neighbors: Default::default(),
        bfd_pinned: hooks
            .bfd_sessions
            .iter()
            .map(|p| {
                (
                    p.peer,
                    crate::bfd::BfdPeer {
                        owner: None,
                        ..p.clone()
                    },
                )
            })
            .collect(),
    };
    let bfd = running.bfd.clone();
    if !hooks.bfd_sessions.is_empty() {
        let _guard = rt.enter();
        let h = running
            .bfd_handle()
            .ok_or("cannot start BFD (UDP port 3784)")?;
        for p in running.bfd_pinned.values() {
            h.add(p.clone());
        }
    }
    // Sessions are spawned before the RIB threads run, but every message
    // they send waits in the channels until they do, and the peer tables
    // are complete by then.
    let mut entries: Vec<(PeerId, PeerHandle)> = Vec::new();
    {
        let _guard = rt.enter();
        for n in &neighbors {
            if let Some(x) = running.start_neighbor(n, false) {
                entries.push(x);
            }
        }
    }
    // Next-hop tracking: the kernel's routing table is read before the
    // first route arrives; the watcher starts once the RIB parts run.
    let nht = if running.spec.config.router.next_hop_tracking {
        Some(crate::nht::Nht::open().map_err(|e| format!("next-hop tracking: {e}"))?)
    } else {
        None
    };
    let tracker = nht.as_ref().map(|n| n.tracker.clone());
    let rpki_caches: Option<Vec<crate::rpki::CacheConfig>> =
        running.spec.config.rpki.as_ref().map(|r| {
            r.caches
                .iter()
                .map(|c| crate::rpki::CacheConfig {
                    addr: c.addr,
                    preference: c.preference,
                    retry: c.retry,
                    expire: c.expire,
                    aspa_draft10: c.aspa_draft10,
                })
                .collect()
        });
    let rpki_on = rpki_caches.is_some();
    let damping = running.spec.damping();
    let aggregates = running.spec.aggregates();
    let best_feed = hooks.best_feed;
    // After a graceful restart the feed's followers hear when every RIB
    // part's first full sync is done.
    let sync_gate = (defer.is_some() && best_feed.is_some())
        .then(|| Arc::new(std::sync::atomic::AtomicUsize::new(mode.shards().max(1))));
    // Views registered so far start with the parts; registrations wait
    // until the parts run.
    let views_start = hooks.views.as_ref().map(|r| r.starting());
    let views = views_start.as_ref().map(|s| s.views()).unwrap_or_default();
    pipeline.spawn(|part| {
        let mut st = RibState::with_part(rib_settings.clone(), 1, part);
        for v in &views {
            st.set_view(v);
        }
        if let Some(t) = &tracker {
            st.track_nexthops(t.clone());
        }
        if damping.is_some() {
            st.core.set_damping(damping);
        }
        st.latency = latency.clone();
        st.rib_dumper = rib_dumper.clone();
        // Each shard follows its own prefixes on a clone of the channel:
        // the subscriber's snapshot is the union of the shards'.
        if let Some(tx) = &best_feed {
            st.subscribe_best(tx.clone());
        }
        if let Some(h) = &bmp_hub {
            st.set_bmp(h.clone());
        }
        if let Some(g) = &sync_gate {
            st.await_best_sync(g.clone());
        }
        for (id, e) in &entries {
            st.insert_peer(*id, e.copy_idle());
        }
        st.set_statics(statics.clone());
        if rpki_on {
            st.core.enable_rov();
        }
        if !aggregates.is_empty() {
            st.core.set_aggregates(aggregates.clone());
        }
        if let Some(d) = defer {
            st.core.defer_selection(d);
        }
        st
    })?;
    if let Some(s) = views_start {
        s.attach(pipeline.senders().to_vec());
    }
    drop(entries);
    if let Some(h) = &bmp_hub {
        h.start(rt.handle(), bmp_access(pipeline.senders().to_vec()));
    }
    // RPKI: the RTR cache tasks and their manager, feeding every RIB part.
    let rpki_status = rpki_caches
        .map(|caches| crate::rpki::spawn(rt.handle(), caches, pipeline.senders().to_vec()));
    if let Some(n) = nht {
        let parts = pipeline.senders().to_vec();
        n.spawn(move |u| {
            parts
                .iter()
                .all(|p| p.blocking_send(crate::rib::RibMsg::Nexthop(u)).is_ok())
        })
        .map_err(|e| format!("cannot start next-hop tracking: {e}"))?;
    }
    info!(
        pipeline = mode.name(),
        rib_threads = mode.shards(),
        session_threads = workers,
        "UPDATE pipeline started"
    );

    if !listen.is_empty() {
        let reg = registry.clone();
        rt.block_on(async { crate::sess::listen(listen, reg).await })
            .map_err(|e| format!("cannot listen: {e}"))?;
    }

    // Periodic wake-up of the RIB thread (MRAI, back-pressure, GR timers),
    // and at once when a session's writer drained below its low mark (the
    // RIB encodes the next part of that session's changes: pull).
    let tick_txs = pipeline.senders().to_vec();
    let drained = registry.drained();
    rt.spawn(async move {
        let mut iv = tokio::time::interval(Duration::from_millis(100));
        loop {
            tokio::select! {
                _ = iv.tick() => {}
                () = drained.notified() => {}
            }
            let mut closed = false;
            for tx in &tick_txs {
                closed |= tx.try_send(RibMsg::Tick).is_err() && tx.is_closed();
            }
            if closed {
                break;
            }
        }
    });

    let running = Arc::new(Mutex::new(running));
    let reload_fn: Arc<control::ReloadFn> = {
        let running = running.clone();
        Arc::new(move |check: bool| reload::reload(&running, check))
    };
    let peer_fn: Arc<control::PeerChangeFn> = {
        let running = running.clone();
        Arc::new(move |c: control::PeerChange| reload::change_peer(&running, c))
    };
    let slots = crate::pipeline::published_slots(pipeline.senders(), Duration::from_secs(30));
    let mut ctl = control::Control::new(pipeline.senders().to_vec(), reload_fn.clone(), bfd)
        .with_published(slots)
        .with_bmp(bmp_hub.clone())
        .with_dataplane(hooks.dataplane.clone())
        .with_peer_changes(peer_fn);
    if let Some(s) = rpki_status {
        ctl = ctl.with_rpki(s);
    }
    let ctl = Arc::new(ctl);
    if let Some(dir) = control_path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ctl_server = mgmt::server::serve_unix(&control_path, ctl.clone()).map_err(|e| {
        format!(
            "cannot open the control socket {}: {e}",
            control_path.display()
        )
    })?;
    let _api_server = match (hooks.api, &api_cfg) {
        (Some(start), Some(a)) => Some(start(ctl.clone(), a, rt.handle())?),
        (None, Some(_)) => return Err("[api] is set, but this binary has no gRPC API".into()),
        _ => None,
    };
    let _metrics_server = match metrics_addr {
        Some(a) => Some(
            web::serve(
                a,
                web::Sources {
                    control: ctl.clone(),
                    metrics: Arc::new(metrics::Metrics {
                        control: ctl.clone(),
                        latency,
                    }),
                },
            )
            .map_err(|e| format!("cannot serve /metrics on {a}: {e}"))?,
        ),
        None => None,
    };
    info!(config = %path.display(), control = %control_path.display(), "tesserad running");

    notify(Notify::Ready);
    rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let mut wd = watchdog.map(|d| {
            let mut i = tokio::time::interval(d);
            i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            i
        });
        // One liveness question at a time: a stuck RIB thread must not
        // pile up blocked threads.
        let asking = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (Ok(mut hup), Ok(mut term), Ok(mut int)) = (
            signal(SignalKind::hangup()),
            signal(SignalKind::terminate()),
            signal(SignalKind::interrupt()),
        ) else {
            error!("cannot install signal handlers");
            return;
        };
        loop {
            tokio::select! {
                _ = hup.recv() => {
                    if let Some(h) = hangup {
                        h();
                    }
                    notify(Notify::Reloading);
                    let f = reload_fn.clone();
                    match tokio::task::spawn_blocking(move || f(false)).await {
                        Ok(Ok(r)) => info!(changed = r.changed, "SIGHUP: configuration reloaded"),
                        Ok(Err(e)) => warn!("SIGHUP: configuration not reloaded, keeping the old one: {e}"),
                        Err(e) => warn!("SIGHUP: reload failed: {e}"),
                    }
                    notify(Notify::Ready);
                }
                _ = async {
                    match wd.as_mut() {
                        Some(i) => {
                            i.tick().await;
                        }
                        None => std::future::pending::<()>().await,
                    }
                } => {
                    use std::sync::atomic::Ordering;
                    if !asking.swap(true, Ordering::AcqRel) {
                        let (c, a) = (ctl.clone(), asking.clone());
                        let period = watchdog.unwrap_or(Duration::from_secs(1));
                        tokio::task::spawn_blocking(move || {
                            let t0 = std::time::Instant::now();
                            let ok = c.call_all(|_| ()).is_ok();
                            if ok && t0.elapsed() < period {
                                notify(Notify::Alive);
                            }
                            a.store(false, Ordering::Release);
                        });
                    }
                }
                _ = term.recv() => break,
                _ = int.recv() => break,
            }
        }
    });

    notify(Notify::Stopping);
    info!("shutting down");
    if let Some(h) = &bmp_hub {
        h.stopping();
    }
    // The forwarding plane keeps the routes of now: the withdrawals of
    // the sessions closed below are not sent to it. Every RIB thread
    // closes its feed before any closes a session: a session closed by
    // one thread reaches the others as a session-down event, and a thread
    // that had not closed its feed yet sent that session's withdrawals to
    // the kernel (`kernel_persist` lost routes under load; the
    // graceful_restart test's last step).
    let _ = ctl.call_all(|st: &mut RibState| {
        st.close_best_feed();
        st.close_views();
    });
    // RFC 4486/8203: tell every peer why we go away.
    let _ = ctl.call_all(|st: &mut RibState| {
        let ids: Vec<PeerId> = st.peer_iter().map(|(id, _)| id).collect();
        for id in ids {
            let n = NotificationMessage::shutdown(
                notify::ADMINISTRATIVE_SHUTDOWN,
                "tesserad shutting down",
            );
            st.remove_peer(id, n);
        }
        st.request_shutdown();
    });
    // BFD peers hear AdminDown, not silence (RFC 5880 §6.8.16).
    let bfd_task = running
        .lock()
        .ok()
        .and_then(|r| r.bfd.lock().ok().and_then(|mut g| g.take()));
    if let Some(h) = bfd_task {
        h.shutdown_blocking(Duration::from_millis(200));
    }
    // Give the session tasks a moment to write their NOTIFICATIONs.
    rt.block_on(async { tokio::time::sleep(Duration::from_millis(300)).await });
    // BMP: the Peer Downs just queued, then Termination (RFC 7854 §4.5).
    if let Some(h) = &bmp_hub {
        h.shutdown();
        rt.block_on(async { tokio::time::sleep(Duration::from_millis(200)).await });
    }
    drop(ctl);
    pipeline.join();
    let _ = std::fs::remove_file(&control_path);
    rt.shutdown_timeout(Duration::from_secs(1));
    if let Some(d) = mrt_dumper {
        if let Ok(mut r) = running.lock() {
            r.mrt = None;
        }
        if let Err(e) = d.finish() {
            warn!("MRT dump: {e}");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::session_workers;

    #[test]
    fn session_threads_follow_parts_cpus_and_sessions() {
        // 2 CPUs, up to 32 configured sessions: one thread.
        assert_eq!(session_workers(2, 2, 11), 1);
        assert_eq!(session_workers(2, 2, 32), 1);
        // One RIB part keeps two session threads.
        assert_eq!(session_workers(1, 2, 11), 2);
        assert_eq!(session_workers(1, 1, 3), 2);
        // 2 CPUs, a route server's 110 sessions: two.
        assert_eq!(session_workers(2, 2, 110), 2);
        // More CPUs: one per part, at least 2, at most the CPUs.
        assert_eq!(session_workers(16, 16, 11), 16);
        assert_eq!(session_workers(4, 16, 11), 4);
        assert_eq!(session_workers(1, 4, 11), 2);
        assert_eq!(session_workers(64, 16, 11), 16);
    }
}
