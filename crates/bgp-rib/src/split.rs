//! [`SplitMap`]: a hash map kept as 16 independent parts.
//!
//! A single table of a million prefixes grows by doubling, and while it
//! rehashes the old and the new bucket arrays are both alive: for the
//! Loc-RIB table and an Adj-RIB-Out, which grow in step during a full-table
//! import, that transient was about a third of the peak RSS. Split in 16,
//! each part rehashes on its own, at a different moment, so only 1/16 of
//! a table is ever doubled at once. Lookups hash the key twice (the part,
//! then the bucket); the hash is cheap.
//!
//! The part is chosen from hash bits 32..36, which the parts' own tables
//! use neither for the bucket (low bits) nor for the control byte (top 7
//! bits), so every part still spreads its keys over all of its buckets.

use std::collections::hash_map::{Entry, HashMap};
use std::hash::Hash;

use crate::hash::{hash_one, FastBuild};

const PARTS: usize = 16;

pub(crate) struct SplitMap<K, V> {
    parts: [HashMap<K, V, FastBuild>; PARTS],
}

impl<K, V> Default for SplitMap<K, V> {
    fn default() -> Self {
        SplitMap {
            parts: std::array::from_fn(|_| HashMap::default()),
        }
    }
}

impl<K: std::fmt::Debug, V: std::fmt::Debug> std::fmt::Debug for SplitMap<K, V> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl<K, V> SplitMap<K, V> {
    pub(crate) fn len(&self) -> usize {
        self.parts.iter().map(HashMap::len).sum()
    }
    pub(crate) fn iter(&self) -> impl Iterator<Item = (&K, &V)> {
        self.parts.iter().flat_map(|p| p.iter())
    }
    pub(crate) fn values(&self) -> impl Iterator<Item = &V> {
        self.parts.iter().flat_map(|p| p.values())
    }
    pub(crate) fn into_iter(self) -> impl Iterator<Item = (K, V)> {
        self.parts.into_iter().flat_map(|p| p.into_iter())
    }
    pub(crate) fn into_values(self) -> impl Iterator<Item = V> {
        self.parts.into_iter().flat_map(|p| p.into_values())
    }
    /// Bytes of the parts' bucket arrays (hashbrown: a power of two of
    /// buckets holding 7/8 of them, one control byte each); an estimate
    /// without allocator overhead.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.parts
            .iter()
            .map(|p| crate::hash::table_bytes::<(K, V)>(p.capacity()))
            .sum()
    }
    pub(crate) fn retain(&mut self, mut f: impl FnMut(&K, &mut V) -> bool) {
        for p in &mut self.parts {
            p.retain(&mut f);
        }
    }
}

impl<K: Hash + Eq, V> SplitMap<K, V> {
    fn part(k: &K) -> usize {
        ((hash_one(k) >> 32) as usize) % PARTS
    }
    pub(crate) fn get(&self, k: &K) -> Option<&V> {
        self.parts[Self::part(k)].get(k)
    }
    pub(crate) fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.parts[Self::part(k)].get_mut(k)
    }
    pub(crate) fn entry(&mut self, k: K) -> Entry<'_, K, V> {
        self.parts[Self::part(&k)].entry(k)
    }
    pub(crate) fn remove(&mut self, k: &K) -> Option<V> {
        self.parts[Self::part(k)].remove(k)
    }
}

impl<'a, K, V> IntoIterator for &'a SplitMap<K, V> {
    type Item = (&'a K, &'a V);
    type IntoIter = std::iter::FlatMap<
        std::slice::Iter<'a, HashMap<K, V, FastBuild>>,
        std::collections::hash_map::Iter<'a, K, V>,
        fn(&'a HashMap<K, V, FastBuild>) -> std::collections::hash_map::Iter<'a, K, V>,
    >;
    fn into_iter(self) -> Self::IntoIter {
        self.parts.iter().flat_map(HashMap::iter)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn behaves_as_one_map_and_uses_every_part() {
        let mut m = SplitMap::<u64, u64>::default();
        for i in 0..10_000u64 {
            assert!(matches!(m.entry(i << 8 | 24), Entry::Vacant(_)));
            m.entry(i << 8 | 24).or_insert(i);
        }
        assert!(matches!(m.entry(24), Entry::Occupied(_)));
        assert_eq!(m.len(), 10_000);
        assert_eq!(m.get(&(5 << 8 | 24)), Some(&5));
        *m.get_mut(&(5 << 8 | 24)).unwrap() = 50;
        assert_eq!(m.remove(&(5 << 8 | 24)), Some(50));
        assert_eq!(m.get(&(5 << 8 | 24)), None);
        *m.entry(1).or_insert(0) += 3;
        assert_eq!(m.get(&1), Some(&3));
        m.retain(|k, _| k % 2 == 0);
        assert_eq!(m.len(), m.iter().count());
        assert!(m.iter().all(|(k, _)| k % 2 == 0));
        // Keys spread: no part holds more than twice its share.
        let most = m.parts.iter().map(HashMap::len).max().unwrap();
        assert!(most < 2 * m.len() / PARTS, "{most} of {}", m.len());
        let n = m.len();
        assert_eq!(m.into_values().count(), n);
    }
}
