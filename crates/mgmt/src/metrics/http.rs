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

/// Fills a scrape. Called on the HTTP connection thread for every scrape.
pub trait MetricsSource: Send + Sync + 'static {
    fn render(&self, out: &mut MetricsWriter);
}
