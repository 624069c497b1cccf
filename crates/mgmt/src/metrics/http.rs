//! A minimal HTTP/1.1 server for Prometheus scrapes: `GET /metrics` (or
//! `HEAD`) answers the exposition, any other path 404, any other method
//! 405. One request per connection (`Connection: close`), request head
//! bounded to [`MAX_HEAD_BYTES`], read/write timeouts, at most
//! [`MAX_CONNECTIONS`] connections at once. Deliberately not a general web
//! server: scrapes are a few per minute from a known collector.

use super::MetricsWriter;
use crate::deadline::Deadline;
use crate::server::{spawn_accept_loop, take_slot, Limits, ServerHandle};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";
/// Largest request head (request line and headers) accepted.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;
/// Concurrent scrape connections.
pub const MAX_CONNECTIONS: usize = 8;
/// Deadline for the whole request head, and write timeout.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The metrics server's limits: one more slot for a client on a loopback
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

/// Serves `GET /metrics` on `addr` (port 0 picks a free port; see
/// [`ServerHandle::local_addr`]).
pub fn serve_metrics(addr: SocketAddr, source: Arc<dyn MetricsSource>) -> io::Result<ServerHandle> {
    serve_metrics_with(addr, source, METRICS_LIMITS)
}

/// [`serve_metrics`] with other limits (tests use short deadlines).
pub fn serve_metrics_with(
    addr: SocketAddr,
    source: Arc<dyn MetricsSource>,
    limits: Limits,
) -> io::Result<ServerHandle> {
    let listener = TcpListener::bind(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot bind metrics on {addr}: {e}")))?;
    let local = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let stop = Arc::new(AtomicBool::new(false));
    let active = Arc::new(AtomicUsize::new(0));
    let reserve = Arc::new(AtomicUsize::new(0));
    let thread = spawn_accept_loop(
        "mgmt-metrics",
        Arc::clone(&stop),
        move || listener.accept(),
        move |(stream, from): (TcpStream, SocketAddr)| {
            // Over the limit: close at once; the scraper retries.
            let loopback = || from.ip().is_loopback();
            let Some((slot, request)) = take_slot(&active, &reserve, &limits, loopback) else {
                return;
            };
            let src = Arc::clone(&source);
            let spawned = thread::Builder::new()
                .name("mgmt-metrics-conn".into())
                .spawn(move || {
                    let _slot = slot;
                    let _ = serve_conn(stream, &*src, request);
                });
            drop(spawned);
        },
    )?;
    Ok(ServerHandle::tcp(stop, thread, local))
}

/// Reads until the end of the request head (`\r\n\r\n`, or `\n\n` from
/// lenient clients). `None`: too long or closed early.
fn read_head(s: &mut impl Read) -> io::Result<Option<Vec<u8>>> {
    let mut head = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let n = match s.read(&mut chunk) {
            Ok(0) => return Ok(None),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        head.extend_from_slice(chunk.get(..n).unwrap_or_default());
        if head.windows(4).any(|w| w == b"\r\n\r\n") || head.windows(2).any(|w| w == b"\n\n") {
            return Ok(Some(head));
        }
        if head.len() > MAX_HEAD_BYTES {
            return Ok(None);
        }
    }
}

/// Status line, content type and body for a request head.
pub(crate) fn route(head: &[u8], source: &dyn MetricsSource) -> (u16, &'static str, String, bool) {
    let text = String::from_utf8_lossy(head);
    let mut parts = text.lines().next().unwrap_or("").split_whitespace();
    let (method, target, version) = (parts.next(), parts.next(), parts.next());
    let plain = "text/plain; charset=utf-8";
    let (Some(method), Some(target), Some(version)) = (method, target, version) else {
        return (400, plain, "bad request\n".into(), false);
    };
    if !version.starts_with("HTTP/1.") {
        return (400, plain, "bad request\n".into(), false);
    }
    let head_only = method == "HEAD";
    if method != "GET" && !head_only {
        return (405, plain, "method not allowed\n".into(), false);
    }
    let path = target.split('?').next().unwrap_or("");
    if path != "/metrics" {
        return (404, plain, "not found; try /metrics\n".into(), head_only);
    }
    let mut w = MetricsWriter::new();
    match catch_unwind(AssertUnwindSafe(|| source.render(&mut w))) {
        Ok(()) => (200, CONTENT_TYPE, w.into_string(), head_only),
        Err(_) => (500, plain, "metrics source failed\n".into(), head_only),
    }
}

fn reason(code: u16) -> &'static str {
    match code {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        _ => "Internal Server Error",
    }
}

fn serve_conn(mut s: TcpStream, source: &dyn MetricsSource, request: Duration) -> io::Result<()> {
    s.set_nonblocking(false)?;
    let head = read_head(&mut Deadline::new(&s, request))?;
    s.set_write_timeout(Some(TIMEOUT))?;
    let (code, ctype, body, head_only) = match head {
        Some(h) => route(&h, source),
        None => (
            400,
            "text/plain; charset=utf-8",
            "bad request\n".into(),
            false,
        ),
    };
    let mut resp = format!(
        "HTTP/1.1 {code} {}\r\nContent-Type: {ctype}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reason(code),
        body.len()
    );
    if code == 405 {
        resp.push_str("Allow: GET, HEAD\r\n");
    }
    resp.push_str("\r\n");
    s.write_all(resp.as_bytes())?;
    if !head_only {
        s.write_all(body.as_bytes())?;
    }
    s.flush()?;
    if code == 400 {
        // Closing with unread input makes the kernel send RST, which can
        // destroy the response before the client reads it: half-close and
        // drain briefly first (a "lingering close").
        s.shutdown(std::net::Shutdown::Write)?;
        s.set_read_timeout(Some(Duration::from_millis(200)))?;
        let mut sink = [0u8; 4096];
        let mut left = 64 * 1024usize;
        while left > 0 {
            match s.read(&mut sink) {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    struct One;
    impl MetricsSource for One {
        fn render(&self, out: &mut MetricsWriter) {
            out.gauge("up", "1", 1.0);
        }
    }
    struct Boom;
    impl MetricsSource for Boom {
        fn render(&self, _out: &mut MetricsWriter) {
            panic!("source bug");
        }
    }

    #[test]
    fn routing() {
        let r = |h: &[u8]| {
            let (c, t, b, ho) = route(h, &One);
            (c, t, b, ho)
        };
        let (c, t, b, _) = r(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!((c, t), (200, CONTENT_TYPE));
        assert!(b.ends_with("up 1\n"));
        assert_eq!(r(b"GET /metrics?x=1 HTTP/1.0\r\n\r\n").0, 200);
        let (c, _, _, head_only) = r(b"HEAD /metrics HTTP/1.1\r\n\r\n");
        assert_eq!((c, head_only), (200, true));
        assert_eq!(r(b"GET / HTTP/1.1\r\n\r\n").0, 404);
        assert_eq!(r(b"POST /metrics HTTP/1.1\r\n\r\n").0, 405);
        assert_eq!(r(b"GET /metrics\r\n\r\n").0, 400);
        assert_eq!(r(b"\xff\xfe garbage").0, 400);
        assert_eq!(r(b"").0, 400);
        assert_eq!(route(b"GET /metrics HTTP/1.1\r\n\r\n", &Boom).0, 500);
    }
}
