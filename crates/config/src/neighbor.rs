//! One `[[neighbor]]`: parse each value, fill defaults from `[router]`,
//! and refuse combinations that cannot work.

use std::collections::BTreeMap;

use base::AfiSafi;
use bgp_policy::ast::PolicyDef;

use crate::raw::{MaxPrefixValue, RawNeighbor, TtlSecurityValue};
use crate::validate::{
    asn, bfd_ms, bfd_mult, choice, hold, ip, is_name, keepalive, policy_name, seconds, Ctx, R,
};
use crate::{
    AddPath, Connection, MaxPrefix, MaxPrefixAction, Neighbor, NextHop, PolicyName, Role, Router,
};

/// Linux `TCP_MD5SIG_MAXKEYLEN`.
const MD5_MAX: usize = 80;

const FAMILIES: &[(&str, AfiSafi)] = &[
    ("ipv4-unicast", AfiSafi::IPV4_UNICAST),
    ("ipv6-unicast", AfiSafi::IPV6_UNICAST),
    ("ipv4-multicast", AfiSafi::IPV4_MULTICAST),
    ("ipv6-multicast", AfiSafi::IPV6_MULTICAST),
];

fn max_prefix(c: &Ctx<'_>, at: &dyn Fn(&str) -> String, v: &MaxPrefixValue) -> R<MaxPrefix> {
    let (limit, action, restart_after, warn_threshold) = match v {
        MaxPrefixValue::Limit(l) => (*l, None, None, None),
        MaxPrefixValue::Table(t) => (
            i64::try_from(t.limit).unwrap_or(i64::MAX),
            t.action.as_deref(),
            t.restart_after,
            t.warn_threshold,
        ),
    };
    let limit_path = match v {
        MaxPrefixValue::Limit(_) => at("max_prefix"),
        MaxPrefixValue::Table(_) => at("max_prefix.limit"),
    };
    let limit = u64::try_from(limit)
        .ok()
        .filter(|&l| l >= 1)
        .ok_or_else(|| c.err(&limit_path, format!("{limit}: the limit is at least 1")))?;
    #[derive(Copy, Clone)]
    enum A {
        Warn,
        Restart,
        Shutdown,
    }
    let a = match action {
        None => A::Shutdown,
        Some(s) => choice(
            c,
            &at("max_prefix.action"),
            s,
            &[
                ("warn", A::Warn),
                ("restart", A::Restart),
                ("shutdown", A::Shutdown),
            ],
        )?,
    };
    let action = match (a, restart_after) {
        (A::Restart, r) => MaxPrefixAction::Restart(match r {
            Some(s) => seconds(c, &at("max_prefix.restart_after"), s)?,
            None => 60,
        }),
        (_, Some(_)) => {
            return Err(c.err(
                &at("max_prefix.restart_after"),
                "only meaningful with action = \"restart\"",
            ))
        }
        (A::Warn, None) => MaxPrefixAction::Warn,
        (A::Shutdown, None) => MaxPrefixAction::Shutdown,
    };
    if let Some(w) = warn_threshold.filter(|&w| w > 100) {
        return Err(c.err(
            &at("max_prefix.warn_threshold"),
            format!("{w}: a percentage of the limit, 0 to 100"),
        ));
    }
    Ok(MaxPrefix {
        limit,
        action,
        warn_threshold: warn_threshold.unwrap_or(75),
    })
}

fn families(c: &Ctx<'_>, at: &dyn Fn(&str) -> String, f: &[String]) -> R<Vec<AfiSafi>> {
    if f.is_empty() {
        return Err(c.err(&at("families"), "at least one family"));
    }
    let mut v = Vec::with_capacity(f.len());
    for (i, x) in f.iter().enumerate() {
        let path = format!("{}[{i}]", at("families"));
        let af = choice(c, &path, x, FAMILIES)?;
        if v.contains(&af) {
            return Err(c.err(&path, format!("\"{x}\" is listed twice")));
        }
        v.push(af);
    }
    Ok(v)
}

/// `add_path_send`: `"all"` (`None`) or `"best-N"` with N from 1 to 65535.
fn add_path_send(c: &Ctx<'_>, path: &str, v: &str) -> R<Option<u16>> {
    if v == "all" {
        return Ok(None);
    }
    match v.strip_prefix("best-").map(str::parse::<u16>) {
        Some(Ok(n)) if n >= 1 => Ok(Some(n)),
        _ => Err(c.err(
            path,
            format!("unknown value \"{v}\", expected \"all\" or \"best-N\" with N from 1 to 65535"),
        )),
    }
}

pub(crate) fn neighbor(
    c: &Ctx<'_>,
    i: usize,
    rn: &RawNeighbor,
    r: &Router,
    policies: &BTreeMap<String, PolicyDef>,
    bfd_defaults: &crate::Bfd,
) -> R<Neighbor> {
    let at = |k: &str| format!("neighbor[{i}].{k}");
    let address = ip(c, &at("address"), &rn.address)?;
    if address.is_unspecified() || address.is_multicast() {
        return Err(c.err(
            &at("address"),
            format!("{address} cannot be a neighbour's address"),
        ));
    }
    let remote_as = asn(c, &at("remote_as"), &rn.remote_as)?;
    let ebgp = remote_as != r.asn;
    // RFC 5065: a member AS of our confederation other than ours is a
    // confederation-external peer; true external peers see the identifier.
    let (confed, local_as) = match &r.confederation {
        Some(cf) if remote_as == cf.identifier => {
            return Err(c.err(
                &at("remote_as"),
                format!(
                    "{remote_as} is our confederation identifier: a neighbour inside \
                     the confederation is configured with its member AS"
                ),
            ))
        }
        Some(cf) if cf.is_member(remote_as, r.asn) => (true, r.asn),
        Some(cf) if ebgp => (false, cf.identifier),
        _ => (false, r.asn),
    };
    let name = match &rn.name {
        Some(s) if is_name(s) => s.clone(),
        Some(s) => {
            return Err(c.err(
                &at("name"),
                format!("\"{s}\" is not a name (1 to 64 letters, digits, '_' and '-')"),
            ))
        }
        None => format!("n{}", address.to_string().replace(['.', ':'], "_")),
    };
    let local_address = match &rn.local_address {
        None => None,
        Some(v) => {
            let l = ip(c, &at("local_address"), v)?;
            if l.is_ipv4() != address.is_ipv4() {
                return Err(c.err(
                    &at("local_address"),
                    format!("{l} is not of the family of {address}"),
                ));
            }
            Some(l)
        }
    };
    if rn.port == Some(0) {
        return Err(c.err(&at("port"), "0 is not a port"));
    }
    let modes = [
        ("both", Connection::Both),
        ("passive", Connection::Passive),
        ("active", Connection::Active),
    ];
    let connection = match (rn.passive, rn.connection.as_deref()) {
        (None | Some(false), None) => Connection::Both,
        (Some(true), None) => Connection::Passive,
        (passive, Some(m)) => {
            let m = choice(c, &at("connection"), m, &modes)?;
            if passive == Some(true) && m != Connection::Passive {
                return Err(c.err(&at("passive"), "contradicts connection"));
            }
            m
        }
    };
    let hold_time = match rn.hold_time {
        Some(h) => hold(c, &at("hold_time"), h)?,
        None => r.hold_time,
    };
    let keepalive = match rn.keepalive {
        Some(k) => keepalive(c, &at("keepalive"), Some(k), hold_time)?,
        // The router's keepalive was checked against the router's hold time;
        // a shorter per-neighbour hold time falls back to hold / 3.
        None => r.keepalive.filter(|&k| hold_time == 0 || k < hold_time),
    };
    let connect_retry = match rn.connect_retry {
        Some(s) => seconds(c, &at("connect_retry"), s)?,
        None => r.connect_retry,
    };
    let delay_open = rn
        .delay_open
        .map(|s| seconds(c, &at("delay_open"), s))
        .transpose()?;
    let families = match &rn.families {
        Some(f) => families(c, &at, f)?,
        None if address.is_ipv4() => vec![AfiSafi::IPV4_UNICAST],
        None => vec![AfiSafi::IPV6_UNICAST],
    };
    let add_path = match rn.add_path.as_deref() {
        None => AddPath::default(),
        Some(v) => {
            let (receive, send) = choice(
                c,
                &at("add_path"),
                v,
                &[
                    ("off", (false, false)),
                    ("receive", (true, false)),
                    ("send", (false, true)),
                    ("both", (true, true)),
                ],
            )?;
            AddPath {
                receive,
                send,
                send_max: None,
            }
        }
    };
    let add_path = match rn.add_path_send.as_deref() {
        None => add_path,
        Some(_) if !add_path.send => {
            return Err(c.err(
                &at("add_path_send"),
                "needs add_path = \"send\" or \"both\"",
            ))
        }
        Some(v) => AddPath {
            send_max: add_path_send(c, &at("add_path_send"), v)?,
            ..add_path
        },
    };
    let rr_client = rn.route_reflector_client.unwrap_or(false);
    if rr_client && ebgp {
        return Err(c.err(
            &at("route_reflector_client"),
            format!(
                "AS {remote_as} is not the local AS {}: route reflection is for iBGP (RFC 4456)",
                r.asn
            ),
        ));
    }
    let rs_client = rn.route_server_client.unwrap_or(false);
    if rs_client && confed {
        return Err(c.err(
            &at("route_server_client"),
            format!(
                "AS {remote_as} is a member AS of router.confederation: a route server \
                 client is outside the confederation (RFC 7947)"
            ),
        ));
    }
    if rs_client && !ebgp {
        return Err(c.err(
            &at("route_server_client"),
            format!(
                "AS {remote_as} is the local AS: a route server client is an eBGP neighbour (RFC 7947)"
            ),
        ));
    }
    let next_hop = match rn.next_hop.as_deref() {
        None => NextHop::Auto,
        Some(v) => choice(
            c,
            &at("next_hop"),
            v,
            &[
                ("auto", NextHop::Auto),
                ("self", NextHop::SelfAlways),
                ("unchanged", NextHop::Unchanged),
            ],
        )?,
    };
    let max_prefix = rn
        .max_prefix
        .as_ref()
        .map(|v| max_prefix(c, &at, v))
        .transpose()?;
    if let Some(p) = &rn.password {
        if p.is_empty() || p.len() > MD5_MAX {
            return Err(c.err(
                &at("password"),
                format!("a TCP-MD5 key is 1 to {MD5_MAX} bytes, not {}", p.len()),
            ));
        }
    }
    // RFC 8212: without a policy, nothing is exchanged with eBGP peers
    // (outside the confederation, as FRR: member ASes are one network).
    let default = |d: &Option<PolicyName>| {
        d.clone().unwrap_or(if ebgp && !confed {
            PolicyName::Reject
        } else {
            PolicyName::Accept
        })
    };
    let import = match &rn.import {
        Some(v) => policy_name(c, &at("import"), v, policies)?,
        None => default(&r.default_import),
    };
    let export = match &rn.export {
        Some(v) => policy_name(c, &at("export"), v, policies)?,
        None => default(&r.default_export),
    };
    let role = match rn.role.as_deref() {
        None => None,
        Some(v) => Some(choice(
            c,
            &at("role"),
            v,
            &[
                ("provider", Role::Provider),
                ("rs", Role::Rs),
                ("rs-client", Role::RsClient),
                ("customer", Role::Customer),
                ("peer", Role::Peer),
            ],
        )?),
    };
    if role.is_some() && !ebgp {
        return Err(c.err(&at("role"), "roles are for eBGP sessions (RFC 9234 §4)"));
    }
    if role.is_some() && confed {
        return Err(c.err(
            &at("role"),
            "roles are for eBGP sessions outside the confederation (RFC 9234 §4)",
        ));
    }
    let role_strict = rn.role_strict.unwrap_or(false);
    if role_strict && role.is_none() {
        return Err(c.err(&at("role_strict"), "needs a role"));
    }
    // RFC 4724 §3: Restart Time is a 12-bit field.
    let restart_time = rn.restart_time.unwrap_or(120);
    if restart_time > 4095 {
        return Err(c.err(
            &at("restart_time"),
            format!("{restart_time}: at most 4095 seconds (RFC 4724 §3)"),
        ));
    }
    // RFC 9494: the Long-lived Stale Time is a 24-bit field, and the
    // capability goes with the graceful restart one.
    let graceful_restart = rn.graceful_restart.unwrap_or(true);
    let long_lived_stale_time = rn.long_lived_stale_time.unwrap_or(0);
    if long_lived_stale_time > 0xff_ffff {
        return Err(c.err(
            &at("long_lived_stale_time"),
            format!("{long_lived_stale_time}: at most 16777215 seconds (RFC 9494)"),
        ));
    }
    if long_lived_stale_time > 0 && !graceful_restart {
        return Err(c.err(
            &at("long_lived_stale_time"),
            "needs graceful_restart (RFC 9494)",
        ));
    }
    let four_octet_asn = rn.four_octet_asn.unwrap_or(true);
    if !four_octet_asn && (remote_as.is_4byte() || local_as.is_4byte()) {
        return Err(c.err(
            &at("four_octet_asn"),
            "false needs 2-octet ASNs on both sides (RFC 6793)",
        ));
    }
    let extended_nexthop = rn.extended_nexthop.unwrap_or(false);
    if extended_nexthop && !families.iter().any(|f| f.afi == base::Afi::Ipv4) {
        return Err(c.err(
            &at("extended_nexthop"),
            "needs an IPv4 family in families (RFC 8950 carries IPv4 NLRI)",
        ));
    }
    if rn.ttl == Some(0) {
        return Err(c.err(&at("ttl"), "a TTL is 1 to 255"));
    }
    let ttl_security = match rn.ttl_security {
        None | Some(TtlSecurityValue::Switch(false)) => None,
        Some(TtlSecurityValue::Switch(true)) => Some(1),
        Some(TtlSecurityValue::Hops(h)) => match u8::try_from(h) {
            Ok(h @ 1..=254) => Some(h),
            _ => {
                return Err(c.err(
                    &at("ttl_security"),
                    format!("{h}: the hop count is 1 (directly connected) to 254"),
                ))
            }
        },
    };
    if ttl_security.is_some() && rn.ttl.is_some() {
        // FRR refuses ebgp-multihop with ttl-security too: GTSM sends with
        // TTL 255, and a peer further away is ttl_security = HOPS.
        return Err(c.err(
            &at("ttl_security"),
            "cannot be combined with `ttl`: GTSM sends with TTL 255; for a peer N hops away write ttl_security = N",
        ));
    }
    let bfd = bfd(c, &at, rn, bfd_defaults)?;
    Ok(Neighbor {
        name,
        description: rn.description.clone().unwrap_or_default(),
        address,
        remote_as,
        ebgp,
        confed,
        local_as,
        local_address,
        port: rn.port.unwrap_or(179),
        connection,
        hold_time,
        keepalive,
        connect_retry,
        delay_open,
        families,
        add_path,
        route_reflector_client: rr_client,
        route_server_client: rs_client,
        next_hop,
        max_prefix,
        password: rn.password.clone(),
        import,
        export,
        role,
        role_strict,
        graceful_restart,
        restart_time,
        long_lived_stale_time,
        route_refresh: rn.route_refresh.unwrap_or(true),
        enhanced_route_refresh: rn.enhanced_route_refresh.unwrap_or(true),
        extended_message: rn.extended_message.unwrap_or(true),
        extended_nexthop,
        four_octet_asn,
        enabled: rn.enabled.unwrap_or(true),
        ttl: rn.ttl,
        ttl_security,
        soft_reconfiguration_inbound: rn.soft_reconfiguration_inbound.unwrap_or(true),
        mrai: rn.mrai.unwrap_or(0),
        bfd,
        damping: rn.damping.unwrap_or(r.damping),
    })
}

/// `bfd`, `bfd_min_tx`, `bfd_min_rx`, `bfd_multiplier`: the timers need
/// `bfd = true` (a key that would do nothing is an error).
fn bfd(
    c: &Ctx<'_>,
    at: &dyn Fn(&str) -> String,
    rn: &RawNeighbor,
    d: &crate::Bfd,
) -> R<Option<crate::Bfd>> {
    let on = rn.bfd.unwrap_or(false);
    if !on {
        for (k, set) in [
            ("bfd_min_tx", rn.bfd_min_tx.is_some()),
            ("bfd_min_rx", rn.bfd_min_rx.is_some()),
            ("bfd_multiplier", rn.bfd_multiplier.is_some()),
        ] {
            if set {
                return Err(c.err(&at(k), "needs bfd = true"));
            }
        }
        return Ok(None);
    }
    Ok(Some(crate::Bfd {
        min_tx_ms: match rn.bfd_min_tx {
            Some(v) => bfd_ms(c, &at("bfd_min_tx"), v)?,
            None => d.min_tx_ms,
        },
        min_rx_ms: match rn.bfd_min_rx {
            Some(v) => bfd_ms(c, &at("bfd_min_rx"), v)?,
            None => d.min_rx_ms,
        },
        multiplier: match rn.bfd_multiplier {
            Some(v) => bfd_mult(c, &at("bfd_multiplier"), v)?,
            None => d.multiplier,
        },
    }))
}

/// A neighbour added at run time (the gRPC API's `AddPeer`), in the
/// file's terms: each field is the `[[neighbor]]` key of the same name,
/// `None` for the key's default. [`runtime_neighbor`] validates it as the
/// file's neighbours are validated.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NeighborKeys {
    /// `address`.
    pub address: String,
    /// `remote_as`.
    pub remote_as: u32,
    /// `name`.
    pub name: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `local_address`.
    pub local_address: Option<String>,
    /// `port`.
    pub port: Option<u16>,
    /// `passive`.
    pub passive: Option<bool>,
    /// `hold_time`.
    pub hold_time: Option<u16>,
    /// `keepalive`.
    pub keepalive: Option<u16>,
    /// `connect_retry`.
    pub connect_retry: Option<u32>,
    /// `families`.
    pub families: Option<Vec<String>>,
    /// `route_reflector_client`.
    pub route_reflector_client: Option<bool>,
    /// `route_server_client`.
    pub route_server_client: Option<bool>,
    /// `password`.
    pub password: Option<String>,
    /// `ttl`.
    pub ttl: Option<u8>,
    /// `enabled`.
    pub enabled: Option<bool>,
}

impl NeighborKeys {
    fn table(&self) -> toml::Table {
        use toml::Value;
        let mut t = toml::Table::new();
        let mut put = |k: &str, v: Value| {
            t.insert(k.to_string(), v);
        };
        put("address", Value::String(self.address.clone()));
        put("remote_as", Value::Integer(i64::from(self.remote_as)));
        let s = |v: &Option<String>| v.clone().map(Value::String);
        let i = |v: Option<i64>| v.map(Value::Integer);
        let b = |v: Option<bool>| v.map(Value::Boolean);
        for (k, v) in [
            ("name", s(&self.name)),
            ("description", s(&self.description)),
            ("local_address", s(&self.local_address)),
            ("port", i(self.port.map(i64::from))),
            ("passive", b(self.passive)),
            ("hold_time", i(self.hold_time.map(i64::from))),
            ("keepalive", i(self.keepalive.map(i64::from))),
            ("connect_retry", i(self.connect_retry.map(i64::from))),
            (
                "families",
                self.families
                    .as_ref()
                    .map(|f| Value::Array(f.iter().cloned().map(Value::String).collect())),
            ),
            ("route_reflector_client", b(self.route_reflector_client)),
            ("route_server_client", b(self.route_server_client)),
            ("password", s(&self.password)),
            ("ttl", i(self.ttl.map(i64::from))),
            ("enabled", b(self.enabled)),
        ] {
            if let Some(v) = v {
                put(k, v);
            }
        }
        t
    }
}

/// Validates a neighbour added at run time against the running `cfg`
/// (its router defaults, policies and BFD defaults), as the file's own
/// `[[neighbor]]` tables are; errors name the key as `origin:
/// neighbor.KEY: ...`. Its name (given or derived) and address must not
/// be another neighbour's.
pub fn runtime_neighbor(
    cfg: &crate::Config,
    keys: &NeighborKeys,
    origin: &str,
) -> Result<Neighbor, String> {
    let index = crate::locate::Index::build("");
    let c = Ctx {
        file: origin,
        index: &index,
    };
    let tidy = |e: crate::ConfigError| {
        format!(
            "{origin}: {}: {}",
            e.field.replacen("neighbor[0].", "neighbor.", 1),
            e.message
        )
    };
    let raw: RawNeighbor = toml::Value::Table(keys.table())
        .try_into()
        .map_err(|e| format!("{origin}: {e}"))?;
    let n = neighbor(&c, 0, &raw, &cfg.router, &cfg.policies, &cfg.bfd).map_err(tidy)?;
    if let Some(o) = cfg.neighbors.iter().find(|o| o.address == n.address) {
        return Err(format!(
            "{origin}: {} is already neighbour \"{}\"",
            n.address, o.name
        ));
    }
    if cfg.neighbors.iter().any(|o| o.name == n.name) {
        return Err(format!(
            "{origin}: the name \"{}\" is already a neighbour's",
            n.name
        ));
    }
    Ok(n)
}

#[cfg(test)]
mod runtime_tests {
    use super::*;

    fn cfg() -> crate::Config {
        crate::parse(
            "[router]\nid = \"192.0.2.1\"\nasn = 65000\ndefault_import = \"accept\"\n\n\
             [[neighbor]]\nname = \"a\"\naddress = \"192.0.2.2\"\nremote_as = 65001\n",
            "t.toml",
        )
        .unwrap()
    }

    #[test]
    fn validated_like_the_file() {
        let c = cfg();
        let k = NeighborKeys {
            address: "192.0.2.3".into(),
            remote_as: 65002,
            description: Some("added \"live\"".into()),
            hold_time: Some(9),
            ..Default::default()
        };
        let n = runtime_neighbor(&c, &k, "AddPeer").unwrap();
        assert_eq!(n.name, "n192_0_2_3");
        assert_eq!(n.description, "added \"live\"");
        assert_eq!(n.hold_time, 9);
        assert!(n.ebgp);
        assert_eq!(n.import, crate::PolicyName::Accept);
        let e = runtime_neighbor(
            &c,
            &NeighborKeys {
                address: "192.0.2.2".into(),
                ..k.clone()
            },
            "AddPeer",
        )
        .unwrap_err();
        assert!(e.contains("already neighbour \"a\""), "{e}");
        let e = runtime_neighbor(
            &c,
            &NeighborKeys {
                name: Some("a".into()),
                ..k.clone()
            },
            "AddPeer",
        )
        .unwrap_err();
        assert!(e.contains("the name \"a\""), "{e}");
        let e = runtime_neighbor(
            &c,
            &NeighborKeys {
                hold_time: Some(2),
                ..k.clone()
            },
            "AddPeer",
        )
        .unwrap_err();
        assert!(e.starts_with("AddPeer: neighbor.hold_time:"), "{e}");
        let e = runtime_neighbor(
            &c,
            &NeighborKeys {
                address: "not-an-address".into(),
                ..k
            },
            "AddPeer",
        )
        .unwrap_err();
        assert!(e.starts_with("AddPeer: neighbor.address:"), "{e}");
    }
}
