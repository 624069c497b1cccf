//! Raw document -> typed [`Config`], with every semantic check pointing at
//! the offending value.

use std::collections::{BTreeMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::ops::Range;
use std::path::PathBuf;

use base::{AfiSafi, Asn, Prefix};
use toml::Spanned;

use crate::locate::{line_col, path_at, Location};
use crate::raw::{AsnValue, MaxPrefixValue, RawConfig, RawNeighbor, RawRouter, RawStatic};
use crate::{
    AddPath, Config, ConfigError, Connection, Control, MaxPrefix, MaxPrefixAction, Mrt, Neighbor,
    NextHop, Pipeline, PolicyName, Role, Router, Static,
};

struct Ctx<'a> {
    text: &'a str,
    file: &'a str,
}

impl Ctx<'_> {
    fn err(&self, span: Range<usize>, msg: impl Into<String>) -> ConfigError {
        let (line, col) = line_col(self.text, span.start);
        ConfigError {
            file: self.file.to_string(),
            line,
            col,
            field: path_at(self.text, span.start),
            message: msg.into(),
        }
    }
    fn err_field(&self, span: Range<usize>, field: String, msg: impl Into<String>) -> ConfigError {
        let mut e = self.err(span, msg);
        e.field = field;
        e
    }
    fn loc(&self, span: Range<usize>) -> Location {
        let (line, col) = line_col(self.text, span.start);
        Location {
            file: self.file.to_string(),
            line,
            col,
        }
    }
}

type R<T> = Result<T, ConfigError>;

fn asn(c: &Ctx<'_>, v: &Spanned<AsnValue>) -> R<Asn> {
    let bad = || c.err(v.span(), "an AS number is 1..4294967295 or asdot X.Y");
    match v.get_ref() {
        AsnValue::Int(i) if (1..=u32::MAX as i64).contains(i) => Ok(Asn(*i as u32)),
        AsnValue::Int(_) => Err(bad()),
        AsnValue::Text(s) => {
            let (hi, lo) = s.split_once('.').ok_or_else(bad)?;
            let hi: u16 = hi.parse().map_err(|_| bad())?;
            let lo: u16 = lo.parse().map_err(|_| bad())?;
            let v = (u32::from(hi) << 16) | u32::from(lo);
            if v == 0 {
                return Err(bad());
            }
            Ok(Asn(v))
        }
    }
}

fn ipv4(c: &Ctx<'_>, v: &Spanned<String>) -> R<Ipv4Addr> {
    v.get_ref().parse().map_err(|_| {
        c.err(
            v.span(),
            format!("\"{}\" is not an IPv4 address", v.get_ref()),
        )
    })
}

fn ip(c: &Ctx<'_>, v: &Spanned<String>) -> R<IpAddr> {
    v.get_ref().parse().map_err(|_| {
        c.err(
            v.span(),
            format!("\"{}\" is not an IP address", v.get_ref()),
        )
    })
}

fn sockaddr(c: &Ctx<'_>, v: &Spanned<String>) -> R<SocketAddr> {
    v.get_ref().parse().map_err(|_| {
        c.err(
            v.span(),
            format!(
                "\"{}\" is not ADDRESS:PORT ([v6]:port for IPv6)",
                v.get_ref()
            ),
        )
    })
}

fn hold(c: &Ctx<'_>, v: &Spanned<u16>) -> R<u16> {
    match *v.get_ref() {
        1 | 2 => Err(c.err(
            v.span(),
            "hold time must be 0 or at least 3 seconds (RFC 4271 §4.2)",
        )),
        h => Ok(h),
    }
}

fn policy_name(
    c: &Ctx<'_>,
    v: &Spanned<String>,
    policies: &BTreeMap<String, Spanned<bgp_policy::ast::PolicyDef>>,
) -> R<PolicyName> {
    match v.get_ref().as_str() {
        "accept" => Ok(PolicyName::Accept),
        "reject" => Ok(PolicyName::Reject),
        n if policies.contains_key(n) => Ok(PolicyName::Named(n.to_string())),
        n => Err(c.err(v.span(), format!("unknown policy \"{n}\""))),
    }
}

fn family(c: &Ctx<'_>, v: &Spanned<String>) -> R<AfiSafi> {
    match v.get_ref().as_str() {
        "ipv4-unicast" | "ipv4" => Ok(AfiSafi::IPV4_UNICAST),
        "ipv6-unicast" | "ipv6" => Ok(AfiSafi::IPV6_UNICAST),
        "ipv4-multicast" => Ok(AfiSafi::IPV4_MULTICAST),
        "ipv6-multicast" => Ok(AfiSafi::IPV6_MULTICAST),
        other => Err(c.err(
            v.span(),
            format!("unknown family \"{other}\" (ipv4-unicast, ipv6-unicast, ipv4-multicast, ipv6-multicast)"),
        )),
    }
}

fn router(c: &Ctx<'_>, r: &Spanned<RawRouter>, raw: &RawConfig) -> R<Router> {
    let rr = r.get_ref();
    let id = ipv4(c, &rr.id)?;
    if id.is_unspecified() {
        return Err(c.err(rr.id.span(), "the router id must not be 0.0.0.0"));
    }
    let listen = match &rr.listen {
        None => vec![
            "0.0.0.0:179"
                .parse()
                .map_err(|_| c.err(r.span(), "internal"))?,
            "[::]:179"
                .parse()
                .map_err(|_| c.err(r.span(), "internal"))?,
        ],
        Some(l) => l.iter().map(|a| sockaddr(c, a)).collect::<R<Vec<_>>>()?,
    };
    let hold_time = rr
        .hold_time
        .as_ref()
        .map(|h| hold(c, h))
        .transpose()?
        .unwrap_or(90);
    if let Some(k) = &rr.keepalive {
        if hold_time != 0 && *k.get_ref() >= hold_time {
            return Err(c.err(k.span(), "keepalive must be shorter than the hold time"));
        }
    }
    let pipeline = match rr
        .pipeline
        .as_ref()
        .map(|p| (p.get_ref().as_str(), p.span()))
    {
        None | Some(("sequential", _)) => Pipeline::Sequential,
        Some(("per-peer", _)) => Pipeline::PerPeer,
        Some(("worker-pool", _)) => Pipeline::WorkerPool,
        Some(("sharded", _)) => Pipeline::Sharded,
        Some((other, span)) => {
            return Err(c.err(
                span,
                format!(
                    "unknown pipeline \"{other}\" (sequential, per-peer, worker-pool, sharded)"
                ),
            ))
        }
    };
    let cluster_id = rr
        .cluster_id
        .as_ref()
        .map(|v| ipv4(c, v))
        .transpose()?
        .unwrap_or(id);
    let default_import = rr
        .default_import
        .as_ref()
        .map(|v| policy_name(c, v, &raw.policy))
        .transpose()?;
    let default_export = rr
        .default_export
        .as_ref()
        .map(|v| policy_name(c, v, &raw.policy))
        .transpose()?;
    Ok(Router {
        id,
        asn: asn(c, &rr.asn)?,
        listen,
        hold_time,
        keepalive: rr.keepalive.as_ref().map(|k| *k.get_ref()),
        connect_retry: rr.connect_retry.as_ref().map_or(120, |v| *v.get_ref()),
        cluster_id,
        pipeline,
        threads: rr.threads.as_ref().map(|t| *t.get_ref()),
        default_import,
        default_export,
    })
}

fn neighbor(
    c: &Ctx<'_>,
    idx: usize,
    n: &Spanned<RawNeighbor>,
    r: &Router,
    raw: &RawConfig,
) -> R<Neighbor> {
    let rn = n.get_ref();
    let address = ip(c, &rn.address)?;
    let remote_as = asn(c, &rn.remote_as)?;
    let ebgp = remote_as != r.asn;
    let name = match &rn.name {
        Some(s) => {
            let ok = !s.get_ref().is_empty()
                && s.get_ref()
                    .chars()
                    .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-');
            if !ok {
                return Err(c.err(s.span(), "a name is letters, digits, '_' and '-'"));
            }
            s.get_ref().clone()
        }
        None => format!("n{}", address.to_string().replace(['.', ':'], "_")),
    };
    let local_address = rn.local_address.as_ref().map(|v| ip(c, v)).transpose()?;
    if let (Some(l), Some(span)) = (local_address, rn.local_address.as_ref().map(|v| v.span())) {
        if l.is_ipv4() != address.is_ipv4() {
            return Err(c.err(span, "local_address must be of the same family as address"));
        }
    }
    let connection = match (rn.passive, rn.connection.as_ref()) {
        (_, Some(v)) => match v.get_ref().as_str() {
            "both" => Connection::Both,
            "passive" => Connection::Passive,
            "active" => Connection::Active,
            o => {
                return Err(c.err(
                    v.span(),
                    format!("unknown connection mode \"{o}\" (both, passive, active)"),
                ))
            }
        },
        (Some(true), None) => Connection::Passive,
        _ => Connection::Both,
    };
    let hold_time = rn
        .hold_time
        .as_ref()
        .map(|h| hold(c, h))
        .transpose()?
        .unwrap_or(r.hold_time);
    let families = match &rn.families {
        Some(f) if f.is_empty() => {
            return Err(c.err(n.span(), "families must not be empty"));
        }
        Some(f) => {
            let mut v = Vec::new();
            for x in f {
                let af = family(c, x)?;
                if !v.contains(&af) {
                    v.push(af);
                }
            }
            v
        }
        None => vec![AfiSafi::IPV4_UNICAST, AfiSafi::IPV6_UNICAST],
    };
    let add_path = match rn
        .add_path
        .as_ref()
        .map(|v| (v.get_ref().as_str(), v.span()))
    {
        None | Some(("off", _)) => AddPath::default(),
        Some(("receive", _)) => AddPath {
            receive: true,
            send: false,
        },
        Some(("send", _)) => AddPath {
            receive: false,
            send: true,
        },
        Some(("both", _)) => AddPath {
            receive: true,
            send: true,
        },
        Some((o, span)) => {
            return Err(c.err(
                span,
                format!("unknown add_path \"{o}\" (off, receive, send, both)"),
            ))
        }
    };
    let rr_client = rn
        .route_reflector_client
        .as_ref()
        .is_some_and(|v| *v.get_ref());
    if rr_client && ebgp {
        let span = rn
            .route_reflector_client
            .as_ref()
            .map_or(n.span(), |v| v.span());
        return Err(c.err(
            span,
            "a route reflector client must be an iBGP neighbor (RFC 4456)",
        ));
    }
    let rs_client = rn
        .route_server_client
        .as_ref()
        .is_some_and(|v| *v.get_ref());
    if rs_client && !ebgp {
        let span = rn
            .route_server_client
            .as_ref()
            .map_or(n.span(), |v| v.span());
        return Err(c.err(
            span,
            "a route server client must be an eBGP neighbor (RFC 7947)",
        ));
    }
    let next_hop = match rn
        .next_hop
        .as_ref()
        .map(|v| (v.get_ref().as_str(), v.span()))
    {
        None | Some(("auto", _)) => NextHop::Auto,
        Some(("self", _)) => NextHop::SelfAlways,
        Some(("unchanged", _)) => NextHop::Unchanged,
        Some((o, span)) => {
            return Err(c.err(
                span,
                format!("unknown next_hop \"{o}\" (auto, self, unchanged)"),
            ))
        }
    };
    let max_prefix = match &rn.max_prefix {
        None => None,
        Some(v) => Some(match v.get_ref() {
            MaxPrefixValue::Limit(l) => MaxPrefix {
                limit: *l,
                action: MaxPrefixAction::Shutdown,
                warn_threshold: 75,
            },
            MaxPrefixValue::Table(t) => {
                let action = match t.action.as_ref().map(|a| (a.get_ref().as_str(), a.span())) {
                    None | Some(("shutdown", _)) => MaxPrefixAction::Shutdown,
                    Some(("warn", _)) => MaxPrefixAction::Warn,
                    Some(("restart", _)) => MaxPrefixAction::Restart(t.restart_after.unwrap_or(60)),
                    Some((o, span)) => {
                        return Err(c.err(
                            span,
                            format!("unknown max_prefix action \"{o}\" (warn, restart, shutdown)"),
                        ))
                    }
                };
                if t.warn_threshold.is_some_and(|w| w > 100) {
                    return Err(c.err(v.span(), "warn_threshold is a percentage (0-100)"));
                }
                MaxPrefix {
                    limit: t.limit,
                    action,
                    warn_threshold: t.warn_threshold.unwrap_or(75),
                }
            }
        }),
    };
    if let Some(p) = &rn.password {
        if p.get_ref().len() > 80 || p.get_ref().is_empty() {
            return Err(c.err(
                p.span(),
                "a TCP-MD5 password is 1 to 80 bytes (Linux TCP_MD5SIG_MAXKEYLEN)",
            ));
        }
    }
    let default_pol = |d: &Option<PolicyName>| {
        d.clone().unwrap_or(if ebgp {
            PolicyName::Reject
        } else {
            PolicyName::Accept
        })
    };
    let import = match &rn.import {
        Some(v) => policy_name(c, v, &raw.policy)?,
        None => default_pol(&r.default_import),
    };
    let export = match &rn.export {
        Some(v) => policy_name(c, v, &raw.policy)?,
        None => default_pol(&r.default_export),
    };
    let role = match rn.role.as_ref().map(|v| (v.get_ref().as_str(), v.span())) {
        None => None,
        Some(("provider", _)) => Some(Role::Provider),
        Some(("rs", _)) => Some(Role::Rs),
        Some(("rs-client", _)) => Some(Role::RsClient),
        Some(("customer", _)) => Some(Role::Customer),
        Some(("peer", _)) => Some(Role::Peer),
        Some((o, span)) => {
            return Err(c.err(
                span,
                format!("unknown role \"{o}\" (provider, rs, rs-client, customer, peer)"),
            ))
        }
    };
    let _ = idx;
    Ok(Neighbor {
        name,
        description: rn.description.clone().unwrap_or_default(),
        address,
        remote_as,
        ebgp,
        local_address,
        port: rn.port.unwrap_or(179),
        connection,
        hold_time,
        keepalive: rn.keepalive.or(r.keepalive),
        connect_retry: rn.connect_retry.unwrap_or(r.connect_retry),
        delay_open: rn.delay_open,
        families,
        add_path,
        route_reflector_client: rr_client,
        route_server_client: rs_client,
        next_hop,
        max_prefix,
        password: rn.password.as_ref().map(|p| p.get_ref().clone()),
        import,
        export,
        role,
        role_strict: rn.role_strict.unwrap_or(false),
        graceful_restart: rn.graceful_restart.unwrap_or(true),
        restart_time: rn.restart_time.unwrap_or(120),
        route_refresh: rn.route_refresh.unwrap_or(true),
        enhanced_route_refresh: rn.enhanced_route_refresh.unwrap_or(true),
        extended_message: rn.extended_message.unwrap_or(true),
        four_octet_asn: rn.four_octet_asn.unwrap_or(true),
        enabled: rn.enabled.unwrap_or(true),
        ttl: rn.ttl,
        soft_reconfiguration_inbound: rn.soft_reconfiguration_inbound.unwrap_or(true),
        mrai: rn.mrai.unwrap_or(0),
    })
}

fn community(c: &Ctx<'_>, v: &Spanned<String>) -> R<u32> {
    let bad = || {
        c.err(
            v.span(),
            format!("\"{}\" is not a community ASN:VALUE", v.get_ref()),
        )
    };
    let (a, b) = v.get_ref().split_once(':').ok_or_else(bad)?;
    let a: u16 = a.trim().parse().map_err(|_| bad())?;
    let b: u16 = b.trim().parse().map_err(|_| bad())?;
    Ok((u32::from(a) << 16) | u32::from(b))
}

fn large(c: &Ctx<'_>, v: &Spanned<String>) -> R<(u32, u32, u32)> {
    let bad = || {
        c.err(
            v.span(),
            format!("\"{}\" is not a large community A:B:C", v.get_ref()),
        )
    };
    let mut it = v.get_ref().split(':').map(|x| x.trim().parse::<u32>());
    match (it.next(), it.next(), it.next(), it.next()) {
        (Some(Ok(a)), Some(Ok(b)), Some(Ok(d)), None) => Ok((a, b, d)),
        _ => Err(bad()),
    }
}

fn static_route(c: &Ctx<'_>, s: &Spanned<RawStatic>) -> R<Static> {
    let rs = s.get_ref();
    let prefix: Prefix = rs.prefix.get_ref().parse().map_err(|_| {
        c.err(
            rs.prefix.span(),
            format!("\"{}\" is not a prefix", rs.prefix.get_ref()),
        )
    })?;
    if prefix.masked() != prefix {
        return Err(c.err(
            rs.prefix.span(),
            format!("\"{}\" has host bits set", rs.prefix.get_ref()),
        ));
    }
    let next_hop = match &rs.next_hop {
        None => None,
        Some(v) if v.get_ref() == "self" => None,
        Some(v) => {
            let a = ip(c, v)?;
            if a.is_ipv4() != matches!(prefix, Prefix::V4(_)) && a.is_ipv6() {
                return Err(c.err(v.span(), "an IPv4 prefix needs an IPv4 next hop here"));
            }
            Some(a)
        }
    };
    let origin = match rs.origin.as_ref().map(|v| (v.get_ref().as_str(), v.span())) {
        None | Some(("igp", _)) => 0,
        Some(("egp", _)) => 1,
        Some(("incomplete", _)) => 2,
        Some((o, span)) => {
            return Err(c.err(
                span,
                format!("unknown origin \"{o}\" (igp, egp, incomplete)"),
            ))
        }
    };
    Ok(Static {
        prefix,
        next_hop,
        communities: rs
            .communities
            .iter()
            .map(|v| community(c, v))
            .collect::<R<_>>()?,
        large_communities: rs
            .large_communities
            .iter()
            .map(|v| large(c, v))
            .collect::<R<_>>()?,
        local_pref: rs.local_pref,
        med: rs.med,
        origin,
    })
}

pub fn parse(text: &str, file: &str) -> R<Config> {
    let c = Ctx { text, file };
    let raw: RawConfig = toml::from_str(text).map_err(|e| {
        let span = e.span().unwrap_or(0..0);
        let mut err = c.err(span, e.message().to_string());
        err.message = err.message.trim_end().to_string();
        err
    })?;
    let Some(r) = raw.router.as_ref() else {
        return Err(ConfigError {
            file: file.to_string(),
            line: 1,
            col: 1,
            field: "router".into(),
            message: "missing [router] table (id and asn are required)".into(),
        });
    };
    let router = router(&c, r, &raw)?;
    let mut locations = BTreeMap::new();
    locations.insert("router".to_string(), c.loc(r.span()));

    // Policies compile here so that their errors carry the file position.
    let mut policies = BTreeMap::new();
    for (name, p) in &raw.policy {
        locations.insert(format!("policy.{name}"), c.loc(p.span()));
        if let Err(e) = bgp_policy::compile(p.get_ref()) {
            return Err(c.err_field(p.span(), format!("policy.{name}"), e.to_string()));
        }
        policies.insert(name.clone(), p.get_ref().clone());
    }

    let mut neighbors = Vec::new();
    let mut names = HashSet::new();
    let mut addrs = HashSet::new();
    for (i, n) in raw.neighbor.iter().enumerate() {
        let nb = neighbor(&c, i, n, &router, &raw)?;
        let field = format!("neighbor[{i}]");
        if !addrs.insert(nb.address) {
            let span = n.get_ref().address.span();
            return Err(c.err_field(
                span,
                format!("{field}.address"),
                format!("duplicate neighbor address {}", nb.address),
            ));
        }
        if !names.insert(nb.name.clone()) {
            return Err(c.err_field(
                n.span(),
                format!("{field}.name"),
                format!("duplicate neighbor name \"{}\"", nb.name),
            ));
        }
        locations.insert(field, c.loc(n.span()));
        neighbors.push(nb);
    }
    let mut statics = Vec::new();
    for (i, s) in raw.statics.iter().enumerate() {
        let st = static_route(&c, s)?;
        if statics.iter().any(|x: &Static| x.prefix == st.prefix) {
            return Err(c.err_field(
                s.get_ref().prefix.span(),
                format!("static[{i}].prefix"),
                format!("duplicate static route {}", st.prefix),
            ));
        }
        locations.insert(format!("static[{i}]"), c.loc(s.span()));
        statics.push(st);
    }
    let metrics = raw
        .control
        .metrics
        .as_ref()
        .map(|m| sockaddr(&c, m))
        .transpose()?;
    let mrt = raw.mrt.as_ref().map(|m| {
        let m = m.get_ref();
        Mrt {
            updates: m.updates.clone(),
            updates_interval: m.updates_interval.unwrap_or(300),
            rib: m.rib.clone(),
            rib_interval: m.rib_interval.unwrap_or(7200),
        }
    });
    Ok(Config {
        file: file.to_string(),
        router,
        control: Control {
            socket: PathBuf::from(
                raw.control
                    .socket
                    .clone()
                    .unwrap_or_else(|| "/run/tessera/tesserad.sock".into()),
            ),
            metrics,
        },
        log_level: raw.log.level.clone().unwrap_or_else(|| "info".into()),
        mrt,
        neighbors,
        statics,
        policies,
        locations,
    })
}
