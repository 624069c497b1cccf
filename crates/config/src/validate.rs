//! Raw document -> typed [`Config`]: the whole-file pass. Every check
//! names the field it refuses by its dotted path; the position comes from
//! the [`Index`] of the same text. One error per item (the router, each
//! neighbour, static, policy) is collected, so that a file with several
//! mistakes is fixed in one round.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use base::{Asn, Prefix};
use bgp_policy::ast::PolicyDef;
use bgp_policy::PolicyError;

use crate::locate::Index;
use crate::raw::{AsnValue, RawConfig, RawMrt, RawRouter, RawStatic};
use crate::{
    BestPath, Config, ConfigError, Control, Locks, Mrt, Multipath, Pipeline, PolicyName, Router,
    Static, Streams, MAX_MULTIPATH,
};

pub(crate) type R<T> = Result<T, ConfigError>;

/// What every check needs: the file name and where each path is.
pub(crate) struct Ctx<'a> {
    pub file: &'a str,
    pub index: &'a Index,
}

impl Ctx<'_> {
    /// An error about the field at `path`.
    pub fn err(&self, path: &str, msg: impl Into<String>) -> ConfigError {
        let (line, col) = self.index.nearest(path).unwrap_or((0, 0));
        ConfigError {
            file: self.file.to_string(),
            line,
            col,
            field: path.to_string(),
            message: msg.into(),
            more: Vec::new(),
        }
    }
}

/// `[A-Za-z0-9_-]+`: neighbour and policy names, which appear in CLI
/// commands and metric labels.
pub(crate) fn is_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
}

/// One of a fixed set of strings.
pub(crate) fn choice<T: Copy>(c: &Ctx<'_>, path: &str, v: &str, opts: &[(&str, T)]) -> R<T> {
    if let Some((_, t)) = opts.iter().find(|(k, _)| *k == v) {
        return Ok(*t);
    }
    let names: Vec<String> = opts.iter().map(|(k, _)| format!("\"{k}\"")).collect();
    Err(c.err(
        path,
        format!(
            "unknown value \"{v}\", expected one of {}",
            names.join(", ")
        ),
    ))
}

/// `65000`, `"65000"` or asdot `"1.10"` (RFC 5396).
pub(crate) fn asn(c: &Ctx<'_>, path: &str, v: &AsnValue) -> R<Asn> {
    const WHAT: &str = "is not an AS number (1..4294967295, or asdot \"X.Y\")";
    let n = match v {
        AsnValue::Int(i) => u32::try_from(*i)
            .ok()
            .filter(|&n| n != 0)
            .ok_or_else(|| c.err(path, format!("{i} {WHAT}")))?,
        AsnValue::Text(s) => {
            let asdot = s.split_once('.').and_then(|(hi, lo)| {
                let hi: u16 = hi.parse().ok()?;
                let lo: u16 = lo.parse().ok()?;
                Some((u32::from(hi) << 16) | u32::from(lo))
            });
            asdot
                .or_else(|| s.parse::<u32>().ok())
                .filter(|&n| n != 0)
                .ok_or_else(|| c.err(path, format!("\"{s}\" {WHAT}")))?
        }
    };
    if Asn(n) == Asn::TRANS {
        return Err(c.err(
            path,
            "23456 is AS_TRANS (RFC 6793 §9), not an AS of its own",
        ));
    }
    Ok(Asn(n))
}

pub(crate) fn ip(c: &Ctx<'_>, path: &str, v: &str) -> R<IpAddr> {
    v.parse()
        .map_err(|_| c.err(path, format!("\"{v}\" is not an IP address")))
}

fn router_id(c: &Ctx<'_>, path: &str, v: &str) -> R<Ipv4Addr> {
    let a: Ipv4Addr = v
        .parse()
        .map_err(|_| c.err(path, format!("\"{v}\" is not an IPv4 address")))?;
    if a.is_unspecified() {
        return Err(c.err(path, "0.0.0.0 is not a valid identifier (RFC 6286 §2.1)"));
    }
    Ok(a)
}

fn sockaddr(c: &Ctx<'_>, path: &str, v: &str) -> R<SocketAddr> {
    v.parse().map_err(|_| {
        c.err(
            path,
            format!("\"{v}\" is not ADDRESS:PORT (\"[ADDRESS]:PORT\" for IPv6)"),
        )
    })
}

/// RFC 4271 §4.2: "the Hold Time MUST be either zero or at least three
/// seconds".
pub(crate) fn hold(c: &Ctx<'_>, path: &str, v: u16) -> R<u16> {
    match v {
        1 | 2 => Err(c.err(
            path,
            format!("{v}: the hold time is 0 or at least 3 seconds (RFC 4271 §4.2)"),
        )),
        h => Ok(h),
    }
}

/// A keepalive interval shorter than the hold time (RFC 4271 §10
/// suggests a third); none at all when the hold time is 0.
pub(crate) fn keepalive(c: &Ctx<'_>, path: &str, k: Option<u16>, hold: u16) -> R<Option<u16>> {
    match k {
        Some(0) => Err(c.err(path, "the keepalive interval is at least 1 second")),
        Some(k) if hold != 0 && k >= hold => Err(c.err(
            path,
            format!("{k}: the keepalive interval must be shorter than the hold time ({hold})"),
        )),
        k => Ok(k),
    }
}

/// At least one second: these drive timers.
pub(crate) fn seconds(c: &Ctx<'_>, path: &str, v: u32) -> R<u32> {
    if v == 0 {
        return Err(c.err(path, "must be at least 1 second"));
    }
    Ok(v)
}

pub(crate) fn policy_name(
    c: &Ctx<'_>,
    path: &str,
    v: &str,
    policies: &BTreeMap<String, PolicyDef>,
) -> R<PolicyName> {
    match v {
        "accept" => Ok(PolicyName::Accept),
        "reject" => Ok(PolicyName::Reject),
        n if policies.contains_key(n) => Ok(PolicyName::Named(n.to_string())),
        n => Err(c.err(path, format!("unknown policy \"{n}\""))),
    }
}

fn router(c: &Ctx<'_>, rr: &RawRouter, policies: &BTreeMap<String, PolicyDef>) -> R<Router> {
    let id = router_id(c, "router.id", &rr.id)?;
    let asn = asn(c, "router.asn", &rr.asn)?;
    let listen = match &rr.listen {
        None => vec![
            SocketAddr::from((Ipv4Addr::UNSPECIFIED, 179)),
            SocketAddr::from((std::net::Ipv6Addr::UNSPECIFIED, 179)),
        ],
        Some(l) => {
            let mut v: Vec<SocketAddr> = Vec::new();
            for (i, a) in l.iter().enumerate() {
                let path = format!("router.listen[{i}]");
                let s = sockaddr(c, &path, a)?;
                if v.contains(&s) {
                    return Err(c.err(&path, format!("{s} is listed twice")));
                }
                v.push(s);
            }
            v
        }
    };
    let hold_time = match rr.hold_time {
        Some(h) => hold(c, "router.hold_time", h)?,
        None => 90,
    };
    let keepalive = keepalive(c, "router.keepalive", rr.keepalive, hold_time)?;
    let connect_retry = match rr.connect_retry {
        Some(s) => seconds(c, "router.connect_retry", s)?,
        None => 120,
    };
    let pipeline = match &rr.pipeline {
        None => Pipeline::Sharded,
        Some(p) => choice(
            c,
            "router.pipeline",
            p,
            &[
                ("sequential", Pipeline::Sequential),
                ("per-peer", Pipeline::PerPeer),
                ("worker-pool", Pipeline::WorkerPool),
                ("sharded", Pipeline::Sharded),
            ],
        )?,
    };
    let locks = match &rr.locks {
        None => Locks::Stripes,
        Some(_) if !matches!(pipeline, Pipeline::PerPeer | Pipeline::WorkerPool) => {
            return Err(c.err(
                "router.locks",
                "applies to pipeline \"per-peer\" and \"worker-pool\" only (the others lock nothing)",
            ));
        }
        Some(l) => choice(
            c,
            "router.locks",
            l,
            &[("stripes", Locks::Stripes), ("fine", Locks::Fine)],
        )?,
    };
    let streams = match &rr.streams {
        None => Streams::PerSession,
        Some(_) if pipeline != Pipeline::WorkerPool => {
            return Err(c.err(
                "router.streams",
                "applies to pipeline \"worker-pool\" only (the other pipelines parse on the session)",
            ));
        }
        Some(v) => choice(
            c,
            "router.streams",
            v,
            &[
                ("per-session", Streams::PerSession),
                ("per-worker", Streams::PerWorker),
            ],
        )?,
    };
    if rr.threads == Some(0) {
        return Err(c.err("router.threads", "at least 1 thread"));
    }
    // The sharded pipeline runs one RIB thread per shard, and sessions
    // split UPDATEs with a 64-bit shard mask.
    if rr.threads.is_some_and(|t| t > 64) {
        return Err(c.err("router.threads", "at most 64 threads"));
    }
    let cluster_id = match &rr.cluster_id {
        Some(v) => router_id(c, "router.cluster_id", v)?,
        None => id,
    };
    let default_import = rr
        .default_import
        .as_ref()
        .map(|v| policy_name(c, "router.default_import", v, policies))
        .transpose()?;
    let default_export = rr
        .default_export
        .as_ref()
        .map(|v| policy_name(c, "router.default_export", v, policies))
        .transpose()?;
    // FRR's `select-defer-time` default and range.
    let select_defer_time = rr.select_defer_time.unwrap_or(360);
    if !(1..=3600).contains(&select_defer_time) {
        return Err(c.err(
            "router.select_defer_time",
            format!("{select_defer_time}: 1 to 3600 seconds"),
        ));
    }
    let confederation = rr
        .confederation
        .as_ref()
        .map(|r| crate::confed::validate(c, r, asn))
        .transpose()?;
    let multipath = multipath(c, rr.multipath.as_ref())?;
    Ok(Router {
        confederation,
        id,
        asn,
        listen,
        hold_time,
        keepalive,
        connect_retry,
        cluster_id,
        pipeline,
        locks,
        streams,
        threads: rr.threads,
        next_hop_tracking: rr.next_hop_tracking.unwrap_or(false),
        default_import,
        default_export,
        bestpath: BestPath {
            deterministic_med: rr.deterministic_med.unwrap_or(false),
            always_compare_med: rr.always_compare_med.unwrap_or(false),
            med_missing_as_worst: rr.med_missing_as_worst.unwrap_or(false),
            compare_router_id: rr.compare_router_id.unwrap_or(true),
            multipath,
        },
        select_defer_time,
        damping: rr.damping.unwrap_or(false),
    })
}

/// `router.multipath`: a count for both, or the table.
fn multipath(c: &Ctx<'_>, raw: Option<&crate::raw::RawMultipath>) -> R<Multipath> {
    use crate::raw::RawMultipath;
    let count = |field: &str, v: i64| -> R<u16> {
        u16::try_from(v)
            .ok()
            .filter(|n| (1..=MAX_MULTIPATH).contains(n))
            .ok_or_else(|| c.err(field, format!("{v}: 1 to {MAX_MULTIPATH} paths (1 is off)")))
    };
    Ok(match raw {
        None => Multipath::default(),
        Some(RawMultipath::Both(n)) => {
            let n = count("router.multipath", *n)?;
            Multipath {
                ebgp: n,
                ibgp: n,
                relax_as_path: false,
            }
        }
        Some(RawMultipath::Table(t)) => Multipath {
            ebgp: t
                .ebgp
                .map(|v| count("router.multipath.ebgp", v))
                .transpose()?
                .unwrap_or(1),
            ibgp: t
                .ibgp
                .map(|v| count("router.multipath.ibgp", v))
                .transpose()?
                .unwrap_or(1),
            relax_as_path: t.relax_as_path.unwrap_or(false),
        },
    })
}

/// A policy name, then the compiler's verdict at the exact list entry.
fn policy(c: &Ctx<'_>, name: &str, def: &PolicyDef) -> R<()> {
    let base = format!("policy.{name}");
    if !is_name(name) || name == "accept" || name == "reject" {
        return Err(c.err(
            &base,
            format!(
                "\"{name}\" is not a policy name (letters, digits, '_', '-'; \
                 not \"accept\" or \"reject\")"
            ),
        ));
    }
    bgp_policy::compile(def)
        .map(|_| ())
        .map_err(|e| c.err(&policy_error_path(&base, &e), policy_error_message(&e)))
}

/// `policy.NAME.term[T].match.prefix[I]` for a compile error.
pub(crate) fn policy_error_path(base: &str, e: &PolicyError) -> String {
    let mut p = base.to_string();
    if let Some(t) = e.term {
        p.push_str(&format!(".term[{t}]"));
    }
    if !e.field.is_empty() {
        p.push('.');
        p.push_str(e.field);
    }
    if let Some(i) = e.index {
        p.push_str(&format!("[{i}]"));
    }
    p
}

fn policy_error_message(e: &PolicyError) -> String {
    format!("\"{}\": {}", e.value, e.kind)
}

fn community(c: &Ctx<'_>, path: &str, v: &str) -> R<u32> {
    bgp_policy::parse_std(v)
        .map(|x| x.0)
        .map_err(|k| c.err(path, format!("\"{v}\": {k}")))
}

fn large(c: &Ctx<'_>, path: &str, v: &str) -> R<(u32, u32, u32)> {
    bgp_policy::parse_large(v)
        .map(|l| (l.global_admin, l.local_data1, l.local_data2))
        .map_err(|k| c.err(path, format!("\"{v}\": {k}")))
}

fn static_route(c: &Ctx<'_>, i: usize, rs: &RawStatic) -> R<Static> {
    let at = |k: &str| format!("static[{i}].{k}");
    let prefix: Prefix = rs.prefix.parse().map_err(|_| {
        c.err(
            &at("prefix"),
            format!("\"{}\" is not a prefix ADDRESS/LENGTH", rs.prefix),
        )
    })?;
    if prefix.masked() != prefix {
        return Err(c.err(
            &at("prefix"),
            format!(
                "\"{}\" has bits set beyond the prefix length (did you mean {}?)",
                rs.prefix,
                prefix.masked()
            ),
        ));
    }
    let next_hop = match rs.next_hop.as_deref() {
        None | Some("self") => None,
        Some(v) => {
            let a = ip(c, &at("next_hop"), v)?;
            // No RFC 8950 (IPv4 NLRI over an IPv6 next hop) for statics.
            if a.is_ipv4() != matches!(prefix, Prefix::V4(_)) {
                return Err(c.err(
                    &at("next_hop"),
                    format!("{a} is not of the family of {prefix}"),
                ));
            }
            Some(a)
        }
    };
    let origin = match &rs.origin {
        None => 0,
        Some(o) => choice(
            c,
            &at("origin"),
            o,
            &[("igp", 0), ("egp", 1), ("incomplete", 2)],
        )?,
    };
    let mut communities = Vec::new();
    for (j, v) in rs.communities.iter().enumerate() {
        communities.push(community(c, &format!("static[{i}].communities[{j}]"), v)?);
    }
    let mut large_communities = Vec::new();
    for (j, v) in rs.large_communities.iter().enumerate() {
        large_communities.push(large(c, &format!("static[{i}].large_communities[{j}]"), v)?);
    }
    Ok(Static {
        prefix,
        next_hop,
        communities,
        large_communities,
        local_pref: rs.local_pref,
        med: rs.med,
        origin,
    })
}

/// `error`, `info`, ... or a tracing filter `info,bgp_speaker=debug`.
fn log_level(c: &Ctx<'_>, v: &str) -> R<String> {
    const LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];
    let ok = !v.is_empty()
        && v.split(',').all(|d| {
            let level = d
                .rsplit_once('=')
                .map_or(d, |(target, l)| if target.is_empty() { "" } else { l });
            LEVELS.contains(&level.trim().to_ascii_lowercase().as_str())
        });
    if !ok {
        return Err(c.err(
            "log.level",
            format!(
                "\"{v}\" is not a level (error, warn, info, debug, trace) \
                 or a filter such as \"info,bgp_speaker=debug\""
            ),
        ));
    }
    Ok(v.to_string())
}

fn mrt(c: &Ctx<'_>, m: &RawMrt) -> R<Mrt> {
    for (k, v) in [("updates", &m.updates), ("rib", &m.rib)] {
        if v.as_deref().is_some_and(|s| s.trim().is_empty()) {
            return Err(c.err(&format!("mrt.{k}"), "an empty file name"));
        }
    }
    if m.updates.is_none() && m.updates_interval.is_some() {
        return Err(c.err("mrt.updates_interval", "set without mrt.updates"));
    }
    if m.rib.is_none() && m.rib_interval.is_some() {
        return Err(c.err("mrt.rib_interval", "set without mrt.rib"));
    }
    Ok(Mrt {
        updates: m.updates.clone(),
        updates_interval: match m.updates_interval {
            Some(s) => seconds(c, "mrt.updates_interval", s)?,
            None => 300,
        },
        rib: m.rib.clone(),
        rib_interval: match m.rib_interval {
            Some(s) => seconds(c, "mrt.rib_interval", s)?,
            None => 7200,
        },
    })
}

/// A BFD interval in milliseconds, 1..=60000 (FRR's upper bound).
pub(crate) fn bfd_ms(c: &Ctx<'_>, path: &str, v: i64) -> R<u32> {
    match u32::try_from(v) {
        Ok(ms @ 1..=60_000) => Ok(ms),
        _ => Err(c.err(path, format!("{v}: milliseconds, 1 to 60000"))),
    }
}

/// A BFD Detect Mult, 1..=255.
pub(crate) fn bfd_mult(c: &Ctx<'_>, path: &str, v: i64) -> R<u8> {
    match u8::try_from(v) {
        Ok(m @ 1..=255) => Ok(m),
        _ => Err(c.err(path, format!("{v}: the multiplier is 1 to 255"))),
    }
}

fn bfd_defaults(c: &Ctx<'_>, b: &crate::raw::RawBfd) -> R<crate::Bfd> {
    let d = crate::Bfd::default();
    Ok(crate::Bfd {
        min_tx_ms: b
            .min_tx
            .map(|v| bfd_ms(c, "bfd.min_tx", v))
            .transpose()?
            .unwrap_or(d.min_tx_ms),
        min_rx_ms: b
            .min_rx
            .map(|v| bfd_ms(c, "bfd.min_rx", v))
            .transpose()?
            .unwrap_or(d.min_rx_ms),
        multiplier: b
            .multiplier
            .map(|v| bfd_mult(c, "bfd.multiplier", v))
            .transpose()?
            .unwrap_or(d.multiplier),
    })
}

/// Keeps the value and records the error.
fn keep<T>(errors: &mut Vec<ConfigError>, r: R<T>) -> Option<T> {
    r.map_err(|e| errors.push(e)).ok()
}

/// Parses, validates and indexes a whole file.
pub fn parse(text: &str, file: &str) -> R<Config> {
    let index = Index::build(text);
    let c = Ctx {
        file,
        index: &index,
    };
    let raw: RawConfig = toml::from_str(text).map_err(|e| serde_error(&c, text, &e))?;
    let mut errors = Vec::new();

    for (name, def) in &raw.policy {
        keep(&mut errors, policy(&c, name, def));
    }
    let router = match &raw.router {
        Some(r) => keep(&mut errors, router(&c, r, &raw.policy)),
        None => {
            errors.push(c.err("router", "missing [router] table (id and asn are required)"));
            None
        }
    };
    let bfd = keep(&mut errors, bfd_defaults(&c, &raw.bfd)).unwrap_or_default();
    let mut neighbors = Vec::new();
    if let Some(r) = &router {
        let mut names: HashMap<String, usize> = HashMap::new();
        let mut addrs: HashMap<IpAddr, usize> = HashMap::new();
        for (i, n) in raw.neighbor.iter().enumerate() {
            let Some(nb) = keep(
                &mut errors,
                crate::neighbor::neighbor(&c, i, n, r, &raw.policy, &bfd),
            ) else {
                continue;
            };
            let dup_addr = addrs.insert(nb.address, i);
            if let Some(j) = dup_addr {
                errors.push(c.err(
                    &format!("neighbor[{i}].address"),
                    format!("{} is also neighbor[{j}]", nb.address),
                ));
            }
            // A derived name repeats with the address: one error is enough.
            let derived_dup = dup_addr.is_some() && n.name.is_none();
            if let (Some(j), false) = (names.insert(nb.name.clone(), i), derived_dup) {
                let path = if n.name.is_some() {
                    format!("neighbor[{i}].name")
                } else {
                    format!("neighbor[{i}]")
                };
                errors.push(c.err(
                    &path,
                    format!("the name \"{}\" is also neighbor[{j}]'s", nb.name),
                ));
            }
            neighbors.push(nb);
        }
    }
    let damped = neighbors.iter().any(|n: &crate::Neighbor| n.damping);
    let damping = keep(
        &mut errors,
        crate::damping::validate(&c, raw.damping.as_ref(), damped),
    )
    .unwrap_or_default();
    let mut statics: Vec<Static> = Vec::new();
    for (i, s) in raw.statics.iter().enumerate() {
        let Some(st) = keep(&mut errors, static_route(&c, i, s)) else {
            continue;
        };
        if let Some(j) = statics.iter().position(|x| x.prefix == st.prefix) {
            errors.push(c.err(
                &format!("static[{i}].prefix"),
                format!("{} is also static[{j}]", st.prefix),
            ));
        }
        statics.push(st);
    }
    let one_rib = router
        .as_ref()
        .is_some_and(|r| crate::aggregate::one_rib(r.pipeline, r.threads));
    let static_prefixes: Vec<Prefix> = statics.iter().map(|s| s.prefix).collect();
    let aggregates: Vec<crate::Aggregate> =
        crate::aggregate::validate(&c, &raw.aggregate, one_rib, &static_prefixes)
            .into_iter()
            .filter_map(|r| keep(&mut errors, r))
            .collect();
    let metrics = raw
        .control
        .metrics
        .as_ref()
        .and_then(|m| keep(&mut errors, sockaddr(&c, "control.metrics", m)));
    let socket = raw
        .control
        .socket
        .clone()
        .unwrap_or_else(|| "/run/tessera/tesserad.sock".into());
    if socket.is_empty() {
        errors.push(c.err("control.socket", "an empty path"));
    }
    let log_level = raw
        .log
        .level
        .as_deref()
        .and_then(|l| keep(&mut errors, log_level(&c, l)))
        .unwrap_or_else(|| "info".into());
    let log_format = match raw.log.format.as_deref() {
        None | Some("text") => crate::LogFormat::Text,
        Some("json") => crate::LogFormat::Json,
        Some(f) => {
            errors.push(c.err(
                "log.format",
                format!("\"{f}\" is not a log format (\"text\" or \"json\")"),
            ));
            crate::LogFormat::Text
        }
    };
    if raw.log.file.as_deref() == Some("") {
        errors.push(c.err("log.file", "an empty path"));
    }
    let log_syslog = match (raw.log.syslog, raw.log.syslog_socket.as_deref()) {
        (Some(true), s) => Some(PathBuf::from(s.unwrap_or("/dev/log"))),
        (_, Some(_)) => {
            errors.push(c.err(
                "log.syslog_socket",
                "needs log.syslog = true (it names the socket syslog lines go to)",
            ));
            None
        }
        _ => None,
    };
    let mrt = raw.mrt.as_ref().and_then(|m| keep(&mut errors, mrt(&c, m)));
    let dataplane = raw.dataplane.as_ref().and_then(|d| {
        let names: Vec<&str> = neighbors
            .iter()
            .map(|n: &crate::Neighbor| n.name.as_str())
            .collect();
        keep(&mut errors, crate::dataplane::validate(&c, d, &names))
    });
    let cluster = raw
        .cluster
        .as_ref()
        .and_then(|k| keep(&mut errors, crate::cluster::validate(&c, k)));
    let bmp = raw
        .bmp
        .as_ref()
        .and_then(|b| keep(&mut errors, crate::bmp::validate(&c, b)));
    if let Some(k) = &cluster {
        if let Err(e) =
            crate::cluster::check_dataplane(&c, k, dataplane.as_ref(), raw.dataplane.is_some())
        {
            errors.push(e);
        }
    }

    let rpki = raw
        .rpki
        .as_ref()
        .and_then(|r| keep(&mut errors, crate::rpki::validate(&c, r)));
    if rpki.is_some() {
        // A VRP change re-runs import policy from the pre-policy
        // Adj-RIB-In: a route rejected as invalid must be there to come
        // back when it turns valid.
        for (i, n) in neighbors.iter().enumerate() {
            if !n.soft_reconfiguration_inbound {
                errors.push(c.err(
                    &format!("neighbor[{i}].soft_reconfiguration_inbound"),
                    "must stay true with [rpki]: VRP changes re-run import policy over the stored pre-policy routes",
                ));
            }
        }
    }
    let api = raw
        .api
        .as_ref()
        .and_then(|a| keep(&mut errors, crate::api::validate(&c, a)));

    if let (true, Some(router)) = (errors.is_empty(), router) {
        return Ok(Config {
            file: file.to_string(),
            router,
            control: Control {
                socket: PathBuf::from(socket),
                metrics,
            },
            log_level,
            log_file: raw.log.file.map(PathBuf::from),
            log_format,
            log_syslog,
            mrt,
            dataplane,
            cluster,
            bmp,
            rpki,
            api,
            bfd,
            damping,
            neighbors,
            statics,
            aggregates,
            policies: raw.policy,
            index: Arc::new(index),
        });
    }
    // File order, as a compiler would print them.
    errors.sort_by_key(|e| (e.line, e.col));
    let mut all = errors.into_iter();
    let Some(mut head) = all.next() else {
        // Unreachable: no router is an error of its own.
        return Err(c.err("router", "missing [router] table"));
    };
    head.more = all.collect();
    Err(head)
}

/// A serde error: toml gives the message and a byte span, the index the
/// field path.
fn serde_error(c: &Ctx<'_>, text: &str, e: &toml::de::Error) -> ConfigError {
    let (line, col, field) = match e.span() {
        Some(s) => {
            let (l, col) = crate::locate::line_col(text, s.start);
            (l, col, c.index.path_at(s.start).unwrap_or("").to_string())
        }
        None => (0, 0, String::new()),
    };
    ConfigError {
        file: c.file.to_string(),
        line,
        col,
        field,
        message: syntax_message(text, e),
        more: Vec::new(),
    }
}

/// toml's message, or, where toml gives none (it has none for a control
/// character inside a comment), one naming the character at the span, so
/// that no error reads "FILE:LINE:COL: " and nothing else.
fn syntax_message(text: &str, e: &toml::de::Error) -> String {
    let msg = suggest(e.message().trim_end());
    if !msg.is_empty() {
        return msg;
    }
    let at = e
        .span()
        .and_then(|s| text.get(s.start..))
        .and_then(|r| r.chars().next());
    match at {
        Some(ch) if ch.is_control() => {
            format!(
                "control character U+{:04X} is not allowed here",
                u32::from(ch)
            )
        }
        Some(ch) => format!("unexpected character {ch:?}"),
        None => "invalid TOML".to_string(),
    }
}

/// serde's "unknown field `remote-as`, expected one of `address`, ..."
/// becomes "unknown field `remote-as`, did you mean `remote_as`?" when one
/// known field is close; otherwise the message stays as it is.
fn suggest(msg: &str) -> String {
    let Some(rest) = msg.strip_prefix("unknown field `") else {
        return msg.to_string();
    };
    let Some((field, known)) = rest.split_once('`') else {
        return msg.to_string();
    };
    let norm = |s: &str| s.to_ascii_lowercase().replace('-', "_");
    let best = known
        .split('`')
        .skip(1)
        .step_by(2)
        .map(|k| (distance(&norm(field), &norm(k)), k))
        .min();
    match best {
        Some((d, k)) if d <= 2 && d < field.len() => {
            format!("unknown field `{field}`, did you mean `{k}`?")
        }
        _ => msg.to_string(),
    }
}

/// Levenshtein distance; config keys are short.
fn distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let sub = prev.get(j).copied().unwrap_or(0) + usize::from(ca != *cb);
            let del = prev.get(j + 1).copied().unwrap_or(0) + 1;
            let ins = cur.get(j).copied().unwrap_or(0) + 1;
            if let Some(c) = cur.get_mut(j + 1) {
                *c = sub.min(del).min(ins);
            }
        }
        prev = cur;
    }
    prev.last().copied().unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "ab"), 2);
        assert_eq!(
            suggest("unknown field `remote-as`, expected one of `address`, `remote_as`"),
            "unknown field `remote-as`, did you mean `remote_as`?"
        );
        let far = "unknown field `colour`, expected one of `prefix`, `afi`";
        assert_eq!(suggest(far), far);
        assert_eq!(suggest("missing field `x`"), "missing field `x`");
    }
}
