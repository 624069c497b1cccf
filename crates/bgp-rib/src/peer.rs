//! What a shard keeps per peer ([`PeerState`]): its configuration,
//! counters, the pre-policy Adj-RIB-In ([`PreIn`], maintained by
//! `adjin.rs`) and the Adj-RIB-Out ([`AdjOut`], maintained by `export.rs`
//! and `addpath.rs`).

use crate::adjout::AdjOut;
use crate::hash::FastMap;
use crate::intern::AttrHandle;
use crate::key::PKey;
use crate::types::PeerConfig;

/// One registered peer of a shard.
#[derive(Debug)]
pub(crate) struct PeerState {
    pub(crate) cfg: PeerConfig,
    pub(crate) accepted: u64,
    /// Routes import policy rejected, so that `received` stays exact.
    pub(crate) rejected: FastMap<(PKey, u32), ()>,
    /// Pre-policy Adj-RIB-In, when configured (see [`PreIn`]).
    pub(crate) pre: Option<PreIn>,
    pub(crate) out: Option<AdjOut>,
}

/// One peer's pre-policy Adj-RIB-In, see [`crate::adjin`].
#[derive(Debug)]
pub(crate) struct PreIn {
    /// Pre-policy sets of the routes whose stored path (if any) does not
    /// hold that same set. Holds a reference on each handle.
    pub(crate) diff: FastMap<(PKey, u32), AttrHandle>,
    /// False when the store was switched on while the peer already had
    /// routes: their paths may be post-policy sets, so only `diff` counts
    /// until the peer's routes are flushed.
    pub(crate) loc_is_pre: bool,
    /// The non-zero path ids (ADD-PATH) under which a prefix has `diff`
    /// entries, so that one prefix's routes are found without a scan
    /// ([`crate::RibShard::reimport_prefix`]); path id 0 is always probed.
    pub(crate) pids: FastMap<PKey, Vec<u32>>,
}

impl PreIn {
    /// An empty store for a peer without routes.
    pub(crate) fn complete() -> PreIn {
        PreIn {
            diff: FastMap::default(),
            loc_is_pre: true,
            pids: FastMap::default(),
        }
    }
    /// A store for a peer that already has routes (see `loc_is_pre`).
    pub(crate) fn partial() -> PreIn {
        PreIn {
            diff: FastMap::default(),
            loc_is_pre: false,
            pids: FastMap::default(),
        }
    }
    /// Empties the store (session gone: the next one starts from nothing)
    /// and returns the references it held.
    pub(crate) fn take_handles(&mut self) -> impl Iterator<Item = AttrHandle> {
        std::mem::replace(self, PreIn::complete())
            .diff
            .into_values()
    }
}
