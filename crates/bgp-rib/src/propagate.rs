//! Which routes go to which peer, independent of user policy: iBGP/eBGP
//! propagation (RFC 4271 §9.2), route reflection (RFC 4456), route-server
//! clients (RFC 7947), well-known communities (RFC 1997) and BGP roles with
//! Only-to-Customer (RFC 9234 §5). [`Propagation`] wraps a user
//! [`ExportPolicy`]; [`import_check`] is the matching ingress filter.

use std::net::Ipv4Addr;

use base::{Asn, Prefix};
use bgp_wire::consts::attr_type as at;
use bgp_wire::{AsPath, AttrValue, Community, PathAttr, PathAttribute, SegmentType};

use crate::attrs::{AttrSet, AttrsBuilder};
use crate::encode_attrs::role;
use crate::policy::{ExportPolicy, ExportVerdict};
use crate::PeerId;

/// How we relate to one peer, for the propagation rules.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PeerRole {
    /// External peer: another AS, or another member AS of our
    /// confederation (then `confed` too).
    pub ebgp: bool,
    /// RFC 5065: a confederation-external peer (a member AS of our
    /// confederation other than ours). Routes go to and come from it as
    /// between ASes (iBGP split horizon does not apply), but it stays
    /// inside the confederation: NO_EXPORT passes, NO_EXPORT_SUBCONFED
    /// does not, and MULTI_EXIT_DISC is kept.
    pub confed: bool,
    /// RFC 4456: the peer is a route-reflector client of ours.
    pub rr_client: bool,
    /// RFC 7947: the peer is a route-server client of ours.
    pub rs_client: bool,
    /// The RFC 9234 role code we see the peer as (0 Provider, 1 RS,
    /// 2 RS-Client, 3 Customer, 4 Peer).
    pub role: Option<u8>,
    /// The peer's BGP Identifier (ORIGINATOR_ID when reflecting its routes).
    pub bgp_id: Ipv4Addr,
}

/// The propagation rules around a user export policy. `roles` is indexed by
/// [`PeerId`]; a route whose source has no role (`None`, e.g. the
/// pseudo-peer of static routes) counts as locally originated and may go to
/// every peer; a target without a role gets nothing.
///
/// Rules, in order:
/// * never back to the peer it came from;
/// * NO_ADVERTISE: to nobody; NO_EXPORT: not outside the confederation
///   (to eBGP peers that are not confederation members); NO_EXPORT_SUBCONFED:
///   not outside our (member) AS, so to no eBGP peer at all (RFC 1997,
///   RFC 5065 §5); without a confederation both mean the same. Checked on
///   the route and again on what the user policy returns;
/// * RFC 9234 §5: a route with OTC does not go to Providers, Peers or RSes;
/// * iBGP-learned routes go to eBGP peers; to iBGP peers only by
///   reflection: from a client to every iBGP peer but the originator, from
///   a non-client to clients only. Reflected routes get ORIGINATOR_ID (the
///   source's BGP Identifier) if absent and our cluster id prepended to
///   CLUSTER_LIST (RFC 4456 §8);
/// * MULTI_EXIT_DISC received from a peer is not passed to eBGP peers
///   (RFC 4271 §5.1.4) unless they are route-server clients (RFC 7947
///   §2.2.2), confederation members (it stays inside the confederation,
///   RFC 5065 §5.3), or the user policy changed it. This is FRR's behaviour (strip
///   before the outbound route-map); BIRD similarly only sends a MED to
///   eBGP that its export filter set. Locally originated routes keep theirs.
#[derive(Clone, Debug)]
pub struct Propagation<E> {
    /// Our BGP Identifier, set as ORIGINATOR_ID when reflecting.
    pub router_id: Ipv4Addr,
    /// Our cluster ID, prepended to CLUSTER_LIST when reflecting (RFC 4456).
    pub cluster_id: Ipv4Addr,
    /// Each peer's role, indexed by [`PeerId`]; `None` for unknown peers.
    pub roles: Vec<Option<PeerRole>>,
    /// The user's export policy, applied after the propagation rules.
    pub inner: E,
}

impl<E> Propagation<E> {
    fn role(&self, p: PeerId) -> Option<PeerRole> {
        self.roles.get(p.0 as usize).copied().flatten()
    }
}

/// The RFC 1997 well-known communities on a route.
#[derive(Copy, Clone, Debug, Default)]
struct WellKnown {
    no_export: bool,
    no_export_subconfed: bool,
    no_advertise: bool,
}

impl WellKnown {
    fn add(&mut self, c: Community) {
        self.no_advertise |= c == Community::NO_ADVERTISE;
        self.no_export |= c == Community::NO_EXPORT;
        self.no_export_subconfed |= c == Community::NO_EXPORT_SUBCONFED;
    }
    fn of_set(s: &AttrSet) -> WellKnown {
        let mut w = WellKnown::default();
        if let Some(a) = s.find(at::COMMUNITIES) {
            if let Ok(PathAttribute::Communities(c)) = a.typed(AttrSet::ctx()) {
                c.iter().for_each(|c| w.add(c));
            }
        }
        w
    }
    fn of_builder(b: &AttrsBuilder) -> WellKnown {
        let mut w = WellKnown::default();
        if let Some(AttrValue::Communities(c)) = b.get(at::COMMUNITIES).map(|a| &a.value) {
            c.iter().for_each(|c| w.add(*c));
        }
        w
    }
    fn blocks(&self, to: &PeerRole) -> bool {
        // RFC 1997: NO_EXPORT stops at the confederation's edge,
        // NO_EXPORT_SUBCONFED at the member AS's (confederation-external
        // peers included).
        self.no_advertise
            || (self.no_export && to.ebgp && !to.confed)
            || (self.no_export_subconfed && to.ebgp)
    }
}

/// RFC 9234 §5: routes with OTC are not propagated to these.
fn otc_blocks(to: &PeerRole) -> bool {
    matches!(to.role, Some(role::PROVIDER | role::PEER | role::RS))
}

impl<E: ExportPolicy> ExportPolicy for Propagation<E> {
    fn export(
        &mut self,
        to: PeerId,
        prefix: &Prefix,
        from: PeerId,
        attrs: &AttrSet,
    ) -> ExportVerdict {
        if to == from {
            return ExportVerdict::Reject;
        }
        let Some(to_r) = self.role(to) else {
            return ExportVerdict::Reject;
        };
        let from_r = self.role(from);
        if WellKnown::of_set(attrs).blocks(&to_r) {
            return ExportVerdict::Reject;
        }
        if otc_blocks(&to_r) && attrs.find(at::ONLY_TO_CUSTOMER).is_some() {
            return ExportVerdict::Reject;
        }
        let mut reflect_from = None;
        if let Some(f) = from_r.filter(|f| !f.ebgp && !to_r.ebgp) {
            if f.rr_client {
                // From a client: every iBGP peer but the originator.
                let orig = attrs.summary().originator_id().unwrap_or(f.bgp_id);
                if to_r.bgp_id == orig {
                    return ExportVerdict::Reject;
                }
            } else if !to_r.rr_client {
                // RFC 4271 §9.2 / RFC 4456 §6: non-client to non-client
                // is never sent.
                return ExportVerdict::Reject;
            }
            reflect_from = Some(f);
        }
        let mut out = match self.inner.export(to, prefix, from, attrs) {
            ExportVerdict::Reject => return ExportVerdict::Reject,
            ExportVerdict::Accept => None,
            ExportVerdict::Replace(b) => {
                let otc = b.get(at::ONLY_TO_CUSTOMER).is_some();
                if WellKnown::of_builder(&b).blocks(&to_r) || (otc && otc_blocks(&to_r)) {
                    return ExportVerdict::Reject;
                }
                Some(b)
            }
        };
        let received_med = attrs.summary().med();
        // RFC 5065 §5.3: MED is kept towards other member ASes.
        let med_strip = to_r.ebgp && !to_r.confed && !to_r.rs_client;
        if med_strip && from_r.is_some() && received_med.is_some() {
            match &mut out {
                None => {
                    let mut b = attrs.to_builder();
                    b.remove(at::MULTI_EXIT_DISC);
                    out = Some(b);
                }
                Some(b) if b.med() == received_med => {
                    b.remove(at::MULTI_EXIT_DISC);
                }
                Some(_) => {}
            }
        }
        if let Some(f) = reflect_from {
            let b = out.get_or_insert_with(|| attrs.to_builder());
            reflect(b, f.bgp_id, self.cluster_id);
        }
        match out {
            None => ExportVerdict::Accept,
            Some(b) => ExportVerdict::Replace(b),
        }
    }

    fn propagation_rules(&self) -> bool {
        true
    }

    /// The rules here look at roles and attributes only.
    fn prefix_independent(&self, to: PeerId) -> bool {
        self.inner.prefix_independent(to)
    }

    /// eBGP targets with the same inner key, route-server client flag and
    /// RFC 9234 role: the rules read nothing else of an eBGP target but
    /// its identity (never back to the source). iBGP targets get no key
    /// (reflection compares the target's BGP Identifier).
    fn export_group(&self, to: PeerId) -> Option<u64> {
        let r = self.role(to)?;
        if !r.ebgp {
            return None;
        }
        let k = self.inner.export_group(to)?;
        if k >> 54 != 0 {
            return None;
        }
        let role = r.role.map_or(0, |x| 1 + u64::from(x));
        Some(k << 10 | u64::from(r.rs_client) << 9 | u64::from(r.confed) << 8 | role)
    }

    /// A target without a role (not Established) gets nothing, and the
    /// rules only ever narrow what the inner policy accepts.
    fn rejects_all(&self, to: PeerId) -> bool {
        self.role(to).is_none() || self.inner.rejects_all(to)
    }
}

/// RFC 4456 §8: ORIGINATOR_ID if absent, cluster id prepended to
/// CLUSTER_LIST.
fn reflect(b: &mut AttrsBuilder, source_id: Ipv4Addr, cluster_id: Ipv4Addr) {
    if b.get(at::ORIGINATOR_ID).is_none() {
        b.set(PathAttr::new(AttrValue::OriginatorId(source_id)));
    }
    let mut list = match b.get(at::CLUSTER_LIST).map(|a| &a.value) {
        Some(AttrValue::ClusterList(c)) => {
            let mut v = Vec::with_capacity(c.len() + 1);
            v.push(cluster_id);
            v.extend_from_slice(c);
            v
        }
        _ => Vec::new(),
    };
    if list.is_empty() {
        list.push(cluster_id);
    }
    b.set(PathAttr::new(AttrValue::ClusterList(list)));
}

/// Why a received route is not eligible.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ImportReject {
    /// Our AS is in the AS_PATH of a route from an eBGP peer (RFC 4271
    /// §9.1.2).
    AsLoop,
    /// ORIGINATOR_ID is our router id (RFC 4456 §8).
    OriginatorLoop,
    /// CLUSTER_LIST holds our cluster id (RFC 4456 §8).
    ClusterLoop,
    /// RFC 9234 §5: OTC from a Customer or RS-Client, or from a Peer with a
    /// value other than the peer's AS.
    RouteLeak,
}

/// Result of [`import_check`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ImportCheck {
    /// Accept as is.
    Accept,
    /// RFC 9234 §5: accept after adding ONLY_TO_CUSTOMER with this AS (the
    /// peer's); [`ImportCheck::apply`] does it.
    AddOtc(Asn),
    /// Refuse the route, for this reason.
    Reject(ImportReject),
}

impl ImportCheck {
    /// Whether the route is accepted (with or without OTC added).
    pub fn is_accept(&self) -> bool {
        !matches!(self, ImportCheck::Reject(_))
    }
    /// Adds OTC when asked to; returns whether the route is eligible.
    pub fn apply(&self, attrs: &mut AttrsBuilder) -> bool {
        if let ImportCheck::AddOtc(a) = self {
            attrs.set(PathAttr::new(AttrValue::OnlyToCustomer(*a)));
        }
        self.is_accept()
    }
}

/// The neighbour AS of a received path: the first ASN of its leading
/// AS_SEQUENCE, skipping confederation segments.
fn neighbor_as(attrs: &AttrsBuilder) -> Option<Asn> {
    let Some(AttrValue::AsPath(p)) = attrs.get(at::AS_PATH).map(|a| &a.value) else {
        return None;
    };
    let s = p.segments.iter().find(|s| !s.kind.is_confed())?;
    (s.kind == SegmentType::Sequence)
        .then(|| s.asns.first().copied())
        .flatten()
}

/// Ingress checks on a received route: loop detection (own AS in AS_PATH
/// from eBGP, RFC 4271 §9.1.2; ORIGINATOR_ID equal to our router id and
/// our cluster id in CLUSTER_LIST, RFC 4456 §8) and the RFC 9234 §5 OTC
/// ingress rules. The peer's AS for the OTC rules is taken from the AS_PATH
/// (its first ASN); use [`import_check_with_asn`] where the configured
/// remote AS is known (a route server does not prepend its own AS).
pub fn import_check(
    router_id: Ipv4Addr,
    cluster_id: Ipv4Addr,
    local_asn: Asn,
    from: &PeerRole,
    attrs: &AttrsBuilder,
) -> ImportCheck {
    import_check_with_asn(router_id, cluster_id, local_asn, None, from, attrs)
}

/// [`import_check`] with the peer's AS given (`None`: from the AS_PATH).
pub fn import_check_with_asn(
    router_id: Ipv4Addr,
    cluster_id: Ipv4Addr,
    local_asn: Asn,
    remote_asn: Option<Asn>,
    from: &PeerRole,
    attrs: &AttrsBuilder,
) -> ImportCheck {
    import_check_confed(
        router_id, cluster_id, local_asn, None, remote_asn, from, attrs,
    )
}

/// Whether a path from an external peer loops back to us. Outside a
/// confederation, or from a true external peer: our AS (`local_asn`, the
/// one that peer sees) or the confederation identifier anywhere (RFC 4271
/// §9.1.2). From another member AS of our confederation (RFC 5065 §5):
/// our member AS in a confederation segment, or the confederation
/// identifier in an ordinary one.
fn as_loop(p: &AsPath, local_asn: Asn, confed_id: Option<Asn>, from: &PeerRole) -> bool {
    let is_id = |a: &Asn| confed_id == Some(*a);
    p.segments.iter().any(|s| {
        if from.confed {
            if s.kind.is_confed() {
                s.asns.contains(&local_asn)
            } else {
                s.asns.iter().any(is_id)
            }
        } else {
            s.asns.iter().any(|a| *a == local_asn || is_id(a))
        }
    })
}

/// [`import_check_with_asn`] for a speaker in a confederation whose
/// identifier is `confed_id` (`local_asn`: the AS the peer sees, our member
/// AS towards members and internal peers, the identifier outside).
pub fn import_check_confed(
    router_id: Ipv4Addr,
    cluster_id: Ipv4Addr,
    local_asn: Asn,
    confed_id: Option<Asn>,
    remote_asn: Option<Asn>,
    from: &PeerRole,
    attrs: &AttrsBuilder,
) -> ImportCheck {
    let mut otc = None;
    for a in attrs.attrs() {
        match &a.value {
            AttrValue::AsPath(p) if from.ebgp && as_loop(p, local_asn, confed_id, from) => {
                return ImportCheck::Reject(ImportReject::AsLoop);
            }
            AttrValue::OriginatorId(o) if *o == router_id => {
                return ImportCheck::Reject(ImportReject::OriginatorLoop);
            }
            AttrValue::ClusterList(c) if c.contains(&cluster_id) => {
                return ImportCheck::Reject(ImportReject::ClusterLoop);
            }
            AttrValue::OnlyToCustomer(v) => otc = Some(*v),
            _ => {}
        }
    }
    let Some(r) = from.role else {
        return ImportCheck::Accept;
    };
    let remote = remote_asn.or_else(|| neighbor_as(attrs));
    match (otc, r) {
        (Some(_), role::CUSTOMER | role::RS_CLIENT) => ImportCheck::Reject(ImportReject::RouteLeak),
        (Some(v), role::PEER) if Some(v) != remote => ImportCheck::Reject(ImportReject::RouteLeak),
        (None, role::PROVIDER | role::PEER | role::RS) => match remote {
            Some(a) => ImportCheck::AddOtc(a),
            None => ImportCheck::Accept,
        },
        _ => ImportCheck::Accept,
    }
}
