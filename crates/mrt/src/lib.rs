//! Streaming MRT reader and writer.
