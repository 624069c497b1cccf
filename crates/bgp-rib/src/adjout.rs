//! Adj-RIB-Out storage: per peer, what was last sent (or queued) for each
//! prefix, and the queue of changes not yet drained. A peer without
//! ADD-PATH send keeps one handle per prefix ([`BestOut`]); a peer with it
//! keeps a set of paths per prefix, each under its own path identifier
//! ([`PathsOut`], allocation rules in [`crate::addpath`]). The operations
//! on them (export, drain, resend) are `RibShard` methods in `export.rs`
//! and `addpath.rs`.

use std::collections::hash_map::Entry;
use std::collections::VecDeque;

use base::Prefix;

use crate::hash::{table_bytes, FastMap, FastSet};
use crate::intern::AttrHandle;
use crate::key::{PHandle, PKey, P4};
use crate::split::SplitMap;
use crate::types::{AddPathSend, ExportBatch, PathEntry};
use crate::PeerId;

/// One peer's Adj-RIB-Out in single-path mode. `sent` holds a reference on
/// each handle; `pending` is the set of changed prefixes not yet drained.
/// A pending prefix's new state is always `sent`'s (absent: withdraw), so
/// `pending` keeps only the key and no references: 6 bytes a slot for an
/// IPv4 prefix (the packed [`P4`]), where a map to the new state took 29 (issue 17: the
/// pending set of every exporting peer fills up to the table while its
/// socket is slower than the RIB, and was the largest per-peer term).
///
/// A member of an update group (`member`, see [`crate::group`]) keeps
/// what it was sent as its bit in the group's table; `sent` holds only
/// its overrides (usually none).
#[derive(Debug, Default)]
pub(crate) struct BestOut {
    pub(crate) sent: Sent,
    pub(crate) pending: Pending,
    pub(crate) member: Option<Member>,
    /// Not in a group, but the only peer of this group key so far: its
    /// private table is what a group of it would hold, and becomes one
    /// when a second peer of the key comes (see `group.rs`).
    pub(crate) solo: Option<GroupKey>,
}

impl BestOut {
    /// Entries of its own (overrides of its group's table, or the whole
    /// table of a peer in no group).
    pub(crate) fn has_private(&self) -> bool {
        !self.sent.is_empty()
    }
    pub(crate) fn sent_len(&self) -> usize {
        self.sent.len() + self.member.map_or(0, |m| m.advertised)
    }
}

/// The changed prefixes of one [`BestOut`], per family, drained in the
/// order they were first queued (issue 17, scenario (c10)).
///
/// Why an order of its own: a drain step takes at most
/// [`crate::RibShard::drain_updates_max`]'s `max` prefixes and packs those
/// with equal attribute sets into one UPDATE. Taken in hash order from a
/// large backlog (a socket slower than the RIB), a step's prefixes were a
/// random sample of the backlog, so almost none shared a set: (c10) with
/// `--export all` sent 1.2 prefixes per UPDATE against the generators'
/// 1.67 and BIRD's 2.6, and built an attribute block per prefix. An
/// export round queues its changes in the order they arrived
/// (`arrival_order` in bgp-core), so in queue order a step holds the
/// prefixes of the same received UPDATEs. The queue also makes the drain fair (oldest
/// first) and O(taken): taking from the front of a hash set rescanned the
/// emptied front of its table on every step.
///
/// Cost: the queue holds each pending prefix a second time (5 bytes for
/// IPv4), only while it is pending.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    v4: FastSet<P4>,
    v6: FastSet<PKey>,
    /// `v4`'s prefixes in the order they entered it; each exactly once
    /// (a prefix leaves the set only through [`Pending::take`]).
    order4: VecDeque<P4>,
    order6: VecDeque<PKey>,
}

/// Below this many slots an emptied pending set keeps its table.
const PENDING_KEEP: usize = 4096;

impl Pending {
    pub(crate) fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }
    fn heap_bytes(&self) -> usize {
        table_bytes::<P4>(self.v4.capacity())
            + table_bytes::<PKey>(self.v6.capacity())
            + self.order4.capacity() * std::mem::size_of::<P4>()
            + self.order6.capacity() * std::mem::size_of::<PKey>()
    }
    pub(crate) fn contains(&self, p: &Prefix) -> bool {
        match p.masked() {
            Prefix::V4(k) => self.v4.contains(&P4::from(k)),
            p @ Prefix::V6(_) => self.v6.contains(&PKey::from(p)),
        }
    }
    pub(crate) fn insert(&mut self, p: Prefix) {
        match p.masked() {
            Prefix::V4(k) => {
                let k = P4::from(k);
                if self.v4.insert(k) {
                    self.order4.push_back(k);
                }
            }
            p @ Prefix::V6(_) => {
                let k = PKey::from(p);
                if self.v6.insert(k) {
                    self.order6.push_back(k);
                }
            }
        };
    }
    /// Removes up to `max` prefixes, oldest first, and hands each to `f`.
    /// Once empty, a large table is given back (a full-table burst does
    /// not stay allocated per peer).
    pub(crate) fn take(&mut self, max: usize, mut f: impl FnMut(Prefix)) {
        let mut left = max;
        while left > 0 {
            let Some(k) = self.order4.pop_front() else {
                break;
            };
            // Always true: the queue and the set hold the same prefixes.
            if self.v4.remove(&k) {
                if let Some(p) = k.prefix4() {
                    f(Prefix::V4(p));
                }
                left -= 1;
            }
        }
        while left > 0 {
            let Some(k) = self.order6.pop_front() else {
                break;
            };
            if self.v6.remove(&k) {
                if let Some(p) = k.prefix() {
                    f(p);
                }
                left -= 1;
            }
        }
        if self.v4.is_empty() && self.v4.capacity() > PENDING_KEEP {
            self.v4 = FastSet::default();
            self.order4 = VecDeque::new();
        }
        if self.v6.is_empty() && self.v6.capacity() > PENDING_KEEP {
            self.v6 = FastSet::default();
            self.order6 = VecDeque::new();
        }
    }
}

/// What was sent, per family: IPv4 keyed by its packed 5-byte prefix with
/// a packed handle (a 9-byte slot of alignment 1, where `(Prefix4,
/// AttrHandle)` took 12 and the two-family key 24), since a full IPv4
/// table is where an Adj-RIB-Out's memory goes.
///
/// It counts its entries itself (`n`), so that [`Sent::is_empty`] is one
/// load: an update group member's `sent` holds only its overrides, almost
/// always none, and the group's export skips its lookups then (issue 17,
/// scenario (a): two lookups per prefix and member in empty tables).
#[derive(Debug, Default)]
pub(crate) struct Sent {
    v4: SplitMap<P4, PHandle>,
    v6: SplitMap<PKey, AttrHandle>,
    /// Entries in `v4` and `v6`; every change goes through [`Sent::set`].
    n: usize,
}

impl Sent {
    fn len(&self) -> usize {
        debug_assert_eq!(self.n, self.v4.len() + self.v6.len());
        self.n
    }
    /// No entry at all (one load; see the type's docs).
    pub(crate) fn is_empty(&self) -> bool {
        self.n == 0
    }
    fn heap_bytes(&self) -> usize {
        self.v4.heap_bytes() + self.v6.heap_bytes()
    }
    pub(crate) fn get(&self, p: &Prefix) -> Option<AttrHandle> {
        if self.is_empty() {
            return None;
        }
        match p.masked() {
            Prefix::V4(k) => self.v4.get(&P4::from(k)).map(|&h| h.into()),
            p @ Prefix::V6(_) => self.v6.get(&PKey::from(p)).copied(),
        }
    }
    /// Records `want` for `p`; returns the reference to drop and the
    /// change to queue (`None`: nothing changed).
    pub(crate) fn set(
        &mut self,
        p: Prefix,
        want: Option<AttrHandle>,
    ) -> (Option<AttrHandle>, Option<Option<AttrHandle>>) {
        let r = match p.masked() {
            Prefix::V4(k) => set_in(&mut self.v4, P4::from(k), want),
            p @ Prefix::V6(_) => set_in(&mut self.v6, PKey::from(p), want),
        };
        // An entry was removed (it held a reference, none is wanted) or
        // added (none held, one wanted, a change queued).
        match (r, want) {
            ((Some(_), _), None) => self.n = self.n.saturating_sub(1),
            ((None, Some(_)), Some(_)) => self.n += 1,
            _ => {}
        }
        r
    }
    pub(crate) fn iter(&self) -> impl Iterator<Item = (PKey, AttrHandle)> + '_ {
        let v4 = (self.v4.iter())
            .filter_map(|(k, h)| Some((PKey::from(Prefix::V4(k.prefix4()?)), (*h).into())));
        v4.chain(self.v6.iter().map(|(k, h)| (*k, *h)))
    }
    /// Every (prefix, handle), the references with them.
    pub(crate) fn into_entries(self) -> impl Iterator<Item = (Prefix, AttrHandle)> {
        let v4 =
            (self.v4.into_iter()).filter_map(|(k, h)| Some((Prefix::V4(k.prefix4()?), h.into())));
        let v6 = (self.v6.into_iter()).filter_map(|(k, h)| Some((k.prefix()?, h)));
        v4.chain(v6)
    }
    fn into_values(self) -> impl Iterator<Item = AttrHandle> {
        (self.v4.into_values().map(AttrHandle::from)).chain(self.v6.into_values())
    }
}

fn set_in<K: std::hash::Hash + Eq, V: Copy + From<AttrHandle>>(
    m: &mut SplitMap<K, V>,
    key: K,
    want: Option<AttrHandle>,
) -> (Option<AttrHandle>, Option<Option<AttrHandle>>)
where
    AttrHandle: From<V>,
{
    match (m.entry(key), want) {
        (Entry::Occupied(o), Some(h)) if AttrHandle::from(*o.get()) == h => (Some(h), None),
        (Entry::Occupied(mut o), Some(h)) => (Some(o.insert(h.into()).into()), Some(Some(h))),
        (Entry::Occupied(o), None) => (Some(o.remove().into()), Some(None)),
        (Entry::Vacant(v), Some(h)) => {
            v.insert(h.into());
            (None, Some(Some(h)))
        }
        (Entry::Vacant(_), None) => (None, None),
    }
}

/// One peer's Adj-RIB-Out: the best path only, or several paths per
/// prefix with path identifiers (RFC 7911).
#[derive(Debug)]
pub(crate) enum AdjOut {
    Best(Box<BestOut>),
    Paths(Box<PathsOut>),
}

impl Default for AdjOut {
    fn default() -> AdjOut {
        AdjOut::Best(Box::default())
    }
}

impl AdjOut {
    /// Prefixes (paths, with ADD-PATH) currently advertised.
    pub(crate) fn sent_len(&self) -> usize {
        match self {
            AdjOut::Best(o) => o.sent_len(),
            AdjOut::Paths(o) => o.sent_len(),
        }
    }
    /// Nothing advertised (withdrawals may still be queued).
    pub(crate) fn is_empty(&self) -> bool {
        self.sent_len() == 0
    }
    /// Empties it (keeping the mode) and returns the references it held.
    /// An update group member must leave its group first
    /// ([`crate::RibShard::clear_adj_out`] does both).
    pub(crate) fn take_handles(&mut self) -> Vec<AttrHandle> {
        match self {
            AdjOut::Best(o) => std::mem::take(o).sent.into_values().collect(),
            AdjOut::Paths(o) => o.take_handles(),
        }
    }
    pub(crate) fn is_paths(&self) -> bool {
        matches!(self, AdjOut::Paths(_))
    }
    /// Estimated heap bytes of (what was sent, the pending changes).
    pub(crate) fn heap_bytes(&self) -> (usize, usize) {
        match self {
            AdjOut::Best(o) => (o.sent.heap_bytes(), o.pending.heap_bytes()),
            AdjOut::Paths(o) => (
                table_bytes::<(PKey, Box<[SentPath]>)>(o.sent.capacity())
                    + o.paths * std::mem::size_of::<SentPath>(),
                table_bytes::<((PKey, u32), Option<AttrHandle>)>(o.pending.capacity()),
            ),
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
pub(crate) struct Want {
    pub(crate) src: PeerId,
    pub(crate) src_id: u32,
    pub(crate) attrs: AttrHandle,
}

/// The Adj-RIB-Out of one ADD-PATH peer. `sent` holds a reference on each
/// handle; `pending` holds the new state of each changed (prefix, path
/// identifier), `None` for a withdrawal, and no references (an announced
/// handle is also in `sent`).
#[derive(Debug, Default)]
pub(crate) struct PathsOut {
    pub(crate) cfg: AddPathSend,
    sent: FastMap<PKey, Box<[SentPath]>>,
    pending: FastMap<(PKey, u32), Option<AttrHandle>>,
    paths: usize,
    /// Scratch, kept to avoid allocating per prefix.
    pub(crate) rank: Vec<usize>,
    pub(crate) cands: Vec<PathEntry>,
    pub(crate) want: Vec<Want>,
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
    pub(crate) fn pending_len(&self) -> usize {
        self.pending.len()
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
    pub(crate) fn update(&mut self, key: PKey, released: &mut Vec<AttrHandle>) {
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

// Update groups (operations in `group.rs`, docs/adr/0005).

/// Members per group: one bit each in an entry's mask.
pub(crate) const MEMBERS: usize = 32;

/// One shared entry: the set exported and who it was exported to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Slot {
    pub(crate) h: AttrHandle,
    pub(crate) mask: u32,
}

/// A [`Slot`] stored with alignment 1 and its member mask in `N` bytes
/// (the low `8 * N` bits; a group's table is widened before a member gets
/// a higher bit, see [`Group::make_room`]). With the packed IPv4 key a
/// group table's slot is 10 bytes for up to 8 members, 11 for 16 and 13
/// for 32, where `(Prefix4, Slot)` took 16 (issue 17, scenario (a): a
/// group of two over a full IPv4 table).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
struct PSlot<const N: usize> {
    h: PHandle,
    mask: [u8; N],
}

impl<const N: usize> From<Slot> for PSlot<N> {
    fn from(s: Slot) -> PSlot<N> {
        let mut mask = [0u8; N];
        for (d, b) in mask.iter_mut().zip(s.mask.to_le_bytes()) {
            *d = b;
        }
        PSlot {
            h: s.h.into(),
            mask,
        }
    }
}

impl<const N: usize> From<PSlot<N>> for Slot {
    fn from(s: PSlot<N>) -> Slot {
        let mut b = [0u8; 4];
        for (d, m) in b.iter_mut().zip(s.mask) {
            *d = m;
        }
        Slot {
            h: s.h.into(),
            mask: u32::from_le_bytes(b),
        }
    }
}

/// A group's IPv4 table, its slots as wide as its highest member bit
/// needs.
#[derive(Debug)]
enum V4Slots {
    M8(SplitMap<P4, PSlot<1>>),
    M16(SplitMap<P4, PSlot<2>>),
    M32(SplitMap<P4, PSlot<4>>),
}

/// Runs `$e` with `$m` bound to the table of whichever width.
macro_rules! each_width {
    ($v:expr, $m:ident => $e:expr) => {
        match $v {
            V4Slots::M8($m) => $e,
            V4Slots::M16($m) => $e,
            V4Slots::M32($m) => $e,
        }
    };
}

/// Copies every entry of `old` into a table of another width.
fn rewidth<A: Copy, B: From<Slot>>(old: SplitMap<P4, A>) -> SplitMap<P4, B>
where
    Slot: From<A>,
{
    let mut m = SplitMap::default();
    for (k, v) in old.into_iter() {
        m.entry(k).or_insert(B::from(Slot::from(v)));
    }
    m
}

/// [`Group::clear_bit`] on one table.
fn clear_bit_in<K, V: Copy + From<Slot>>(
    m: &mut SplitMap<K, V>,
    b: u32,
    prefix: impl Fn(&K) -> Option<Prefix>,
    had: &mut dyn FnMut(Prefix, AttrHandle),
    freed: &mut Vec<AttrHandle>,
) where
    Slot: From<V>,
{
    m.retain(|k, v| {
        let mut s = Slot::from(*v);
        if s.mask & b != 0 {
            s.mask &= !b;
            if let Some(p) = prefix(k) {
                had(p, s.h);
            }
            *v = V::from(s);
        }
        if s.mask == 0 {
            freed.push(s.h);
        }
        s.mask != 0
    });
}

/// Where a peer sits in a group.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Member {
    pub(crate) group: u16,
    pub(crate) bit: u8,
    /// Entries with this member's bit set (its advertised prefixes).
    pub(crate) advertised: usize,
}

/// A group's key: the policy's [`ExportPolicy::export_group`] key and
/// whether the members are eBGP peers (the RIB's own iBGP rule and the
/// eBGP wire comparison read it).
pub(crate) type GroupKey = (u64, bool);

/// One update group of a shard.
#[derive(Debug)]
pub(crate) struct Group {
    pub(crate) key: GroupKey,
    pub(crate) members: [Option<PeerId>; MEMBERS],
    v4: V4Slots,
    v6: SplitMap<PKey, Slot>,
}

impl Group {
    pub(crate) fn new(key: GroupKey) -> Group {
        Group {
            key,
            members: [None; MEMBERS],
            v4: V4Slots::M8(SplitMap::default()),
            v6: SplitMap::default(),
        }
    }
    pub(crate) fn get(&self, p: &Prefix) -> Option<Slot> {
        match p.masked() {
            Prefix::V4(k) => each_width!(&self.v4, m => m.get(&P4::from(k)).map(|&s| s.into())),
            p @ Prefix::V6(_) => self.v6.get(&PKey::from(p)).copied(),
        }
    }
    /// Widens the IPv4 table's slots (a copy of the table) if member
    /// `bit` does not fit them; call before giving a member that bit.
    pub(crate) fn make_room(&mut self, bit: usize) {
        let old = std::mem::replace(&mut self.v4, V4Slots::M8(SplitMap::default()));
        self.v4 = match old {
            V4Slots::M8(m) if bit >= 16 => V4Slots::M32(rewidth(m)),
            V4Slots::M8(m) if bit >= 8 => V4Slots::M16(rewidth(m)),
            V4Slots::M16(m) if bit >= 16 => V4Slots::M32(rewidth(m)),
            other => other,
        };
    }
    /// What member `bit` was sent for `p`.
    pub(crate) fn sent(&self, bit: u8, p: &Prefix) -> Option<AttrHandle> {
        self.get(p)
            .filter(|s| s.mask & (1u32 << bit) != 0)
            .map(|s| s.h)
    }
    /// Loads `p`'s entry into the cache and drops it: a lookup ahead of
    /// [`Group::update`], so that the misses of a few prefixes overlap
    /// (see `export_changes`).
    pub(crate) fn touch(&self, p: &Prefix) {
        std::hint::black_box(self.get(p));
    }
    /// Replaces `p`'s entry by what `f` makes of it (`None`: none, or
    /// remove it) with one probe of the table, where a [`Group::get`] and
    /// a [`Group::set`] took two; returns the previous entry.
    pub(crate) fn update(
        &mut self,
        p: Prefix,
        f: impl FnOnce(Option<Slot>) -> Option<Slot>,
    ) -> Option<Slot> {
        fn put<K: std::hash::Hash + Eq, V: Copy + From<Slot>>(
            m: &mut SplitMap<K, V>,
            k: K,
            f: impl FnOnce(Option<Slot>) -> Option<Slot>,
        ) -> Option<Slot>
        where
            Slot: From<V>,
        {
            match m.entry(k) {
                Entry::Occupied(mut o) => {
                    let old = Slot::from(*o.get());
                    match f(Some(old)) {
                        Some(s) => *o.get_mut() = s.into(),
                        None => {
                            o.remove();
                        }
                    }
                    Some(old)
                }
                Entry::Vacant(v) => {
                    if let Some(s) = f(None) {
                        v.insert(s.into());
                    }
                    None
                }
            }
        }
        match p.masked() {
            Prefix::V4(k) => each_width!(&mut self.v4, m => put(m, P4::from(k), f)),
            p @ Prefix::V6(_) => put(&mut self.v6, PKey::from(p), f),
        }
    }
    /// Sets `p`'s entry (`None`: removes it); returns the previous one.
    pub(crate) fn set(&mut self, p: Prefix, slot: Option<Slot>) -> Option<Slot> {
        self.update(p, |_| slot)
    }
    pub(crate) fn is_empty(&self) -> bool {
        each_width!(&self.v4, m => m.len()) + self.v6.len() == 0
    }
    /// Prefixes whose entry has member `bit` set.
    pub(crate) fn prefixes_of(&self, bit: u8) -> impl Iterator<Item = Prefix> + '_ {
        let b = 1u32 << bit;
        let v4: Box<dyn Iterator<Item = Prefix> + '_> = each_width!(&self.v4, m => Box::new(
            m.iter()
                .filter(move |(_, s)| Slot::from(**s).mask & b != 0)
                .filter_map(|(k, _)| Some(Prefix::V4(k.prefix4()?))),
        ));
        let v6 = (self.v6.iter())
            .filter(move |(_, s)| s.mask & b != 0)
            .filter_map(|(k, _)| k.prefix());
        v4.chain(v6)
    }
    pub(crate) fn heap_bytes(&self) -> usize {
        each_width!(&self.v4, m => m.heap_bytes()) + self.v6.heap_bytes()
    }
    /// Clears member `bit` everywhere, handing each (prefix, set) it had
    /// to `had` and each set whose entry is left without members (and so
    /// removed) to `freed`.
    pub(crate) fn clear_bit(
        &mut self,
        bit: u8,
        had: &mut dyn FnMut(Prefix, AttrHandle),
        freed: &mut Vec<AttrHandle>,
    ) {
        let b = 1u32 << bit;
        let p4 = |k: &P4| Some(Prefix::V4(k.prefix4()?));
        each_width!(&mut self.v4, m => clear_bit_in(m, b, p4, had, freed));
        clear_bit_in(&mut self.v6, b, |k: &PKey| k.prefix(), had, freed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base::Prefix4;

    fn p(i: u32) -> Prefix {
        Prefix::V4(Prefix4::new(0x0a00_0000 | i << 8, 24).unwrap())
    }

    /// A group's IPv4 slots widen as members with higher bits join, keep
    /// every entry across widths, and clear bits of every width.
    #[test]
    fn group_slots_widen_and_keep_entries() {
        let mut g = Group::new((1, true));
        let v6: Prefix = "2001:db8::/48".parse().unwrap();
        for i in 0..1000 {
            let mask = 1 << (i % 8) | 1;
            g.set(
                p(i),
                Some(Slot {
                    h: AttrHandle(i),
                    mask,
                }),
            );
        }
        g.set(
            v6,
            Some(Slot {
                h: AttrHandle(7),
                mask: 3,
            }),
        );
        assert!(matches!(g.v4, V4Slots::M8(_)));
        let narrow = g.heap_bytes();
        g.make_room(3);
        assert!(matches!(g.v4, V4Slots::M8(_)));
        g.make_room(9);
        assert!(matches!(g.v4, V4Slots::M16(_)));
        g.set(
            p(1),
            Some(Slot {
                h: AttrHandle(1),
                mask: 1 << 15 | 1,
            }),
        );
        g.make_room(31);
        assert!(matches!(g.v4, V4Slots::M32(_)));
        assert!(g.heap_bytes() > narrow);
        g.set(
            p(2),
            Some(Slot {
                h: AttrHandle(2),
                mask: 1 << 31,
            }),
        );
        assert_eq!(
            g.get(&p(1)),
            Some(Slot {
                h: AttrHandle(1),
                mask: 1 << 15 | 1
            })
        );
        assert_eq!(g.sent(31, &p(2)), Some(AttrHandle(2)));
        assert_eq!(g.sent(0, &p(2)), None);
        for i in 3..1000 {
            let mask = 1 << (i % 8) | 1;
            assert_eq!(
                g.get(&p(i)),
                Some(Slot {
                    h: AttrHandle(i),
                    mask
                }),
                "{i}"
            );
        }
        assert_eq!(g.prefixes_of(15).collect::<Vec<_>>(), vec![p(1)]);
        // Clearing bit 0 drops the entries that had only it.
        let (mut had, mut freed) = (0, Vec::new());
        g.clear_bit(0, &mut |_, _| had += 1, &mut freed);
        assert_eq!(had, 1000 - 1 + 1, "every v4 entry but p(2), and v6");
        assert!(freed.contains(&AttrHandle(0)) && freed.contains(&AttrHandle(8)));
        assert!(!freed.contains(&AttrHandle(1)) && !freed.contains(&AttrHandle(7)));
        assert_eq!(g.get(&p(8)), None);
        assert_eq!(
            g.get(&p(9)),
            Some(Slot {
                h: AttrHandle(9),
                mask: 2
            })
        );
        assert_eq!(
            g.get(&v6),
            Some(Slot {
                h: AttrHandle(7),
                mask: 2
            })
        );
    }
}
