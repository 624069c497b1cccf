//! Daemon assembly: the tokio runtime for sessions, the RIB thread, the
//! control socket, `/metrics`, signals and reload.

pub mod control;
pub mod metrics;
pub mod query;
