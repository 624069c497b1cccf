//! Policy analysis for update groups (issue 17, docs/adr/0005): which
//! compiled export policies give every peer the same verdict and rewrite.
//!
//! Two peers may share an Adj-RIB-Out walk and one encoding when their
//! export policies are equal and read nothing that differs between them.
//! [`Policy::group_identity`] says both: an identity that is equal for
//! two policies exactly when their compiled forms are equal (whatever the
//! policies are named; `[policy.a]` and `[policy.b]` with the same terms
//! share one), and what of the session the policy reads:
//!
//! * the neighbour's address (`match.neighbor`) or our address on the
//!   session (`next_hop = "self"`): the result differs per peer, the
//!   policy names no group;
//! * our AS on the session (`prepend` without an AS, and the RFC 6811
//!   origin of an empty AS_PATH under `match.rpki`): equal for peers with
//!   the same local AS, which the caller adds to the key.
//!
//! Nothing else of [`crate::RouteCtx`] is per peer on export (`router_id`
//! is the daemon's, `afi` the prefix's, the ASPA state the source's).
//!
//! Equality is decided on the compiled form's `Debug` text (every field,
//! derived; the AS-path automaton prints its source, which determines
//! it): equal text means equal terms. Two equal policies written
//! differently (list order) may get different identities, which only
//! loses sharing. Identities are interned once per process, so unequal
//! policies never share one (no hash collisions).

use std::collections::BTreeMap;
use std::sync::Mutex;

use crate::compile::{NextHopAct, Policy};

/// What [`Policy::group_identity`] finds.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct GroupIdentity {
    /// Equal for two policies of this process exactly when their compiled
    /// forms are equal; small integers from 0, in order of first analysis.
    pub id: u32,
    /// The policy reads the neighbour's address or our address on the
    /// session: its verdicts or rewrites may differ per peer.
    pub neighbour_specific: bool,
    /// The policy reads our AS on the session: equal for peers with the
    /// same local AS only.
    pub reads_local_as: bool,
}

/// Compiled forms seen so far, by text.
static IDS: Mutex<BTreeMap<String, u32>> = Mutex::new(BTreeMap::new());

fn intern(text: String) -> u32 {
    let mut ids = IDS.lock().unwrap_or_else(|e| e.into_inner());
    let next = u32::try_from(ids.len()).unwrap_or(u32::MAX);
    *ids.entry(text).or_insert(next)
}

pub(crate) fn analyse(p: &Policy) -> GroupIdentity {
    let text = format!("{:?}|{:?}", p.terms, p.default);
    let neighbour_specific = p
        .terms
        .iter()
        .any(|t| t.cond.neighbor.is_some() || matches!(t.act.next_hop, Some(NextHopAct::Local)));
    let reads_local_as = p
        .terms
        .iter()
        .any(|t| t.cond.rpki.is_some() || matches!(t.act.prepend, Some((_, None))));
    GroupIdentity {
        id: intern(text),
        neighbour_specific,
        reads_local_as,
    }
}

impl Policy {
    /// The policy's identity and what of the session it reads (see the
    /// module docs); computed once per compiled policy.
    pub fn group_identity(&self) -> GroupIdentity {
        *self.ident.get_or_init(|| analyse(self))
    }
}
