//! The policy AST as written in the config (`[policy.NAME]` tables). The
//! config crate deserialises these types directly; `bgp-policy` compiles
//! them. Field names are the TOML keys.

use serde::Deserialize;

/// A named policy: terms evaluated in order; every term whose `match`
/// holds runs its edits; the first one with `action` accept/reject stops
/// evaluation. When no term decides, `default` applies. The full language
/// is described in the crate docs.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicyDef {
    /// The terms, evaluated in order.
    #[serde(default)]
    pub term: Vec<TermDef>,
    /// "accept" or "reject"; when absent, reject. (Whether a peer with no
    /// policy at all rejects, RFC 8212, is the daemon's decision.)
    #[serde(default)]
    pub default: Option<String>,
}

/// One term: all present match conditions must hold (AND); within a list
/// condition any entry may match (OR).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TermDef {
    /// A name, shown in errors and diagnostics; unnamed terms are known by index.
    #[serde(default)]
    pub name: Option<String>,
    /// `match`: the conditions; none means every route.
    #[serde(default, rename = "match")]
    pub matches: MatchDef,
    /// `then`: the edits and the verdict.
    #[serde(default)]
    pub then: ActionDef,
}

/// Conditions (see docs/config.md for the syntax of each string).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MatchDef {
    /// Prefix list entries: "10.0.0.0/8" (exact), "10.0.0.0/8 le 24",
    /// "10.0.0.0/8 ge 16", "2001:db8::/32 ge 48 le 64", "10.0.0.0/8+"
    /// (or longer). Host bits beyond the length are an error.
    #[serde(default)]
    pub prefix: Vec<String>,
    /// AS-path regular expression over ASNs (FRR/Cisco style: `^65001_`,
    /// `_3356$`, `^$`, `.*`, `(a|b)`, `[0-9]` digit classes, `<lo-hi>`
    /// ASN ranges); see `bgp_policy::regex`.
    #[serde(default)]
    pub as_path: Option<String>,
    /// The origin AS (last ASN of a path ending in an AS_SEQUENCE) is one of these.
    #[serde(default)]
    pub origin_as: Vec<u32>,
    /// "5", "<= 10", ">= 2", "< 3", "> 3", "== 4", "2-5".
    #[serde(default)]
    pub as_path_len: Option<String>,
    /// Standard communities "65000:1", "65000:*", "*:100-199", well-known
    /// names ("no-export", "no-advertise", "no-export-subconfed",
    /// "no-peer", "blackhole", "graceful-shutdown", "accept-own",
    /// "llgr-stale", "no-llgr").
    #[serde(default)]
    pub community: Vec<String>,
    /// Extended communities "rt:65000:1", "soo:192.0.2.1:7",
    /// "rt:4200000000:5", "rt:65000:*", or "0x" + 16 hex digits.
    #[serde(default)]
    pub ext_community: Vec<String>,
    /// Large communities "65000:1:2" (any field may be `*` or `LO-HI`).
    #[serde(default)]
    pub large_community: Vec<String>,
    /// Next hop addresses or prefixes "192.0.2.0/24", "2001:db8::1".
    #[serde(default)]
    pub next_hop: Vec<String>,
    /// Neighbour addresses or prefixes: on import the peer the route came
    /// from, on export the peer it goes to.
    #[serde(default)]
    pub neighbor: Vec<String>,
    /// "ipv4" or "ipv6".
    #[serde(default)]
    pub afi: Option<String>,
    /// RPKI origin validation state (RFC 6811): "valid", "invalid" or
    /// "not-found".
    #[serde(default)]
    pub rpki: Option<String>,
    /// ASPA AS_PATH verification state (draft-ietf-sidrops-aspa-verification):
    /// "valid", "invalid" or "unknown". Routes that are not verified
    /// (no `role` towards their neighbour, iBGP, our own) match none.
    #[serde(default)]
    pub aspa: Option<String>,
}

/// Actions, applied in this order: local_pref, med, community_set,
/// community_remove, community_add, ext/large removals and additions,
/// prepend, next_hop; then the verdict. Additions and `community_set`
/// take exact values; removals take patterns as in [`MatchDef`].
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ActionDef {
    /// "accept", "reject", or absent (continue with the next term, which
    /// sees this term's edits).
    #[serde(default)]
    pub action: Option<String>,
    /// Set LOCAL_PREF.
    #[serde(default)]
    pub local_pref: Option<u32>,
    /// A value, or "+N"/"-N" relative (saturating; no MED counts as 0).
    #[serde(default)]
    pub med: Option<String>,
    /// Standard communities to add (exact values).
    #[serde(default)]
    pub community_add: Vec<String>,
    /// Standard community patterns to remove.
    #[serde(default)]
    pub community_remove: Vec<String>,
    /// Replaces all standard communities; `[]` removes them.
    #[serde(default)]
    pub community_set: Option<Vec<String>>,
    /// Extended communities to add (exact values).
    #[serde(default)]
    pub ext_community_add: Vec<String>,
    /// Extended community patterns to remove.
    #[serde(default)]
    pub ext_community_remove: Vec<String>,
    /// Large communities to add (exact values).
    #[serde(default)]
    pub large_community_add: Vec<String>,
    /// Large community patterns to remove.
    #[serde(default)]
    pub large_community_remove: Vec<String>,
    /// Prepend this many copies (at most 64) of the local AS (or
    /// `prepend_as`).
    #[serde(default)]
    pub prepend: Option<u8>,
    /// The AS that `prepend` prepends, instead of the local AS.
    #[serde(default)]
    pub prepend_as: Option<u32>,
    /// An address, or "self" (our address on the session).
    #[serde(default)]
    pub next_hop: Option<String>,
}
