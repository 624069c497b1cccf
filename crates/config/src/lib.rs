//! tesserad configuration (see docs/config.md).
