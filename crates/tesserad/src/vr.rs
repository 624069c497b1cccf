//! `[[dataplane.vr]]` in the daemon: virtual routers run by crate `fib`'s
//! dataplane (`fib::dataplane::vr`: a demultiplexer by ingress port,
//! 802.1Q VLAN id or destination prefix, one built-in graph and one FIB
//! per VR on every core, one `graph::VrScheduler` per core).
//!
//! Feeds: each VR's FIB takes `Vec<fib::Change>` batches from a channel
//! of its own. `table = "main"` VRs follow tesserad's best routes: the
//! daemon's best-route hook feeds a fan-out thread ([`Fan`]) that passes
//! every batch to the main FIB and to each `table = "main"` VR, and gives
//! a VR added by a reload the main FIB's routes first
//! (`fib::dataplane::MainRoutes`: the main FIB thread answers after the
//! batches the fan-out sent before, so nothing is missed or doubled; the
//! fan-out keeps no copy of the table). The fan-out runs with every
//! in-process dataplane that can take VRs (not with the cluster fabric
//! or IPsec), also without VRs, so that a reload can add the first.
//!
//! `neighbors = [...]` VRs follow a *view* of the RIB: the best of the
//! routes learned from those neighbours, chosen by the Loc-RIB's own
//! decision process (`bgp_core::views`, `bgp_speaker::view_feed`), on a
//! channel of the same type and rhythm as the main best-route hook: a
//! snapshot at registration, then one batch per export round of each RIB
//! part with the prefixes whose next hops changed. The daemon's
//! [`ViewRegistry`] ([`Vrs::registry`], given to
//! `bgp_speaker::daemon::Hooks::views`) holds them: views registered
//! before the daemon starts are installed in every RIB part before the
//! first route; a reload registers new ones (which blocks until every
//! RIB part sent its snapshot, read meanwhile by the VR's FIB thread) and
//! removes old ones. A neighbour that is not up contributes nothing; one
//! whose session goes down takes its routes out of the view as out of
//! the Loc-RIB.
//!
//! Not supported yet (refused by [`check`] with `FILE:LINE:COL`): VRs
//! together with the cluster fabric, an operator's graph, IPsec, NICBalance port
//! groups or a separate dataplane process (`feed_socket`); the config
//! refuses the XDP fast path with VRs.

use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender, TryRecvError};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use base::Prefix;
use bgp_speaker::view_feed::{ViewRegistry, ViewSpec};
use config::VrMatch;
use fib::dataplane::vr::VrRule;
use fib::dataplane::{self, VrDef};
use fib::Change;

/// Batches in flight to each VR's FIB thread.
const VR_FEED_DEPTH: usize = 64;

/// Routes per batch of the table a new subscriber gets first.
const SNAPSHOT_BATCH: usize = 4096;

/// How long the fan-out waits for the main FIB's routes.
const ROUTES_WAIT: Duration = Duration::from_secs(10);

/// Where the fan-out gets the table for a VR added by a reload.
pub type RoutesSource = Box<dyn Fn() -> Result<Vec<Change>, String> + Send>;

/// How long the fan-out thread waits for a batch before looking at its
/// commands (subscriptions) again.
const FAN_TICK: Duration = Duration::from_millis(20);

/// Refuses what tesserad cannot run with `[[dataplane.vr]]`, naming the
/// entry and key by `FILE:LINE:COL` as configuration errors do.
pub fn check(c: &config::Config) -> Result<(), String> {
    let Some(d) = &c.dataplane else {
        return Ok(());
    };
    if d.vrs.is_empty() {
        return Ok(());
    }
    let at = |path: &str, msg: String| -> String {
        match c.locate(path) {
            Some(l) => format!("{l}: {path}: {msg}"),
            None => format!("{path}: {msg}"),
        }
    };
    let other = if c.cluster.is_some() {
        Some("[cluster] (the fabric)")
    } else if d.graph.is_some() {
        Some("dataplane.graph (an operator's graph)")
    } else if d.ipsec.is_some() {
        Some("[dataplane.ipsec]")
    } else if d.port_groups.iter().any(|g| g.nicbalance.is_some()) {
        Some("NICBalance port groups")
    } else if d.feed_socket.is_some() {
        Some("dataplane.feed_socket (a separate dataplane process)")
    } else {
        None
    };
    if let Some(o) = other {
        return Err(at(
            "dataplane.vr[0]",
            format!(
                "[[dataplane.vr]] with {o} is not supported yet: each VR runs its own \
                 instance of the built-in graph, in tesserad's process"
            ),
        ));
    }
    Ok(())
}

/// The VRs of `d` as the dataplane runs them, with ingress ports as
/// indices into `ifaces` (the running interfaces).
pub fn defs(
    vrs: &[config::Vr],
    ifaces: &[config::DataplaneInterface],
) -> Result<Vec<VrDef>, String> {
    vrs.iter()
        .map(|v| {
            let rules = match &v.matches {
                VrMatch::Vlan(id) => vec![VrRule::Vlan(*id)],
                VrMatch::Prefix(ps) => ps
                    .iter()
                    .map(|p| match p {
                        Prefix::V4(x) => VrRule::Prefix4(x.addr_bits(), x.len()),
                        Prefix::V6(x) => VrRule::Prefix6(x.addr_bits(), x.len()),
                    })
                    .collect(),
                VrMatch::Ingress(n) => {
                    let p = ifaces.iter().position(|i| &i.name == n).ok_or_else(|| {
                        format!(
                            "VR {:?}: ingress {n:?} is not a running dataplane interface \
                             (new interfaces need a restart)",
                            v.name
                        )
                    })?;
                    vec![VrRule::Ingress(p as u16)]
                }
            };
            Ok(VrDef {
                name: v.name.clone(),
                rules,
                tickets: v.tickets,
                batch: v.batch,
                delay_us: v.delay_us,
                granularity_us: v.granularity_us,
            })
        })
        .collect()
}

/// A subscription change for the fan-out thread.
enum FanCmd {
    /// Send the table, then every batch, to this VR's channel.
    Add(String, SyncSender<Vec<Change>>),
    Remove(String),
}

/// The best-route fan-out: the main FIB and each `table = "main"` VR.
pub struct Fan {
    cmds: mpsc::Sender<FanCmd>,
}

/// The fan-out thread's state: the main FIB, the subscribers, and where
/// the table for a new one comes from.
struct FanState {
    main: SyncSender<Vec<Change>>,
    vrs: Vec<(String, SyncSender<Vec<Change>>)>,
    routes: RoutesSource,
}

impl FanState {
    /// Subscribes `name`: the main FIB's routes first (asked between two
    /// batches, so the batches from here on follow them), then every
    /// batch. A VR whose table cannot be had is not subscribed (its FIB
    /// keeps the connected prefixes; the error is logged).
    fn add(&mut self, name: String, tx: SyncSender<Vec<Change>>) {
        let table = match (self.routes)() {
            Ok(t) => t,
            Err(e) => {
                eprintln!("tesserad: dataplane.vr {name:?}: no table from the main FIB: {e}");
                return;
            }
        };
        let mut rest = table.into_iter();
        loop {
            let b: Vec<Change> = rest.by_ref().take(SNAPSHOT_BATCH).collect();
            if b.is_empty() {
                break;
            }
            if tx.send(b).is_err() {
                return;
            }
        }
        self.vrs.retain(|(n, _)| *n != name);
        self.vrs.push((name, tx));
    }

    /// One batch from the RIB: to every VR, to the main FIB last (it gets
    /// the batch itself). False when the main FIB is gone (the dataplane
    /// stopped).
    fn pass(&mut self, b: Vec<Change>) -> bool {
        self.vrs.retain(|(_, tx)| tx.send(b.clone()).is_ok());
        self.main.send(b).is_ok()
    }
}

impl Fan {
    /// Starts the fan-out in front of `main` (the main FIB's feed) with
    /// the first VRs' channels (subscribed before any route) and the
    /// source of the table for VRs added later; returns the sender the
    /// daemon's hook feeds.
    pub fn start(
        main: SyncSender<Vec<Change>>,
        vrs: Vec<(String, SyncSender<Vec<Change>>)>,
        depth: usize,
        routes: RoutesSource,
    ) -> Result<(Fan, SyncSender<Vec<Change>>), String> {
        let (tx, rx) = mpsc::sync_channel::<Vec<Change>>(depth);
        let (ctx, crx) = mpsc::channel::<FanCmd>();
        let mut st = FanState { main, vrs, routes };
        std::thread::Builder::new()
            .name("dp-vr-fan".into())
            .spawn(move || fan(&mut st, &rx, &crx))
            .map_err(|e| format!("cannot spawn the VR feed thread: {e}"))?;
        Ok((Fan { cmds: ctx }, tx))
    }

    fn send(&self, c: FanCmd) {
        // The thread ends only when the daemon or the dataplane does.
        let _ = self.cmds.send(c);
    }
}

fn fan(st: &mut FanState, rx: &Receiver<Vec<Change>>, cmds: &Receiver<FanCmd>) {
    loop {
        loop {
            match cmds.try_recv() {
                Ok(FanCmd::Add(n, tx)) => st.add(n, tx),
                Ok(FanCmd::Remove(n)) => st.vrs.retain(|(x, _)| *x != n),
                Err(TryRecvError::Empty) => break,
                // The hook is gone: the table stays as it is.
                Err(TryRecvError::Disconnected) => break,
            }
        }
        match rx.recv_timeout(FAN_TICK) {
            Ok(b) => {
                if !st.pass(b) {
                    return;
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
    }
}

/// The VRs' feeds at start: the fan-out and each VR's receiver.
pub struct VrFeeds {
    /// (VR name, the channel its FIB reads).
    pub receivers: Vec<(String, Receiver<Vec<Change>>)>,
    /// `table = "main"` VRs' senders (for the fan-out).
    senders: Vec<(String, SyncSender<Vec<Change>>)>,
    /// `neighbors = [...]` VRs' views (registered with the RIB).
    views: Vec<ViewSpec>,
}

impl VrFeeds {
    /// A feed for every VR of `vrs`.
    pub fn new(vrs: &[config::Vr]) -> VrFeeds {
        let mut f = VrFeeds {
            receivers: Vec::new(),
            senders: Vec::new(),
            views: Vec::new(),
        };
        for v in vrs {
            let (tx, rx) = Self::feed();
            f.receivers.push((v.name.clone(), rx));
            match &v.table {
                config::VrTable::Main => f.senders.push((v.name.clone(), tx)),
                config::VrTable::Neighbors(n) => f.views.push(ViewSpec {
                    name: v.name.clone(),
                    neighbors: n.clone(),
                    tx,
                }),
            }
        }
        f
    }

    /// One VR's channel. A `neighbors = [...]` VR's sender goes to the
    /// RIB's per-neighbour registration instead of the fan-out.
    pub fn feed() -> (SyncSender<Vec<Change>>, Receiver<Vec<Change>>) {
        mpsc::sync_channel(VR_FEED_DEPTH)
    }

    /// Starts the fan-out in front of `main` with the `table = "main"`
    /// VRs (and `routes` for those added later), and registers the
    /// `neighbors` VRs' views in a new registry (kept until the daemon
    /// installs them at its start).
    pub fn fan(
        self,
        main: SyncSender<Vec<Change>>,
        depth: usize,
        routes: RoutesSource,
    ) -> Result<Fanned, String> {
        let views = ViewRegistry::new();
        for v in self.views {
            let name = v.name.clone();
            views
                .register(v)
                .map_err(|e| format!("dataplane.vr {name:?}: {e}"))?;
        }
        let (fan, hook) = Fan::start(main, self.senders, depth, routes)?;
        Ok((fan, hook, views))
    }

    /// The table source of a running dataplane: its main FIB's routes.
    pub fn routes_of(dp: &fib::dataplane::Dataplane) -> RoutesSource {
        match dp.main_routes() {
            Some(r) => Box::new(move || r.get(ROUTES_WAIT)),
            None => Box::new(|| {
                Err::<Vec<Change>, _>("the dataplane has no main FIB thread".to_string())
            }),
        }
    }
}

/// What [`VrFeeds::fan`] starts: the fan-out, the sender the daemon's
/// best-route hook feeds, and the `neighbors` VRs' views.
pub type Fanned = (Fan, SyncSender<Vec<Change>>, Arc<ViewRegistry>);

/// The daemon's VR state: the fan-out, the RIB views and the VRs
/// configured now.
pub struct Vrs {
    fan: Fan,
    views: Arc<ViewRegistry>,
    running: Mutex<Vec<config::Vr>>,
}

impl Vrs {
    /// The RIB views of the `neighbors` VRs (for
    /// `bgp_speaker::daemon::Hooks::views`).
    pub fn registry(&self) -> Arc<ViewRegistry> {
        self.views.clone()
    }

    pub fn new(fan: Fan, views: Arc<ViewRegistry>, vrs: &[config::Vr]) -> Vrs {
        Vrs {
            fan,
            views,
            running: Mutex::new(vrs.to_vec()),
        }
    }

    /// The VR part of a reload: `new`'s `[[dataplane.vr]]` on the running
    /// interfaces `ifaces`. A VR that is new or whose source changed gets
    /// a new FIB (the table first); the others keep theirs; match and
    /// share changes apply on every core. Errors change nothing.
    pub fn reload(
        &self,
        dp: &dataplane::Dataplane,
        ifaces: &[config::DataplaneInterface],
        new: &[config::Vr],
        check_only: bool,
        wait: Duration,
    ) -> Result<Vec<String>, String> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if *running == new {
            return Ok(Vec::new());
        }
        let defs = defs(new, ifaces)?;
        dataplane::vr::check(&defs, ifaces.len())?;
        if check_only {
            return Ok(vec![format!("virtual routers: {} valid", defs.len())]);
        }
        let mut feeds = Vec::new();
        let mut subs: Vec<(&config::Vr, SyncSender<Vec<Change>>)> = Vec::new();
        let mut changed = Vec::new();
        for v in new {
            let old = running.iter().find(|o| o.name == v.name);
            if old.is_none_or(|o| o.table != v.table) {
                let (tx, rx) = VrFeeds::feed();
                feeds.push((v.name.clone(), rx));
                subs.push((v, tx));
            }
            if old != Some(v) {
                changed.push(v.name.clone());
            }
        }
        dp.set_vrs(&defs, feeds, wait)?;
        for o in running.iter() {
            let kept =
                new.iter().any(|v| v.name == o.name) && !subs.iter().any(|(v, _)| v.name == o.name);
            if kept {
                continue;
            }
            match &o.table {
                config::VrTable::Main => self.fan.send(FanCmd::Remove(o.name.clone())),
                config::VrTable::Neighbors(_) => {
                    self.views
                        .remove(&o.name)
                        .map_err(|e| format!("dataplane.vr {:?}: {e}", o.name))?;
                }
            }
        }
        for (v, tx) in subs {
            match &v.table {
                config::VrTable::Main => self.fan.send(FanCmd::Add(v.name.clone(), tx)),
                // Blocks until every RIB part sent its snapshot, which
                // the VR's FIB thread (started by `set_vrs`) reads.
                config::VrTable::Neighbors(n) => self
                    .views
                    .register(ViewSpec {
                        name: v.name.clone(),
                        neighbors: n.clone(),
                        tx,
                    })
                    .map_err(|e| format!("dataplane.vr {:?}: {e}", v.name))?,
            }
        }
        let removed: Vec<String> = running
            .iter()
            .filter(|o| !new.iter().any(|v| v.name == o.name))
            .map(|o| o.name.clone())
            .collect();
        let was_empty = running.is_empty();
        *running = new.to_vec();
        let mut msg = if new.is_empty() {
            "virtual routers: none, the cores run the main graph again (main FIB kept)".to_string()
        } else if was_empty {
            format!(
                "virtual routers: {} running, the cores left the main graph (main FIB kept)",
                new.len()
            )
        } else {
            format!(
                "virtual routers: {} running (FIBs of the others kept)",
                new.len()
            )
        };
        if !changed.is_empty() {
            msg += &format!("; added or changed: {}", changed.join(", "));
        }
        if !removed.is_empty() {
            msg += &format!("; removed: {}", removed.join(", "));
        }
        Ok(vec![msg])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\
        [[neighbor]]\nname = \"red-peer\"\naddress = \"198.18.1.2\"\nremote_as = 65001\n\
        [dataplane]\n[[dataplane.interface]]\nname = \"r0\"\n[[dataplane.interface]]\nname = \"r1\"\n";

    fn cfg(vrs: &str) -> config::Config {
        config::parse(&format!("{HEAD}{vrs}"), "t.toml").expect("valid")
    }

    #[test]
    fn checks_and_maps_every_match_kind() {
        let c = cfg("[[dataplane.vr]]\nname = \"red\"\ningress = \"r0\"\ntable = \"main\"\n\
                     [[dataplane.vr]]\nname = \"blue\"\ningress = \"r1\"\nneighbors = [\"red-peer\"]\n");
        assert_eq!(check(&c), Ok(()), "neighbors = [...] runs");
        let f = VrFeeds::new(&c.dataplane.as_ref().expect("dp").vrs);
        assert_eq!(
            (f.receivers.len(), f.senders.len(), f.views.len()),
            (2, 1, 1)
        );
        let c = cfg(
            "[[dataplane.vr]]\nname = \"red\"\nvlan = 10\ntable = \"main\"\n\
                     [[dataplane.vr]]\nname = \"blue\"\nvlan = 20\ntable = \"main\"\n",
        );
        assert_eq!(check(&c), Ok(()), "vlan runs");
        let d = c.dataplane.expect("dp");
        let r: Vec<_> = defs(&d.vrs, &d.interfaces)
            .expect("defs")
            .into_iter()
            .map(|v| v.rules)
            .collect();
        assert_eq!(r, vec![vec![VrRule::Vlan(10)], vec![VrRule::Vlan(20)]]);
        let c = cfg("[[dataplane.vr]]\nname = \"red\"\n\
                     prefix = [\"198.18.5.0/24\", \"2001:db8:5::/48\"]\ntable = \"main\"\n");
        assert_eq!(check(&c), Ok(()), "prefix runs");
        let d = c.dataplane.expect("dp");
        assert_eq!(
            defs(&d.vrs, &d.interfaces).expect("defs")[0].rules,
            vec![
                VrRule::Prefix4(0xc612_0500, 24),
                VrRule::Prefix6(0x2001_0db8_0005 << 80, 48)
            ]
        );
        let c = cfg("[[dataplane.vr]]\nname = \"red\"\ningress = \"r1\"\ntable = \"main\"\n");
        assert!(check(&c).is_ok());
        let d = c.dataplane.expect("dp");
        assert_eq!(
            defs(&d.vrs, &d.interfaces).expect("defs")[0].rules,
            vec![VrRule::Ingress(1)]
        );
        assert!(defs(&d.vrs, &d.interfaces[..1]).is_err());
    }

    fn ch(p: &str, nh: Option<&str>) -> Change {
        Change::single(
            p.parse().expect("prefix"),
            nh.map(|n| n.parse().expect("ip")),
        )
    }

    /// The fan-out passes every batch to the main FIB and the VRs, and a
    /// VR added later gets the main FIB's table first; one whose table
    /// cannot be had is not subscribed.
    #[test]
    fn fan_out_and_snapshot() {
        let (mtx, mrx) = mpsc::sync_channel(8);
        let (vtx, vrx) = mpsc::sync_channel(8);
        // The main FIB's routes as its thread would answer.
        let table = vec![ch("198.18.5.0/24", Some("198.18.1.2"))];
        let t2 = table.clone();
        let (fan, tx) = Fan::start(
            mtx,
            vec![("red".into(), vtx)],
            8,
            Box::new(move || Ok::<_, String>(t2.clone())),
        )
        .expect("fan");
        tx.send(vec![
            ch("198.18.5.0/24", Some("198.18.1.2")),
            ch("198.18.6.0/24", Some("198.18.1.2")),
        ])
        .expect("send");
        tx.send(vec![ch("198.18.6.0/24", None)]).expect("send");
        let t = Duration::from_secs(5);
        assert_eq!(mrx.recv_timeout(t).expect("main").len(), 2);
        assert_eq!(mrx.recv_timeout(t).expect("main").len(), 1);
        assert_eq!(vrx.recv_timeout(t).expect("red").len(), 2);
        assert_eq!(vrx.recv_timeout(t).expect("red").len(), 1);
        let (btx, brx) = mpsc::sync_channel(8);
        fan.send(FanCmd::Add("blue".into(), btx));
        let snap = brx.recv_timeout(t).expect("blue's table");
        assert_eq!(snap, table);
        tx.send(vec![ch("198.18.7.0/24", Some("198.18.1.2"))])
            .expect("send");
        assert_eq!(brx.recv_timeout(t).expect("blue").len(), 1);
        assert_eq!(vrx.recv_timeout(t).expect("red").len(), 1);
        assert_eq!(mrx.recv_timeout(t).expect("main").len(), 1);
        let (mtx, mrx) = mpsc::sync_channel(8);
        let (fan, tx) = Fan::start(
            mtx,
            Vec::new(),
            8,
            Box::new(|| Err::<Vec<Change>, _>("stopped".to_string())),
        )
        .expect("fan");
        let (gtx, grx) = mpsc::sync_channel(8);
        fan.send(FanCmd::Add("green".into(), gtx));
        tx.send(vec![ch("198.18.7.0/24", None)]).expect("send");
        assert_eq!(mrx.recv_timeout(t).expect("main").len(), 1);
        assert!(grx.recv_timeout(Duration::from_millis(100)).is_err());
    }
}
