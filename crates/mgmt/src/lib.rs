//! Management plane: CLI protocol, rendering, metrics.
