//! The validated configuration turned into what the runtime needs: FSM
//! session configs, RIB peer metadata with compiled policies, static routes.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bgp_fsm::{ConnectionMode, DampConfig, SessionConfig};
use bgp_policy::Policy;
use bgp_rib::{AttrsBuilder, BestPathConfig, NextHopMode};
use bgp_wire::capability::{add_path_mode, AddPathFamily, ExtNextHop, GrFamily, LlgrFamily};
use bgp_wire::{
    AsPath, AttrValue, Capability, Community, LargeCommunity, NextHop, Origin, PathAttr,
};

use crate::rib::{MaxPrefix, MaxPrefixAction, PeerMeta, PolicyRef, RibSettings, StaticRoute};

/// One neighbour, ready to spawn.
#[derive(Clone, Debug)]
pub struct NeighborSpec {
    pub meta: PeerMeta,
    pub remote: SocketAddr,
    pub local: Option<IpAddr>,
    pub fsm: SessionConfig,
    pub md5_password: Option<String>,
    pub ttl: Option<u8>,
    pub ttl_security: Option<u8>,
    pub enabled: bool,
    /// `bfd = true`: the timers of its BFD session.
    pub bfd: Option<config::Bfd>,
}

/// The daemon's view of one configuration.
#[derive(Clone, Debug)]
pub struct Spec {
    pub config: config::Config,
    pub rib: RibSettings,
    pub listen: Vec<SocketAddr>,
    pub control_socket: PathBuf,
    pub metrics: Option<SocketAddr>,
    pub log_level: String,
    pub neighbors: Vec<NeighborSpec>,
    pub statics: Vec<StaticRoute>,
    pub policy_count: usize,
    /// `router.pipeline` and `router.threads`.
    pub mode: crate::pipeline::Mode,
}

fn policy_ref(name: &config::PolicyName, compiled: &BTreeMap<String, Arc<Policy>>) -> PolicyRef {
    match name {
        config::PolicyName::Accept => PolicyRef::AcceptAll,
        config::PolicyName::Reject => PolicyRef::RejectAll,
        config::PolicyName::Named(n) => match compiled.get(n) {
            Some(p) => PolicyRef::Named(n.clone(), p.clone()),
            // Validated by the config crate; be safe anyway.
            None => PolicyRef::RejectAll,
        },
    }
}

fn session_config(c: &config::Config, n: &config::Neighbor) -> SessionConfig {
    // RFC 5065 §4: a true external peer of a confederation member sees
    // the confederation identifier as our AS (`local_as`).
    let mut s = SessionConfig::new(n.local_as, Some(n.remote_as), c.router.id);
    s.hold_time = n.hold_time;
    s.keepalive = n.keepalive;
    s.families = n.families.clone();
    s.four_octet_asn = n.four_octet_asn;
    s.route_refresh = n.route_refresh;
    s.enhanced_route_refresh = n.enhanced_route_refresh;
    s.extended_message = n.extended_message;
    let mode = match (n.add_path.receive, n.add_path.send) {
        (true, true) => Some(add_path_mode::BOTH),
        (true, false) => Some(add_path_mode::RECEIVE),
        (false, true) => Some(add_path_mode::SEND),
        (false, false) => None,
    };
    s.add_path = mode
        .map(|m| {
            n.families
                .iter()
                .map(|&af| AddPathFamily {
                    afi_safi: af,
                    send_receive: m,
                })
                .collect()
        })
        .unwrap_or_default();
    // RFC 8950: IPv6 next hops for the neighbour's IPv4 families.
    if n.extended_nexthop {
        s.ext_next_hop = n
            .families
            .iter()
            .filter(|af| af.afi == base::Afi::Ipv4)
            .map(|&afi_safi| ExtNextHop {
                afi_safi,
                next_hop_afi: base::Afi::Ipv6,
            })
            .collect();
    }
    s.role = n.role.map(config::Role::code);
    s.role_strict = n.role_strict;
    if n.graceful_restart {
        // RFC 4724 §3: helper mode (we do not preserve forwarding state, so
        // no F bits), Restart Time as configured.
        s.extra_capabilities.push(Capability::GracefulRestart {
            flags: 0,
            restart_time: n.restart_time.min(4095),
            families: n
                .families
                .iter()
                .map(|&af| GrFamily {
                    afi_safi: af,
                    flags: 0,
                })
                .collect(),
        });
    }
    if n.graceful_restart && n.long_lived_stale_time > 0 {
        // RFC 9494: every family, no F bit (forwarding state is not
        // preserved), our Long-lived Stale Time.
        s.extra_capabilities
            .push(Capability::LongLivedGracefulRestart(
                n.families
                    .iter()
                    .map(|&af| LlgrFamily {
                        afi_safi: af,
                        flags: 0,
                        stale_time: n.long_lived_stale_time.min(0xff_ffff),
                    })
                    .collect(),
            ));
    }
    s.connect_retry_time = Duration::from_secs(u64::from(n.connect_retry.max(1)));
    s.delay_open = n.delay_open.map(|d| Duration::from_secs(u64::from(d)));
    s.connection_mode = match n.connection {
        config::Connection::Both => ConnectionMode::Both,
        config::Connection::Passive => ConnectionMode::Passive,
        config::Connection::Active => ConnectionMode::ActiveOnly,
    };
    // IdleHold back-off for flapping peers (RFC 4271 §8.1.1).
    s.damp = Some(DampConfig::default());
    s
}

/// `[router]`'s route selection options as the RIB takes them.
pub fn bestpath(b: &config::BestPath) -> BestPathConfig {
    BestPathConfig {
        always_compare_med: b.always_compare_med,
        deterministic_med: b.deterministic_med,
        missing_med_worst: b.med_missing_as_worst,
        compare_router_id: b.compare_router_id,
        multipath: bgp_rib::MultipathConfig {
            ebgp: b.multipath.ebgp,
            ibgp: b.multipath.ibgp,
            relax_as_path: b.multipath.relax_as_path,
        },
        ..BestPathConfig::default()
    }
}

/// A graceful restart of tesserad (RFC 4724 §4.1): every graceful restart
/// capability gets the Restart State bit, and the Forwarding State bit:
/// for every family when tesserad forwards nothing itself (no
/// `[dataplane]`); with a `[dataplane]`, only for the unicast families
/// of `kept` (IPv4, IPv6): those whose kernel routes the dataplane kept
/// and that the kernel forwards (tesserad's own forwarding starts empty,
/// so its state is never preserved).
pub(crate) fn restarting(spec: &mut Spec, kept: Option<(bool, bool)>) {
    let all = spec.config.dataplane.is_none();
    let (v4, v6) = kept.unwrap_or((false, false));
    for n in &mut spec.neighbors {
        for c in &mut n.fsm.extra_capabilities {
            if let Capability::GracefulRestart {
                flags, families, ..
            } = c
            {
                *flags |= 0x8;
                for f in families.iter_mut() {
                    let kept = (f.afi_safi == base::AfiSafi::IPV4_UNICAST && v4)
                        || (f.afi_safi == base::AfiSafi::IPV6_UNICAST && v6);
                    if all || kept {
                        f.flags |= 0x80;
                    }
                }
            }
        }
    }
}

fn static_route(st: &config::Static) -> StaticRoute {
    let mut b = AttrsBuilder::new();
    let origin = match st.origin {
        0 => Origin::Igp,
        1 => Origin::Egp,
        _ => Origin::Incomplete,
    };
    b.set(PathAttr::new(AttrValue::Origin(origin)));
    b.set(PathAttr::new(AttrValue::AsPath(AsPath {
        segments: Vec::new(),
    })));
    match st.next_hop {
        Some(IpAddr::V4(a)) => b.set_next_hop(NextHop::V4(a)),
        Some(IpAddr::V6(a)) => b.set_next_hop(NextHop::V6(a)),
        // "self": the encoder puts our session address in.
        None => {}
    }
    if let Some(l) = st.local_pref {
        b.set_local_pref(l);
    }
    if let Some(m) = st.med {
        b.set_med(m);
    }
    if !st.communities.is_empty() {
        let cs = st.communities.iter().map(|&c| Community(c)).collect();
        b.set(PathAttr::new(AttrValue::Communities(cs)));
    }
    if !st.large_communities.is_empty() {
        let cs = st
            .large_communities
            .iter()
            .map(|&(g, a, c)| LargeCommunity {
                global_admin: g,
                local_data1: a,
                local_data2: c,
            })
            .collect();
        b.set(PathAttr::new(AttrValue::LargeCommunities(cs)));
    }
    b.mark_clean();
    StaticRoute {
        prefix: st.prefix,
        attrs: b,
    }
}

impl Spec {
    /// Loads, validates and compiles; every error names the file and line.
    pub fn load(path: &Path) -> Result<Spec, String> {
        let c = config::load(path).map_err(|e| e.to_string())?;
        Spec::from_config(c)
    }

    pub fn from_config(c: config::Config) -> Result<Spec, String> {
        let mode = crate::pipeline::Mode::from_config(
            c.router.pipeline,
            c.router.threads,
            c.router.locks,
            c.router.streams,
        )
        .map_err(|e| {
            let at = c
                .locate("router")
                .map(|l| format!("{}:{}: ", l.file, l.line))
                .unwrap_or_default();
            format!("{at}{e}")
        })?;
        let mut compiled = BTreeMap::new();
        for (name, def) in &c.policies {
            let p = bgp_policy::compile(def).map_err(|e| {
                let at = c
                    .locate(&format!("policy.{name}"))
                    .map(|l| format!("{}:{}:{}: ", l.file, l.line, l.col))
                    .unwrap_or_default();
                format!("{at}policy.{name}: {e}")
            })?;
            compiled.insert(name.clone(), Arc::new(p));
        }
        let neighbors = c
            .neighbors
            .iter()
            .map(|n| NeighborSpec {
                meta: PeerMeta {
                    name: n.name.clone(),
                    description: n.description.clone(),
                    addr: n.address,
                    remote_asn: n.remote_as,
                    local_asn: n.local_as,
                    ebgp: n.ebgp,
                    confed: n.confed,
                    confed_id: c.router.confederation.as_ref().map(|cf| cf.identifier),
                    rr_client: n.route_reflector_client,
                    rs_client: n.route_server_client,
                    role: n.role.map(config::Role::peer_code),
                    next_hop: match n.next_hop {
                        config::NextHop::Auto => NextHopMode::Auto,
                        config::NextHop::SelfAlways => NextHopMode::SelfAlways,
                        config::NextHop::Unchanged => NextHopMode::Unchanged,
                    },
                    max_prefix: n.max_prefix.map(|m| MaxPrefix {
                        limit: m.limit,
                        action: match m.action {
                            config::MaxPrefixAction::Warn => MaxPrefixAction::Warn,
                            config::MaxPrefixAction::Shutdown => MaxPrefixAction::Shutdown,
                            config::MaxPrefixAction::Restart(s) => {
                                MaxPrefixAction::Restart(Duration::from_secs(u64::from(s)))
                            }
                        },
                        warn_percent: m.warn_threshold,
                    }),
                    import: policy_ref(&n.import, &compiled),
                    export: policy_ref(&n.export, &compiled),
                    keep_pre_policy: n.soft_reconfiguration_inbound,
                    families: n.families.clone(),
                    mrai: Duration::from_secs(u64::from(n.mrai)),
                    add_path_send: match n.add_path.send_max {
                        None => bgp_rib::PathSelection::All,
                        Some(max) => bgp_rib::PathSelection::Best(max),
                    },
                    damping: n.damping,
                },
                remote: SocketAddr::new(n.address, n.port),
                local: n.local_address,
                fsm: session_config(&c, n),
                md5_password: n.password.clone(),
                ttl: n.ttl,
                ttl_security: n.ttl_security,
                enabled: n.enabled,
                bfd: n.bfd,
            })
            .collect();
        Ok(Spec {
            rib: RibSettings {
                router_id: c.router.id,
                cluster_id: c.router.cluster_id,
                local_asn: c.router.asn,
                bestpath: bestpath(&c.router.bestpath),
            },
            listen: c.router.listen.clone(),
            control_socket: c.control.socket.clone(),
            metrics: c.control.metrics,
            log_level: c.log_level.clone(),
            neighbors,
            statics: c.statics.iter().map(static_route).collect(),
            policy_count: compiled.len(),
            mode,
            config: c,
        })
    }

    /// `[[aggregate]]` for the RIB core.
    pub fn aggregates(&self) -> Vec<bgp_core::Aggregate> {
        self.config
            .aggregates
            .iter()
            .map(|a| bgp_core::Aggregate {
                prefix: a.prefix,
                summary_only: a.summary_only,
                as_set: a.as_set,
            })
            .collect()
    }

    /// Route-flap damping parameters (`[damping]`), when a neighbour is
    /// damped; `None`: the RIB does not damp.
    pub fn damping(&self) -> Option<bgp_rib::DampParams> {
        let d = &self.config.damping;
        self.config
            .neighbors
            .iter()
            .any(|n| n.damping)
            .then_some(bgp_rib::DampParams {
                half_life: d.half_life,
                reuse: d.reuse,
                suppress: d.suppress,
                max_suppress: d.max_suppress,
                withdraw_penalty: d.withdraw_penalty,
                readvertise_penalty: d.readvertise_penalty,
                attr_change_penalty: d.attr_change_penalty,
            })
    }

    pub fn neighbor(&self, name: &str) -> Option<&NeighborSpec> {
        self.neighbors.iter().find(|n| n.meta.name == name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(dataplane: bool) -> Spec {
        let dp = if dataplane {
            "[dataplane]\nio = \"af_packet\"\nkernel = true\n[[dataplane.interface]]\nname = \"r0\"\n"
        } else {
            ""
        };
        let text = format!(
            "[router]\nid = \"198.18.0.1\"\nasn = 65000\n\n\
             [[neighbor]]\naddress = \"198.18.1.2\"\nremote_as = 65001\n\
             families = [\"ipv4-unicast\", \"ipv6-unicast\"]\n{dp}"
        );
        let c = config::parse(&text, "t.toml").expect("valid");
        Spec::from_config(c).expect("spec")
    }

    /// (restart flags, per-family flags) of the first neighbour's graceful
    /// restart capability.
    fn gr_flags(s: &Spec) -> (u8, Vec<(base::AfiSafi, u8)>) {
        s.neighbors[0]
            .fsm
            .extra_capabilities
            .iter()
            .find_map(|c| match c {
                Capability::GracefulRestart {
                    flags, families, ..
                } => Some((
                    *flags,
                    families.iter().map(|f| (f.afi_safi, f.flags)).collect(),
                )),
                _ => None,
            })
            .expect("graceful restart capability")
    }

    /// Restart State always; Forwarding State for every family without a
    /// `[dataplane]`, and with one only for the families whose kernel
    /// routes were kept.
    #[test]
    fn forwarding_state_bit_follows_what_was_kept() {
        let f = |s: &Spec, fam| {
            let (r, fams) = gr_flags(s);
            assert_eq!(r & 0x8, 0x8);
            fams.iter()
                .find(|(a, _)| *a == fam)
                .map(|(_, fl)| fl & 0x80 != 0)
        };
        let (v4, v6) = (base::AfiSafi::IPV4_UNICAST, base::AfiSafi::IPV6_UNICAST);
        let mut s = spec(false);
        restarting(&mut s, None);
        assert_eq!((f(&s, v4), f(&s, v6)), (Some(true), Some(true)));
        for (kept, want) in [
            (None, (false, false)),
            (Some((false, false)), (false, false)),
            (Some((true, false)), (true, false)),
            (Some((true, true)), (true, true)),
        ] {
            let mut s = spec(true);
            restarting(&mut s, kept);
            assert_eq!(
                (f(&s, v4), f(&s, v6)),
                (Some(want.0), Some(want.1)),
                "{kept:?}"
            );
        }
    }
}
