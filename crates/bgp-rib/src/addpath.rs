//! ADD-PATH send (RFC 7911): an Adj-RIB-Out that advertises several paths
//! per prefix, each under its own path identifier.
//!
//! * Which paths: every path of the Loc-RIB
//!   ([`PathSelection::All`](crate::PathSelection::All), BIRD's
//!   `add paths tx`, FRR's `addpath-tx-all-paths`) or the N most preferred
//!   ([`PathSelection::Best`](crate::PathSelection::Best), FRR's
//!   `addpath-tx-best-selected N`: the decision process, then again without
//!   the paths already taken). Each chosen path then goes through the
//!   propagation rules and export policy on its own, exactly as the single
//!   best path does for other peers.
//! * Path identifiers are allocated per (peer, prefix): a path, known by
//!   its source peer and the identifier it was received with, keeps its
//!   identifier for as long as it is advertised, whatever its attributes
//!   do. A new path takes the smallest identifier that is neither
//!   advertised nor waiting to be withdrawn, so an identifier is reused
//!   only after its withdrawal has been handed to the encoder (RFC 7911
//!   §2: the identifier names the path on this session).
//! * Storage per prefix ([`crate::adjout::PathsOut`]) is an exact-size
//!   boxed slice of 16-byte records (source peer, source identifier, our
//!   identifier, handle). Peers without ADD-PATH do not use it and keep one
//!   4-byte handle per prefix.
//! * A family of the peer on which ADD-PATH was not negotiated gets the
//!   best path only, under identifier 1, which the encoder then omits.

use base::Prefix;

use crate::adjout::{AdjOut, PathsOut, Want};
use crate::key::PKey;
use crate::policy::{ExportPolicy, ExportVerdict};
use crate::shard::RibShard;
use crate::table::{self, SelectCtx};
use crate::types::{AddPathSend, RibError};
use crate::PeerId;

impl RibShard {
    /// Sets whether `peer` is sent several paths per prefix (RFC 7911), and
    /// which; `None` for the best path only. Call it when the session comes
    /// up, after [`Self::add_peer`] and before the first export: changing
    /// the mode empties the Adj-RIB-Out (what the previous session was sent
    /// is forgotten, as after [`Self::peer_down`]). Keeping the mode and
    /// changing the selection keeps what was sent; follow with
    /// [`Self::export_full`] to apply the new selection. A peer that does not
    /// export (no Adj-RIB-Out) is left alone.
    pub fn set_add_path_send(
        &mut self,
        peer: PeerId,
        cfg: Option<AddPathSend>,
    ) -> Result<(), RibError> {
        let member = match self.peer_state(peer) {
            None => return Err(RibError::UnknownPeer(peer)),
            Some(st) => matches!(&st.out, Some(AdjOut::Best(o)) if o.member.is_some()),
        };
        // Switching a group member to ADD-PATH: it leaves its group (what
        // it was sent is forgotten below anyway).
        let mut released = if member && cfg.is_some() {
            self.leave_group(peer, false)
        } else {
            Vec::new()
        };
        let st = self
            .peers
            .get_mut(peer.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(RibError::UnknownPeer(peer))?;
        let Some(out) = st.out.as_mut() else {
            return Ok(());
        };
        match (out, cfg) {
            (AdjOut::Paths(o), Some(c)) => o.cfg = c,
            (AdjOut::Best(_), None) => {}
            (out, cfg) => {
                let was_paths = out.is_paths();
                released.extend(out.take_handles());
                *out = match cfg {
                    Some(c) => AdjOut::Paths(Box::new(PathsOut::new(c))),
                    None => AdjOut::default(),
                };
                if was_paths {
                    self.add_path_peers = self.add_path_peers.saturating_sub(1);
                } else {
                    self.add_path_peers += 1;
                }
            }
        }
        for h in released {
            self.interner.release(h);
        }
        Ok(())
    }

    /// The ADD-PATH send setting of `peer` (`None`: best path only).
    pub fn add_path_send(&self, peer: PeerId) -> Option<AddPathSend> {
        match self.peer_state(peer)?.out.as_ref()? {
            AdjOut::Paths(o) => Some(o.cfg),
            AdjOut::Best(_) => None,
        }
    }

    /// [`Self::export_one`] for an ADD-PATH peer.
    pub(crate) fn export_paths<E: ExportPolicy + ?Sized>(
        &mut self,
        to: PeerId,
        prefix: Prefix,
        policy: &mut E,
    ) {
        let Some(Some(st)) = self.peers.get_mut(to.0 as usize) else {
            return;
        };
        let Some(AdjOut::Paths(out)) = st.out.as_mut() else {
            return;
        };
        let limit = out.cfg.limit(&prefix);
        let mut rank = std::mem::take(&mut out.rank);
        let mut cands = std::mem::take(&mut out.cands);
        let mut want = std::mem::take(&mut out.want);
        rank.clear();
        cands.clear();
        want.clear();
        // The candidates, most preferred first when only some may go.
        let entry = match prefix {
            Prefix::V4(p) => self.v4.get(&p),
            Prefix::V6(p) => self.v6.get(&p),
        };
        if let Some(e) = entry {
            if limit >= e.paths().len() {
                cands.extend(e.paths().iter().copied());
            } else {
                let ctx = SelectCtx {
                    interner: &self.interner,
                    peers: &self.peers,
                    cfg: &self.cfg,
                    nht: self.nht.as_ref(),
                };
                table::rank(e, limit, &ctx, &mut rank);
                cands.extend(rank.iter().filter_map(|&i| e.paths().get(i).copied()));
            }
        }
        let to_ibgp = self.peer_state(to).is_some_and(|p| !p.cfg.ebgp);
        for p in &cands {
            // Not echoed back to the peer it came from.
            if p.peer == to {
                continue;
            }
            let Some(from) = self.peer_state(p.peer) else {
                continue;
            };
            // RFC 4271 §9.2 per path, unless the policy does reflection.
            if !from.cfg.ebgp && to_ibgp && !policy.propagation_rules() {
                continue;
            }
            let Some(set) = self.interner.get(p.attrs) else {
                continue;
            };
            let attrs = match policy.export(to, &prefix, p.peer, set) {
                ExportVerdict::Reject => continue,
                ExportVerdict::Accept => {
                    self.interner.acquire(p.attrs);
                    p.attrs
                }
                ExportVerdict::Replace(b) => self.interner.intern(&b),
            };
            want.push(Want {
                src: p.peer,
                src_id: p.path_id,
                attrs,
            });
        }
        let mut released = Vec::new();
        if let Some(Some(st)) = self.peers.get_mut(to.0 as usize) {
            if let Some(AdjOut::Paths(out)) = st.out.as_mut() {
                out.want = want;
                out.update(PKey::from(prefix), &mut released);
                out.rank = rank;
                out.cands = cands;
            }
        }
        for h in released {
            self.interner.release(h);
        }
    }
}
