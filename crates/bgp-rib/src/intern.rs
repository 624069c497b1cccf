//! Hash-consing of attribute sets.
//!
//! Every distinct [`AttrSet`] lives once in an arena slot with a reference
//! count; an [`AttrHandle`] is the slot index (4 bytes). A digest index maps
//! the set's hash to the first slot with that hash; slots with equal digests
//! are chained through `next`. Freed slots are chained (also through
//! `next`) into a free list and reused, so the arena does not grow under
//! churn. One interner per shard: shards share nothing.
//!
//! The arena is kept in chunks of [`CHUNK`] slots ([`Chunks`]): a single
//! `Vec` of a full table's sets (56 bytes a slot) doubles as it grows,
//! so at its peak the old and the new array are both alive and afterwards
//! up to half of it is spare capacity; in scenario (c30) of issue 17 the
//! two shards' arrays were 2 x 14.7 MB at the peak (heaptrack). A chunk,
//! once full, is never moved; only the last one has spare room.
//!
//! # Selection keys
//!
//! The interner also keeps the distinct selection keys of its live sets
//! ([`SelKey`]: steps 0-3 of the decision, 8 bytes) in a small table
//! (`SelKeys`), and gives each set the index of its key (14 bits, kept in
//! the set's padding). A stored path carries that index in bits its entry
//! already had ([`PathEntry`](crate::PathEntry)), so the RIB ranks a
//! prefix's paths from a table of a few hundred entries that stays in
//! cache, without loading their sets and without 8 bytes per path. Keys
//! are reference counted by the sets that use them and their indices
//! reused; when all 16,383 are in use (a table of that many distinct
//! LOCAL_PREF / AS_PATH length / ORIGIN / LLGR_STALE combinations), a
//! new key gets none and the paths with it are ranked from their sets.

use crate::attrs::{AttrSet, AttrsBuilder, Summary};
use crate::bestpath::SelKey;
use crate::hash::{hash_one, FastMap};

/// The key index of a path whose set has no entry in the key table (the
/// table is full, or the handle is dead): its rank is read from the set.
pub(crate) const SEL_NONE: u16 = 0;
/// Key indices are 14 bits (`types.rs` packs them above its two flags):
/// 1..SEL_LIMIT.
pub(crate) const SEL_LIMIT: usize = 1 << 14;

const NIL: u32 = u32::MAX;

/// Slots per arena chunk (a power of two: a `Vec` growing by doubling
/// from empty reaches it exactly; 4096 x 56 bytes = 224 KiB).
const CHUNK: usize = 4096;

/// An append-only list kept in chunks of [`CHUNK`] elements: index `i`
/// is element `i % CHUNK` of chunk `i / CHUNK`. Growing copies at most the
/// last chunk.
#[derive(Debug)]
struct Chunks<T> {
    chunks: Vec<Vec<T>>,
    len: usize,
}

impl<T> Default for Chunks<T> {
    fn default() -> Self {
        Chunks {
            chunks: Vec::new(),
            len: 0,
        }
    }
}

impl<T> Chunks<T> {
    fn get(&self, i: usize) -> Option<&T> {
        self.chunks.get(i / CHUNK)?.get(i % CHUNK)
    }
    fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        self.chunks.get_mut(i / CHUNK)?.get_mut(i % CHUNK)
    }
    fn len(&self) -> usize {
        self.len
    }
    fn push(&mut self, t: T) {
        if self.len.is_multiple_of(CHUNK) {
            self.chunks.push(Vec::new());
        }
        if let Some(c) = self.chunks.last_mut() {
            c.push(t);
            self.len += 1;
        }
    }
    /// Elements allocated room for.
    fn capacity(&self) -> usize {
        self.chunks.iter().map(Vec::capacity).sum()
    }
    fn iter(&self) -> impl Iterator<Item = &T> {
        self.chunks.iter().flatten()
    }
}

/// A reference to an interned [`AttrSet`] within one shard's [`Interner`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AttrHandle(pub(crate) u32);

impl AttrHandle {
    /// The slot index inside the shard's interner.
    pub const fn index(self) -> u32 {
        self.0
    }
}

#[derive(Debug)]
struct Slot {
    set: AttrSet,
    /// 0 when the slot is free.
    refs: u32,
    /// Next slot with the same digest (live) or next free slot (free).
    next: u32,
}

/// The distinct selection keys of the live sets (module docs): index 0 is
/// [`SEL_NONE`], never handed out.
#[derive(Debug)]
struct SelKeys {
    keys: Vec<SelKey>,
    /// Live sets per key (0: the index is free).
    refs: Vec<u32>,
    index: FastMap<SelKey, u16>,
    free: Vec<u16>,
    /// Indices handed out are below this ([`SEL_LIMIT`]; lower in tests).
    limit: usize,
}

impl Default for SelKeys {
    fn default() -> Self {
        SelKeys {
            keys: vec![SelKey::default()],
            refs: vec![0],
            index: FastMap::default(),
            free: Vec::new(),
            limit: SEL_LIMIT,
        }
    }
}

impl SelKeys {
    /// The index of `k` for one more set; [`SEL_NONE`] when the table is
    /// full.
    fn acquire(&mut self, k: SelKey) -> u16 {
        if let Some(&i) = self.index.get(&k) {
            if let Some(r) = self.refs.get_mut(usize::from(i)) {
                *r += 1;
            }
            return i;
        }
        let i = match self.free.pop() {
            Some(i) => i,
            None if self.keys.len() < self.limit => {
                self.keys.push(k);
                self.refs.push(0);
                (self.keys.len() - 1) as u16
            }
            None => return SEL_NONE,
        };
        if let (Some(slot), Some(r)) = (
            self.keys.get_mut(usize::from(i)),
            self.refs.get_mut(usize::from(i)),
        ) {
            *slot = k;
            *r = 1;
        }
        self.index.insert(k, i);
        i
    }
    /// One set with key index `i` is gone.
    fn release(&mut self, i: u16) {
        if i == SEL_NONE {
            return;
        }
        let Some(r) = self.refs.get_mut(usize::from(i)).filter(|r| **r > 0) else {
            return;
        };
        *r -= 1;
        if *r == 0 {
            if let Some(k) = self.keys.get(usize::from(i)) {
                self.index.remove(k);
            }
            self.free.push(i);
        }
    }
    fn get(&self, i: u16) -> Option<&SelKey> {
        if i == SEL_NONE {
            return None;
        }
        self.keys.get(usize::from(i))
    }
    fn heap_bytes(&self) -> usize {
        self.keys.capacity() * std::mem::size_of::<SelKey>()
            + self.refs.capacity() * 4
            + self.free.capacity() * 2
            + crate::hash::table_bytes::<(SelKey, u16)>(self.index.capacity())
    }
}

/// The per-shard attribute-set arena.
#[derive(Debug)]
pub struct Interner {
    slots: Chunks<Slot>,
    /// Digest (32 bits: chains absorb collisions, full sets are compared)
    /// to the first slot of its chain.
    index: FastMap<u32, u32>,
    free: u32,
    live: usize,
    scratch: Vec<u8>,
    sel: SelKeys,
}

impl Default for Interner {
    fn default() -> Self {
        Interner {
            slots: Chunks::default(),
            index: FastMap::default(),
            free: NIL,
            live: 0,
            scratch: Vec::new(),
            sel: SelKeys::default(),
        }
    }
}

fn digest(summary: &Summary, raw: &[u8]) -> u32 {
    (hash_one(&(summary, raw)) >> 32) as u32
}

impl Interner {
    /// An empty interner.
    pub fn new() -> Interner {
        Interner::default()
    }

    /// Number of distinct live sets.
    pub fn len(&self) -> usize {
        self.live
    }
    /// Whether no set is live.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// The set behind a live handle; `None` for a freed or foreign one.
    pub fn get(&self, h: AttrHandle) -> Option<&AttrSet> {
        self.slots
            .get(h.0 as usize)
            .filter(|s| s.refs > 0)
            .map(|s| &s.set)
    }

    /// The selection key index of a live handle's set ([`SEL_NONE`]: none,
    /// or a dead handle).
    pub(crate) fn sel_index(&self, h: AttrHandle) -> u16 {
        self.get(h).map_or(SEL_NONE, AttrSet::sel)
    }

    /// The selection key with index `i` (`None` for [`SEL_NONE`]). Valid
    /// while a set with that index is live.
    #[inline]
    pub(crate) fn sel_key(&self, i: u16) -> Option<&SelKey> {
        self.sel.get(i)
    }

    /// Caps the selection key table at `n - 1` keys (at most the 16,383 it
    /// has), so that tests reach the sets ranked without an index. Takes
    /// effect for keys not in the table yet.
    pub(crate) fn limit_sel_keys(&mut self, n: usize) {
        self.sel.limit = n.clamp(1, SEL_LIMIT);
    }

    /// Current reference count (0 for a free slot).
    pub fn refs(&self, h: AttrHandle) -> u32 {
        self.slots.get(h.0 as usize).map_or(0, |s| s.refs)
    }

    /// Interns the builder's set and returns a handle holding one new
    /// reference. Allocates only when the set is new.
    pub fn intern(&mut self, b: &AttrsBuilder) -> AttrHandle {
        let mut buf = std::mem::take(&mut self.scratch);
        let summary = b.encode(&mut buf);
        let h = self.intern_parts(summary, &buf);
        self.scratch = buf;
        h
    }

    /// Interns an already frozen set (for example one from another shard's
    /// interner) and returns a handle holding one new reference.
    pub fn intern_set(&mut self, set: &AttrSet) -> AttrHandle {
        self.intern_parts(*set.summary(), set.raw())
    }

    fn intern_parts(&mut self, summary: Summary, raw: &[u8]) -> AttrHandle {
        let d = digest(&summary, raw);
        let head = self.index.get(&d).copied().unwrap_or(NIL);
        let mut cur = head;
        while let Some(s) = self.slots.get_mut(cur as usize) {
            if s.set.summary() == &summary && s.set.raw() == raw {
                s.refs = s.refs.saturating_add(1);
                return AttrHandle(cur);
            }
            cur = s.next;
        }
        let mut set = AttrSet::new(raw.into(), summary);
        set.set_sel(self.sel.acquire(SelKey::of(&summary)));
        let slot = Slot {
            set,
            refs: 1,
            next: head,
        };
        let idx = if let Some(f) = self.slots.get_mut(self.free as usize) {
            let idx = self.free;
            self.free = f.next;
            *f = slot;
            idx
        } else {
            self.slots.push(slot);
            (self.slots.len() - 1) as u32
        };
        self.index.insert(d, idx);
        self.live += 1;
        AttrHandle(idx)
    }

    /// Adds a reference to a live handle.
    pub fn acquire(&mut self, h: AttrHandle) {
        if let Some(s) = self.slots.get_mut(h.0 as usize).filter(|s| s.refs > 0) {
            s.refs = s.refs.saturating_add(1);
        }
    }

    /// Drops a reference; the set is freed when the count reaches zero.
    pub fn release(&mut self, h: AttrHandle) {
        let Some(s) = self.slots.get_mut(h.0 as usize).filter(|s| s.refs > 0) else {
            debug_assert!(false, "release of a dead handle {h:?}");
            return;
        };
        s.refs -= 1;
        if s.refs > 0 {
            return;
        }
        let raw = s.set.take_raw();
        let summary = *s.set.summary();
        let sel = s.set.sel();
        let next = s.next;
        self.sel.release(sel);
        let d = digest(&summary, &raw);
        self.unlink(d, h.0, next);
        if let Some(s) = self.slots.get_mut(h.0 as usize) {
            s.set = AttrSet::default();
            s.next = self.free;
        }
        self.free = h.0;
        self.live -= 1;
    }

    /// Removes slot `idx` (whose successor is `next`) from digest chain `d`.
    fn unlink(&mut self, d: u32, idx: u32, next: u32) {
        let Some(&head) = self.index.get(&d) else {
            return;
        };
        if head == idx {
            if next == NIL {
                self.index.remove(&d);
            } else {
                self.index.insert(d, next);
            }
            return;
        }
        let mut cur = head;
        while let Some(s) = self.slots.get_mut(cur as usize) {
            if s.next == idx {
                s.next = next;
                return;
            }
            cur = s.next;
        }
    }

    /// Bytes held by the arena, its index and the sets' TLVs (estimate;
    /// allocator overhead not included).
    pub fn heap_bytes(&self) -> usize {
        let raw: usize = self
            .slots
            .iter()
            .filter(|s| s.refs > 0)
            .map(|s| s.set.raw().len())
            .sum();
        self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.index.capacity() * (std::mem::size_of::<(u32, u32)>() + 1)
            + raw
            + self.sel.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bgp_wire::{AttrValue, PathAttr};

    fn b(med: u32) -> AttrsBuilder {
        AttrsBuilder::from_attrs([PathAttr::new(AttrValue::Med(med))])
    }

    #[test]
    fn equal_sets_share_a_handle_and_are_freed_at_zero() {
        let mut i = Interner::new();
        let a = i.intern(&b(1));
        let a2 = i.intern(&b(1));
        let c = i.intern(&b(2));
        assert_eq!(a, a2);
        assert_ne!(a, c);
        assert_eq!(i.len(), 2);
        assert_eq!(i.refs(a), 2);
        assert_eq!(i.get(a).unwrap().summary().med(), Some(1));
        i.release(a);
        assert!(i.get(a).is_some());
        i.release(a2);
        assert!(i.get(a).is_none());
        assert_eq!(i.len(), 1);
        // The freed slot is reused and the digest index no longer finds it.
        let d = i.intern(&b(3));
        assert_eq!(d, a);
        assert_eq!(i.get(d).unwrap().summary().med(), Some(3));
        let a3 = i.intern(&b(1));
        assert_ne!(a3, d);
        assert_eq!(i.refs(a3), 1);
        assert_eq!(std::mem::size_of::<AttrHandle>(), 4);
    }

    #[test]
    fn chunks_index_across_chunk_borders() {
        let mut c = Chunks::default();
        for i in 0..(2 * CHUNK + 5) {
            c.push(i);
        }
        assert_eq!(c.len(), 2 * CHUNK + 5);
        assert_eq!(c.chunks.len(), 3);
        assert!(c.chunks.iter().take(2).all(|v| v.capacity() == CHUNK));
        for i in [0, CHUNK - 1, CHUNK, 2 * CHUNK, 2 * CHUNK + 4] {
            assert_eq!(c.get(i), Some(&i));
        }
        assert_eq!(c.get(2 * CHUNK + 5), None);
        if let Some(x) = c.get_mut(CHUNK) {
            *x = 7;
        }
        assert_eq!(c.get(CHUNK), Some(&7));
        assert_eq!(c.iter().count(), 2 * CHUNK + 5);
        assert!(c.capacity() < 3 * CHUNK);
        // An interner with more sets than one chunk finds every one.
        let mut i = Interner::new();
        let hs: Vec<_> = (0..(CHUNK as u32 + 100)).map(|m| i.intern(&b(m))).collect();
        for (m, h) in hs.iter().enumerate() {
            assert_eq!(i.get(*h).unwrap().summary().med(), Some(m as u32));
            assert_eq!(i.intern(&b(m as u32)), *h);
        }
    }

    fn lp_len(lp: u32, len: usize) -> AttrsBuilder {
        let path = bgp_wire::AsPath::from_sequence(vec![base::Asn(64500); len]);
        let mut b = AttrsBuilder::from_attrs([PathAttr::new(AttrValue::AsPath(path))]);
        b.set_local_pref(lp);
        b
    }

    /// Sets with the same steps 0-3 share one key index, whatever else
    /// differs; the index is freed with the last such set and reused.
    #[test]
    fn selection_keys_are_shared_counted_and_reused() {
        assert_eq!(
            std::mem::size_of::<AttrSet>(),
            48,
            "the index is in padding"
        );
        assert_eq!(std::mem::size_of::<Slot>(), 56);
        let mut i = Interner::new();
        let with_med = |lp, len, med| {
            let mut b = lp_len(lp, len);
            b.set_med(med);
            b
        };
        let a = i.intern(&with_med(100, 2, 1));
        let b2 = i.intern(&with_med(100, 2, 2));
        let c = i.intern(&with_med(200, 2, 1));
        assert_ne!(a, b2);
        let (ka, kb, kc) = (i.sel_index(a), i.sel_index(b2), i.sel_index(c));
        assert_ne!(ka, SEL_NONE);
        assert_eq!(ka, kb, "MED is not in the key");
        assert_ne!(ka, kc);
        let key = |i: &Interner, h: AttrHandle| SelKey::of(i.get(h).unwrap().summary());
        assert_eq!(i.sel_key(ka), Some(&key(&i, a)));
        assert_eq!(i.sel_key(kc), Some(&key(&i, c)));
        assert_eq!(i.sel_key(SEL_NONE), None);
        // One of two sets gone: the key stays.
        i.release(a);
        assert_eq!(i.sel_index(b2), ka);
        assert_eq!(i.sel.index.get(&key(&i, b2)), Some(&ka));
        // The last one gone: the index is free and goes to the next new key.
        let kb_key = key(&i, b2);
        i.release(b2);
        assert!(!i.sel.index.contains_key(&kb_key));
        let d = i.intern(&lp_len(300, 5));
        assert_eq!(i.sel_index(d), ka);
        assert_eq!(i.sel_key(ka), Some(&key(&i, d)));
        assert_eq!(i.sel_key(kc), Some(&key(&i, c)));
        assert_eq!(i.sel_index(AttrHandle(999)), SEL_NONE, "dead handle");
    }

    /// A full key table gives new keys no index; they come back once
    /// room is freed.
    #[test]
    fn a_full_key_table_hands_out_none() {
        let mut i = Interner::new();
        i.limit_sel_keys(3);
        let hs: Vec<_> = (0..4).map(|lp| i.intern(&lp_len(lp, 1))).collect();
        let ks: Vec<_> = hs.iter().map(|h| i.sel_index(*h)).collect();
        assert_eq!(&ks[..2], &[1, 2]);
        assert_eq!(&ks[2..], &[SEL_NONE, SEL_NONE]);
        // A key already in the table still gets its index.
        let again = i.intern(&{
            let mut b = lp_len(0, 1);
            b.set_med(7);
            b
        });
        assert_eq!(i.sel_index(again), 1);
        i.release(hs[2]);
        i.release(hs[1]);
        let e = i.intern(&lp_len(9, 1));
        assert_eq!(i.sel_index(e), 2);
        // Without a limit the table stops at 14 bits.
        let mut full = Interner::new();
        for lp in 0..(SEL_LIMIT as u32 + 2) {
            let h = full.intern(&lp_len(lp, 1));
            let k = full.sel_index(h);
            assert_eq!(k == SEL_NONE, lp as usize >= SEL_LIMIT - 1, "lp {lp}");
        }
    }

    #[test]
    fn freed_slots_do_not_disturb_live_sets() {
        let mut i = Interner::new();
        // Free every third set, then re-intern the rest: each must come back
        // to its own slot, found through the digest index.
        let hs: Vec<_> = (0..300).map(|m| i.intern(&b(m))).collect();
        for (m, h) in hs.iter().enumerate().filter(|(m, _)| m % 3 == 1) {
            assert_eq!(i.get(*h).unwrap().summary().med(), Some(m as u32));
            i.release(*h);
        }
        for (m, h) in hs.iter().enumerate().filter(|(m, _)| m % 3 != 1) {
            let again = i.intern(&b(m as u32));
            assert_eq!(again, *h);
        }
        assert_eq!(i.len(), 200);
    }
}
