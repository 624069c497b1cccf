//! What a configured aggregate is and the state the RIB core keeps for
//! it; a leaf module (`aggregate.rs` does the work, `policy.rs` reads
//! which prefixes are summarised).

use std::collections::BTreeSet;

use base::Prefix;
use bgp_rib::AttrsBuilder;

/// One `[[aggregate]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Aggregate {
    /// The aggregate prefix (masked).
    pub prefix: Prefix,
    /// Suppress the contributors' export while the aggregate is announced.
    pub summary_only: bool,
    /// AS_PATH of one AS_SET of the contributors' ASes; else an empty
    /// AS_PATH with ATOMIC_AGGREGATE.
    pub as_set: bool,
}

/// An aggregate and its contributors now.
#[derive(Clone, Debug)]
pub(crate) struct AggState {
    pub(crate) cfg: Aggregate,
    pub(crate) contributors: BTreeSet<Prefix>,
    /// The attributes it is announced with; `None`: not announced.
    pub(crate) announced: Option<AttrsBuilder>,
}

/// Whether `p` is strictly more specific than `agg`.
pub fn covers(agg: Prefix, p: Prefix) -> bool {
    p.len() > agg.len()
        && p.afi() == agg.afi()
        && Prefix::new(p.addr(), agg.len()).is_ok_and(|x| x.masked() == agg.masked())
}
