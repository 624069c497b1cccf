//! Glue between the peer table and the policy hooks of `bgp-rib`: the
//! per-peer import policy, the export side (propagation rules of
//! [`bgp_rib::Propagation`] around each target's export policy) and the
//! ingress loop/OTC checks.

use base::Prefix;
use bgp_policy::RouteCtx;
use bgp_rib::{
    import_check_confed, AttrSet, AttrsBuilder, ExportPolicy, ExportVerdict, ImportCheck,
    ImportPolicy, PeerId, PeerRole, Propagation, Verdict,
};

use crate::meter::Meter;
use crate::peer::{PeerEntry, PolicyRef};
use crate::settings::RibSettings;

fn ctx_for(
    entry: &PeerEntry,
    settings: &RibSettings,
    prefix: &Prefix,
    rpki: rov::RovState,
    aspa: Option<rov::AspaState>,
) -> RouteCtx {
    let local_addr = entry.up.as_ref().map(|u| u.local_addr.ip());
    RouteCtx {
        neighbor: entry.meta.addr,
        neighbor_asn: entry.meta.remote_asn,
        local_asn: entry.meta.local_asn,
        router_id: settings.router_id,
        local_addr,
        afi: prefix.afi(),
        rpki,
        aspa,
    }
}

/// How a route from `from` is verified with ASPA: None when it is not
/// (iBGP, or no `role` towards that neighbour, so we cannot tell whether
/// it is a customer or a provider). Else the procedure and the neighbour
/// AS to check as the first hop (none for a route server, which may be
/// transparent and not add its AS).
pub(crate) fn aspa_mode(from: &PeerEntry) -> Option<(rov::Direction, Option<u32>)> {
    if !from.meta.ebgp {
        return None;
    }
    let role = from.meta.role?;
    let dir = rov::Direction::of_neighbour_role(role)?;
    // RFC 9234 code 1: the neighbour is a route server.
    let first = (role != 1).then_some(from.meta.remote_asn.0);
    Some((dir, first))
}

/// The ASPA state of a stored route from `from` (None: not verified).
pub(crate) fn aspa_of_set(
    table: &rov::AspaTable,
    from: &PeerEntry,
    attrs: &AttrSet,
) -> Option<rov::AspaState> {
    let (dir, first) = aspa_mode(from)?;
    let mut path = Vec::new();
    let set = bgp_policy::aspa_path_of_set(attrs, &mut path);
    Some(table.verify(&path, set, first, dir))
}

/// Import policy of one peer. With a meter ([`Importer::timed`]) it also
/// times its named-policy evaluations, for the `policy` stage.
pub(crate) struct Importer<'a> {
    entry: &'a PeerEntry,
    settings: &'a RibSettings,
    /// The VRP table when RPKI is on: fills `RouteCtx::rpki` for
    /// policies that match on it.
    rov: Option<&'a rov::VrpTable>,
    /// The ASPAs when RPKI is on: fills `RouteCtx::aspa` for policies
    /// that match on it.
    aspa: Option<&'a rov::AspaTable>,
    meter: Option<&'a dyn Meter>,
    /// Named-policy evaluations run (one per prefix).
    pub(crate) evals: u64,
    /// Nanoseconds they took (0 without a meter).
    pub(crate) ns: u64,
}

impl<'a> Importer<'a> {
    pub(crate) fn new(
        entry: &'a PeerEntry,
        settings: &'a RibSettings,
        rov: Option<&'a rov::VrpTable>,
    ) -> Importer<'a> {
        Importer {
            entry,
            settings,
            rov,
            aspa: None,
            meter: None,
            evals: 0,
            ns: 0,
        }
    }

    /// Uses `aspa` for `aspa = "..."` matches.
    pub(crate) fn with_aspa(mut self, aspa: Option<&'a rov::AspaTable>) -> Importer<'a> {
        self.aspa = aspa;
        self
    }

    /// Times named-policy evaluations with `meter`.
    pub(crate) fn timed(mut self, meter: &'a dyn Meter) -> Importer<'a> {
        self.meter = Some(meter);
        self
    }
}

impl ImportPolicy for Importer<'_> {
    fn accepts_all(&self) -> bool {
        matches!(self.entry.meta.import, PolicyRef::AcceptAll)
    }

    fn import(&mut self, _peer: PeerId, prefix: &Prefix, attrs: &mut AttrsBuilder) -> Verdict {
        match &self.entry.meta.import {
            PolicyRef::AcceptAll => Verdict::Accept,
            PolicyRef::RejectAll => Verdict::Reject,
            PolicyRef::Named(_, p) => {
                let t0 = self.meter.map_or(0, |m| m.now_ns());
                let rpki = match self.rov {
                    Some(t) if p.uses_rpki() => t.validate(
                        prefix,
                        bgp_policy::origin_of_builder(attrs, self.entry.meta.local_asn),
                    ),
                    _ => rov::RovState::NotFound,
                };
                let aspa = match (self.aspa, aspa_mode(self.entry)) {
                    (Some(t), Some((dir, first))) if p.uses_aspa() => {
                        let mut path = Vec::new();
                        let set = bgp_policy::aspa_path_of_builder(attrs, &mut path);
                        Some(t.verify(&path, set, first, dir))
                    }
                    _ => None,
                };
                let ctx = ctx_for(self.entry, self.settings, prefix, rpki, aspa);
                let v = p.import(&ctx, prefix, attrs);
                if let Some(m) = self.meter {
                    self.ns += m.now_ns().saturating_sub(t0);
                }
                self.evals += 1;
                v
            }
        }
    }
}

/// The user export policies of every peer, by target.
pub(crate) struct UserExport<'a> {
    peers: &'a [Option<PeerEntry>],
    settings: &'a RibSettings,
    rov: Option<&'a rov::VrpTable>,
    aspa: Option<&'a rov::AspaTable>,
    /// Announced `summary_only` aggregates: their more specifics are not
    /// exported (see `aggregate.rs`).
    summarised: Vec<Prefix>,
}

impl ExportPolicy for UserExport<'_> {
    /// Literal verdicts do not look at the prefix; compiled policies may.
    fn prefix_independent(&self, to: PeerId) -> bool {
        if !self.summarised.is_empty() {
            return false;
        }
        match self.peers.get(to.0 as usize) {
            Some(Some(e)) => !matches!(e.meta.export, PolicyRef::Named(..)),
            _ => true,
        }
    }

    fn rejects_all(&self, to: PeerId) -> bool {
        match self.peers.get(to.0 as usize) {
            Some(Some(e)) => matches!(e.meta.export, PolicyRef::RejectAll),
            _ => true,
        }
    }

    /// Literal verdicts are the same for every peer with the same LLGR
    /// negotiation (update groups, docs/adr/0005). A compiled policy names
    /// a group by its identity ([`bgp_policy::Policy::group_identity`]:
    /// equal compiled policies, whatever their names, share it) unless it
    /// reads the neighbour's address or our address on the session; one
    /// that reads our AS adds it (`local_as` may differ per neighbour).
    fn export_group(&self, to: PeerId) -> Option<u64> {
        let Some(Some(e)) = self.peers.get(to.0 as usize) else {
            return None;
        };
        let code = match &e.meta.export {
            PolicyRef::AcceptAll => 0,
            PolicyRef::RejectAll => 1,
            PolicyRef::Named(_, p) => named_group_code(p, e.meta.local_asn.0)?,
        };
        let llgr = e.up.as_ref().is_some_and(|u| u.negotiated.llgr.is_some());
        Some(code << 1 | u64::from(llgr))
    }

    fn export(
        &mut self,
        to: PeerId,
        prefix: &Prefix,
        from: PeerId,
        attrs: &AttrSet,
    ) -> ExportVerdict {
        let Some(Some(entry)) = self.peers.get(to.0 as usize) else {
            return ExportVerdict::Reject;
        };
        if self
            .summarised
            .iter()
            .any(|a| crate::agg::covers(*a, *prefix))
        {
            return ExportVerdict::Reject;
        }
        // RFC 9494: a long-lived stale route goes only to peers that
        // negotiated LLGR.
        let llgr_peer = entry
            .up
            .as_ref()
            .is_some_and(|u| u.negotiated.llgr.is_some());
        if attrs.summary().llgr_stale() && !llgr_peer {
            return ExportVerdict::Reject;
        }
        match &entry.meta.export {
            PolicyRef::AcceptAll => ExportVerdict::Accept,
            PolicyRef::RejectAll => ExportVerdict::Reject,
            PolicyRef::Named(_, p) => {
                let rpki = match self.rov {
                    Some(t) if p.uses_rpki() => t.validate(
                        prefix,
                        bgp_policy::origin_of_set(attrs, entry.meta.local_asn),
                    ),
                    _ => rov::RovState::NotFound,
                };
                // The state of the route as received: its verification
                // depends on the neighbour it came from.
                let aspa = match (self.aspa, self.peers.get(from.0 as usize)) {
                    (Some(t), Some(Some(src))) if p.uses_aspa() => aspa_of_set(t, src, attrs),
                    _ => None,
                };
                let ctx = ctx_for(entry, self.settings, prefix, rpki, aspa);
                p.export(&ctx, prefix, attrs)
            }
        }
    }
}

/// The group code of a compiled export policy (below 2^53, so that with
/// the LLGR bit and `Propagation`'s 10 bits it fits a key): 2 + its
/// identity in the low 21 bits, our AS above them when the policy reads
/// it; None when it reads the neighbour (or past 2^20 identities).
pub(crate) fn named_group_code(p: &bgp_policy::Policy, local_asn: u32) -> Option<u64> {
    let g = p.group_identity();
    if g.neighbour_specific || g.id >= 1 << 20 {
        return None;
    }
    let asn = if g.reads_local_as {
        u64::from(local_asn)
    } else {
        0
    };
    Some((u64::from(g.id) + 2) | asn << 21)
}

/// The export side: propagation rules (iBGP/eBGP, RR, RS, OTC, well-known
/// communities) around the target's own export policy. A peer that is not
/// Established has no role and gets nothing.
pub(crate) type Exporter<'a> = Propagation<UserExport<'a>>;

pub(crate) fn exporter<'a>(
    peers: &'a [Option<PeerEntry>],
    roles: Vec<Option<PeerRole>>,
    settings: &'a RibSettings,
    rov: Option<&'a rov::VrpTable>,
    aspa: Option<&'a rov::AspaTable>,
    summarised: Vec<Prefix>,
) -> Exporter<'a> {
    Propagation {
        router_id: settings.router_id,
        cluster_id: settings.cluster_id,
        roles,
        inner: UserExport {
            peers,
            settings,
            rov,
            aspa,
            summarised,
        },
    }
}

/// Ingress checks (loops, RFC 9234 OTC): whether the route is eligible
/// and whether OTC must be added ([`ImportCheck::apply`] does it).
pub(crate) fn import_check(
    settings: &RibSettings,
    entry: &PeerEntry,
    from: &PeerRole,
    attrs: &AttrsBuilder,
) -> ImportCheck {
    import_check_confed(
        settings.router_id,
        settings.cluster_id,
        entry.meta.local_asn,
        entry.meta.confed_id,
        Some(entry.meta.remote_asn),
        from,
        attrs,
    )
}
