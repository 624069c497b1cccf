//! The measurement hook: a leaf module, so the core and the policy
//! runner can both time their work without importing each other.

/// A nanosecond counter for measurements only. The core's decisions never
/// depend on it; with [`NoMeter`] (the default) the core measures nothing
/// and stays deterministic.
pub trait Meter: Send {
    /// Nanoseconds since an arbitrary origin, monotonic.
    fn now_ns(&self) -> u64;
}

/// Measures nothing.
#[derive(Copy, Clone, Debug, Default)]
pub struct NoMeter;

impl Meter for NoMeter {
    fn now_ns(&self) -> u64 {
        0
    }
}
