//! What the HTTP listener needs from the metrics side: the source trait,
//! the content type and the listener's connection limits. The listener
//! itself is the `web` crate (axum/hyper), which serves `/metrics` beside
//! the looking-glass REST API and the web view.

use super::MetricsWriter;
use crate::server::Limits;
use std::time::Duration;

/// Content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Largest request head (request line and headers) accepted.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// Concurrent connections to the HTTP listener.
pub const MAX_CONNECTIONS: usize = 8;
/// Deadline for the whole request head.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The HTTP listener's limits: one more slot for a client on a loopback
/// address (a local collector or operator) when remote ones hold all.
pub const METRICS_LIMITS: Limits = Limits {
    max: MAX_CONNECTIONS,
    reserved: 1,
    request: TIMEOUT,
    reserved_request: Duration::from_secs(2),
};

/// Fills a scrape, in two parts.
///
/// [`Self::render`] runs on the HTTP listener's own thread for every
/// scrape, so it must never wait for another thread or task: it reads
/// what their owners publish (atomics, snapshots swapped into a slot).
/// Handing it to a pool thread instead cost a scrape a second thread's
/// wake-up and its wait for a CPU, which on a loaded machine was most of
/// its latency (issue 17, docs/BENCHMARKS.md).
///
/// The families that have to ask another task or thread go in
/// [`Self::render_waiting`]: when [`Self::waits`] is true, the listener
/// runs it after `render` on its blocking pool and appends its text.
pub trait MetricsSource: Send + Sync + 'static {
    /// The families that never wait (called on the listener's thread).
    fn render(&self, out: &mut MetricsWriter);

    /// Whether [`Self::render_waiting`] has anything to write.
    fn waits(&self) -> bool {
        false
    }

    /// The families that may wait for another task or thread, written
    /// after [`Self::render`]'s (called on a blocking-pool thread).
    fn render_waiting(&self, _out: &mut MetricsWriter) {}
}
