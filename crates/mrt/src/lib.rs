//! Streaming MRT reader and writer.
pub mod bgpdump;
