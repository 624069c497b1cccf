//! Routing policy: a declarative AST ([`ast`]), deserialised from the
//! daemon's TOML config, compiled once into a fast form.

pub mod ast;
