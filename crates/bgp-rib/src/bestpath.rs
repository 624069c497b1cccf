//! Route selection: the BGP decision process, phase 2 (RFC 4271 §9.1.2),
//! with the tie-breaking rules of §9.1.2.2 and the route-reflection and
//! ordering extensions every implementation uses. Steps, in order:
//!
//! 0. A route carrying LLGR_STALE is less preferred than any other (RFC
//!    9494).
//! 1. Highest degree of preference: LOCAL_PREF (RFC 4271 §9.1.1, §5.1.5);
//!    absent → [`BestPathConfig::default_local_pref`] (100). The shard
//!    removes LOCAL_PREF from eBGP-learned routes before import policy, as
//!    §5.1.5 requires, so eBGP routes get the default unless policy sets it.
//! 2. Shortest AS_PATH (§9.1.2.2 a): an AS_SET counts 1, confederation
//!    segments 0 (RFC 5065 §5.3).
//! 3. Lowest ORIGIN (§9.1.2.2 b): IGP < EGP < INCOMPLETE.
//! 4. Lowest MULTI_EXIT_DISC (§9.1.2.2 c), only between routes from the same
//!    neighbouring AS unless [`BestPathConfig::always_compare_med`]. A
//!    missing MED is 0 (§9.1.2.2 c) or, with
//!    [`BestPathConfig::missing_med_worst`], the worst value.
//! 5. eBGP-learned over iBGP-learned (§9.1.2.2 d).
//! 6. Lowest interior cost to the next hop (§9.1.2.2 e): the metric of the
//!    route that resolves it when next-hop tracking is on (0 when directly
//!    connected; unresolvable next hops are not eligible at all, §9.1.2.1),
//!    else an input carried in the attribute set (0 by default).
//! 7. Lowest router id (§9.1.2.2 f), where a reflected route's
//!    ORIGINATOR_ID stands in for the peer's BGP Identifier (RFC 4456 §9).
//!    With [`BestPathConfig::compare_router_id`] off, two eBGP paths that
//!    are still tied here keep the one received first instead (RFC 5004;
//!    see [`select_by`]), so a best path is not replaced by an equally
//!    good newer one.
//! 8. Shortest CLUSTER_LIST (RFC 4456 §9).
//! 9. Lowest peer address (§9.1.2.2 g).
//! 10. Lowest ADD-PATH path identifier: not in any RFC; it only separates
//!     several paths from one peer (RFC 7911) so that the result never
//!     depends on arrival order.
//!
//! Because step 4 applies only to some pairs, the relation is not
//! transitive and a linear scan can depend on order (RFC 4271 §9.1.2.2
//! allows this). [`BestPathConfig::deterministic_med`] removes the order
//! dependence: routes are first grouped by neighbouring AS, each group's
//! best is found with MED, and the group winners are compared.

use std::cmp::Ordering;
use std::net::IpAddr;

use base::Asn;

use crate::attrs::Summary;

/// Selection options.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BestPathConfig {
    /// Compare MED between routes from different neighbouring ASes.
    pub always_compare_med: bool,
    /// Group by neighbouring AS before comparing MED, making the result
    /// independent of arrival order.
    pub deterministic_med: bool,
    /// Treat a missing MED as the worst value instead of 0.
    pub missing_med_worst: bool,
    /// LOCAL_PREF assumed when a route has none.
    pub default_local_pref: u32,
    /// Decide ties between eBGP paths by router id (§9.1.2.2 f, the
    /// default). When false, the eBGP path received first wins such a tie
    /// (RFC 5004), which relies on the candidates being given oldest first
    /// (the RIB keeps each prefix's paths in arrival order).
    pub compare_router_id: bool,
    /// How many equal paths go to the forwarding plane besides the best
    /// (see [`crate::multipath`]); selection itself never reads it.
    pub multipath: MultipathConfig,
}

/// Multipath (ECMP) limits, as FRR's `maximum-paths N` (eBGP) and
/// `maximum-paths ibgp N`, and `bgp bestpath as-path multipath-relax`.
/// A limit of 1 is off: only the best path is forwarded.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MultipathConfig {
    /// Paths (the best included) when the best path is eBGP-learned.
    pub ebgp: u16,
    /// Paths (the best included) when the best path is iBGP-learned.
    pub ibgp: u16,
    /// Paths from different neighbouring ASes may share the load when
    /// their AS_PATH lengths are equal (otherwise the neighbouring AS must
    /// be the same).
    pub relax_as_path: bool,
}

impl Default for MultipathConfig {
    fn default() -> Self {
        MultipathConfig {
            ebgp: 1,
            ibgp: 1,
            relax_as_path: false,
        }
    }
}

impl MultipathConfig {
    /// Whether any limit is above 1 (the RIB then follows changes of
    /// non-best paths for the forwarding plane).
    pub fn enabled(&self) -> bool {
        self.ebgp > 1 || self.ibgp > 1
    }
}

impl Default for BestPathConfig {
    fn default() -> Self {
        BestPathConfig {
            always_compare_med: false,
            deterministic_med: false,
            missing_med_worst: false,
            default_local_pref: 100,
            compare_router_id: true,
            multipath: MultipathConfig::default(),
        }
    }
}

/// The step that decided a comparison.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// Without the LLGR_STALE community (RFC 9494).
    LlgrStale,
    /// Higher LOCAL_PREF (§9.1.1).
    LocalPref,
    /// Shorter AS_PATH (§9.1.2.2 a).
    AsPathLen,
    /// Lower ORIGIN (§9.1.2.2 b).
    Origin,
    /// Lower MULTI_EXIT_DISC (§9.1.2.2 c).
    Med,
    /// Learned from an external peer (§9.1.2.2 d).
    EbgpOverIbgp,
    /// Lower cost to the next hop (§9.1.2.2 e).
    IgpMetric,
    /// Lower BGP Identifier, or ORIGINATOR_ID when reflected (§9.1.2.2 f, RFC 4456 §9).
    RouterId,
    /// Shorter CLUSTER_LIST (RFC 4456 §9).
    ClusterListLen,
    /// Lower peer address (§9.1.2.2 g).
    PeerAddr,
    /// Lower ADD-PATH path identifier (paths from one peer).
    PathId,
    /// Nothing separated the two (same peer and path id).
    Equal,
}

/// What selection needs to know about a path: its attributes' summary and
/// the peer it came from.
#[derive(Copy, Clone, Debug)]
pub struct Candidate<'a> {
    /// The path's attribute summary.
    pub summary: &'a Summary,
    /// Learned from an external peer.
    pub ebgp: bool,
    /// The peer's BGP Identifier (RFC 4271 §4.2), host order.
    pub peer_bgp_id: u32,
    /// The peer's session address.
    pub peer_addr: IpAddr,
    /// The path identifier; 0 without ADD-PATH.
    pub path_id: u32,
    /// Interior cost to the next hop (§9.1.2.2 e): from next-hop tracking,
    /// else [`Summary::igp_metric`].
    pub igp_cost: u32,
}

impl Candidate<'_> {
    fn router_id(&self) -> u32 {
        self.summary
            .originator_id()
            .map_or(self.peer_bgp_id, u32::from)
    }
    pub(crate) fn neighbor_as(&self) -> Option<Asn> {
        self.summary.neighbor_as()
    }
}

fn step(o: Ordering, s: Step) -> Option<(Ordering, Step)> {
    (o != Ordering::Equal).then_some((o, s))
}

/// Steps 0-3 of the decision (LLGR_STALE, LOCAL_PREF, AS_PATH length,
/// ORIGIN), which compare every pair of paths whatever the options, copied
/// out of a set's [`Summary`] (8 bytes) into the shard interner's table of
/// distinct keys, whose index each stored path carries, so that the RIB
/// can rank the paths of a prefix without loading their interned
/// attribute sets (see `table.rs`: incremental selection, and `intern.rs`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct SelKey {
    local_pref: u32,
    as_path_len: u16,
    origin: u8,
    flags: u8,
}

const KEY_HAS_LP: u8 = 1;
const KEY_LLGR_STALE: u8 = 2;

impl SelKey {
    /// The key of a path with this summary.
    pub fn of(s: &Summary) -> SelKey {
        let mut flags = 0;
        if s.local_pref().is_some() {
            flags |= KEY_HAS_LP;
        }
        if s.llgr_stale() {
            flags |= KEY_LLGR_STALE;
        }
        SelKey {
            local_pref: s.local_pref().unwrap_or(0),
            as_path_len: s.as_path_len(),
            origin: s.origin() as u8,
            flags,
        }
    }

    /// Steps 0-3 as one number: lower is preferred, and two paths' ranks
    /// are equal exactly when [`compare`] finds them tied through step 3
    /// (under the same `cfg`, whose default LOCAL_PREF applies).
    pub fn rank(&self, cfg: &BestPathConfig) -> u64 {
        let lp = if self.flags & KEY_HAS_LP != 0 {
            self.local_pref
        } else {
            cfg.default_local_pref
        };
        let llgr = u64::from(self.flags & KEY_LLGR_STALE != 0);
        llgr << 56
            | u64::from(u32::MAX - lp) << 24
            | u64::from(self.as_path_len) << 8
            | u64::from(self.origin)
    }
}

/// Whether a scan replaces the incumbent `b` by the challenger `a`:
/// [`compare`] prefers `a`, except that with
/// [`BestPathConfig::compare_router_id`] off an eBGP incumbent keeps a tie
/// that only the router id or a later step breaks (RFC 5004).
pub fn replaces(a: &Candidate<'_>, b: &Candidate<'_>, cfg: &BestPathConfig) -> bool {
    let (o, s) = compare(a, b, cfg);
    if o != Ordering::Less {
        return false;
    }
    let late_tie = matches!(s, Step::RouterId | Step::ClusterListLen | Step::PeerAddr);
    cfg.compare_router_id || !late_tie || !(a.ebgp && b.ebgp)
}

/// Compares two candidates. `Less` means `a` is preferred. Returns the
/// deciding step.
pub fn compare(a: &Candidate<'_>, b: &Candidate<'_>, cfg: &BestPathConfig) -> (Ordering, Step) {
    compare_inner(a, b, cfg).unwrap_or((Ordering::Equal, Step::Equal))
}

fn compare_inner(
    a: &Candidate<'_>,
    b: &Candidate<'_>,
    cfg: &BestPathConfig,
) -> Option<(Ordering, Step)> {
    let (sa, sb) = (a.summary, b.summary);
    // 0. RFC 9494: a long-lived stale route is least preferred.
    if let Some(r) = step(sa.llgr_stale().cmp(&sb.llgr_stale()), Step::LlgrStale) {
        return Some(r);
    }
    // 1. RFC 4271 §9.1.1: higher LOCAL_PREF wins.
    let lp = |s: &Summary| s.local_pref().unwrap_or(cfg.default_local_pref);
    if let Some(r) = step(lp(sb).cmp(&lp(sa)), Step::LocalPref) {
        return Some(r);
    }
    // 2. §9.1.2.2 a: fewer ASes wins.
    if let Some(r) = step(sa.as_path_len().cmp(&sb.as_path_len()), Step::AsPathLen) {
        return Some(r);
    }
    // 3. §9.1.2.2 b: lower ORIGIN wins.
    if let Some(r) = step((sa.origin() as u8).cmp(&(sb.origin() as u8)), Step::Origin) {
        return Some(r);
    }
    // 4. §9.1.2.2 c: lower MED wins, between routes from one neighbour AS.
    if cfg.always_compare_med || a.neighbor_as() == b.neighbor_as() {
        let missing = if cfg.missing_med_worst { u32::MAX } else { 0 };
        let med = |s: &Summary| s.med().unwrap_or(missing);
        if let Some(r) = step(med(sa).cmp(&med(sb)), Step::Med) {
            return Some(r);
        }
    }
    // 5. §9.1.2.2 d: eBGP over iBGP.
    if let Some(r) = step(b.ebgp.cmp(&a.ebgp), Step::EbgpOverIbgp) {
        return Some(r);
    }
    // 6. §9.1.2.2 e: lower interior cost to the next hop.
    if let Some(r) = step(a.igp_cost.cmp(&b.igp_cost), Step::IgpMetric) {
        return Some(r);
    }
    // 7. §9.1.2.2 f with RFC 4456 §9: lower (originator or peer) router id.
    if let Some(r) = step(a.router_id().cmp(&b.router_id()), Step::RouterId) {
        return Some(r);
    }
    // 8. RFC 4456 §9: shorter CLUSTER_LIST.
    if let Some(r) = step(
        sa.cluster_list_len().cmp(&sb.cluster_list_len()),
        Step::ClusterListLen,
    ) {
        return Some(r);
    }
    // 9. §9.1.2.2 g: lower peer address.
    if let Some(r) = step(a.peer_addr.cmp(&b.peer_addr), Step::PeerAddr) {
        return Some(r);
    }
    // 10. Deterministic last resort for ADD-PATH (not an RFC step).
    step(a.path_id.cmp(&b.path_id), Step::PathId)
}

/// Returns the index (into `cands`) of the best candidate, `None` when
/// empty. See the module docs for the order-dependence rules.
pub fn select(cands: &[Candidate<'_>], cfg: &BestPathConfig) -> Option<usize> {
    select_by(cands.len(), |i| cands.get(i).copied(), cfg)
}

/// [`select`] over `n` candidates produced on demand (`None`: not
/// eligible). Allocates only with more than 16 neighbouring ASes under
/// deterministic MED.
///
/// Candidates are scanned in index order, so the incumbent is always the
/// earlier one; with [`BestPathConfig::compare_router_id`] off, a later eBGP
/// path that only wins against an eBGP incumbent at the router id step or
/// after it (other than between paths of one peer) does not replace it
/// (RFC 5004 "prefer the oldest"; the caller gives paths oldest first).
pub fn select_by<'a, F>(n: usize, get: F, cfg: &BestPathConfig) -> Option<usize>
where
    F: Fn(usize) -> Option<Candidate<'a>>,
{
    let better = |a: &Candidate<'_>, b: &Candidate<'_>| replaces(a, b, cfg);
    if !cfg.deterministic_med || cfg.always_compare_med {
        // With always_compare_med every step compares every pair, so the
        // relation is a total order and a scan is already deterministic.
        let mut best: Option<(usize, Candidate<'a>)> = None;
        for i in 0..n {
            let Some(c) = get(i) else { continue };
            if best.as_ref().is_none_or(|(_, b)| better(&c, b)) {
                best = Some((i, c));
            }
        }
        return best.map(|(i, _)| i);
    }
    // Deterministic MED: best per neighbouring AS (MED always applies
    // within a group), then the best among group winners (MED never
    // applies between groups). Both relations are total orders.
    type Group<'a> = Option<(Option<Asn>, usize, Candidate<'a>)>;
    let mut arr: [Group<'a>; 16] = [None; 16];
    let mut heap: Vec<Group<'a>>;
    let groups: &mut [Group<'a>] = if n <= arr.len() {
        &mut arr[..]
    } else {
        heap = vec![None; n];
        &mut heap[..]
    };
    let mut used = 0;
    for i in 0..n {
        let Some(c) = get(i) else { continue };
        let na = c.neighbor_as();
        let slot = groups
            .iter_mut()
            .take(used)
            .flatten()
            .find(|(g, _, _)| *g == na);
        match slot {
            Some(g) => {
                if better(&c, &g.2) {
                    g.1 = i;
                    g.2 = c;
                }
            }
            None => {
                if let Some(s) = groups.get_mut(used) {
                    *s = Some((na, i, c));
                    used += 1;
                }
            }
        }
    }
    let mut best: Option<(usize, Candidate<'a>)> = None;
    for (_, i, c) in groups.iter().take(used).flatten() {
        if best.as_ref().is_none_or(|(_, b)| better(c, b)) {
            best = Some((*i, *c));
        }
    }
    best.map(|(i, _)| i)
}

#[cfg(test)]
#[path = "bestpath_tests.rs"]
mod tests;
