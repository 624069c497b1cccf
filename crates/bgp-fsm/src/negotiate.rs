//! OPEN validation against the configuration (RFC 4271 §6.2, RFC 6286,
//! RFC 6793, RFC 9234, RFC 5492) and capability negotiation.

use std::net::Ipv4Addr;

use base::{Afi, AfiSafi, Asn};
use bgp_wire::capability::{add_path_mode, role, ExtNextHop, GrFamily, LlgrFamily};
use bgp_wire::consts::{cap_code, notify};
use bgp_wire::{Capability, NotificationMessage, OpenMessage, OptParam, ParseCtx, WireError};

use crate::config::SessionConfig;

/// Why an OPEN was refused. Small and `Copy`; [`OpenError::notification`]
/// builds the NOTIFICATION.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum OpenError {
    /// 2/1: version other than 4.
    UnsupportedVersion {
        /// The version the peer sent.
        version: u8,
    },
    /// 2/2: not the configured AS, AS 0 (RFC 7607), or a My AS field that
    /// disagrees with the 4-octet AS capability (RFC 6793 §4.1).
    BadPeerAs,
    /// 2/3: zero, or equal to ours on an internal session (RFC 6286 §2.2).
    BadBgpIdentifier,
    /// 2/4: an optional parameter other than capabilities.
    UnsupportedOptionalParameter {
        /// The parameter type.
        param_type: u8,
    },
    /// 2/6: 1 or 2 seconds, or below our configured minimum.
    UnacceptableHoldTime {
        /// The hold time the peer offered, in seconds.
        hold_time: u16,
    },
    /// 2/7: the peer lacks `SessionConfig::required_capabilities[index]`.
    MissingRequiredCapability {
        /// Index into `SessionConfig::required_capabilities`.
        index: u16,
    },
    /// 2/11 (RFC 9234 §4.2): roles do not pair, roles disagree, or strict
    /// mode and no role received.
    RoleMismatch,
}

impl OpenError {
    /// (code, subcode).
    pub const fn code(&self) -> (u8, u8) {
        let sub = match self {
            OpenError::UnsupportedVersion { .. } => notify::UNSUPPORTED_VERSION_NUMBER,
            OpenError::BadPeerAs => notify::BAD_PEER_AS,
            OpenError::BadBgpIdentifier => notify::BAD_BGP_IDENTIFIER,
            OpenError::UnsupportedOptionalParameter { .. } => {
                notify::UNSUPPORTED_OPTIONAL_PARAMETER
            }
            OpenError::UnacceptableHoldTime { .. } => notify::UNACCEPTABLE_HOLD_TIME,
            OpenError::MissingRequiredCapability { .. } => notify::UNSUPPORTED_CAPABILITY,
            OpenError::RoleMismatch => notify::ROLE_MISMATCH,
        };
        (notify::OPEN_MESSAGE_ERROR, sub)
    }

    /// The NOTIFICATION to send. For 2/7 the data is the required
    /// capability TLV (RFC 5492 §5); for 2/1 our version (RFC 4271 §6.2).
    pub fn notification(&self, cfg: &SessionConfig) -> NotificationMessage {
        match *self {
            OpenError::UnsupportedVersion { version } => {
                WireError::UnsupportedVersionNumber { version }.notification(&[])
            }
            OpenError::MissingRequiredCapability { index } => {
                let mut data = Vec::new();
                if let Some(c) = cfg.required_capabilities.get(usize::from(index)) {
                    c.encode(&mut data);
                }
                let (code, sub) = self.code();
                NotificationMessage::new(code, sub, data)
            }
            _ => {
                let (code, sub) = self.code();
                NotificationMessage::new(code, sub, Vec::new())
            }
        }
    }
}

/// ADD-PATH outcome for one family (RFC 7911 §5).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct AddPathNegotiated {
    /// The family.
    pub afi_safi: AfiSafi,
    /// We receive path identifiers: we said Receive, the peer said Send.
    pub rx: bool,
    /// We may send path identifiers: we said Send, the peer said Receive.
    pub tx: bool,
}

/// The peer's graceful restart capability (RFC 4724 §3), kept when both
/// sides advertised it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GracefulRestart {
    /// Restart State (R) bit.
    pub restart_state: bool,
    /// Graceful Notification (N) bit of RFC 8538.
    pub notification: bool,
    /// Seconds.
    pub restart_time: u16,
    /// Families the peer preserves; the F bit is `flags & 0x80`. Only
    /// negotiated families are kept.
    pub families: Vec<GrFamily>,
}

/// The peer's hostname capability (draft-walton-bgp-hostname-capability).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fqdn {
    /// The peer's host name (lossy UTF-8).
    pub hostname: String,
    /// The peer's domain name (lossy UTF-8).
    pub domain: String,
}

/// What both sides agreed on (RFC 4271 §4.2, RFC 5492).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Negotiated {
    /// The peer's AS (from the 4-octet AS capability when negotiated).
    pub peer_asn: Asn,
    /// The peer's BGP identifier.
    pub peer_bgp_id: Ipv4Addr,
    /// min(ours, theirs); 0 means no keepalives and no hold timer.
    pub hold_time: u16,
    /// The configured keepalive ([`SessionConfig::keepalive`]), at most
    /// hold_time / 3 (RFC 4271 §10); hold_time / 3 when none is
    /// configured; 0 when hold_time is 0.
    pub keepalive_interval: u16,
    /// Both advertised 4-octet AS support (RFC 6793).
    pub four_octet_asn: bool,
    /// Families both advertised, sorted; IPv4 unicast when neither side
    /// sent a multiprotocol capability (RFC 4760 §8).
    pub families: Vec<AfiSafi>,
    /// Per negotiated family with rx or tx set, sorted by family.
    pub add_path: Vec<AddPathNegotiated>,
    /// RFC 8950 tuples on which the peer may send us a next hop of another
    /// family: the ones we advertised, on negotiated families.
    pub ext_next_hop_rx: Vec<ExtNextHop>,
    /// RFC 8950 tuples on which we may send a next hop of another family:
    /// the peer advertised them (RFC 8950 §3) and, as in BIRD and FRR, so
    /// did we (the neighbour's `extended_nexthop` switch), on negotiated
    /// families.
    pub ext_next_hop_tx: Vec<ExtNextHop>,
    /// Both advertised extended messages (RFC 8654).
    pub extended_message: bool,
    /// Both advertised route refresh (2, or the pre-standard 128 from the
    /// peer).
    pub route_refresh: bool,
    /// Both advertised enhanced route refresh (RFC 7313).
    pub enhanced_route_refresh: bool,
    /// The peer's graceful restart capability, when both advertised it.
    pub graceful_restart: Option<GracefulRestart>,
    /// The peer's long-lived GR entries for negotiated families, when both
    /// advertised LLGR (RFC 9494).
    pub llgr: Option<Vec<LlgrFamily>>,
    /// The role we advertised (RFC 9234).
    pub local_role: Option<u8>,
    /// The role the peer advertised (RFC 9234).
    pub peer_role: Option<u8>,
    /// The peer's host name capability, if sent.
    pub fqdn: Option<Fqdn>,
}

impl Negotiated {
    /// The wire parameters for reading this peer's messages.
    pub fn parse_ctx(&self) -> ParseCtx {
        let mut c = ParseCtx::legacy()
            .with_four_octet_asn(self.four_octet_asn)
            .with_extended_message(self.extended_message);
        for a in &self.add_path {
            if a.rx {
                c = c.with_add_path(a.afi_safi, true);
            }
        }
        let v6_nh: Vec<AfiSafi> = self
            .ext_next_hop_rx
            .iter()
            .filter(|t| t.next_hop_afi == Afi::Ipv6)
            .map(|t| t.afi_safi)
            .collect();
        c.with_session_families(&self.families, &v6_nh)
    }

    /// Whether we may send NLRI of the IPv4 family `af` with an IPv6 next
    /// hop (RFC 8950).
    pub fn ext_next_hop_tx_v6(&self, af: AfiSafi) -> bool {
        self.ext_next_hop_tx
            .iter()
            .any(|t| t.afi_safi == af && t.next_hop_afi == Afi::Ipv6)
    }

    /// Whether we may send path identifiers for `af`.
    pub fn add_path_tx(&self, af: AfiSafi) -> bool {
        self.add_path.iter().any(|a| a.afi_safi == af && a.tx)
    }

    /// Whether `af` was negotiated.
    pub fn has_family(&self, af: AfiSafi) -> bool {
        self.families.binary_search(&af).is_ok()
    }
}

/// RFC 9234 §4.2: the pairs that may peer.
pub fn roles_pair(local: u8, peer: u8) -> bool {
    matches!(
        (local, peer),
        (role::PROVIDER, role::CUSTOMER)
            | (role::CUSTOMER, role::PROVIDER)
            | (role::RS, role::RS_CLIENT)
            | (role::RS_CLIENT, role::RS)
            | (role::PEER, role::PEER)
    )
}

fn mp_families<'a>(caps: impl Iterator<Item = &'a Capability>) -> Vec<AfiSafi> {
    let mut v: Vec<AfiSafi> = caps
        .filter_map(|c| match c {
            Capability::Multiprotocol(a) => Some(*a),
            _ => None,
        })
        .collect();
    v.sort();
    v.dedup();
    v
}

fn has_code(m: &OpenMessage, code: u8) -> bool {
    m.capabilities().any(|c| c.code() == code)
}

/// Checks the peer's OPEN against our configuration and our own OPEN
/// (`local`, normally `cfg.open_message()`), and negotiates.
///
/// Checks, in RFC 4271 §6.2 order: version, peer AS, hold time, BGP
/// identifier, optional parameters; then RFC 9234 roles and RFC 5492
/// required capabilities.
pub fn negotiate(
    cfg: &SessionConfig,
    local: &OpenMessage,
    peer: &OpenMessage,
) -> Result<Negotiated, OpenError> {
    if peer.version != 4 {
        return Err(OpenError::UnsupportedVersion {
            version: peer.version,
        });
    }

    // RFC 6793 §4.1: the capability carries the real ASN when both sides
    // speak 4-octet ASNs; My AS is then that ASN or AS_TRANS.
    let peer_cap_asn = peer.capabilities().find_map(|c| match c {
        Capability::FourOctetAsn(a) => Some(*a),
        _ => None,
    });
    let four_octet_asn = cfg.four_octet_asn && peer_cap_asn.is_some();
    let peer_asn = match peer_cap_asn {
        Some(a) if cfg.four_octet_asn => {
            if peer.my_as != a.to_u16_or_trans() {
                return Err(OpenError::BadPeerAs);
            }
            a
        }
        _ => Asn(u32::from(peer.my_as)),
    };
    // RFC 7607 §3: AS 0 in an OPEN is Bad Peer AS.
    if peer_asn.0 == 0 || cfg.peer_asn.is_some_and(|want| want != peer_asn) {
        return Err(OpenError::BadPeerAs);
    }

    // RFC 4271 §6.2: 1 and 2 must be refused; we may refuse more.
    let h = peer.hold_time;
    if h == 1 || h == 2 || (h != 0 && h < cfg.min_hold_time) {
        return Err(OpenError::UnacceptableHoldTime { hold_time: h });
    }

    // RFC 6286 §2.2.
    let internal = peer_asn == cfg.local_asn;
    if peer.bgp_id.is_unspecified() || (internal && peer.bgp_id == cfg.bgp_id) {
        return Err(OpenError::BadBgpIdentifier);
    }

    for p in &peer.params {
        if let OptParam::Other { param_type, .. } = p {
            return Err(OpenError::UnsupportedOptionalParameter {
                param_type: *param_type,
            });
        }
    }

    // RFC 9234 §4.2: only meaningful on external sessions.
    let mut peer_role = None;
    for c in peer.capabilities() {
        if let Capability::Role(r) = c {
            if peer_role.is_some_and(|p| p != *r) {
                return Err(OpenError::RoleMismatch);
            }
            peer_role = Some(*r);
        }
    }
    if let (Some(l), false) = (cfg.role, internal) {
        match peer_role {
            Some(p) if !roles_pair(l, p) => return Err(OpenError::RoleMismatch),
            None if cfg.role_strict => return Err(OpenError::RoleMismatch),
            _ => {}
        }
    }

    // RFC 5492 §5: capabilities we cannot do without.
    for (i, want) in cfg.required_capabilities.iter().enumerate() {
        let present = match want {
            Capability::Multiprotocol(_) => peer.capabilities().any(|c| c == want),
            w => has_code(peer, w.code()),
        };
        if !present {
            return Err(OpenError::MissingRequiredCapability {
                index: u16::try_from(i).unwrap_or(u16::MAX),
            });
        }
    }

    Ok(negotiate_caps(
        cfg,
        local,
        peer,
        peer_asn,
        four_octet_asn,
        peer_role,
    ))
}

/// The interval between our KEEPALIVEs for a negotiated hold time: the
/// configured one if any, never more than a third of the hold time; none at
/// all when the hold time is 0 (RFC 4271 §4.4, §10).
fn keepalive_interval(configured: Option<u16>, hold_time: u16) -> u16 {
    let third = hold_time / 3;
    match configured {
        Some(k) if k > 0 => k.min(third),
        _ => third,
    }
}

fn negotiate_caps(
    cfg: &SessionConfig,
    local: &OpenMessage,
    peer: &OpenMessage,
    peer_asn: Asn,
    four_octet_asn: bool,
    peer_role: Option<u8>,
) -> Negotiated {
    let hold_time = local.hold_time.min(peer.hold_time);
    let keepalive_interval = keepalive_interval(cfg.keepalive, hold_time);

    // RFC 4760 §8: a speaker that sends no MP capability speaks IPv4
    // unicast only.
    let mut lf = mp_families(local.capabilities());
    if lf.is_empty() {
        lf.push(AfiSafi::IPV4_UNICAST);
    }
    let mut pf = mp_families(peer.capabilities());
    if pf.is_empty() {
        pf.push(AfiSafi::IPV4_UNICAST);
    }
    let families: Vec<AfiSafi> = lf
        .iter()
        .copied()
        .filter(|f| pf.binary_search(f).is_ok())
        .collect();
    let negotiated = |af: &AfiSafi| families.binary_search(af).is_ok();

    let add_path_of = |m: &OpenMessage, af: AfiSafi| -> u8 {
        let mut mode = 0;
        for c in m.capabilities() {
            if let Capability::AddPath(v) = c {
                for e in v.iter().filter(|e| e.afi_safi == af) {
                    mode = e.send_receive;
                }
            }
        }
        mode
    };
    let mut add_path = Vec::new();
    for &af in &families {
        let (l, p) = (add_path_of(local, af), add_path_of(peer, af));
        let rx = l & add_path_mode::RECEIVE != 0 && p & add_path_mode::SEND != 0;
        let tx = l & add_path_mode::SEND != 0 && p & add_path_mode::RECEIVE != 0;
        if rx || tx {
            add_path.push(AddPathNegotiated {
                afi_safi: af,
                rx,
                tx,
            });
        }
    }

    let both = |code: u8| has_code(local, code) && has_code(peer, code);
    let route_refresh = has_code(local, cap_code::ROUTE_REFRESH)
        && (has_code(peer, cap_code::ROUTE_REFRESH)
            || has_code(peer, cap_code::ROUTE_REFRESH_CISCO));

    let graceful_restart = if has_code(local, cap_code::GRACEFUL_RESTART) {
        peer.capabilities().find_map(|c| match c {
            Capability::GracefulRestart {
                flags,
                restart_time,
                families: f,
            } => Some(GracefulRestart {
                restart_state: flags & 0x8 != 0,
                notification: flags & 0x4 != 0,
                restart_time: *restart_time,
                families: f
                    .iter()
                    .filter(|g| negotiated(&g.afi_safi))
                    .copied()
                    .collect(),
            }),
            _ => None,
        })
    } else {
        None
    };
    let llgr = if has_code(local, cap_code::LONG_LIVED_GRACEFUL_RESTART) {
        peer.capabilities().find_map(|c| match c {
            Capability::LongLivedGracefulRestart(v) => Some(
                v.iter()
                    .filter(|g| negotiated(&g.afi_safi))
                    .copied()
                    .collect(),
            ),
            _ => None,
        })
    } else {
        None
    };
    // RFC 8950 §3: a tuple is usable towards the peer only when it
    // advertised it; from the peer only when we did.
    let ext_nh = |m: &OpenMessage| -> Vec<ExtNextHop> {
        let mut v: Vec<ExtNextHop> = m
            .capabilities()
            .flat_map(|c| match c {
                Capability::ExtendedNextHop(v) => v.as_slice(),
                _ => &[],
            })
            .filter(|t| negotiated(&t.afi_safi))
            .copied()
            .collect();
        v.sort_by_key(|t| (t.afi_safi, t.next_hop_afi));
        v.dedup();
        v
    };
    let ext_next_hop_rx = ext_nh(local);
    let peer_ext_nh = ext_nh(peer);
    let ext_next_hop_tx: Vec<ExtNextHop> = peer_ext_nh
        .into_iter()
        .filter(|t| ext_next_hop_rx.contains(t))
        .collect();
    let fqdn = peer.capabilities().find_map(|c| match c {
        Capability::Fqdn { hostname, domain } => Some(Fqdn {
            hostname: String::from_utf8_lossy(hostname).into_owned(),
            domain: String::from_utf8_lossy(domain).into_owned(),
        }),
        _ => None,
    });

    Negotiated {
        peer_asn,
        peer_bgp_id: peer.bgp_id,
        hold_time,
        keepalive_interval,
        four_octet_asn,
        families,
        add_path,
        ext_next_hop_rx,
        ext_next_hop_tx,
        extended_message: both(cap_code::EXTENDED_MESSAGE),
        route_refresh,
        enhanced_route_refresh: both(cap_code::ENHANCED_ROUTE_REFRESH),
        graceful_restart,
        llgr,
        local_role: cfg.role,
        peer_role,
        fqdn,
    }
}

#[cfg(test)]
#[path = "negotiate_tests.rs"]
mod tests;
