//! The prefixes a RIB holds, ordered so that the ones a VRP covers are one
//! range scan: a VRP change re-evaluates only those (no full table walk).

use std::collections::BTreeMap;

use base::Prefix;

use crate::Key;

/// A multiset of prefixes (a count per prefix: one per path or per user,
/// as the owner decides), with the range query
/// [`PrefixIndex::covered_by`].
#[derive(Clone, Debug, Default)]
pub struct PrefixIndex {
    /// Keyed by family, then address, then length: every prefix inside a
    /// VRP's prefix has an address within the VRP's first..=last address.
    map: BTreeMap<Key, u32>,
}

impl PrefixIndex {
    /// Counts one more use of `p`.
    pub fn insert(&mut self, p: &Prefix) {
        *self.map.entry(Key::of(p)).or_default() += 1;
    }

    /// Holds `p` once (a set's insert: a count of 1 when absent, unchanged
    /// when present), in one map lookup.
    pub fn hold(&mut self, p: &Prefix) {
        self.map.entry(Key::of(p)).or_insert(1);
    }

    /// Counts one use of `p` less; forgets it at zero.
    pub fn remove(&mut self, p: &Prefix) {
        let k = Key::of(p);
        if let Some(c) = self.map.get_mut(&k) {
            *c = c.saturating_sub(1);
            if *c == 0 {
                self.map.remove(&k);
            }
        }
    }

    /// Forgets `p` whatever its count.
    pub fn forget(&mut self, p: &Prefix) {
        self.map.remove(&Key::of(p));
    }

    /// Whether `p` is held.
    pub fn contains(&self, p: &Prefix) -> bool {
        self.map.contains_key(&Key::of(p))
    }

    /// Number of distinct prefixes.
    pub fn len(&self) -> usize {
        self.map.len()
    }

    /// Whether it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The held prefixes equal to or more specific than `p` (the ones a
    /// VRP for `p` covers, RFC 6811 §2): one range scan over the addresses
    /// inside `p`, skipping the shorter prefixes that start there.
    pub fn covered_by<'a>(&'a self, p: &Prefix) -> impl Iterator<Item = Prefix> + 'a {
        let k = Key::of(p);
        let lo = Key {
            v6: k.v6,
            addr: k.addr,
            len: 0,
        };
        let hi = Key {
            v6: k.v6,
            addr: k.last(),
            len: u8::MAX,
        };
        self.map
            .range(lo..=hi)
            .filter(move |(q, _)| q.len >= k.len)
            .filter_map(|(q, _)| q.prefix())
    }
}
