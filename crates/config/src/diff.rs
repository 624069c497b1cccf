//! What a reload has to do: compare the running configuration with the
//! new one. Only neighbours whose *session* parameters changed are reset;
//! policy and propagation changes are applied to the existing routes.

use crate::{Config, Neighbor, PolicyName};

/// The outcome of [`diff`], by neighbour name.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReloadPlan {
    /// Router id, AS or listen addresses changed: everything restarts.
    pub global_reset: bool,
    pub added: Vec<String>,
    pub removed: Vec<String>,
    /// Session parameters changed: reset (NOTIFICATION Cease/6, "other
    /// configuration change", RFC 4486).
    pub reset: Vec<String>,
    /// Only policies or propagation settings changed: re-import and/or
    /// re-export without a reset.
    pub soft: Vec<String>,
    pub statics_changed: bool,
}

impl ReloadPlan {
    pub fn is_empty(&self) -> bool {
        !self.global_reset
            && self.added.is_empty()
            && self.removed.is_empty()
            && self.reset.is_empty()
            && self.soft.is_empty()
            && !self.statics_changed
    }

    /// One line per change, for `configure` and the log.
    pub fn describe(&self) -> Vec<String> {
        let mut v = Vec::new();
        if self.global_reset {
            v.push("router id, AS or listen addresses changed: all sessions restart".into());
        }
        for (what, list) in [
            ("added", &self.added),
            ("removed", &self.removed),
            ("reset", &self.reset),
            ("policies re-applied", &self.soft),
        ] {
            for n in list {
                v.push(format!("{n}: {what}"));
            }
        }
        if self.statics_changed {
            v.push("static routes changed".into());
        }
        v
    }
}

/// The session half of a neighbour: what the OPEN, the TCP connection or
/// the FSM depend on.
fn session_key(n: &Neighbor) -> impl PartialEq + '_ {
    (
        (
            n.address,
            n.remote_as,
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
            n.route_refresh,
            n.enhanced_route_refresh,
        ),
        (n.extended_message, n.four_octet_asn, n.ttl),
    )
}

fn policy_def<'a>(c: &'a Config, p: &PolicyName) -> Option<&'a bgp_policy::ast::PolicyDef> {
    match p {
        PolicyName::Named(n) => c.policies.get(n),
        _ => None,
    }
}

fn soft_changed(old: &Config, o: &Neighbor, new: &Config, n: &Neighbor) -> bool {
    o.import != n.import
        || o.export != n.export
        || policy_def(old, &o.import) != policy_def(new, &n.import)
        || policy_def(old, &o.export) != policy_def(new, &n.export)
        || o.route_reflector_client != n.route_reflector_client
        || o.route_server_client != n.route_server_client
        || o.next_hop != n.next_hop
        || o.max_prefix != n.max_prefix
        || o.description != n.description
        || o.mrai != n.mrai
        || o.soft_reconfiguration_inbound != n.soft_reconfiguration_inbound
        || o.enabled != n.enabled
        || o.router_cluster_differs(old, new)
}

impl Neighbor {
    fn router_cluster_differs(&self, old: &Config, new: &Config) -> bool {
        self.route_reflector_client && old.router.cluster_id != new.router.cluster_id
    }
}

/// Compares two configurations.
pub fn diff(old: &Config, new: &Config) -> ReloadPlan {
    let mut p = ReloadPlan {
        global_reset: old.router.id != new.router.id
            || old.router.asn != new.router.asn
            || old.router.listen != new.router.listen,
        statics_changed: old.statics != new.statics,
        ..ReloadPlan::default()
    };
    for n in &new.neighbors {
        match old.neighbor(&n.name) {
            None => p.added.push(n.name.clone()),
            Some(o) if p.global_reset || session_key(o) != session_key(n) => {
                p.reset.push(n.name.clone())
            }
            Some(o) if soft_changed(old, o, new, n) => p.soft.push(n.name.clone()),
            Some(_) => {}
        }
    }
    for o in &old.neighbors {
        if new.neighbor(&o.name).is_none() {
            p.removed.push(o.name.clone());
        }
    }
    p
}
