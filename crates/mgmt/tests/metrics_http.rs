//! `/metrics` over a real TCP socket on 127.0.0.1, parsed back by the
//! exposition checker.

use mgmt::metrics::check;
use mgmt::metrics::{serve_metrics, LatencyHistogram, MetricType, MetricsSource, MetricsWriter};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::Duration;

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
    let srv = serve_metrics("127.0.0.1:0".parse().unwrap(), src.clone()).unwrap();
    let addr = srv.local_addr().unwrap();
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

    // An endless header is cut off with 400, and the server still serves.
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nX: ");
    let _ = s.write_all(&vec![b'a'; 20_000]);
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    assert!(resp.starts_with("HTTP/1.1 400 "), "{resp}");
    let (head, _) = get(addr, "GET /metrics HTTP/1.1\r\n\r\n");
    assert!(head.starts_with("HTTP/1.1 200 "), "{head}");

    srv.shutdown();
    assert!(TcpStream::connect_timeout(&addr, Duration::from_secs(1)).is_err());
}
