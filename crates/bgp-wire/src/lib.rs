//! Zero-copy BGP-4 codec. See the crate README and ARCHITECTURE.md.
