//! The policy AST as written in the config (`[policy.NAME]` tables). The
//! config crate deserialises these types directly; `bgp-policy` compiles
//! them. Field names are the TOML keys.

use serde::Deserialize;

/// A named policy: terms evaluated in order; the first term whose `match`
/// holds runs its actions; a term ending in accept/reject stops evaluation.
/// When no term decides, `default` applies.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicyDef {
    #[serde(default)]
    pub term: Vec<TermDef>,
    /// "accept" or "reject"; when absent, reject (RFC 8212 for eBGP).
    #[serde(default)]
    pub default: Option<String>,
}

/// One term: all present match conditions must hold (AND).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct TermDef {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, rename = "match")]
    pub matches: MatchDef,
    #[serde(default)]
    pub then: ActionDef,
}

/// Conditions (see docs/config.md for the syntax of each string).
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct MatchDef {
    /// Prefix list entries: "10.0.0.0/8 le 24", "2001:db8::/32 ge 48 le 64".
    #[serde(default)]
    pub prefix: Vec<String>,
    /// AS-path regular expression (FRR/Cisco style: `^65001_`, `_3356$`).
    #[serde(default)]
    pub as_path: Option<String>,
    #[serde(default)]
    pub origin_as: Vec<u32>,
    /// "5", "<= 10", ">= 2".
    #[serde(default)]
    pub as_path_len: Option<String>,
    /// Standard communities "65000:1", "65000:*", well-known names.
    #[serde(default)]
    pub community: Vec<String>,
    /// Extended communities "rt:65000:1", "soo:65000:1".
    #[serde(default)]
    pub ext_community: Vec<String>,
    /// Large communities "65000:1:2" (any field may be `*`).
    #[serde(default)]
    pub large_community: Vec<String>,
    /// Next hop prefixes "192.0.2.0/24".
    #[serde(default)]
    pub next_hop: Vec<String>,
    /// Neighbour addresses or prefixes.
    #[serde(default)]
    pub neighbor: Vec<String>,
    /// "ipv4" or "ipv6".
    #[serde(default)]
    pub afi: Option<String>,
}

/// Actions, applied in this order: modifications, then the verdict.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ActionDef {
    /// "accept", "reject", or absent (continue with the next term).
    #[serde(default)]
    pub action: Option<String>,
    #[serde(default)]
    pub local_pref: Option<u32>,
    /// A value, or "+N"/"-N" relative.
    #[serde(default)]
    pub med: Option<String>,
    #[serde(default)]
    pub community_add: Vec<String>,
    #[serde(default)]
    pub community_remove: Vec<String>,
    #[serde(default)]
    pub community_set: Option<Vec<String>>,
    #[serde(default)]
    pub ext_community_add: Vec<String>,
    #[serde(default)]
    pub ext_community_remove: Vec<String>,
    #[serde(default)]
    pub large_community_add: Vec<String>,
    #[serde(default)]
    pub large_community_remove: Vec<String>,
    /// Prepend this many copies of the local AS (or `prepend_as`).
    #[serde(default)]
    pub prepend: Option<u8>,
    #[serde(default)]
    pub prepend_as: Option<u32>,
    /// An address, or "self".
    #[serde(default)]
    pub next_hop: Option<String>,
}
