//! The listener with a fake control handler and metrics source, over plain
//! HTTP/1.1 on loopback: /metrics bytes, the REST shapes and pagination,
//! the rate limit, /events, the page, and stopping on drop.

use mgmt::metrics::{MetricsSource, MetricsWriter};
use mgmt::proto::{
    BgpInfo, BgpState, Data, ErrorCode, MessageCounts, PathInfo, ProtoState, ProtocolInfo,
    ProtocolKind, Request, Response, RouteCounts, RouteInfo, StatusInfo,
};
use mgmt::server::ControlHandler;
use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

const ROUTES: usize = 7;

struct Fake;

impl ControlHandler for Fake {
    fn handle(&self, req: Request) -> Response {
        match req {
            Request::ShowStatus => Response::Ok(Data::Status(StatusInfo {
                version: "tesserad test".into(),
                router_id: "198.18.0.1".parse().unwrap(),
                server_time_ms: 2_000,
                started_ms: 1_000,
                last_reconfig_ms: None,
            })),
            Request::ShowProtocols { .. } => Response::Ok(Data::Protocols(vec![ProtocolInfo {
                name: "p1".into(),
                kind: ProtocolKind::Bgp,
                table: None,
                state: ProtoState::Up,
                since_ms: 1_000,
                info: None,
                last_error: None,
                description: None,
                routes: RouteCounts {
                    received: 7,
                    accepted: 7,
                    filtered: 0,
                    sent: 3,
                    preferred: 7,
                },
                channels: Vec::new(),
                bgp: Some(BgpInfo {
                    bgp_state: BgpState::Established,
                    neighbor_addr: "127.0.0.2".parse().unwrap(),
                    neighbor_port: None,
                    remote_as: 65001,
                    local_as: 65000,
                    neighbor_id: None,
                    source_addr: None,
                    hold_time: None,
                    keepalive_time: None,
                    hold_timer_left_ms: None,
                    keepalive_timer_left_ms: None,
                    local_capabilities: Vec::new(),
                    neighbor_capabilities: Vec::new(),
                    session: None,
                    messages_received: MessageCounts::default(),
                    messages_sent: MessageCounts::default(),
                }),
            }])),
            Request::ShowRoute {
                protocol: Some(p), ..
            }
            | Request::ShowRouteFiltered { protocol: p, .. }
            | Request::ShowRouteExport { protocol: p, .. }
            | Request::ShowRouteNoexport { protocol: p, .. }
                if p != "p1" =>
            {
                Response::error(ErrorCode::NotFound, "no such protocol")
            }
            Request::ShowRouteFiltered { .. } => Response::error(
                ErrorCode::Unsupported,
                "neighbor p1 does not keep the routes its import policy rejects: \
                 set soft_reconfiguration_inbound = true",
            ),
            Request::ShowRoute {
                count_only: true, ..
            } => Response::Ok(Data::RouteCount(Default::default())),
            Request::ShowRoute { .. }
            | Request::ShowRouteExport { .. }
            | Request::ShowRouteNoexport { .. } => Response::Ok(Data::Routes(
                (0..ROUTES)
                    .map(|i| {
                        let mut p = PathInfo::new("p1", 1_000);
                        p.best = true;
                        RouteInfo {
                            prefix: format!("198.18.{i}.0/24"),
                            paths: vec![p],
                        }
                    })
                    .collect(),
            )),
            _ => Response::error(ErrorCode::Unsupported, "no"),
        }
    }
}

struct Metrics;
impl MetricsSource for Metrics {
    fn render(&self, out: &mut MetricsWriter) {
        out.gauge("tessera_up", "Up.", 1.0);
    }
}

fn start(burst: u32) -> web::WebServer {
    let limits = web::Limits {
        rate_burst: burst,
        rate_per_second: 1,
        ..web::Limits::default()
    };
    web::serve_with(
        "127.0.0.1:0".parse().unwrap(),
        web::Sources {
            control: Arc::new(Fake),
            metrics: Arc::new(Metrics),
        },
        limits,
    )
    .unwrap()
}

fn get(addr: SocketAddr, path: &str) -> (u16, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    let code = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    (code, head.to_ascii_lowercase(), body.to_string())
}

fn json(addr: SocketAddr, path: &str) -> (u16, Value) {
    let (c, _, b) = get(addr, path);
    (
        c,
        serde_json::from_str(&b).unwrap_or_else(|e| panic!("{path}: {e}: {b}")),
    )
}

#[test]
fn metrics_are_the_same_bytes() {
    let srv = start(100);
    let (code, head, body) = get(srv.local_addr(), "/metrics");
    let mut w = MetricsWriter::new();
    Metrics.render(&mut w);
    assert_eq!(code, 200);
    assert!(
        head.contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert_eq!(body, w.into_string());
    assert_eq!(get(srv.local_addr(), "/nosuch").0, 404);
}

#[test]
fn rest_shapes_and_pages() {
    let srv = start(100);
    let a = srv.local_addr();
    let (c, s) = json(a, "/status");
    assert_eq!(c, 200);
    assert_eq!(s["status"]["router_id"], "198.18.0.1");
    assert_eq!(s["status"]["last_reboot"], "1970-01-01T00:00:01.000Z");
    let (_, p) = json(a, "/protocols/bgp");
    let p1 = &p["protocols"]["p1"];
    assert_eq!(p1["neighbor_address"], "127.0.0.2");
    assert_eq!(p1["routes"]["imported"], 7);
    assert_eq!(p1["routes"]["exported"], 3);
    assert_eq!(p1["connection"], "Established");
    let (_, r) = json(a, "/routes/protocol/p1?page=1&page_size=3");
    assert_eq!(r["pagination"]["total_results"], ROUTES);
    assert_eq!(r["pagination"]["total_pages"], 3);
    assert_eq!(r["routes"].as_array().unwrap().len(), 3);
    assert_eq!(r["routes"][0]["network"], "198.18.3.0/24");
    let (_, r) = json(a, "/routes/protocol/p1?page=2&page_size=3");
    assert_eq!(r["routes"].as_array().unwrap().len(), 1);
    assert_eq!(json(a, "/routes/protocol/nope").0, 404);
    assert_eq!(json(a, "/routes/prefix").0, 400);
    let (c, r) = json(a, "/routes/prefix?prefix=198.18.0.1");
    assert_eq!(c, 200);
    assert_eq!(r["routes"][0]["primary"], true);
    // Export: the handler's routes, paginated; filtered without the
    // pre-policy store: 501 saying what to set; noexport: the handler's
    // routes, paginated.
    let (c, r) = json(a, "/routes/export/p1?page=0&page_size=3");
    assert_eq!(c, 200, "{r}");
    assert_eq!(r["pagination"]["total_results"], ROUTES);
    assert_eq!(r["routes"].as_array().unwrap().len(), 3);
    assert_eq!(json(a, "/routes/export/nope").0, 404);
    assert_eq!(json(a, "/routes/filtered/nope").0, 404);
    let (c, e) = json(a, "/routes/filtered/p1");
    assert_eq!(c, 501);
    assert!(e["error"]
        .as_str()
        .unwrap()
        .contains("soft_reconfiguration_inbound"));
    let (c, r) = json(a, "/routes/noexport/p1?page=1&page_size=4");
    assert_eq!(c, 200, "{r}");
    assert_eq!(r["pagination"]["total_results"], ROUTES);
    assert_eq!(r["pagination"]["page"], 1);
    assert_eq!(r["routes"][0]["network"], "198.18.4.0/24");
    assert_eq!(json(a, "/routes/noexport/nope").0, 404);
    // Bad query values are a 400, not a crash.
    assert_eq!(get(a, "/routes/protocol/p1?page=-1").0, 400);
}

#[test]
fn burst_over_the_limit_is_429() {
    let srv = start(5);
    let a = srv.local_addr();
    let codes: Vec<u16> = (0..8).map(|_| get(a, "/status").0).collect();
    assert_eq!(&codes[..5], &[200; 5]);
    assert!(codes[5..].iter().all(|c| *c == 429), "{codes:?}");
    let (_, head, body) = get(a, "/status");
    assert!(head.contains("retry-after: 1"), "{head}");
    assert!(body.contains("rate limit"));
    // Not the page or the metrics.
    assert_eq!(get(a, "/metrics").0, 200);
    assert_eq!(get(a, "/").0, 200);
}

#[test]
fn page_and_events() {
    let srv = start(100);
    let a = srv.local_addr();
    let (c, head, body) = get(a, "/");
    assert_eq!(c, 200);
    assert!(head.contains("text/html"));
    assert!(body.contains("<script src=\"/app.js\">"));
    assert!(get(a, "/app.js").2.contains("EventSource"));
    let mut s = TcpStream::connect(a).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /events HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("\n\n")
        || !String::from_utf8_lossy(&got).contains("data:")
    {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&got));
        got.extend_from_slice(&buf[..n]);
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    assert!(text.contains("text/event-stream"), "{text}");
    assert!(text.contains("event: snapshot"), "{text}");
    let data = text.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    let v: Value = serde_json::from_str(data).unwrap();
    assert_eq!(v["peers"][0]["name"], "p1");
    assert_eq!(v["peers"][0]["accepted"], 7);
}

#[test]
fn drop_stops_the_listener() {
    let srv = start(100);
    let a = srv.local_addr();
    assert_eq!(get(a, "/metrics").0, 200);
    drop(srv);
    assert!(TcpStream::connect_timeout(&a, Duration::from_secs(1)).is_err());
}
