//! Multipath (ECMP): the paths that share forwarding with the best path.
//!
//! Phase 2 of the decision process (RFC 4271 §9.1.2) picks one best path;
//! that path alone is advertised to peers. With multipath on
//! ([`MultipathConfig`]), the forwarding plane also gets every other
//! eligible path that the decision process could not tell from the best
//! before its last tie-breakers, as FRR's `maximum-paths` and BIRD's
//! `merge paths` do:
//!
//! - equal through §9.1.2.2 step e: the same LLGR_STALE state (RFC 9494),
//!   LOCAL_PREF, AS_PATH length, ORIGIN, MED (where MED is compared at all,
//!   see [`crate::bestpath`]), eBGP/iBGP and interior cost to the next hop;
//!   the router id (§9.1.2.2 f), CLUSTER_LIST length, peer address (g) and
//!   path id may differ;
//! - the same neighbouring AS as the best path, unless
//!   [`MultipathConfig::relax_as_path`] (then only the equal AS_PATH length
//!   above counts);
//! - at most [`MultipathConfig::ebgp`] paths when the best is eBGP-learned,
//!   [`MultipathConfig::ibgp`] when it is iBGP-learned, the best included;
//!   when more are equal, those the remaining tie-breakers prefer.
//!
//! Everything here is pure: candidates in, indices out.

use std::cmp::Ordering;

use crate::bestpath::{compare, BestPathConfig, Candidate, MultipathConfig, Step};

/// Whether `c` may share forwarding with `best` (see the module docs).
pub fn equal_to_best(best: &Candidate<'_>, c: &Candidate<'_>, cfg: &BestPathConfig) -> bool {
    let (_, step) = compare(c, best, cfg);
    // Decided only by a tie-breaker after §9.1.2.2 e, or not at all.
    let late = matches!(
        step,
        Step::RouterId | Step::ClusterListLen | Step::PeerAddr | Step::PathId | Step::Equal
    );
    late && (cfg.multipath.relax_as_path || c.neighbor_as() == best.neighbor_as())
}

/// The path limit for a best path learned over eBGP (`ebgp`) or iBGP.
pub fn limit(m: &MultipathConfig, ebgp: bool) -> usize {
    usize::from(if ebgp { m.ebgp } else { m.ibgp }).max(1)
}

/// Appends to `out` the multipath set of `n` candidates produced on demand
/// (`None`: not eligible) whose best is index `best`: the best first, then
/// the other members in the order of the remaining tie-breakers. Appends
/// nothing when `best` is not an eligible candidate.
pub fn select_by<'a, F>(n: usize, get: F, best: usize, cfg: &BestPathConfig, out: &mut Vec<usize>)
where
    F: Fn(usize) -> Option<Candidate<'a>>,
{
    let Some(b) = get(best) else {
        return;
    };
    let start = out.len();
    out.push(best);
    let max = limit(&cfg.multipath, b.ebgp);
    if max == 1 {
        return;
    }
    for i in (0..n).filter(|&i| i != best) {
        if let Some(c) = get(i) {
            if equal_to_best(&b, &c, cfg) {
                out.push(i);
            }
        }
    }
    // From the router id step on, every pair is compared by every step:
    // a total order, so the choice does not depend on storage order.
    if let Some(rest) = out.get_mut(start + 1..) {
        rest.sort_by(|&x, &y| match (get(x), get(y)) {
            (Some(a), Some(b)) => compare(&a, &b, cfg).0,
            _ => Ordering::Equal,
        });
    }
    out.truncate(start + max);
}

/// [`select_by`] over a slice.
pub fn select(cands: &[Candidate<'_>], best: usize, cfg: &BestPathConfig) -> Vec<usize> {
    let mut out = Vec::new();
    select_by(cands.len(), |i| cands.get(i).copied(), best, cfg, &mut out);
    out
}
