//! Routing policy: a declarative AST ([`ast`]), deserialised from the
//! daemon's TOML config, compiled once into a fast form.

pub mod ast;
mod community;
mod compile;
mod error;
mod eval;
mod peer;
pub mod prefix_list;
pub mod regex;

pub use community::{parse_ext, parse_large, parse_std, ExtPat, LargePat, StdPat};
pub use compile::{compile, compile_all, Policy};
pub use error::{ErrorKind, PolicyError, RegexError};
pub use eval::RouteCtx;
pub use peer::PeerPolicies;

/// The most copies of an ASN one `prepend` action adds.
pub const MAX_PREPEND: u8 = 64;
