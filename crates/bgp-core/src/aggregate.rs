//! Configured aggregates (RFC 4271 §9.2.2.2): an aggregate prefix is
//! originated from [`STATIC_PEER`] while at least one more specific route
//! (a *contributor*) has a best path in this core's unicast RIB, and
//! withdrawn when none has. Its attributes: ORIGIN the worst of the
//! contributors'; with `as_set`, an AS_PATH of one AS_SET holding every AS
//! of the contributors' paths; without, an empty AS_PATH and
//! ATOMIC_AGGREGATE (the path information is lost); AGGREGATOR (our AS,
//! our router id) always. With `summary_only`, contributors are not
//! exported while the aggregate is announced.
//!
//! Contributors are tracked from the best-path changes each export round
//! sees, so the cost is per changed prefix, not per table walk. The core
//! must see every contributor: aggregation needs a RIB that is not split
//! over threads (the configuration refuses the other pipelines).

use std::collections::BTreeSet;

use base::{Asn, Prefix};
use bgp_rib::{AcceptAll, AttrsBuilder};
use bgp_wire::{Aggregator, AsPath, AsSegment, AttrValue, Nlri, Origin, PathAttr, SegmentType};

use crate::agg::AggState;
pub use crate::agg::{covers, Aggregate};
use crate::core::RibCore;
use crate::settings::STATIC_PEER;

impl RibCore {
    /// Replaces the configured aggregates (at start; the contributors
    /// already in the RIB are found with one walk).
    pub fn set_aggregates(&mut self, aggs: Vec<Aggregate>) {
        for old in std::mem::take(&mut self.aggregates) {
            if old.announced.is_some() {
                let n = [Nlri::new(old.cfg.prefix)];
                let _ = self.rib.apply_update(
                    STATIC_PEER,
                    &[],
                    None,
                    &n,
                    &mut AcceptAll,
                    &mut self.changed,
                );
            }
            self.changed.extend(old.contributors);
        }
        self.aggregates = aggs
            .into_iter()
            .map(|cfg| AggState {
                cfg: Aggregate {
                    prefix: cfg.prefix.masked(),
                    ..cfg
                },
                contributors: BTreeSet::new(),
                announced: None,
            })
            .collect();
        if self.aggregates.is_empty() {
            return;
        }
        let all: Vec<Prefix> = self.rib.iter().map(|r| r.prefix).collect();
        self.changed.extend(all);
        self.update_aggregates();
    }

    /// The contributors of the aggregate `prefix`, if one is configured.
    pub fn aggregate_contributors(&self, prefix: &Prefix) -> Option<(&Aggregate, Vec<Prefix>)> {
        let a = self
            .aggregates
            .iter()
            .find(|a| a.cfg.prefix == prefix.masked())?;
        Some((&a.cfg, a.contributors.iter().copied().collect()))
    }

    /// The prefixes whose export `summary_only` aggregates suppress now.
    pub(crate) fn summarised(&self) -> Vec<Prefix> {
        self.aggregates
            .iter()
            .filter(|a| a.cfg.summary_only && a.announced.is_some())
            .map(|a| a.cfg.prefix)
            .collect()
    }

    /// Before an export round: contributors from the changed prefixes,
    /// aggregates announced, changed or withdrawn accordingly (their
    /// prefix, and with `summary_only` their contributors, added to the
    /// changes to export).
    pub(crate) fn update_aggregates(&mut self) {
        if self.aggregates.is_empty() || self.changed.is_empty() {
            return;
        }
        let mut dirty = vec![false; self.aggregates.len()];
        for p in &self.changed {
            for (i, a) in self.aggregates.iter_mut().enumerate() {
                if !covers(a.cfg.prefix, *p) {
                    continue;
                }
                let has_best = self.rib.lookup(p).is_some_and(|r| r.best().is_some());
                let moved = if has_best {
                    a.contributors.insert(*p)
                } else {
                    a.contributors.remove(p)
                };
                // A contributor whose best path changed may change the
                // aggregate's attributes too.
                dirty[i] |= moved || has_best;
            }
        }
        for (i, d) in dirty.into_iter().enumerate() {
            if d {
                self.reoriginate(i);
            }
        }
    }

    fn reoriginate(&mut self, i: usize) {
        let Some(a) = self.aggregates.get(i) else {
            return;
        };
        let want = (!a.contributors.is_empty()).then(|| self.aggregate_attrs(a));
        if want == a.announced {
            return;
        }
        let prefix = a.cfg.prefix;
        let toggled = want.is_some() != a.announced.is_some();
        let n = [Nlri::new(prefix)];
        let _ = match &want {
            Some(b) => self.rib.apply_update(
                STATIC_PEER,
                &n,
                Some(b),
                &[],
                &mut AcceptAll,
                &mut self.changed,
            ),
            None => self.rib.apply_update(
                STATIC_PEER,
                &[],
                None,
                &n,
                &mut AcceptAll,
                &mut self.changed,
            ),
        };
        if let Some(a) = self.aggregates.get_mut(i) {
            if toggled && a.cfg.summary_only {
                // Their export verdict changed.
                self.changed.extend(a.contributors.iter().copied());
            }
            a.announced = want;
        }
    }

    /// RFC 4271 §9.2.2.2 over the contributors' best paths.
    fn aggregate_attrs(&self, a: &AggState) -> AttrsBuilder {
        let mut origin = Origin::Igp;
        let mut asns: BTreeSet<u32> = BTreeSet::new();
        // RFC 5065 §5: member ASes of our confederation go in an
        // AS_CONFED_SET, which never leaves the confederation.
        let mut confed: BTreeSet<u32> = BTreeSet::new();
        for p in &a.contributors {
            let Some((_, set)) = self.rib.lookup(p).and_then(|r| r.best()) else {
                continue;
            };
            for attr in set.to_builder().attrs() {
                match &attr.value {
                    AttrValue::Origin(o) if (*o as u8) > (origin as u8) => origin = *o,
                    AttrValue::AsPath(path) => {
                        for seg in &path.segments {
                            let to = if seg.kind.is_confed() {
                                &mut confed
                            } else {
                                &mut asns
                            };
                            to.extend(seg.asns.iter().map(|a| a.0));
                        }
                    }
                    _ => {}
                }
            }
        }
        let mut path = AsPath {
            segments: Vec::new(),
        };
        if a.cfg.as_set {
            for (kind, set) in [(SegmentType::ConfedSet, confed), (SegmentType::Set, asns)] {
                if !set.is_empty() {
                    path.segments.push(AsSegment {
                        kind,
                        asns: set.into_iter().map(Asn).collect(),
                    });
                }
            }
        }
        let mut attrs = vec![
            PathAttr::new(AttrValue::Origin(origin)),
            PathAttr::new(AttrValue::AsPath(path)),
        ];
        if !a.cfg.as_set {
            attrs.push(PathAttr::new(AttrValue::AtomicAggregate));
        }
        attrs.push(PathAttr::new(AttrValue::Aggregator(Aggregator {
            asn: self.settings.local_asn,
            addr: self.settings.router_id,
        })));
        AttrsBuilder::from_attrs(attrs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn covers_only_more_specifics() {
        let a: Prefix = "198.19.16.0/22".parse().unwrap();
        for (p, want) in [
            ("198.19.16.0/24", true),
            ("198.19.19.128/25", true),
            ("198.19.16.0/22", false),
            ("198.19.20.0/24", false),
            ("198.19.0.0/16", false),
            ("2001:db8::/48", false),
        ] {
            assert_eq!(covers(a, p.parse().unwrap()), want, "{p}");
        }
    }
}
