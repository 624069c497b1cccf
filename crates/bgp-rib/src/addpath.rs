//! ADD-PATH send (RFC 7911): an Adj-RIB-Out that advertises several paths
//! per prefix, each under its own path identifier.
//!
//! * Which paths: every path of the Loc-RIB ([`PathSelection::All`], BIRD's
//!   `add paths tx`, FRR's `addpath-tx-all-paths`) or the N most preferred
//!   ([`PathSelection::Best`], FRR's `addpath-tx-best-selected N`: the
//!   decision process, then again without the paths already taken). Each
//!   chosen path then goes through the propagation rules and export policy
//!   on its own, exactly as the single best path does for other peers.
//! * Path identifiers are allocated per (peer, prefix): a path, known by
//!   its source peer and the identifier it was received with, keeps its
//!   identifier for as long as it is advertised, whatever its attributes
//!   do. A new path takes the smallest identifier that is neither
//!   advertised nor waiting to be withdrawn, so an identifier is reused
//!   only after its withdrawal has been handed to the encoder (RFC 7911
//!   §2: the identifier names the path on this session).
//! * Storage per prefix is an exact-size boxed slice of 16-byte records
//!   (source peer, source identifier, our identifier, handle). Peers without
//!   ADD-PATH do not use this module and keep one 4-byte handle per prefix.
//! * A family of the peer on which ADD-PATH was not negotiated gets the
//!   best path only, under identifier 1, which the encoder then omits.

use base::{Afi, Prefix};

use crate::export::{AdjOut, ExportBatch};
use crate::hash::FastMap;
use crate::intern::AttrHandle;
use crate::key::PKey;
use crate::policy::{ExportPolicy, ExportVerdict};
use crate::shard::{RibError, RibShard};
use crate::table::{self, PathEntry, SelectCtx};
use crate::PeerId;

/// Which paths an ADD-PATH peer is sent per prefix.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum PathSelection {
    /// Every path that passes the propagation rules and export policy.
    #[default]
    All,
    /// The N (at least 1) most preferred paths; of these, those that pass
    /// the propagation rules and export policy.
    Best(u16),
}

impl PathSelection {
    fn limit(self) -> usize {
        match self {
            PathSelection::All => usize::MAX,
            PathSelection::Best(n) => usize::from(n.max(1)),
        }
    }
}

/// ADD-PATH send towards one peer: the families on which it was negotiated
/// (we advertised send, the peer receive, RFC 7911 §4) and the selection.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct AddPathSend {
    /// ADD-PATH send negotiated for IPv4 unicast.
    pub ipv4_unicast: bool,
    /// ADD-PATH send negotiated for IPv6 unicast.
    pub ipv6_unicast: bool,
    /// Which paths to send where it is negotiated.
    pub select: PathSelection,
}

impl AddPathSend {
    /// How many paths of `prefix` may be advertised.
    fn limit(&self, prefix: &Prefix) -> usize {
        let on = match prefix.afi() {
            Afi::Ipv4 => self.ipv4_unicast,
            Afi::Ipv6 => self.ipv6_unicast,
            _ => false,
        };
        if on {
            self.select.limit()
        } else {
            1
        }
    }
}

/// One advertised path.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct SentPath {
    /// Where the Loc-RIB path came from, with the identifier it was
    /// received under (0 without ADD-PATH receive): the path's identity.
    src: PeerId,
    src_id: u32,
    /// The identifier we advertise it under.
    id: u32,
    attrs: AttrHandle,
}

/// A wanted path: its identity and the attribute set to send (one
/// reference held).
#[derive(Copy, Clone, Debug)]
struct Want {
    src: PeerId,
    src_id: u32,
    attrs: AttrHandle,
}

/// The Adj-RIB-Out of one ADD-PATH peer. `sent` holds a reference on each
/// handle; `pending` holds the new state of each changed (prefix, path
/// identifier), `None` for a withdrawal, and no references (an announced
/// handle is also in `sent`).
#[derive(Debug, Default)]
pub(crate) struct PathsOut {
    cfg: AddPathSend,
    sent: FastMap<PKey, Box<[SentPath]>>,
    pending: FastMap<(PKey, u32), Option<AttrHandle>>,
    paths: usize,
    /// Scratch, kept to avoid allocating per prefix.
    rank: Vec<usize>,
    cands: Vec<PathEntry>,
    want: Vec<Want>,
}

impl PathsOut {
    pub(crate) fn new(cfg: AddPathSend) -> PathsOut {
        PathsOut {
            cfg,
            ..PathsOut::default()
        }
    }
    pub(crate) fn sent_len(&self) -> usize {
        self.paths
    }
    pub(crate) fn take_handles(&mut self) -> Vec<AttrHandle> {
        self.pending.clear();
        self.paths = 0;
        let sent = std::mem::take(&mut self.sent);
        sent.into_values()
            .flat_map(|v| v.into_vec().into_iter().map(|p| p.attrs))
            .collect()
    }
    pub(crate) fn resend_all(&mut self) {
        for (k, v) in &self.sent {
            for p in v.iter() {
                self.pending.insert((*k, p.id), Some(p.attrs));
            }
        }
    }
    /// (identifier, handle) of each path advertised for `prefix`.
    pub(crate) fn paths_of(&self, prefix: &Prefix) -> impl Iterator<Item = (u32, AttrHandle)> + '_ {
        self.sent
            .get(&PKey::from(*prefix))
            .into_iter()
            .flat_map(|v| v.iter().map(|p| (p.id, p.attrs)))
    }

    /// Moves the queue into `batch`, packed by attribute set.
    pub(crate) fn drain(&mut self, batch: &mut ExportBatch) {
        let mut groups: FastMap<AttrHandle, usize> = FastMap::default();
        for ((k, id), h) in self.pending.drain() {
            let Some(p) = k.prefix() else {
                continue;
            };
            match h {
                None => batch.withdraw_paths.push((p, id)),
                Some(h) => {
                    let n = batch.announce_paths.len();
                    let i = *groups.entry(h).or_insert(n);
                    match batch.announce_paths.get_mut(i) {
                        Some((_, v)) => v.push((p, id)),
                        None => batch.announce_paths.push((h, vec![(p, id)])),
                    }
                }
            }
        }
        batch.announce_paths.sort_unstable_by_key(|(h, _)| *h);
        for (_, v) in &mut batch.announce_paths {
            v.sort_unstable();
        }
        batch.withdraw_paths.sort_unstable();
    }

    /// Replaces what is advertised for `key` by `want` (whose references it
    /// takes over), queueing the differences. Returns the references no
    /// longer held.
    fn update(&mut self, key: PKey, released: &mut Vec<AttrHandle>) {
        // Most calls change nothing: no allocation then.
        let same = |old: &[SentPath], want: &[Want]| {
            old.len() == want.len()
                && want.iter().all(|w| {
                    old.iter()
                        .any(|o| o.src == w.src && o.src_id == w.src_id && o.attrs == w.attrs)
                })
        };
        let old: &[SentPath] = self.sent.get(&key).map_or(&[], |v| v);
        if same(old, &self.want) {
            released.extend(self.want.iter().map(|w| w.attrs));
            return;
        }
        let old = self.sent.remove(&key).unwrap_or_default();
        let mut next: Vec<SentPath> = Vec::with_capacity(self.want.len());
        // Kept paths keep their identifier; changed attributes re-announce.
        for w in &self.want {
            let Some(o) = old.iter().find(|o| o.src == w.src && o.src_id == w.src_id) else {
                continue;
            };
            if o.attrs == w.attrs {
                released.push(w.attrs);
            } else {
                released.push(o.attrs);
                self.pending.insert((key, o.id), Some(w.attrs));
            }
            next.push(SentPath {
                attrs: w.attrs,
                ..*o
            });
        }
        // Vanished paths are withdrawn by identifier.
        for o in old.iter() {
            if !next.iter().any(|n| n.id == o.id) {
                released.push(o.attrs);
                self.pending.insert((key, o.id), None);
            }
        }
        // New paths: the smallest identifier not advertised and not
        // waiting to be withdrawn (RFC 7911 §2: never two paths under one
        // identifier). Identifiers start at 1.
        let mut id = 0u32;
        for w in &self.want {
            if next.iter().any(|n| n.src == w.src && n.src_id == w.src_id) {
                continue;
            }
            loop {
                id = id.saturating_add(1);
                let used = next.iter().any(|n| n.id == id)
                    || matches!(self.pending.get(&(key, id)), Some(None));
                if !used || id == u32::MAX {
                    break;
                }
            }
            self.pending.insert((key, id), Some(w.attrs));
            next.push(SentPath {
                src: w.src,
                src_id: w.src_id,
                id,
                attrs: w.attrs,
            });
        }
        self.paths = (self.paths + next.len()).saturating_sub(old.len());
        if !next.is_empty() {
            self.sent.insert(key, next.into_boxed_slice());
        }
    }
}

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
        let st = self
            .peers
            .get_mut(peer.0 as usize)
            .and_then(Option::as_mut)
            .ok_or(RibError::UnknownPeer(peer))?;
        let Some(out) = st.out.as_mut() else {
            return Ok(());
        };
        let mut released = Vec::new();
        match (out, cfg) {
            (AdjOut::Paths(o), Some(c)) => o.cfg = c,
            (AdjOut::Best(_), None) => {}
            (out, cfg) => {
                let was_paths = out.is_paths();
                released = out.take_handles();
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
