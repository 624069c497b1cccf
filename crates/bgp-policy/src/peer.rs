//! Adapters from a per-peer table of compiled policies to the RIB's
//! [`ImportPolicy`] / [`ExportPolicy`] hooks.

use std::sync::Arc;

use base::Prefix;
use bgp_rib::{AttrSet, AttrsBuilder, ExportPolicy, ExportVerdict, ImportPolicy, PeerId, Verdict};

use crate::compile::Policy;
use crate::eval::RouteCtx;

/// Policies and session context per peer, indexed by [`PeerId`].
///
/// `None` (or an index past the end of `import`/`export`) accepts every
/// route unchanged. Whether an eBGP session without a configured policy
/// should instead reject everything (RFC 8212) is the daemon's decision: it
/// expresses it by installing [`Policy::constant`]`(Verdict::Reject)`.
/// A policy whose peer has no `ctx` entry sees [`RouteCtx::default`].
/// `ctx.afi` is set from the prefix on every call.
#[derive(Clone, Debug, Default)]
pub struct PeerPolicies {
    /// Import policy per peer.
    pub import: Vec<Option<Arc<Policy>>>,
    /// Export policy per peer (the peer routes are sent to).
    pub export: Vec<Option<Arc<Policy>>>,
    /// Session context per peer.
    pub ctx: Vec<RouteCtx>,
}

impl PeerPolicies {
    fn ctx_for(&self, peer: PeerId, prefix: &Prefix) -> RouteCtx {
        let mut c = self
            .ctx
            .get(usize::from(peer.0))
            .copied()
            .unwrap_or_default();
        c.afi = prefix.afi();
        c
    }

    /// The import decision for a route from `peer`.
    pub fn import_route(&self, peer: PeerId, prefix: &Prefix, attrs: &mut AttrsBuilder) -> Verdict {
        match self.import.get(usize::from(peer.0)) {
            Some(Some(p)) => p.import(&self.ctx_for(peer, prefix), prefix, attrs),
            _ => Verdict::Accept,
        }
    }

    /// The export decision for a route going to `to`.
    pub fn export_route(&self, to: PeerId, prefix: &Prefix, attrs: &AttrSet) -> ExportVerdict {
        match self.export.get(usize::from(to.0)) {
            Some(Some(p)) => p.export(&self.ctx_for(to, prefix), prefix, attrs),
            _ => ExportVerdict::Accept,
        }
    }
}

impl ImportPolicy for PeerPolicies {
    fn import(&mut self, peer: PeerId, prefix: &Prefix, attrs: &mut AttrsBuilder) -> Verdict {
        self.import_route(peer, prefix, attrs)
    }
}

impl ImportPolicy for &PeerPolicies {
    fn import(&mut self, peer: PeerId, prefix: &Prefix, attrs: &mut AttrsBuilder) -> Verdict {
        self.import_route(peer, prefix, attrs)
    }
}

impl ExportPolicy for PeerPolicies {
    fn export(
        &mut self,
        to: PeerId,
        prefix: &Prefix,
        _from: PeerId,
        attrs: &AttrSet,
    ) -> ExportVerdict {
        self.export_route(to, prefix, attrs)
    }
}

impl ExportPolicy for &PeerPolicies {
    fn export(
        &mut self,
        to: PeerId,
        prefix: &Prefix,
        _from: PeerId,
        attrs: &AttrSet,
    ) -> ExportVerdict {
        self.export_route(to, prefix, attrs)
    }
}
