//! Policy hooks. The policy language comes later; the RIB only needs a
//! verdict per prefix and, on import, the chance to edit the attributes.

use base::Prefix;

use crate::attrs::{AttrSet, AttrsBuilder};
use crate::PeerId;

/// An import decision.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Install the route (with the builder's edits).
    Accept,
    /// Drop the route: any earlier path of the peer for the prefix is removed, and it counts as
    /// received but not accepted.
    Reject,
}

/// Import policy, run once per announced prefix on an editable copy of the
/// UPDATE's attributes. Edits make the RIB intern a new set for that prefix;
/// an untouched builder reuses the UPDATE's set.
pub trait ImportPolicy {
    /// Decides the route `prefix` from `peer`; may edit `attrs`.
    fn import(&mut self, peer: PeerId, prefix: &Prefix, attrs: &mut AttrsBuilder) -> Verdict;
    /// True when [`Self::import`] accepts every route unchanged: the RIB
    /// then skips the per-UPDATE editable copy and the per-prefix call.
    fn accepts_all(&self) -> bool {
        false
    }
}

impl<F: FnMut(&Prefix, &mut AttrsBuilder) -> Verdict> ImportPolicy for F {
    fn import(&mut self, _peer: PeerId, prefix: &Prefix, attrs: &mut AttrsBuilder) -> Verdict {
        self(prefix, attrs)
    }
}

/// Accepts everything unchanged, on import and export.
#[derive(Copy, Clone, Debug, Default)]
pub struct AcceptAll;

impl ImportPolicy for AcceptAll {
    fn import(&mut self, _: PeerId, _: &Prefix, _: &mut AttrsBuilder) -> Verdict {
        Verdict::Accept
    }
    fn accepts_all(&self) -> bool {
        true
    }
}

/// An export decision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ExportVerdict {
    /// Send the Loc-RIB attributes as they are.
    Accept,
    /// Do not send (withdraw if it was sent).
    Reject,
    /// Send these attributes instead.
    Replace(AttrsBuilder),
}

/// Export policy: decides what `to` is sent for `prefix`, whose best path
/// came from `from` with attributes `attrs`. Per-session rewriting that does
/// not depend on policy (next-hop-self, prepending the local AS, dropping
/// LOCAL_PREF towards eBGP) belongs to the UPDATE encoder, so that sets stay
/// shared between peers here.
pub trait ExportPolicy {
    /// What to send `to` for `prefix`.
    fn export(
        &mut self,
        to: PeerId,
        prefix: &Prefix,
        from: PeerId,
        attrs: &AttrSet,
    ) -> ExportVerdict;

    /// Whether this policy applies the iBGP propagation rules itself (as
    /// [`crate::Propagation`] does, with route reflection). When false, the
    /// shard applies plain RFC 4271 §9.2: routes from an internal peer are
    /// not sent to other internal peers.
    fn propagation_rules(&self) -> bool {
        false
    }

    /// True when, for the duration of one export call, the verdict towards
    /// `to` depends only on the source peer and the attribute set, not on
    /// the prefix: the shard then computes it once per (to, from, set) and
    /// reuses it for every prefix sharing them (one UPDATE's worth of
    /// prefixes usually does).
    fn prefix_independent(&self, _to: PeerId) -> bool {
        false
    }

    /// True when, for the duration of one export call, nothing at all is
    /// exported to `to` (a peer configured `export = "reject"`, or one
    /// that is not Established). The shard then skips `to` for every
    /// changed prefix while its Adj-RIB-Out is empty, instead of asking
    /// per prefix: a route server's or a benchmark's receive-only peers
    /// would otherwise cost one RIB lookup per peer per changed prefix.
    fn rejects_all(&self, _to: PeerId) -> bool {
        false
    }

    /// An update-group key for `to`: peers with the same key get the same
    /// verdict (and the same rewrite) from [`Self::export`] for every
    /// prefix, source peer and attribute set, for as long as their keys
    /// stay the same, except that a route is never sent back to the peer
    /// it came from. The RIB then keeps one Adj-RIB-Out for all of them
    /// (one bit per peer and prefix, see docs/adr/0005). `None` (the
    /// default): `to` keeps its own. A key shared by peers whose verdicts
    /// differ exports one peer's verdicts to the others: when unsure,
    /// return `None`.
    fn export_group(&self, _to: PeerId) -> Option<u64> {
        None
    }
}

impl ExportPolicy for AcceptAll {
    fn export(&mut self, _: PeerId, _: &Prefix, _: PeerId, _: &AttrSet) -> ExportVerdict {
        ExportVerdict::Accept
    }
    fn prefix_independent(&self, _: PeerId) -> bool {
        true
    }
    /// The same verdict for everyone.
    fn export_group(&self, _: PeerId) -> Option<u64> {
        Some(0)
    }
}
