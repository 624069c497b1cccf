//! Nothing here: the loom models are the integration tests in `tests/`
//! (`publish.rs` for `lpm::publish`, `rss.rs` for `io::rss::spsc`), run
//! by `scripts/loom` with `RUSTFLAGS="--cfg loom"`. A package needs a
//! target of its own; this is it.
