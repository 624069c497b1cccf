//! Between GoBGP's API messages and tesserad's vocabulary: the CLI's
//! answers (`mgmt::proto`) out, originated routes (`StaticRoute`) in.
//! Pure functions; everything from the client is checked and answered
//! with an error, never a panic.

use std::net::IpAddr;

use base::{Asn, Prefix};
use bgp_core::StaticRoute;
use bgp_rib::AttrsBuilder;
use bgp_wire::{AsPath, AsSegment, AttrValue, Community, NextHop, Origin, PathAttr, SegmentType};
use mgmt::proto::{BgpState, ChannelInfo, MessageCounts, PathInfo, ProtoState, ProtocolInfo};
use prost::Message;
use prost_types::{Any, Timestamp};

use crate::apipb;

/// The type URL prefix of `google.protobuf.Any` as Go's protobuf writes it.
const TYPE_PREFIX: &str = "type.googleapis.com/apipb.";

/// Packs `m` as an `Any` of type `apipb.NAME`.
pub fn any<M: Message>(name: &str, m: &M) -> Any {
    Any {
        type_url: format!("{TYPE_PREFIX}{name}"),
        value: m.encode_to_vec(),
    }
}

/// The message name of an `Any` (`apipb.NAME` -> `NAME`), whatever the
/// host part of its URL.
fn any_name(a: &Any) -> &str {
    a.type_url
        .rsplit('/')
        .next()
        .unwrap_or("")
        .trim_start_matches("apipb.")
}

fn ts(ms: u64) -> Timestamp {
    Timestamp {
        seconds: i64::try_from(ms / 1000).unwrap_or(i64::MAX),
        nanos: ((ms % 1000) * 1_000_000) as i32,
    }
}

/// AFI/SAFI of the API as (IPv6, multicast); `None` for families tesserad
/// does not carry. An absent family means IPv4 unicast, as in GoBGP.
pub fn family(f: Option<&apipb::Family>) -> Option<(bool, bool)> {
    let Some(f) = f else {
        return Some((false, false));
    };
    let v6 = match f.afi {
        1 => false,
        2 => true,
        _ => return None,
    };
    let mcast = match f.safi {
        1 => false,
        2 => true,
        _ => return None,
    };
    Some((v6, mcast))
}

/// The API's family of (IPv6, multicast).
pub fn api_family(v6: bool, mcast: bool) -> apipb::Family {
    apipb::Family {
        afi: if v6 { 2 } else { 1 },
        safi: if mcast { 2 } else { 1 },
    }
}

fn session_state(s: BgpState) -> i32 {
    use apipb::peer_state::SessionState as S;
    (match s {
        BgpState::Idle => S::Idle,
        BgpState::Connect => S::Connect,
        BgpState::Active => S::Active,
        BgpState::OpenSent => S::Opensent,
        BgpState::OpenConfirm => S::Openconfirm,
        BgpState::Established => S::Established,
        _ => S::Unknown,
    }) as i32
}

fn messages(m: &MessageCounts) -> apipb::Message {
    apipb::Message {
        notification: m.notification,
        update: m.update,
        open: m.open,
        keepalive: m.keepalive,
        refresh: m.route_refresh,
        total: m.notification + m.update + m.open + m.keepalive + m.route_refresh,
        ..Default::default()
    }
}

fn channel_family(c: &ChannelInfo) -> apipb::Family {
    api_family(c.name.starts_with("ipv6"), c.name.ends_with("multicast"))
}

/// A BGP protocol of `show protocols all` as an API peer; `None` for
/// other protocols (static).
pub fn peer(p: &ProtocolInfo) -> Option<apipb::Peer> {
    let b = p.bgp.as_ref()?;
    let addr = b.neighbor_addr.to_string();
    let ebgp = b.remote_as != b.local_as;
    let ptype = if ebgp {
        apipb::PeerType::External
    } else {
        apipb::PeerType::Internal
    } as i32;
    let established = b.bgp_state == BgpState::Established;
    let admin_down = p.state == ProtoState::Down;
    // The RIB counts routes per neighbour, not per family: the totals go
    // on the first family so that a client summing families sees them once.
    let afi_safis = p
        .channels
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let r = if i == 0 { p.routes } else { Default::default() };
            apipb::AfiSafi {
                config: Some(apipb::AfiSafiConfig {
                    family: Some(channel_family(c)),
                    enabled: true,
                }),
                state: Some(apipb::AfiSafiState {
                    family: Some(channel_family(c)),
                    enabled: c.up,
                    received: r.received,
                    accepted: r.accepted,
                    advertised: r.sent,
                }),
            }
        })
        .collect();
    let hold = u64::from(b.hold_time.unwrap_or(0));
    let keepalive = u64::from(b.keepalive_time.unwrap_or(0));
    Some(apipb::Peer {
        conf: Some(apipb::PeerConf {
            description: p.description.clone().unwrap_or_default(),
            local_asn: b.local_as,
            neighbor_address: addr.clone(),
            peer_asn: b.remote_as,
            r#type: ptype,
            admin_down,
            ..Default::default()
        }),
        state: Some(apipb::PeerState {
            description: p.description.clone().unwrap_or_default(),
            local_asn: b.local_as,
            messages: Some(apipb::Messages {
                received: Some(messages(&b.messages_received)),
                sent: Some(messages(&b.messages_sent)),
            }),
            neighbor_address: addr.clone(),
            peer_asn: b.remote_as,
            r#type: ptype,
            session_state: session_state(b.bgp_state),
            admin_state: if admin_down {
                apipb::peer_state::AdminState::Down
            } else {
                apipb::peer_state::AdminState::Up
            } as i32,
            router_id: b.neighbor_id.map(|i| i.to_string()).unwrap_or_default(),
            ..Default::default()
        }),
        timers: Some(apipb::Timers {
            config: Some(apipb::TimersConfig::default()),
            state: Some(apipb::TimersState {
                hold_time: hold,
                keepalive_interval: keepalive,
                negotiated_hold_time: hold,
                uptime: established.then(|| ts(p.since_ms)),
                downtime: (!established).then(|| ts(p.since_ms)),
                ..Default::default()
            }),
        }),
        transport: Some(apipb::Transport {
            local_address: b.source_addr.map(|a| a.to_string()).unwrap_or_default(),
            remote_address: addr,
            remote_port: u32::from(b.neighbor_port.unwrap_or(179)),
            ..Default::default()
        }),
        afi_safis,
        ..Default::default()
    })
}

/// "65001 65002 {65003 65004}" (the CLI's AS_PATH text) as segments.
fn as_segments(text: &str) -> Vec<apipb::AsSegment> {
    let mut out: Vec<apipb::AsSegment> = Vec::new();
    let mut in_set = false;
    let mut set = Vec::new();
    let mut seq = Vec::new();
    let seq_t = apipb::as_segment::Type::AsSequence as i32;
    let set_t = apipb::as_segment::Type::AsSet as i32;
    for tok in text.split_whitespace() {
        let mut t = tok;
        if let Some(r) = t.strip_prefix('{') {
            if !seq.is_empty() {
                out.push(apipb::AsSegment {
                    r#type: seq_t,
                    numbers: std::mem::take(&mut seq),
                });
            }
            in_set = true;
            t = r;
        }
        let close = t.ends_with('}');
        let t = t.trim_end_matches('}');
        if let Ok(n) = t.parse::<u32>() {
            if in_set {
                set.push(n);
            } else {
                seq.push(n);
            }
        }
        if close {
            in_set = false;
            out.push(apipb::AsSegment {
                r#type: set_t,
                numbers: std::mem::take(&mut set),
            });
        }
    }
    if !seq.is_empty() {
        out.push(apipb::AsSegment {
            r#type: seq_t,
            numbers: seq,
        });
    }
    out
}

/// One path of the CLI's route answer as an API path.
pub fn path(prefix: Prefix, p: &PathInfo, peer: Option<(IpAddr, u32)>, mcast: bool) -> apipb::Path {
    let v6 = matches!(prefix, Prefix::V6(_));
    let nlri = any(
        "IPAddressPrefix",
        &apipb::IpAddressPrefix {
            prefix_len: u32::from(prefix.len()),
            prefix: prefix.addr().to_string(),
        },
    );
    let mut pattrs = Vec::new();
    let origin = match p.origin {
        Some(mgmt::proto::Origin::Egp) => 1,
        Some(mgmt::proto::Origin::Incomplete) => 2,
        _ => 0,
    };
    pattrs.push(any("OriginAttribute", &apipb::OriginAttribute { origin }));
    pattrs.push(any(
        "AsPathAttribute",
        &apipb::AsPathAttribute {
            segments: as_segments(&p.as_path),
        },
    ));
    let nh = p
        .next_hop
        .map(|a| a.to_string())
        .unwrap_or_else(|| if v6 { "::" } else { "0.0.0.0" }.to_string());
    if v6 || mcast {
        let mut next_hops = vec![nh];
        if let Some(ll) = p.next_hop_link_local {
            next_hops.push(ll.to_string());
        }
        pattrs.push(any(
            "MpReachNLRIAttribute",
            &apipb::MpReachNlriAttribute {
                family: Some(api_family(v6, mcast)),
                next_hops,
                nlris: vec![nlri.clone()],
            },
        ));
    } else {
        pattrs.push(any(
            "NextHopAttribute",
            &apipb::NextHopAttribute { next_hop: nh },
        ));
    }
    if let Some(med) = p.med {
        pattrs.push(any(
            "MultiExitDiscAttribute",
            &apipb::MultiExitDiscAttribute { med },
        ));
    }
    if let Some(local_pref) = p.local_pref {
        pattrs.push(any(
            "LocalPrefAttribute",
            &apipb::LocalPrefAttribute { local_pref },
        ));
    }
    if !p.communities.is_empty() {
        let communities = p
            .communities
            .iter()
            .map(|&(h, l)| (u32::from(h) << 16) | u32::from(l))
            .collect();
        pattrs.push(any(
            "CommunitiesAttribute",
            &apipb::CommunitiesAttribute { communities },
        ));
    }
    let (neighbor_ip, source_asn, external) = match peer {
        Some((a, asn)) => (a.to_string(), asn, true),
        // Originated here (static, or through this API).
        None => (if v6 { "::" } else { "0.0.0.0" }.to_string(), 0, false),
    };
    apipb::Path {
        nlri: Some(nlri),
        pattrs,
        age: Some(ts(p.since_ms)),
        best: p.best,
        family: Some(api_family(v6, mcast)),
        stale: p.stale,
        source_asn,
        neighbor_ip,
        is_from_external: external,
        identifier: p.path_id.unwrap_or(0),
        ..Default::default()
    }
}

/// Why a client's path cannot be originated.
pub type PathError = String;

fn prefix_of(a: &Any) -> Result<Prefix, PathError> {
    if any_name(a) != "IPAddressPrefix" {
        return Err(format!(
            "NLRI type {} is not supported (only IPAddressPrefix: IPv4/IPv6 unicast)",
            a.type_url
        ));
    }
    let p = apipb::IpAddressPrefix::decode(a.value.as_slice())
        .map_err(|e| format!("bad IPAddressPrefix: {e}"))?;
    let addr: IpAddr = p
        .prefix
        .parse()
        .map_err(|_| format!("bad prefix address {:?}", p.prefix))?;
    let len =
        u8::try_from(p.prefix_len).map_err(|_| format!("bad prefix length {}", p.prefix_len))?;
    Prefix::new(addr, len)
        .map(Prefix::masked)
        .map_err(|e| format!("bad prefix {addr}/{len}: {e:?}"))
}

fn next_hop(s: &str) -> Result<Option<NextHop>, PathError> {
    let a: IpAddr = s.parse().map_err(|_| format!("bad next hop {s:?}"))?;
    // 0.0.0.0 / :: mean "this router" (the session's local address).
    Ok(match a {
        a if a.is_unspecified() => None,
        IpAddr::V4(a) => Some(NextHop::V4(a)),
        IpAddr::V6(a) => Some(NextHop::V6(a)),
    })
}

/// A client's path as a route to originate, or the prefix to withdraw
/// (`is_withdraw`): `(prefix, None)` for a withdrawal.
pub fn route_of(p: &apipb::Path) -> Result<(Prefix, Option<StaticRoute>), PathError> {
    if let Some((_, true)) = family(p.family.as_ref()) {
        return Err("multicast paths cannot be added (unicast only)".into());
    }
    if family(p.family.as_ref()).is_none() {
        return Err("only the IPv4 and IPv6 unicast families are supported".into());
    }
    if !p.nlri_binary.is_empty() || !p.pattrs_binary.is_empty() {
        return Err("binary NLRI/attributes are not supported; send nlri and pattrs".into());
    }
    let mut prefix = p.nlri.as_ref().map(prefix_of).transpose()?;
    let mut b = AttrsBuilder::new();
    b.set(PathAttr::new(AttrValue::Origin(Origin::Igp)));
    b.set(PathAttr::new(AttrValue::AsPath(AsPath {
        segments: Vec::new(),
    })));
    for a in &p.pattrs {
        let v = a.value.as_slice();
        let bad = |e: prost::DecodeError| format!("bad {}: {e}", any_name(a));
        match any_name(a) {
            "OriginAttribute" => {
                let o = apipb::OriginAttribute::decode(v).map_err(bad)?;
                let o = match o.origin {
                    0 => Origin::Igp,
                    1 => Origin::Egp,
                    2 => Origin::Incomplete,
                    n => return Err(format!("bad ORIGIN {n}")),
                };
                b.set(PathAttr::new(AttrValue::Origin(o)));
            }
            "AsPathAttribute" => {
                let ap = apipb::AsPathAttribute::decode(v).map_err(bad)?;
                let mut segments = Vec::new();
                for s in ap.segments {
                    let kind = match s.r#type {
                        1 => SegmentType::Set,
                        2 => SegmentType::Sequence,
                        3 => SegmentType::ConfedSequence,
                        4 => SegmentType::ConfedSet,
                        n => return Err(format!("bad AS_PATH segment type {n}")),
                    };
                    if s.numbers.is_empty() || s.numbers.len() > 255 {
                        return Err("an AS_PATH segment holds 1 to 255 ASNs".into());
                    }
                    segments.push(AsSegment {
                        kind,
                        asns: s.numbers.into_iter().map(Asn).collect(),
                    });
                }
                b.set(PathAttr::new(AttrValue::AsPath(AsPath { segments })));
            }
            "NextHopAttribute" => {
                let n = apipb::NextHopAttribute::decode(v).map_err(bad)?;
                if let Some(nh) = next_hop(&n.next_hop)? {
                    b.set_next_hop(nh);
                }
            }
            "MpReachNLRIAttribute" => {
                let m = apipb::MpReachNlriAttribute::decode(v).map_err(bad)?;
                if let Some(nh) = m.next_hops.first() {
                    if let Some(nh) = next_hop(nh)? {
                        b.set_next_hop(nh);
                    }
                }
                if prefix.is_none() {
                    prefix = m.nlris.first().map(prefix_of).transpose()?;
                }
            }
            "MultiExitDiscAttribute" => {
                b.set_med(apipb::MultiExitDiscAttribute::decode(v).map_err(bad)?.med);
            }
            "LocalPrefAttribute" => {
                b.set_local_pref(
                    apipb::LocalPrefAttribute::decode(v)
                        .map_err(bad)?
                        .local_pref,
                );
            }
            "CommunitiesAttribute" => {
                let c = apipb::CommunitiesAttribute::decode(v).map_err(bad)?;
                let cs = c.communities.into_iter().map(Community).collect();
                b.set(PathAttr::new(AttrValue::Communities(cs)));
            }
            other => return Err(format!("path attribute {other} is not supported")),
        }
    }
    let prefix = prefix.ok_or("the path has no NLRI")?;
    // A next hop of the other family than the prefix (RFC 8950) is not
    // originated from here.
    match (prefix, b.next_hop()) {
        (Prefix::V4(_), Some(NextHop::V6(_) | NextHop::V6LinkLocal(..)))
        | (Prefix::V6(_), Some(NextHop::V4(_))) => {
            return Err("the next hop is not of the prefix's family".into())
        }
        _ => {}
    }
    if p.is_withdraw {
        return Ok((prefix, None));
    }
    b.mark_clean();
    Ok((prefix, Some(StaticRoute { prefix, attrs: b })))
}

/// An API lookup prefix: `ADDR/LEN`, or an address as its host prefix.
pub fn lookup_prefix(s: &str) -> Result<Prefix, PathError> {
    if s.contains('/') {
        return s
            .parse::<Prefix>()
            .map(Prefix::masked)
            .map_err(|e| format!("bad prefix {s:?}: {e:?}"));
    }
    let a: IpAddr = s.parse().map_err(|_| format!("bad prefix {s:?}"))?;
    let len = if a.is_ipv4() { 32 } else { 128 };
    Prefix::new(a, len).map_err(|e| format!("bad prefix {s:?}: {e:?}"))
}

/// Whether `outer` covers `inner` (equal or less specific).
pub fn covers(outer: Prefix, inner: Prefix) -> bool {
    outer.afi() == inner.afi()
        && outer.len() <= inner.len()
        && Prefix::new(inner.addr(), outer.len()).is_ok_and(|p| p.masked() == outer.masked())
}

/// Why an `AddPeer` peer cannot be a neighbour.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PeerError {
    /// Not a valid request (INVALID_ARGUMENT).
    Invalid(String),
    /// A GoBGP setting tesserad does not have (UNIMPLEMENTED).
    Unsupported(String),
}

/// GoBGP's `Peer` of an `AddPeer` as the `[[neighbor]]` keys it sets
/// (then validated as the file's neighbours are). Settings tesserad has no
/// equivalent for are refused, not dropped.
pub fn neighbor_keys(p: &apipb::Peer) -> Result<config::NeighborKeys, PeerError> {
    let bad = |m: String| PeerError::Invalid(m);
    let unsupported = |m: &str| PeerError::Unsupported(format!("{m} is not supported yet"));
    let conf = p
        .conf
        .as_ref()
        .ok_or_else(|| bad("a peer needs conf (neighbor_address, peer_asn)".into()))?;
    if conf.neighbor_address.is_empty() {
        return Err(bad("a peer needs conf.neighbor_address".into()));
    }
    if conf.peer_asn == 0 {
        return Err(bad("a peer needs conf.peer_asn".into()));
    }
    if !conf.peer_group.is_empty() {
        return Err(unsupported("a peer group"));
    }
    let mut k = config::NeighborKeys {
        address: conf.neighbor_address.clone(),
        remote_as: conf.peer_asn,
        description: (!conf.description.is_empty()).then(|| conf.description.clone()),
        password: (!conf.auth_password.is_empty()).then(|| conf.auth_password.clone()),
        enabled: conf.admin_down.then_some(false),
        ..Default::default()
    };
    if let Some(m) = &p.ebgp_multihop {
        if m.enabled {
            let ttl = u8::try_from(m.multihop_ttl)
                .ok()
                .filter(|&t| t > 0)
                .ok_or_else(|| bad(format!("multihop TTL {} is not 1 to 255", m.multihop_ttl)))?;
            k.ttl = Some(ttl);
        }
    }
    if let Some(rr) = &p.route_reflector {
        if !rr.route_reflector_cluster_id.is_empty() {
            return Err(unsupported(
                "a per-neighbour cluster id (set router.cluster_id in the file)",
            ));
        }
        k.route_reflector_client = rr.route_reflector_client.then_some(true);
    }
    if let Some(rs) = &p.route_server {
        if rs.secondary_route {
            return Err(unsupported("route server secondary routes"));
        }
        k.route_server_client = rs.route_server_client.then_some(true);
    }
    if let Some(t) = p.timers.as_ref().and_then(|t| t.config.as_ref()) {
        let secs = |what: &str, v: u64| -> Result<Option<u16>, PeerError> {
            match v {
                0 => Ok(None),
                v => u16::try_from(v)
                    .map(Some)
                    .map_err(|_| bad(format!("{what} {v} is too large"))),
            }
        };
        k.hold_time = secs("hold time", t.hold_time)?;
        k.keepalive = secs("keepalive", t.keepalive_interval)?;
        k.connect_retry = match t.connect_retry {
            0 => None,
            v => {
                Some(u32::try_from(v).map_err(|_| bad(format!("connect retry {v} is too large")))?)
            }
        };
    }
    if let Some(t) = &p.transport {
        if !t.local_address.is_empty() {
            k.local_address = Some(t.local_address.clone());
        }
        if t.local_port != 0 {
            return Err(unsupported("a local port"));
        }
        if t.remote_port != 0 {
            k.port = Some(
                u16::try_from(t.remote_port)
                    .map_err(|_| bad(format!("port {} is not a port", t.remote_port)))?,
            );
        }
        k.passive = t.passive_mode.then_some(true);
    }
    let mut families = Vec::new();
    for a in &p.afi_safis {
        let Some(c) = &a.config else { continue };
        if !c.enabled {
            continue;
        }
        let name = match family(c.family.as_ref()) {
            Some((false, false)) => "ipv4-unicast",
            Some((true, false)) => "ipv6-unicast",
            Some((false, true)) => "ipv4-multicast",
            Some((true, true)) => "ipv6-multicast",
            None => {
                return Err(unsupported(&format!(
                    "address family {:?}",
                    c.family.as_ref().map(|f| (f.afi, f.safi))
                )))
            }
        };
        if !families.iter().any(|f| f == name) {
            families.push(name.to_string());
        }
    }
    k.families = (!families.is_empty()).then_some(families);
    Ok(k)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_path(prefix: &str, len: u32, attrs: Vec<Any>) -> apipb::Path {
        apipb::Path {
            nlri: Some(any(
                "IPAddressPrefix",
                &apipb::IpAddressPrefix {
                    prefix_len: len,
                    prefix: prefix.into(),
                },
            )),
            pattrs: attrs,
            family: Some(api_family(prefix.contains(':'), false)),
            ..Default::default()
        }
    }

    #[test]
    fn gobgp_cli_add_is_originated_with_next_hop_self() {
        // What `gobgp global rib add 198.18.77.0/24` sends.
        let p = api_path(
            "198.18.77.0",
            24,
            vec![
                any("OriginAttribute", &apipb::OriginAttribute { origin: 0 }),
                any(
                    "NextHopAttribute",
                    &apipb::NextHopAttribute {
                        next_hop: "0.0.0.0".into(),
                    },
                ),
            ],
        );
        let (prefix, r) = route_of(&p).unwrap();
        assert_eq!(prefix, "198.18.77.0/24".parse().unwrap());
        let r = r.unwrap();
        assert_eq!(r.attrs.next_hop(), None);
        assert!(matches!(
            r.attrs.get(1).map(|a| &a.value),
            Some(AttrValue::Origin(Origin::Igp))
        ));
    }

    #[test]
    fn attributes_are_read_and_bad_input_is_an_error() {
        let p = api_path(
            "2001:db8:7::",
            48,
            vec![
                any(
                    "MpReachNLRIAttribute",
                    &apipb::MpReachNlriAttribute {
                        family: Some(api_family(true, false)),
                        next_hops: vec!["2001:db8::1".into()],
                        nlris: vec![],
                    },
                ),
                any(
                    "MultiExitDiscAttribute",
                    &apipb::MultiExitDiscAttribute { med: 7 },
                ),
                any(
                    "LocalPrefAttribute",
                    &apipb::LocalPrefAttribute { local_pref: 300 },
                ),
            ],
        );
        let (_, r) = route_of(&p).unwrap();
        let r = r.unwrap();
        assert_eq!(r.attrs.med(), Some(7));
        assert_eq!(r.attrs.local_pref(), Some(300));
        assert_eq!(
            r.attrs.next_hop(),
            Some(NextHop::V6("2001:db8::1".parse().unwrap()))
        );

        let mut bad = api_path("198.18.0.0", 33, vec![]);
        assert!(route_of(&bad).unwrap_err().contains("bad prefix"));
        bad = api_path("nonsense", 8, vec![]);
        assert!(route_of(&bad).is_err());
        bad = api_path(
            "198.18.0.0",
            16,
            vec![Any {
                type_url: "type.googleapis.com/apipb.OriginAttribute".into(),
                value: vec![0xff, 0xff],
            }],
        );
        assert!(route_of(&bad)
            .unwrap_err()
            .starts_with("bad OriginAttribute"));
        bad = api_path(
            "198.18.0.0",
            16,
            vec![any("Whatever", &apipb::OriginAttribute { origin: 0 })],
        );
        assert!(route_of(&bad).unwrap_err().contains("not supported"));
        bad = api_path(
            "198.18.0.0",
            16,
            vec![any(
                "NextHopAttribute",
                &apipb::NextHopAttribute {
                    next_hop: "2001:db8::1".into(),
                },
            )],
        );
        assert!(route_of(&bad).unwrap_err().contains("family"));
        let mut w = api_path("198.18.0.0", 16, vec![]);
        w.is_withdraw = true;
        assert_eq!(
            route_of(&w).unwrap(),
            ("198.18.0.0/16".parse().unwrap(), None)
        );
    }

    #[test]
    fn as_path_text_round_trips_to_segments() {
        let s = as_segments("65001 65002 {65003 65004} 65005");
        let t: Vec<(i32, Vec<u32>)> = s.into_iter().map(|s| (s.r#type, s.numbers)).collect();
        assert_eq!(
            t,
            vec![
                (2, vec![65001, 65002]),
                (1, vec![65003, 65004]),
                (2, vec![65005])
            ]
        );
        assert!(as_segments("").is_empty());
    }

    #[test]
    fn covers_and_lookup_prefixes() {
        let p = |s: &str| s.parse::<Prefix>().unwrap();
        assert!(covers(p("198.18.0.0/15"), p("198.18.77.0/24")));
        assert!(covers(p("198.18.77.0/24"), p("198.18.77.0/24")));
        assert!(!covers(p("198.18.77.0/24"), p("198.18.0.0/15")));
        assert!(!covers(p("0.0.0.0/0"), p("::/0")));
        assert_eq!(lookup_prefix("198.18.1.1").unwrap(), p("198.18.1.1/32"));
        assert!(lookup_prefix("x").is_err());
    }

    #[test]
    fn add_peer_keys() {
        let mut p = apipb::Peer {
            conf: Some(apipb::PeerConf {
                neighbor_address: "198.18.0.9".into(),
                peer_asn: 65009,
                description: "lab".into(),
                ..Default::default()
            }),
            afi_safis: vec![apipb::AfiSafi {
                config: Some(apipb::AfiSafiConfig {
                    family: Some(api_family(true, false)),
                    enabled: true,
                }),
                state: None,
            }],
            timers: Some(apipb::Timers {
                config: Some(apipb::TimersConfig {
                    hold_time: 9,
                    ..Default::default()
                }),
                state: None,
            }),
            ..Default::default()
        };
        let k = neighbor_keys(&p).unwrap();
        assert_eq!(k.address, "198.18.0.9");
        assert_eq!(k.remote_as, 65009);
        assert_eq!(k.description.as_deref(), Some("lab"));
        assert_eq!(k.hold_time, Some(9));
        assert_eq!(k.families, Some(vec!["ipv6-unicast".to_string()]));
        assert_eq!(k.enabled, None);
        p.route_reflector = Some(apipb::RouteReflector {
            route_reflector_client: true,
            route_reflector_cluster_id: "1.1.1.1".into(),
        });
        assert!(matches!(neighbor_keys(&p), Err(PeerError::Unsupported(_))));
        p.route_reflector = None;
        p.ebgp_multihop = Some(apipb::EbgpMultihop {
            enabled: true,
            multihop_ttl: 300,
        });
        assert!(matches!(neighbor_keys(&p), Err(PeerError::Invalid(_))));
        p.ebgp_multihop = None;
        p.conf.as_mut().unwrap().peer_asn = 0;
        assert!(matches!(neighbor_keys(&p), Err(PeerError::Invalid(_))));
        assert!(matches!(
            neighbor_keys(&apipb::Peer::default()),
            Err(PeerError::Invalid(_))
        ));
    }
}
