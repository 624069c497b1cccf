//! tesserad's HTTP listener (`control.metrics`), served by axum:
//!
//! - `GET /metrics`: the Prometheus exposition, the same bytes as before;
//! - a read-only looking-glass REST API in birdwatcher's JSON shapes
//!   (`/status`, `/protocols/bgp`, `/routes/protocol/{id}`,
//!   `/routes/filtered/{id}`, `/routes/export/{id}`, `/routes/noexport/{id}`,
//!   `/routes/prefix?prefix=`), paginated, rate-limited per client address
//!   (token bucket; 429 when spent) — see docs/api.md;
//! - the live web view: `GET /` (HTML, script and style embedded with
//!   `include_str!`, no build step) and `GET /events`, server-sent events
//!   with one JSON snapshot per second.
//!
//! Every answer comes from the daemon's control handler (the CLI's
//! [`mgmt::proto::Request`]s) or its metrics source: no second way into
//! the RIB. Control calls run on tokio's blocking pool, at most
//! [`MAX_CONTROL_CALLS`] at once; a scrape is rendered on the listener's
//! own thread (the source's part that never waits) and takes the pool only
//! for the part that may wait (see [`MetricsSource`]). The conversions are pure
//! ([`birdwatcher`], [`snapshot`], [`ratelimit`]); this file is the edge.
//!
//! Our own code, and why: the birdwatcher shapes have no library; the
//! per-address token bucket is a few lines kept pure (time is an argument,
//! as the project's controllers are) where `governor` brings its own clock
//! and a dependency tree; the RFC 3339 formatter is one civil-date
//! routine instead of a date crate. HTTP, routing and SSE are axum/hyper.

pub mod birdwatcher;
pub mod ratelimit;
pub mod snapshot;

use axum::extract::{ConnectInfo, Path, Query, Request as HttpRequest, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use mgmt::metrics::{MetricsSource, MetricsWriter, CONTENT_TYPE};
use mgmt::proto::{Data, ErrorCode, Request, Response as CtlResponse};
use mgmt::server::ControlHandler;
use serde::Deserialize;
use serde_json::Value;
use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio::sync::{oneshot, Semaphore};
use tower::ServiceExt;

/// Control requests in flight at once from this listener.
pub const MAX_CONTROL_CALLS: usize = 4;
/// Live views (`/events` streams) open at once.
pub const MAX_EVENT_STREAMS: usize = 16;
/// REST rate limit per client address: a burst, then a steady rate.
pub const RATE_BURST: u32 = 20;
pub const RATE_PER_SECOND: u32 = 10;
/// Interval of the live view's snapshots.
pub const SNAPSHOT_EVERY: Duration = Duration::from_secs(1);

const INDEX_HTML: &str = include_str!("assets/index.html");
const APP_JS: &str = include_str!("assets/app.js");
const STYLE_CSS: &str = include_str!("assets/style.css");

/// What the listener serves from.
#[derive(Clone)]
pub struct Sources {
    pub control: Arc<dyn ControlHandler>,
    pub metrics: Arc<dyn MetricsSource>,
}

/// Connection limits: those of the former metrics server
/// ([`mgmt::metrics::METRICS_LIMITS`]: 8 at once, one more for a loopback
/// client, the request head within 10 s, 2 s in the reserved slot).
pub type ConnLimits = mgmt::server::Limits;

/// Limits of one listener (tests use small ones).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub rate_burst: u32,
    pub rate_per_second: u32,
    pub connections: ConnLimits,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            rate_burst: RATE_BURST,
            rate_per_second: RATE_PER_SECOND,
            connections: mgmt::metrics::METRICS_LIMITS,
        }
    }
}

struct App {
    src: Sources,
    calls: Semaphore,
    /// The part of a scrape that waits ([`MetricsSource::render_waiting`]):
    /// one at a time, apart from the control calls.
    scrapes: Semaphore,
    /// Bytes of the last `/metrics` answer (the next one's buffer).
    metrics_len: AtomicUsize,
    streams: Arc<Semaphore>,
    limiter: Mutex<ratelimit::RateLimiter>,
    epoch: Instant,
}

/// The running listener; dropping it stops it.
pub struct WebServer {
    local: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl WebServer {
    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }
}

impl Drop for WebServer {
    fn drop(&mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Binds `addr` (port 0 picks one) and serves on a thread of its own.
pub fn serve(addr: SocketAddr, src: Sources) -> io::Result<WebServer> {
    serve_with(addr, src, Limits::default())
}

/// [`serve`] with other limits.
pub fn serve_with(addr: SocketAddr, src: Sources, limits: Limits) -> io::Result<WebServer> {
    let listener = std::net::TcpListener::bind(addr)
        .map_err(|e| io::Error::new(e.kind(), format!("cannot bind {addr}: {e}")))?;
    let local = listener.local_addr()?;
    listener.set_nonblocking(true)?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .max_blocking_threads(MAX_CONTROL_CALLS + 2)
        .build()?;
    let app = Arc::new(App {
        src,
        calls: Semaphore::new(MAX_CONTROL_CALLS),
        scrapes: Semaphore::new(1),
        metrics_len: AtomicUsize::new(0),
        streams: Arc::new(Semaphore::new(MAX_EVENT_STREAMS)),
        limiter: Mutex::new(ratelimit::RateLimiter::new(
            limits.rate_burst,
            limits.rate_per_second,
        )),
        epoch: Instant::now(),
    });
    let conns = limits.connections;
    let (tx, rx) = oneshot::channel::<()>();
    let thread = std::thread::Builder::new()
        .name("web".into())
        .spawn(move || {
            rt.block_on(async move {
                let Ok(l) = tokio::net::TcpListener::from_std(listener) else {
                    return;
                };
                tokio::select! {
                    () = accept_loop(l, router(app), conns) => {}
                    _ = rx => {}
                }
            });
            rt.shutdown_timeout(Duration::from_secs(1));
        })?;
    Ok(WebServer {
        local,
        stop: Some(tx),
        thread: Some(thread),
    })
}

/// Accepts connections within the connection limits (one more slot, with
/// a shorter deadline, for a client on a loopback address) and serves each
/// with hyper: HTTP/1.1, one request per connection, the request head
/// within the slot's deadline.
async fn accept_loop(l: tokio::net::TcpListener, app: Router, lim: ConnLimits) {
    let normal = Arc::new(Semaphore::new(lim.max));
    let reserve = Arc::new(Semaphore::new(lim.reserved));
    loop {
        let Ok((stream, from)) = l.accept().await else {
            // EMFILE and the like: back off instead of spinning.
            tokio::time::sleep(Duration::from_millis(50)).await;
            continue;
        };
        let (permit, deadline) = match Arc::clone(&normal).try_acquire_owned() {
            Ok(p) => (p, lim.request),
            Err(_) if from.ip().is_loopback() => match Arc::clone(&reserve).try_acquire_owned() {
                Ok(p) => (p, lim.reserved_request),
                Err(_) => continue,
            },
            // Over the limit: close at once; the client retries.
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        tokio::spawn(async move {
            let _permit = permit;
            let svc =
                hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    let mut req = req.map(axum::body::Body::new);
                    req.extensions_mut().insert(ConnectInfo(from));
                    app.clone().oneshot(req)
                });
            let mut b = hyper::server::conn::http1::Builder::new();
            b.timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(deadline)
                .max_buf_size(mgmt::metrics::MAX_HEAD_BYTES)
                .title_case_headers(true)
                .keep_alive(false);
            let _ = b
                .serve_connection(hyper_util::rt::TokioIo::new(stream), svc)
                .await;
        });
    }
}

fn router(app: Arc<App>) -> Router {
    let rest = Router::new()
        .route("/status", get(status))
        .route("/protocols/bgp", get(protocols_bgp))
        .route("/routes/protocol/:id", get(routes_protocol))
        .route("/routes/received/:id", get(routes_protocol))
        .route("/routes/filtered/:id", get(routes_filtered))
        .route("/routes/export/:id", get(routes_export))
        .route("/routes/noexport/:id", get(routes_noexport))
        .route("/routes/prefix", get(routes_prefix))
        .layer(middleware::from_fn_with_state(app.clone(), rate_limit));
    Router::new()
        .route("/metrics", get(metrics))
        .route("/", get(|| async { html(INDEX_HTML) }))
        .route(
            "/app.js",
            get(|| async { asset("text/javascript; charset=utf-8", APP_JS) }),
        )
        .route(
            "/style.css",
            get(|| async { asset("text/css; charset=utf-8", STYLE_CSS) }),
        )
        .route("/events", get(events))
        .merge(rest)
        .with_state(app)
}

fn html(s: &'static str) -> Response {
    asset("text/html; charset=utf-8", s)
}

fn asset(ctype: &'static str, s: &'static str) -> Response {
    ([(header::CONTENT_TYPE, HeaderValue::from_static(ctype))], s).into_response()
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

async fn rate_limit(
    State(app): State<Arc<App>>,
    ConnectInfo(from): ConnectInfo<SocketAddr>,
    req: HttpRequest,
    next: Next,
) -> Response {
    let ok = app
        .limiter
        .lock()
        .map(|mut l| l.allow(from.ip(), app.epoch.elapsed()))
        .unwrap_or(false);
    if ok {
        return next.run(req).await;
    }
    let body = birdwatcher::error(VERSION, now_ms(), "rate limit exceeded");
    let mut r = (StatusCode::TOO_MANY_REQUESTS, Json(body)).into_response();
    r.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
    r
}

const VERSION: &str = concat!("tesserad ", env!("CARGO_PKG_VERSION"));

/// One control request on the blocking pool.
async fn ask(app: &App, req: Request) -> CtlResponse {
    let Ok(_permit) = app.calls.acquire().await else {
        return CtlResponse::error(ErrorCode::Internal, "shutting down");
    };
    let ctl = Arc::clone(&app.src.control);
    tokio::task::spawn_blocking(move || {
        catch_unwind(AssertUnwindSafe(|| ctl.handle(req)))
            .unwrap_or_else(|_| CtlResponse::error(ErrorCode::Internal, "control handler failed"))
    })
    .await
    .unwrap_or_else(|_| CtlResponse::error(ErrorCode::Internal, "control handler failed"))
}

fn fail(code: ErrorCode, message: &str) -> Response {
    let status = match code {
        ErrorCode::NotFound => StatusCode::NOT_FOUND,
        ErrorCode::BadRequest => StatusCode::BAD_REQUEST,
        ErrorCode::Unsupported => StatusCode::NOT_IMPLEMENTED,
        ErrorCode::Busy => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    };
    (status, Json(birdwatcher::error(VERSION, now_ms(), message))).into_response()
}

fn unexpected() -> Response {
    fail(ErrorCode::Internal, "unexpected answer from the daemon")
}

/// `/metrics`: [`MetricsSource::render`] on this thread (it never waits,
/// so the scrape needs no pool thread's wake-up and no CPU slice of a
/// second thread; the text goes into a buffer of the last scrape's size),
/// then, only for a source that [`MetricsSource::waits`], its
/// `render_waiting` on the blocking pool (one at a time, with a permit
/// of its own: a scrape never queues behind the REST API's control
/// calls). The render's wall and CPU time, the wait for the pool and the
/// size are logged at debug level (target `web::metrics`).
async fn metrics(State(app): State<Arc<App>>) -> Response {
    let t0 = Instant::now();
    let src = Arc::clone(&app.src.metrics);
    let cpu0 = base::thread_cpu_ns();
    let mut w = MetricsWriter::with_capacity(app.metrics_len.load(Ordering::Relaxed));
    let rendered = catch_unwind(AssertUnwindSafe(|| {
        src.render(&mut w);
        w
    }));
    let render_ns = t0.elapsed().as_nanos() as u64;
    let render_cpu_ns = base::thread_cpu_ns().saturating_sub(cpu0);
    let Ok(mut w) = rendered else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "metrics source failed\n").into_response();
    };
    let mut pool_ns = 0;
    if src.waits() {
        let Ok(_permit) = app.scrapes.acquire().await else {
            return StatusCode::SERVICE_UNAVAILABLE.into_response();
        };
        let t1 = Instant::now();
        let more = tokio::task::spawn_blocking(move || {
            catch_unwind(AssertUnwindSafe(|| {
                src.render_waiting(&mut w);
                w
            }))
        })
        .await;
        pool_ns = t1.elapsed().as_nanos() as u64;
        match more {
            Ok(Ok(x)) => w = x,
            _ => {
                return (StatusCode::INTERNAL_SERVER_ERROR, "metrics source failed\n")
                    .into_response()
            }
        }
    }
    let body = w.into_string();
    app.metrics_len.store(body.len(), Ordering::Relaxed);
    tracing::debug!(
        target: "web::metrics",
        render_us = render_ns / 1000,
        render_cpu_us = render_cpu_ns / 1000,
        waiting_us = pool_ns / 1000,
        bytes = body.len(),
        "scrape"
    );
    (
        [(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE))],
        body,
    )
        .into_response()
}

async fn status(State(app): State<Arc<App>>) -> Response {
    match ask(&app, Request::ShowStatus).await {
        CtlResponse::Ok(Data::Status(s)) => Json(birdwatcher::status(&s)).into_response(),
        CtlResponse::Error { code, message } => fail(code, &message),
        _ => unexpected(),
    }
}

async fn protocols_bgp(State(app): State<Arc<App>>) -> Response {
    let req = Request::ShowProtocols {
        all: true,
        name: None,
    };
    match ask(&app, req).await {
        CtlResponse::Ok(Data::Protocols(p)) => {
            Json(birdwatcher::protocols_bgp(VERSION, &p, now_ms())).into_response()
        }
        CtlResponse::Error { code, message } => fail(code, &message),
        _ => unexpected(),
    }
}

/// `?page=N&page_size=M`.
#[derive(Debug, Deserialize)]
struct PageQuery {
    #[serde(default)]
    page: usize,
    #[serde(default)]
    page_size: Option<usize>,
    #[serde(default)]
    prefix: Option<String>,
}

async fn route_answer(app: &App, req: Request, protocol: Option<&str>, q: &PageQuery) -> Response {
    match ask(app, req).await {
        CtlResponse::Ok(Data::Routes(r)) => {
            let now = now_ms();
            let all = birdwatcher::routes(&r, protocol, now);
            let size = q.page_size.unwrap_or(birdwatcher::PAGE_SIZE);
            let (page, meta) = birdwatcher::paginate(all, q.page, size);
            Json(birdwatcher::routes_page(VERSION, now, page, meta)).into_response()
        }
        CtlResponse::Error { code, message } => fail(code, &message),
        _ => unexpected(),
    }
}

/// Paths accepted from a protocol (birdwatcher's `routes/protocol`, BIRD's
/// `show route all protocol ID`).
async fn routes_protocol(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    // An unknown neighbour is a 404, not an empty list.
    let known = Request::ShowProtocols {
        all: false,
        name: Some(id.clone()),
    };
    match ask(&app, known).await {
        CtlResponse::Ok(Data::Protocols(p)) if !p.is_empty() => {}
        CtlResponse::Error { code, message } => return fail(code, &message),
        _ => return fail(ErrorCode::NotFound, &format!("no protocol {id}")),
    }
    let req = Request::ShowRoute {
        prefix: None,
        longest_match: false,
        all: true,
        protocol: Some(id.clone()),
        count_only: false,
        multicast: false,
    };
    route_answer(&app, req, Some(&id), &q).await
}

/// Longest match for an address or prefix, all paths, the best one
/// `primary` (BIRD's `show route for X all`).
async fn routes_prefix(State(app): State<Arc<App>>, Query(q): Query<PageQuery>) -> Response {
    let Some(prefix) = q.prefix.clone().filter(|p| !p.trim().is_empty()) else {
        return fail(ErrorCode::BadRequest, "missing ?prefix=ADDR or PREFIX");
    };
    let req = Request::ShowRoute {
        prefix: Some(prefix.trim().to_string()),
        longest_match: true,
        all: true,
        protocol: None,
        count_only: false,
        multicast: false,
    };
    route_answer(&app, req, None, &q).await
}

/// Routes the neighbour sent that its import policy rejected, as received
/// (birdwatcher's `routes/filtered`, BIRD's `show route filtered
/// protocol ID all`). Needs `soft_reconfiguration_inbound = true` on that
/// neighbour; otherwise `501` with an `error` that says so.
async fn routes_filtered(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let req = Request::ShowRouteFiltered {
        protocol: id,
        all: true,
    };
    route_answer(&app, req, None, &q).await
}

/// What tesserad sends the neighbour, from its Adj-RIB-Out (birdwatcher's
/// `routes/export`, BIRD's `show route export ID all`).
async fn routes_export(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    // Each path names its source (the Loc-RIB best path's protocol), not
    // the neighbour it is sent to: no filter by protocol here.
    let req = Request::ShowRouteExport {
        protocol: id,
        all: true,
    };
    route_answer(&app, req, None, &q).await
}

/// The Loc-RIB best paths tesserad does not send the neighbour because
/// the export decision holds them back: its export policy, NO_EXPORT /
/// NO_ADVERTISE and the other propagation rules (birdwatcher's
/// `routes/noexport`, BIRD's `show route noexport ID all`). Paths learned
/// from that neighbour are not listed (never sent back to it).
async fn routes_noexport(
    State(app): State<Arc<App>>,
    Path(id): Path<String>,
    Query(q): Query<PageQuery>,
) -> Response {
    let req = Request::ShowRouteNoexport {
        protocol: id,
        all: true,
    };
    route_answer(&app, req, None, &q).await
}

fn resident_bytes() -> Option<u64> {
    // Second field of /proc/self/statm: resident pages (4 KiB on the
    // platforms tesserad runs on).
    let s = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = s.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

async fn take_snapshot(app: &App) -> Value {
    let protos = match ask(
        app,
        Request::ShowProtocols {
            all: true,
            name: None,
        },
    )
    .await
    {
        CtlResponse::Ok(Data::Protocols(p)) => p,
        _ => Vec::new(),
    };
    let count = match ask(
        app,
        Request::ShowRoute {
            prefix: None,
            longest_match: false,
            all: false,
            protocol: None,
            count_only: true,
            multicast: false,
        },
    )
    .await
    {
        CtlResponse::Ok(Data::RouteCount(c)) => Some(c),
        _ => None,
    };
    let src = Arc::clone(&app.src.metrics);
    let text = tokio::task::spawn_blocking(move || {
        let mut w = MetricsWriter::new();
        catch_unwind(AssertUnwindSafe(|| {
            src.render(&mut w);
            if src.waits() {
                src.render_waiting(&mut w);
            }
        }))
        .map(|()| w.into_string())
        .unwrap_or_default()
    })
    .await
    .unwrap_or_default();
    let dp = match ask(app, Request::ShowDataplane).await {
        CtlResponse::Ok(Data::Dataplane(d)) => Some(*d),
        _ => None,
    };
    let bfd = match dp.as_ref().and_then(|d| d.cluster.as_ref()) {
        Some(_) => match ask(app, Request::ShowBfd).await {
            CtlResponse::Ok(Data::Bfd(b)) => b,
            _ => Vec::new(),
        },
        None => Vec::new(),
    };
    snapshot::snapshot(
        now_ms(),
        &protos,
        count.as_ref(),
        &text,
        resident_bytes(),
        dp.as_ref(),
        &bfd,
    )
}

async fn events(State(app): State<Arc<App>>) -> Response {
    let Ok(permit) = Arc::clone(&app.streams).try_acquire_owned() else {
        return fail(ErrorCode::Busy, "too many live views open");
    };
    let stream = futures_util::stream::unfold(
        (app, permit, None::<tokio::time::Interval>),
        |(app, permit, iv)| async move {
            let mut iv = iv.unwrap_or_else(|| {
                let mut i = tokio::time::interval(SNAPSHOT_EVERY);
                i.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                i
            });
            iv.tick().await;
            let snap = take_snapshot(&app).await;
            let ev = Event::default().event("snapshot").data(snap.to_string());
            Some((Ok::<_, Infallible>(ev), (app, permit, Some(iv))))
        },
    );
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}
