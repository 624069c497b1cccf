//! Routing policy: a declarative AST ([`ast`]), deserialised from the
//! daemon's TOML config, compiled once into a fast form.

pub mod ast;
mod error;
pub mod prefix_list;
pub mod regex;

pub use error::{ErrorKind, PolicyError, RegexError};

/// The most copies of an ASN one `prepend` action adds.
pub const MAX_PREPEND: u8 = 64;
