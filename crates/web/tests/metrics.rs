//! `/metrics` over a real TCP socket on 127.0.0.1, parsed back by the
//! exposition checker; the listener's connection limits and request-head
//! deadline (moved here with the listener from mgmt's own HTTP server).

use mgmt::metrics::check;
use mgmt::metrics::{LatencyHistogram, MetricType, MetricsSource, MetricsWriter};
use mgmt::proto::{ErrorCode, Request, Response};
use mgmt::server::ControlHandler;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

struct NoControl;
impl ControlHandler for NoControl {
    fn handle(&self, _req: Request) -> Response {
        Response::error(ErrorCode::Unsupported, "not in this test")
    }
}

fn serve_with(src: Arc<Source>, connections: mgmt::server::Limits) -> web::WebServer {
    let limits = web::Limits {
        connections,
        ..web::Limits::default()
    };
    let sources = web::Sources {
        control: Arc::new(NoControl),
        metrics: src,
    };
    web::serve_with("127.0.0.1:0".parse().unwrap(), sources, limits).unwrap()
}

fn serve_metrics(src: Arc<Source>) -> web::WebServer {
    serve_with(src, mgmt::metrics::METRICS_LIMITS)
}

/// A client that sends `byte` every `every` and never ends its request
/// head, until the server closes the connection (its time, from `t0`,
/// taken before connecting: the server's deadline cannot start earlier,
/// however late this thread starts on a loaded machine) or `give_up`
/// passes (`None`).
fn drip_bytes(
    mut s: TcpStream,
    t0: std::time::Instant,
    byte: u8,
    every: Duration,
    give_up: Duration,
) -> std::thread::JoinHandle<Option<Duration>> {
    std::thread::spawn(move || {
        s.set_read_timeout(Some(Duration::from_millis(5))).unwrap();
        let mut buf = [0u8; 256];
        while t0.elapsed() < give_up {
            if s.write_all(&[byte]).is_err() {
                return Some(t0.elapsed());
            }
            let end = std::time::Instant::now() + every;
            while std::time::Instant::now() < end {
                match s.read(&mut buf) {
                    Ok(0) => return Some(t0.elapsed()),
                    Ok(_) => {}
                    Err(e)
                        if e.kind() == std::io::ErrorKind::WouldBlock
                            || e.kind() == std::io::ErrorKind::TimedOut => {}
                    Err(_) => return Some(t0.elapsed()),
                }
            }
        }
        None
    })
}

struct Source {
    latency: LatencyHistogram,
}

impl MetricsSource for Source {
    fn render(&self, w: &mut MetricsWriter) {
        w.header(
            "tessera_bgp_session_up",
            MetricType::Gauge,
            "1 if Established",
        );
        for (peer, up) in [("peer1", 1), ("peer\"2", 0)] {
            w.sample_u64("tessera_bgp_session_up", &[("peer", peer)], up);
        }
        w.counter("tessera_bgp_updates_received_total", "UPDATEs", 42);
        w.header(
            "tessera_update_latency_seconds",
            MetricType::Histogram,
            "UPDATE processing latency",
        );
        w.histogram(
            "tessera_update_latency_seconds",
            &[],
            &self.latency.snapshot(),
        );
    }
}

fn get(addr: SocketAddr, req: &str) -> (String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").expect("head and body");
    (head.to_string(), body.to_string())
}

#[test]
fn scrape_over_tcp() {
    let src = Arc::new(Source {
        latency: LatencyHistogram::new(),
    });
    src.latency.record_ns(3_000);
    src.latency.record_ns(70_000);
    let srv = serve_metrics(src.clone());
    let addr = srv.local_addr();
    assert_ne!(addr.port(), 0);

    let (head, body) = get(addr, "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 OK\r\n"), "{head}");
    assert!(
        head.contains("\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert!(
        head.contains(&format!("\r\nContent-Length: {}", body.len())),
        "{head}"
    );
    let samples = check::parse(&body).expect("valid exposition");
    let find = |name: &str| samples.iter().find(|s| s.name == name).map(|s| s.value);
    assert_eq!(find("tessera_bgp_updates_received_total"), Some(42.0));
    assert_eq!(find("tessera_update_latency_seconds_count"), Some(2.0));
    let peer2 = samples
        .iter()
        .find(|s| s.labels.iter().any(|(_, v)| v == "peer\"2"))
        .expect("escaped label read back");
    assert_eq!(peer2.value, 0.0);

    // Values are live: a new observation shows in the next scrape.
    src.latency.record_ns(1);
    let (_, body) = get(addr, "GET /metrics HTTP/1.0\r\n\r\n");
    let samples = check::parse(&body).unwrap();
    assert!(samples
        .iter()
        .any(|s| s.name == "tessera_update_latency_seconds_count" && s.value == 3.0));

    let (head, _) = get(addr, "GET /other HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 404 "), "{head}");
    let (head, _) = get(addr, "DELETE /metrics HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 405 "), "{head}");
    let (head, body) = get(addr, "HEAD /metrics HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");
    assert!(body.is_empty());

    // An endless header is cut off with a 4xx (hyper: 431), and the server
    // still serves.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nX: ");
    let _ = s.write_all(&vec![b'a'; 20_000]);
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    assert!(resp.starts_with("HTTP/1.1 4"), "{resp}");
    let (head, _) = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");

    drop(srv);
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
}

/// A client on `addr` that sends one byte every `every` and never ends
/// its request head, until the server closes (its time from connecting)
/// or `give_up` passes (`None`).
fn drip(
    addr: SocketAddr,
    every: Duration,
    give_up: Duration,
) -> std::thread::JoinHandle<Option<Duration>> {
    let t0 = std::time::Instant::now();
    let s = TcpStream::connect(addr).unwrap();
    drip_bytes(s, t0, b'G', every, give_up)
}

/// Every slot held by clients dripping a request head a byte at a time: a
/// scrape from this host still gets its answer (the slot kept for
/// loopback clients). Before, the server closed it at once.
#[test]
fn dripping_clients_do_not_lock_out_a_local_scrape() {
    let src = Arc::new(Source {
        latency: LatencyHistogram::new(),
    });
    let srv = serve_metrics(src);
    let addr = srv.local_addr();
    let drips: Vec<_> = (0..mgmt::metrics::METRICS_LIMITS.max)
        .map(|_| drip(addr, Duration::from_millis(200), Duration::from_secs(3)))
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let (head, body) = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(body.contains("tessera_bgp_updates_received_total 42"));
    for d in drips {
        assert_eq!(d.join().unwrap(), None, "within the 10 s deadline");
    }
}

/// The deadline bounds the whole request head: a client dripping a byte
/// every 50 ms is cut at 300 ms here, in a normal and in the reserved
/// slot.
#[test]
fn a_dripping_scraper_is_cut_at_the_request_deadline() {
    let src = Arc::new(Source {
        latency: LatencyHistogram::new(),
    });
    let limits = mgmt::server::Limits {
        max: 1,
        reserved: 1,
        request: Duration::from_millis(300),
        reserved_request: Duration::from_millis(300),
    };
    let srv = serve_with(src, limits);
    let addr = srv.local_addr();
    let a = drip(addr, Duration::from_millis(50), Duration::from_secs(5));
    std::thread::sleep(Duration::from_millis(50));
    let b = drip(addr, Duration::from_millis(50), Duration::from_secs(5));
    for d in [a, b] {
        let took = d.join().unwrap().expect("cut by the server");
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_secs(4),
            "{took:?}"
        );
    }
    let (head, _) = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
}
