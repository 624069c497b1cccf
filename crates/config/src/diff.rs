//! What a reload has to do: compare the running configuration with the
//! new one. Only neighbours whose *session* parameters changed are reset;
//! policy and propagation changes are applied to the existing routes (from
//! the stored Adj-RIB-In, or with a ROUTE-REFRESH, RFC 2918).

use bgp_policy::ast::PolicyDef;

use crate::{Config, Neighbor, PolicyName};

/// The outcome of [`diff`]. Neighbours are named by [`Neighbor::name`]
/// (a renamed neighbour is removed and added), in the new file's order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReloadPlan {
    /// `router.id`, `router.asn` or `router.listen` changed: every session
    /// restarts (the daemon asks for a restart instead). The neighbours are
    /// then all in [`ReloadPlan::reset`] too.
    pub global_reset: bool,
    /// New neighbours: start them.
    pub added: Vec<String>,
    /// Gone neighbours: Cease/3 "Peer De-configured" (RFC 4486), drop
    /// their routes.
    pub removed: Vec<String>,
    /// Session parameters changed (address, port, AS, local address, the
    /// neighbour's place in `router.confederation` or its identifier,
    /// password, timers, connection mode, families, capabilities, ADD-PATH,
    /// role, TTL): Cease/6 "Other Configuration Change" and reconnect.
    pub reset: Vec<String>,
    /// Everything else changed (policies, RR/RS client, next hop,
    /// max-prefix, MRAI, description, enabled, soft reconfiguration, BFD
    /// on/off and its timers, damping on/off): new
    /// settings without a reset. The union of [`ReloadPlan::reimport`],
    /// [`ReloadPlan::reexport`] and neighbours with metadata-only changes.
    pub soft: Vec<String>,
    /// Import side changed (the import policy's name or its definition,
    /// soft reconfiguration, the cluster id for iBGP): run the new import
    /// policy over the stored Adj-RIB-In, or ask for a ROUTE-REFRESH.
    pub reimport: Vec<String>,
    /// Export side changed (export policy or definition, RR/RS client,
    /// next hop mode, the cluster id for iBGP): re-advertise the Loc-RIB.
    pub reexport: Vec<String>,
    /// `[[static]]` changed: originate the new set, withdraw the rest.
    pub statics_changed: bool,
    /// The route selection options of `[router]` changed: run selection
    /// again over every prefix (and export what changed).
    pub bestpath_changed: bool,
    /// Other changed settings by path (`damping`: the `[damping]`
    /// parameters, and `aggregate`: the `[[aggregate]]` list, both applied
    /// live; `control.socket`, `control.metrics`,
    /// `log.level`, `log.file`, `mrt`, `router.pipeline`, `router.locks`, `router.streams`, `router.threads`,
    /// `router.next_hop_tracking`, `router.cluster_id`, `router.listen`): the daemon applies what it
    /// can live and says which need a restart.
    pub other: Vec<String>,
}

impl ReloadPlan {
    /// Nothing to do.
    pub fn is_empty(&self) -> bool {
        !self.global_reset
            && self.added.is_empty()
            && self.removed.is_empty()
            && self.reset.is_empty()
            && self.soft.is_empty()
            && !self.statics_changed
            && !self.bestpath_changed
            && self.other.is_empty()
    }

    /// One line per change, for `tessera configure` and the log.
    pub fn describe(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.global_reset {
            v.push("router id, AS or listen addresses changed: all sessions restart".into());
        }
        for (what, list) in [
            ("added", &self.added),
            ("removed", &self.removed),
            ("reset (session parameters changed)", &self.reset),
        ] {
            for n in list {
                v.push(format!("{n}: {what}"));
            }
        }
        for n in &self.soft {
            let what = match (self.reimport.contains(n), self.reexport.contains(n)) {
                (true, true) => "import and export re-applied",
                (true, false) => "import re-applied",
                (false, true) => "export re-applied",
                (false, false) => "settings updated",
            };
            v.push(format!("{n}: {what}"));
        }
        if self.statics_changed {
            v.push("static routes changed".into());
        }
        if self.bestpath_changed {
            v.push("route selection options changed: best paths selected again".into());
        }
        for o in &self.other {
            if o == "rpki" {
                // The RTR cache tasks start with the daemon.
                v.push("rpki changed: takes effect at the next start of tesserad".into());
            } else {
                v.push(format!("{o} changed"));
            }
        }
        v
    }
}

/// The session half of a neighbour: what the OPEN, the TCP connection or
/// the FSM depend on. A change here needs a new session.
fn session_key(n: &Neighbor) -> impl PartialEq + '_ {
    (
        (
            n.address,
            n.remote_as,
            (n.confed, n.local_as),
            n.local_address,
            n.port,
            n.connection,
        ),
        (n.hold_time, n.keepalive, n.connect_retry, n.delay_open),
        (
            &n.families,
            n.add_path,
            n.password.as_deref(),
            n.role,
            n.role_strict,
        ),
        (
            n.graceful_restart,
            n.restart_time,
            n.long_lived_stale_time,
            n.route_refresh,
            n.enhanced_route_refresh,
        ),
        (
            n.extended_message,
            n.extended_nexthop,
            n.four_octet_asn,
            n.ttl,
            n.ttl_security,
        ),
    )
}

fn policy_def<'a>(c: &'a Config, p: &PolicyName) -> Option<&'a PolicyDef> {
    match p {
        PolicyName::Named(n) => c.policies.get(n),
        _ => None,
    }
}

/// Same attachment and, for a named policy, the same definition.
fn same_policy(old: &Config, o: &PolicyName, new: &Config, n: &PolicyName) -> bool {
    o == n && policy_def(old, o) == policy_def(new, n)
}

/// Compares two configurations.
pub fn diff(old: &Config, new: &Config) -> ReloadPlan {
    let (ro, rn) = (&old.router, &new.router);
    let mut p = ReloadPlan {
        global_reset: ro.id != rn.id || ro.asn != rn.asn || ro.listen != rn.listen,
        statics_changed: old.statics != new.statics,
        bestpath_changed: ro.bestpath != rn.bestpath,
        ..ReloadPlan::default()
    };
    let cluster_changed = ro.cluster_id != rn.cluster_id;
    // RFC 5065: the identifier is in every session's checks (loops,
    // which paths may carry confederation segments) and the OPEN of true
    // eBGP peers: all sessions restart. A change of members restarts the
    // neighbours that become or stop being members (`session_key`).
    let confed_id = |r: &crate::Router| r.confederation.as_ref().map(|c| c.identifier);
    let confed_reset = confed_id(ro) != confed_id(rn);
    for n in &new.neighbors {
        let Some(o) = old.neighbor(&n.name) else {
            p.added.push(n.name.clone());
            continue;
        };
        if p.global_reset || confed_reset || session_key(o) != session_key(n) {
            p.reset.push(n.name.clone());
            continue;
        }
        // The cluster id is in the CLUSTER_LIST we add when reflecting and
        // the one we check for loops on receipt (RFC 4456 §8): every iBGP
        // session sees it.
        let cluster = cluster_changed && !n.ebgp;
        let reimport = !same_policy(old, &o.import, new, &n.import)
            || o.soft_reconfiguration_inbound != n.soft_reconfiguration_inbound
            || cluster;
        let reexport = !same_policy(old, &o.export, new, &n.export)
            || o.route_reflector_client != n.route_reflector_client
            || o.route_server_client != n.route_server_client
            || o.next_hop != n.next_hop
            || cluster;
        let meta = o.max_prefix != n.max_prefix
            || o.description != n.description
            || o.mrai != n.mrai
            || o.enabled != n.enabled
            || o.bfd != n.bfd
            || o.damping != n.damping;
        if reimport {
            p.reimport.push(n.name.clone());
        }
        if reexport {
            p.reexport.push(n.name.clone());
        }
        if reimport || reexport || meta {
            p.soft.push(n.name.clone());
        }
    }
    for o in &old.neighbors {
        if new.neighbor(&o.name).is_none() {
            p.removed.push(o.name.clone());
        }
    }
    let damping = old.damping != new.damping;
    let others: &[(&str, bool)] = &[
        ("aggregate", old.aggregates != new.aggregates),
        ("damping", damping),
        ("router.listen", ro.listen != rn.listen),
        ("router.cluster_id", cluster_changed),
        ("router.confederation", ro.confederation != rn.confederation),
        ("router.pipeline", ro.pipeline != rn.pipeline),
        ("router.locks", ro.locks != rn.locks),
        ("router.streams", ro.streams != rn.streams),
        ("router.threads", ro.threads != rn.threads),
        (
            "router.next_hop_tracking",
            ro.next_hop_tracking != rn.next_hop_tracking,
        ),
        (
            "router.select_defer_time",
            ro.select_defer_time != rn.select_defer_time,
        ),
        ("control.socket", old.control.socket != new.control.socket),
        (
            "control.metrics",
            old.control.metrics != new.control.metrics,
        ),
        ("log.level", old.log_level != new.log_level),
        ("log.file", old.log_file != new.log_file),
        ("log.format", old.log_format != new.log_format),
        ("log.syslog", old.log_syslog != new.log_syslog),
        ("mrt", old.mrt != new.mrt),
        // `dataplane.graph`, the port groups (NICBalance) and the virtual
        // routers are applied by the reload itself (tesserad reads the
        // file again every time, or rebuilds the built-in graph, or
        // replaces the VR set); the rest waits for a restart.
        (
            "dataplane",
            without_graph(&old.dataplane) != without_graph(&new.dataplane),
        ),
        ("api", old.api != new.api),
        ("cluster", old.cluster != new.cluster),
        ("bmp", old.bmp != new.bmp),
        ("rpki", old.rpki != new.rpki),
    ];
    p.other = others
        .iter()
        .filter(|(_, changed)| *changed)
        .map(|(k, _)| k.to_string())
        .collect();
    p
}

/// `[dataplane]` less its `graph`, port groups and virtual routers, which
/// a reload applies.
fn without_graph(d: &Option<crate::Dataplane>) -> Option<crate::Dataplane> {
    d.clone().map(|d| crate::Dataplane {
        graph: None,
        port_groups: Vec::new(),
        vrs: Vec::new(),
        ..d
    })
}
