//! Routing policy for Tessera: a declarative AST ([`ast`]), deserialised
//! from the daemon's TOML config, compiled once by [`compile`] /
//! [`compile_all`] into a [`Policy`] that the RIB thread runs per route
//! ([`Policy::import`], [`Policy::export`], or the per-peer
//! [`PeerPolicies`] adapter for `bgp_rib`'s hooks).
//!
//! # Semantics
//!
//! A policy is a list of terms and a default. For each route the terms run
//! in order:
//!
//! * a term *matches* when every condition it lists holds (AND); a term
//!   without conditions matches every route. Within one list condition
//!   (`prefix`, `community`, `neighbor`, ...) any entry may match (OR);
//! * a matching term applies its edits (`then.*` other than `action`), then
//!   its `action`: `"accept"` or `"reject"` ends the evaluation (**the first
//!   decisive term wins**); without an `action` evaluation continues with
//!   the next term, which sees the edits;
//! * when no term decides, `default` applies: `"accept"` (keeping edits made
//!   on the way) or `"reject"`. **An absent `default` rejects.**
//! * a rejecting term's edits are discarded with the route.
//!
//! Import policy edits the route as stored in the Adj-RIB-In/Loc-RIB;
//! export policy edits only what one peer is sent. On import `neighbor` is
//! the peer the route came from; on export, the peer it is going to.
//! Export policy runs after the propagation rules of `bgp_rib::Propagation`,
//! and the UPDATE encoder still applies per-session rewriting afterwards
//! (prepending the local AS and next-hop-self towards eBGP, dropping
//! LOCAL_PREF towards eBGP), so `prepend = 2` on an eBGP export gives three
//! copies of the local AS in total, as in FRR and Cisco.
//!
//! Whether a peer without any policy accepts everything or, for eBGP,
//! rejects everything (RFC 8212) is the daemon's choice, not this crate's:
//! in [`PeerPolicies`] `None` accepts, and [`Policy::constant`] gives a
//! reject-all policy.
//!
//! # Conditions (`[term.match]`)
//!
//! | key | form | holds when |
//! |-----|------|------------|
//! | `prefix` | list of `"ADDR/LEN"`, `"ADDR/LEN le N"`, `"ADDR/LEN ge N"`, `"ADDR/LEN ge N le M"`, `"ADDR/LEN+"` | the route's prefix lies within ADDR/LEN and its length is in `ge..=le` (defaults: exactly LEN; only `le`: LEN..=le; only `ge`: ge..=32/128; `+`: LEN..=32/128); see [`prefix_list`] |
//! | `as_path` | FRR-style expression over ASNs | see [`regex`] |
//! | `origin_as` | list of ASNs | the last ASN of a path that ends in an AS_SEQUENCE is listed (paths ending in an AS_SET and empty paths have no origin AS) |
//! | `as_path_len` | `"N"`, `"<= N"`, `">= N"`, `"< N"`, `"> N"`, `"== N"`, `"N-M"` | the RFC 4271 §9.1.2.2 a length (an AS_SET counts 1, confederation segments 0) is in range |
//! | `community` | list of `"ASN:VALUE"` (`*` or `LO-HI` per field) or well-known names | the route carries a matching standard community |
//! | `ext_community` | list of `"rt:X:Y"`, `"soo:X:Y"` (X an ASN or IPv4 address, `*` per field), `"0x"`+16 hex digits | the route carries a matching extended community |
//! | `large_community` | list of `"G:L1:L2"` (`*` or `LO-HI` per field) | the route carries a matching large community |
//! | `next_hop` | list of addresses or prefixes | the next hop (the global address for IPv6) lies within one |
//! | `neighbor` | list of addresses or prefixes | the session's neighbour address lies within one |
//! | `afi` | `"ipv4"` or `"ipv6"` | the prefix is of that family |
//! | `rpki` | `"valid"`, `"invalid"` or `"not-found"` | the route's RFC 6811 origin validation state ([`RouteCtx::rpki`], filled by the caller) is this one |
//! | `aspa` | `"valid"`, `"invalid"` or `"unknown"` | the route's ASPA AS_PATH verification state ([`RouteCtx::aspa`], filled by the caller; unverified routes match none) is this one |
//!
//! Community syntax in detail: [`StdPat`], [`ExtPat`], [`LargePat`].
//!
//! # Actions (`[term.then]`)
//!
//! Applied in this order, then the verdict:
//!
//! | key | effect |
//! |-----|--------|
//! | `local_pref = N` | set LOCAL_PREF |
//! | `med = "N" / "+N" / "-N"` | set MED, or add/subtract saturating at 0 and 2^32-1 (a route without MED counts as 0) |
//! | `community_set = [...]` | replace the standard communities (`[]` removes them) |
//! | `community_remove = [...]` | remove those matching any pattern |
//! | `community_add = [...]` | add those not yet present |
//! | `ext_community_remove` / `ext_community_add` | the same for extended communities |
//! | `large_community_remove` / `large_community_add` | the same for large communities |
//! | `prepend = N`, `prepend_as = ASN` | put N (at most [`MAX_PREPEND`]) copies of the local AS (or `prepend_as`) in front of the path, behind any leading confederation segments |
//! | `next_hop = "ADDR" / "self"` | set the next hop; `self` is [`RouteCtx::local_addr`]. An IPv4 next hop is not applied to an IPv6 route; an IPv6 one may carry IPv4 (RFC 8950) |
//! | `action = "accept" / "reject"` | decide; absent: continue |
//!
//! An edit that changes nothing (adding a community already there, setting
//! the current MED) leaves the route untouched, so the RIB keeps sharing
//! its interned attribute set.
//!
//! # Compiled form and cost
//!
//! Strings are parsed once. Prefix lists become a binary trie per family
//! with per-node length masks (one walk of at most the prefix length); AS
//! path expressions become a bitset NFA over ASN tokens; communities become
//! numeric ranges or (value, mask) pairs; origin ASNs a sorted array.
//! Matching allocates nothing: export reads the interned set's wire bytes in
//! place (one scan for AS_PATH and the community attributes) and copies it
//! into an `AttrsBuilder` only when a matching term edits. Errors
//! ([`PolicyError`]) name the policy, term (0-based index and name), field,
//! list index, the offending text and the reason.

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

mod analysis;
pub mod ast;
mod community;
mod compile;
mod error;
mod eval;
mod peer;
pub mod prefix_list;
pub mod regex;

pub use analysis::GroupIdentity;
pub use community::{parse_ext, parse_large, parse_std, ExtPat, LargePat, StdPat};
pub use compile::{compile, compile_all, Policy};
pub use error::{ErrorKind, PolicyError, RegexError};
pub use eval::{
    aspa_path_of_builder, aspa_path_of_set, origin_of_builder, origin_of_set, RouteCtx,
};
pub use peer::PeerPolicies;
pub use rov::{AspaState, RovState};

/// The most copies of an ASN one `prepend` action adds.
pub const MAX_PREPEND: u8 = 64;
