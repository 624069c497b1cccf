//! Session configuration: what we advertise, what we accept, and the
//! optional session attributes of RFC 4271 §8.1.1.

use std::net::Ipv4Addr;
use std::time::Duration;

use base::{AfiSafi, Asn};
use bgp_wire::capability::{AddPathFamily, ExtNextHop};
use bgp_wire::{Capability, OpenMessage};

/// How TCP connections are set up (RFC 4271 §8.1.1 PassiveTcpEstablishment,
/// extended with the usual "active only" of router configurations).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub enum ConnectionMode {
    /// Connect out and accept incoming connections (PassiveTcpEstablishment
    /// FALSE; the RFC default).
    #[default]
    Both,
    /// Connect out only; incoming connections are refused
    /// ([`crate::Fsm::accepts_incoming`] is false and event 17 is treated
    /// as event 15).
    ActiveOnly,
    /// Wait for the peer (PassiveTcpEstablishment TRUE). Unlike the RFC
    /// Active state, an expiring ConnectRetryTimer does not make us
    /// connect out: a passive peer never initiates.
    Passive,
}

/// DampPeerOscillations (RFC 4271 §8.1.1) with an exponential back-off.
///
/// Each time the session goes to Idle through a path where the RFC says
/// "performs peer oscillation damping", the IdleHoldTime used for the next
/// damped automatic start doubles, up to `max_idle_hold_time`. A session
/// that stayed Established for `stable_time` resets it to `idle_hold_time`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DampConfig {
    /// IdleHoldTime: the initial IdleHoldTimer value.
    pub idle_hold_time: Duration,
    /// The cap of the back-off.
    pub max_idle_hold_time: Duration,
    /// How long Established must last for the back-off to reset.
    pub stable_time: Duration,
}

impl Default for DampConfig {
    fn default() -> Self {
        DampConfig {
            idle_hold_time: Duration::from_secs(5),
            max_idle_hold_time: Duration::from_secs(300),
            stable_time: Duration::from_secs(300),
        }
    }
}

/// Everything the FSM needs to know about one peer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionConfig {
    /// Our AS, sent in OPEN (AS_TRANS in My AS when above 65535).
    pub local_asn: Asn,
    /// The AS the peer must announce (RFC 4271 §6.2 Bad Peer AS); `None`
    /// accepts any AS (e.g. dynamic neighbors).
    pub peer_asn: Option<Asn>,
    /// Our BGP identifier; must not be 0.0.0.0.
    pub bgp_id: Ipv4Addr,
    /// Our proposed hold time in seconds; 0 or >= 3 (RFC 4271 §4.2).
    pub hold_time: u16,
    /// Our KeepaliveTime in seconds; `None`: a third of the negotiated hold
    /// time. Capped at a third of the negotiated hold time (RFC 4271 §10
    /// "one third of the HoldTime"), as BIRD and FRR do, so a peer that
    /// proposes a short hold time never sees us fall silent for too long.
    /// `Some(0)` is treated as `None` (the config crate refuses 0).
    pub keepalive: Option<u16>,
    /// OPENs proposing a (non-zero) hold time below this are refused with
    /// 2/6 (RFC 4271 §6.2 "MAY reject ... on the basis of the Hold Time").
    pub min_hold_time: u16,
    /// Multiprotocol families we advertise (RFC 4760). Empty: no MP
    /// capability at all, i.e. plain IPv4 unicast.
    pub families: Vec<AfiSafi>,
    /// Advertise 4-octet AS support (RFC 6793).
    pub four_octet_asn: bool,
    /// Advertise route refresh (RFC 2918).
    pub route_refresh: bool,
    /// Advertise enhanced route refresh (RFC 7313).
    pub enhanced_route_refresh: bool,
    /// Advertise extended messages up to 65535 octets (RFC 8654).
    pub extended_message: bool,
    /// RFC 7911 ADD-PATH entries we advertise.
    pub add_path: Vec<AddPathFamily>,
    /// RFC 8950 Extended Next Hop Encoding tuples we advertise; empty: no
    /// capability (we neither accept nor send IPv4 NLRI with an IPv6 next
    /// hop).
    pub ext_next_hop: Vec<ExtNextHop>,
    /// RFC 9234 role we advertise ([`bgp_wire::capability::role`]).
    pub role: Option<u8>,
    /// RFC 9234 §4.2 strict mode: the peer must advertise a role.
    pub role_strict: bool,
    /// Further capabilities to advertise as they are (graceful restart,
    /// long-lived GR, FQDN, ...).
    pub extra_capabilities: Vec<Capability>,
    /// Capabilities the peer must advertise (RFC 5492 §5, 2/7).
    /// `Multiprotocol` entries match by family, others by code.
    pub required_capabilities: Vec<Capability>,

    /// ConnectRetryTime (RFC 4271 §10 suggests 120 s).
    pub connect_retry_time: Duration,
    /// The "large value" of the HoldTimer in OpenSent (§8.2.2: 4 minutes).
    pub open_hold_time: Duration,
    /// DelayOpen with its DelayOpenTime (§8.1.1); `None` = FALSE.
    pub delay_open: Option<Duration>,
    /// Whether we connect, accept, or both.
    pub connection_mode: ConnectionMode,
    /// DampPeerOscillations with its IdleHoldTime; `None` = FALSE.
    pub damp: Option<DampConfig>,
    /// AllowAutomaticStart: when FALSE, events 3 and 5-7 are ignored.
    pub allow_automatic_start: bool,
    /// AllowAutomaticStop: when FALSE, event 8 is ignored.
    pub allow_automatic_stop: bool,
    /// CollisionDetectEstablishedState: when FALSE, event 23 in
    /// Established is ignored (§6.8: the new connection is closed instead).
    pub collision_detect_established_state: bool,
    /// SendNOTIFICATIONwithoutOPEN (§8.1.1).
    pub send_notification_without_open: bool,
}

impl SessionConfig {
    /// A plain configuration with the RFC defaults: hold time 90, connect
    /// retry 120 s, IPv4 unicast, 4-octet ASNs and route refresh; all
    /// optional attributes off except AllowAutomaticStart/Stop.
    pub fn new(local_asn: Asn, peer_asn: Option<Asn>, bgp_id: Ipv4Addr) -> SessionConfig {
        SessionConfig {
            local_asn,
            peer_asn,
            bgp_id,
            hold_time: 90,
            keepalive: None,
            min_hold_time: 3,
            families: vec![AfiSafi::IPV4_UNICAST],
            four_octet_asn: true,
            route_refresh: true,
            enhanced_route_refresh: false,
            extended_message: false,
            add_path: Vec::new(),
            ext_next_hop: Vec::new(),
            role: None,
            role_strict: false,
            extra_capabilities: Vec::new(),
            required_capabilities: Vec::new(),
            connect_retry_time: Duration::from_secs(120),
            open_hold_time: Duration::from_secs(240),
            delay_open: None,
            connection_mode: ConnectionMode::Both,
            damp: None,
            allow_automatic_start: true,
            allow_automatic_stop: true,
            collision_detect_established_state: false,
            send_notification_without_open: false,
        }
    }

    /// Whether the peer is internal (same AS). Unknown peer AS counts as
    /// external.
    pub fn is_ibgp(&self) -> bool {
        self.peer_asn == Some(self.local_asn)
    }

    /// The OPEN we send (RFC 4271 §4.2), all capabilities in one parameter.
    pub fn open_message(&self) -> OpenMessage {
        let mut caps = Vec::new();
        for f in &self.families {
            caps.push(Capability::Multiprotocol(*f));
        }
        if self.route_refresh {
            caps.push(Capability::RouteRefresh);
        }
        if !self.ext_next_hop.is_empty() {
            caps.push(Capability::ExtendedNextHop(self.ext_next_hop.clone()));
        }
        if self.enhanced_route_refresh {
            caps.push(Capability::EnhancedRouteRefresh);
        }
        if self.extended_message {
            caps.push(Capability::ExtendedMessage);
        }
        if let Some(r) = self.role {
            caps.push(Capability::Role(r));
        }
        if !self.add_path.is_empty() {
            caps.push(Capability::AddPath(self.add_path.clone()));
        }
        if self.four_octet_asn {
            caps.push(Capability::FourOctetAsn(self.local_asn));
        }
        caps.extend(self.extra_capabilities.iter().cloned());
        let mut m = OpenMessage::new(self.local_asn, self.hold_time, self.bgp_id, caps);
        if !self.four_octet_asn {
            // Without the capability the 2-octet field is all we have; an
            // ASN above 65535 cannot be spoken at all and goes out as
            // AS_TRANS (the peer will then reject or accept it).
            m.my_as = self.local_asn.to_u16_or_trans();
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_message_from_config() {
        let c = SessionConfig::new(
            Asn(4_200_000_001),
            Some(Asn(65002)),
            Ipv4Addr::new(1, 1, 1, 1),
        );
        let m = c.open_message();
        assert_eq!(m.my_as, 23456);
        assert_eq!(m.hold_time, 90);
        let caps: Vec<_> = m.capabilities().cloned().collect();
        assert_eq!(
            caps,
            vec![
                Capability::Multiprotocol(AfiSafi::IPV4_UNICAST),
                Capability::RouteRefresh,
                Capability::FourOctetAsn(Asn(4_200_000_001)),
            ]
        );
        assert!(!c.is_ibgp());
    }
}
