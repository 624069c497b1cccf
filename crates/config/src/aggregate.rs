//! `[[aggregate]]`: prefixes tesserad originates while a more specific
//! route is in its Loc-RIB (RFC 4271 §9.2.2.2; the RIB core's
//! `aggregate.rs` does it).

use base::Prefix;
use serde::Deserialize;

use crate::validate::{Ctx, R};
use crate::Pipeline;

/// `[[aggregate]]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawAggregate {
    pub prefix: String,
    pub summary_only: Option<bool>,
    pub as_set: Option<bool>,
}

/// One aggregate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Aggregate {
    /// `prefix`, required: the aggregate, announced while at least one
    /// strictly more specific route has a best path.
    pub prefix: Prefix,
    /// `summary_only`, default false: the more specifics are not exported
    /// while the aggregate is announced.
    pub summary_only: bool,
    /// `as_set`, default false: the AS_PATH is one AS_SET of every AS in
    /// the contributors' paths; false: an empty AS_PATH with
    /// ATOMIC_AGGREGATE. AGGREGATOR (our AS and router id) either way.
    pub as_set: bool,
}

/// Validates the `[[aggregate]]` list. `pipeline`/`threads`: aggregation
/// needs one RIB thread; `statics`: an aggregate cannot also be a static.
pub(crate) fn validate(
    c: &Ctx<'_>,
    raw: &[RawAggregate],
    one_rib: bool,
    statics: &[Prefix],
) -> Vec<Result<Aggregate, crate::ConfigError>> {
    let mut seen: Vec<Prefix> = Vec::new();
    raw.iter()
        .enumerate()
        .map(|(i, r)| {
            let a = one(c, i, r, one_rib, statics, &seen)?;
            seen.push(a.prefix);
            Ok(a)
        })
        .collect()
}

fn one(
    c: &Ctx<'_>,
    i: usize,
    r: &RawAggregate,
    one_rib: bool,
    statics: &[Prefix],
    seen: &[Prefix],
) -> R<Aggregate> {
    let at = |k: &str| format!("aggregate[{i}].{k}");
    let prefix: Prefix = r.prefix.parse().map_err(|_| {
        c.err(
            &at("prefix"),
            format!("\"{}\" is not a prefix ADDRESS/LENGTH", r.prefix),
        )
    })?;
    if prefix.masked() != prefix {
        return Err(c.err(
            &at("prefix"),
            format!(
                "\"{}\" has bits set beyond the prefix length (did you mean {}?)",
                r.prefix,
                prefix.masked()
            ),
        ));
    }
    if let Some(j) = seen.iter().position(|p| *p == prefix) {
        return Err(c.err(&at("prefix"), format!("{prefix} is also aggregate[{j}]")));
    }
    if statics.contains(&prefix) {
        return Err(c.err(
            &at("prefix"),
            format!("{prefix} is also a [[static]] route"),
        ));
    }
    if !one_rib {
        return Err(c.err(
            &format!("aggregate[{i}]"),
            "aggregation across RIB threads is not supported yet: set router.pipeline = \"sequential\" (or threads = 1)",
        ));
    }
    Ok(Aggregate {
        prefix,
        summary_only: r.summary_only.unwrap_or(false),
        as_set: r.as_set.unwrap_or(false),
    })
}

/// Whether `pipeline` with `threads` runs one RIB (one `RibCore` seeing
/// every prefix).
pub(crate) fn one_rib(pipeline: Pipeline, threads: Option<u16>) -> bool {
    match pipeline {
        Pipeline::Sequential => true,
        Pipeline::Sharded => threads == Some(1),
        Pipeline::PerPeer | Pipeline::WorkerPool => false,
    }
}
