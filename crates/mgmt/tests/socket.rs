//! The control protocol over a real Unix socket in a temporary directory,
//! with a test handler (this tests the protocol, not a BGP peer).

use mgmt::client::request;
use mgmt::proto::*;
use mgmt::server::{serve_unix, ControlHandler};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

mod common;
use common::drip;

const T: Duration = Duration::from_secs(5);

/// A fresh directory under the target's temp dir, removed on drop.
struct TempDir(PathBuf);
impl TempDir {
    fn new(tag: &str) -> Self {
        let p = std::env::temp_dir().join(format!(
            "mgmt-test-{tag}-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    fn sock(&self) -> PathBuf {
        self.0.join("t.sock")
    }
}
impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[derive(Default)]
struct TestHandler {
    calls: AtomicUsize,
}

impl ControlHandler for TestHandler {
    fn handle(&self, req: Request) -> Response {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match req {
            Request::ShowRoute {
                prefix, count_only, ..
            } if !count_only => {
                let mut p = PathInfo::new("peer1", 1_700_000_000_000);
                p.best = true;
                Response::Ok(Data::Routes(vec![RouteInfo {
                    prefix: prefix.unwrap_or_else(|| "10.0.0.0/8".into()),
                    paths: vec![p],
                }]))
            }
            Request::Neighbor {
                addr_or_name,
                action: NeighborAction::Disable { message },
            } => Response::Ok(Data::Action(vec![ActionResult {
                protocol: addr_or_name,
                result: format!("disabled ({})", message.unwrap_or_default()),
            }])),
            Request::ShowNeighbor { addr } => {
                Response::error(ErrorCode::NotFound, format!("no neighbor {addr}"))
            }
            _ => Response::error(ErrorCode::Unsupported, "not in this test"),
        }
    }
}

fn raw_exchange(path: &Path, bytes: &[u8]) -> Response {
    let mut s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    s.write_all(bytes).unwrap();
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line).unwrap();
    let env: ResponseEnvelope = serde_json::from_str(&line).unwrap();
    assert_eq!(env.version, PROTOCOL_VERSION);
    env.response
}

fn error_code(r: &Response) -> Option<ErrorCode> {
    match r {
        Response::Error { code, .. } => Some(*code),
        Response::Ok(_) => None,
    }
}

#[test]
fn request_response_over_unix_socket() {
    let dir = TempDir::new("rr");
    let h = Arc::new(TestHandler::default());
    let srv = serve_unix(&dir.sock(), h.clone()).unwrap();
    let meta = std::fs::metadata(dir.sock()).unwrap();
    assert!(meta.file_type().is_socket());
    assert_eq!(meta.permissions().mode() & 0o777, 0o660);

    let r = request(
        &dir.sock(),
        &Request::ShowRoute {
            prefix: Some("192.0.2.0/24".into()),
            all: false,
            protocol: None,
            count_only: false,
            multicast: false,
            longest_match: false,
        },
        T,
    )
    .unwrap();
    match r {
        Response::Ok(Data::Routes(routes)) => {
            assert_eq!(routes.len(), 1);
            assert_eq!(routes[0].prefix, "192.0.2.0/24");
            assert!(routes[0].paths[0].best);
        }
        other => panic!("unexpected {other:?}"),
    }
    let r = request(
        &dir.sock(),
        &Request::Neighbor {
            addr_or_name: "peer1".into(),
            action: NeighborAction::Disable {
                message: Some("maint".into()),
            },
        },
        T,
    )
    .unwrap();
    assert_eq!(
        r,
        Response::Ok(Data::Action(vec![ActionResult {
            protocol: "peer1".into(),
            result: "disabled (maint)".into()
        }]))
    );
    let r = request(
        &dir.sock(),
        &Request::ShowNeighbor {
            addr: "192.0.2.9".into(),
        },
        T,
    )
    .unwrap();
    assert_eq!(error_code(&r), Some(ErrorCode::NotFound));
    assert_eq!(h.calls.load(Ordering::SeqCst), 3);

    srv.shutdown();
    assert!(!dir.sock().exists(), "socket file removed on shutdown");
    let e = request(&dir.sock(), &Request::ShowStatus, T).unwrap_err();
    assert!(e.to_string().contains("is tesserad running?"), "{e}");
}

#[test]
fn several_requests_on_one_connection() {
    let dir = TempDir::new("multi");
    let _srv = serve_unix(&dir.sock(), Arc::new(TestHandler::default())).unwrap();
    let mut s = UnixStream::connect(dir.sock()).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let req = br#"{"version":1,"request":{"command":"show_route","count_only":false}}"#;
    let mut all = Vec::new();
    for _ in 0..3 {
        all.extend_from_slice(req);
        all.push(b'\n');
    }
    all.extend_from_slice(b"\n   \n"); // blank lines are skipped
    s.write_all(&all).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    for l in text.lines() {
        let env: ResponseEnvelope = serde_json::from_str(l).unwrap();
        assert!(matches!(env.response, Response::Ok(Data::Routes(_))));
    }
}

#[test]
fn garbage_input_gets_error_responses_and_server_survives() {
    let dir = TempDir::new("garbage");
    let h = Arc::new(TestHandler::default());
    let _srv = serve_unix(&dir.sock(), h.clone()).unwrap();
    for g in [
        &b"hello\n"[..],
        b"\xff\xff\xff\n",
        b"{\"version\":1,\"request\":{\"command\":\"show_route\",\"prefix\":7}}\n",
        b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\n",
        b"{\"version\":1,\"request\":{\"command\":\"show_status\"}}{}\n",
    ] {
        let r = raw_exchange(&dir.sock(), g);
        assert_eq!(error_code(&r), Some(ErrorCode::BadRequest), "{g:?}");
    }
    // Deep nesting must not overflow the stack (serde_json limits depth).
    let mut deep = vec![b'['; 50_000];
    deep.push(b'\n');
    let r = raw_exchange(&dir.sock(), &deep);
    assert_eq!(error_code(&r), Some(ErrorCode::BadRequest));

    // Oversized line: TooLarge, then the server closes the connection.
    let mut s = UnixStream::connect(dir.sock()).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let big = vec![b'x'; MAX_REQUEST_BYTES + 10];
    // The server may close before reading everything; ignore write errors.
    let _ = s.write_all(&big);
    let mut line = String::new();
    BufReader::new(&s).read_line(&mut line).unwrap();
    let env: ResponseEnvelope = serde_json::from_str(&line).unwrap();
    assert_eq!(error_code(&env.response), Some(ErrorCode::TooLarge));

    // A client that connects and says nothing, and one that hangs up
    // mid-line, do not disturb others.
    let _idle = UnixStream::connect(dir.sock()).unwrap();
    {
        let mut half = UnixStream::connect(dir.sock()).unwrap();
        half.write_all(b"{\"version\":1,").unwrap();
    }
    assert_eq!(
        h.calls.load(Ordering::SeqCst),
        0,
        "handler never saw garbage"
    );
    let r = request(
        &dir.sock(),
        &Request::ShowRoute {
            prefix: None,
            all: false,
            protocol: None,
            count_only: false,
            multicast: false,
            longest_match: false,
        },
        T,
    )
    .unwrap();
    assert!(matches!(r, Response::Ok(Data::Routes(_))));
}

#[test]
fn stale_socket_is_replaced_but_live_one_and_regular_file_are_not() {
    let dir = TempDir::new("stale");
    // A socket file nobody listens on (the listener is dropped at once).
    drop(UnixListener::bind(dir.sock()).unwrap());
    assert!(dir.sock().exists());
    let srv = serve_unix(&dir.sock(), Arc::new(TestHandler::default())).unwrap();
    // Now someone listens: a second server must refuse.
    let e = serve_unix(&dir.sock(), Arc::new(TestHandler::default()))
        .err()
        .expect("second server refused");
    assert_eq!(e.kind(), std::io::ErrorKind::AddrInUse, "{e}");
    drop(srv);
    // A regular file is never removed.
    let f = dir.0.join("file");
    std::fs::write(&f, b"keep me").unwrap();
    let e = serve_unix(&f, Arc::new(TestHandler::default()))
        .err()
        .expect("not a socket");
    assert!(e.to_string().contains("not a socket"), "{e}");
    assert_eq!(std::fs::read(&f).unwrap(), b"keep me");
}

#[test]
fn client_times_out_on_a_silent_server() {
    let dir = TempDir::new("silent");
    // A listener that accepts (in the kernel backlog) but never answers.
    let _l = UnixListener::bind(dir.sock()).unwrap();
    let start = std::time::Instant::now();
    let e = request(
        &dir.sock(),
        &Request::ShowStatus,
        Duration::from_millis(200),
    )
    .unwrap_err();
    assert!(start.elapsed() < Duration::from_secs(3));
    assert!(e.to_string().contains("no answer within 0.2s"), "{e}");
}

fn unix_drip(
    path: &Path,
    every: Duration,
    give_up: Duration,
) -> std::thread::JoinHandle<Option<Duration>> {
    let t0 = std::time::Instant::now();
    let s = UnixStream::connect(path).unwrap();
    drip(s, t0, b'x', every, give_up, |s, t| {
        s.set_read_timeout(Some(t)).unwrap()
    })
}

fn show_route() -> Request {
    Request::ShowRoute {
        prefix: None,
        all: false,
        protocol: None,
        count_only: false,
        multicast: false,
        longest_match: false,
    }
}

/// Every slot held by clients that drip a byte at a time (each read comes
/// well within the old per-read timeout): the CLI still gets its answer,
/// in the slot kept for the daemon's own user. Before, it got "too many
/// CLI connections".
#[test]
fn dripping_clients_do_not_lock_out_the_cli() {
    let dir = TempDir::new("drip");
    let _srv = serve_unix(&dir.sock(), Arc::new(TestHandler::default())).unwrap();
    let drips: Vec<_> = (0..mgmt::server::MAX_CONNECTIONS)
        .map(|_| {
            unix_drip(
                &dir.sock(),
                Duration::from_millis(200),
                Duration::from_secs(3),
            )
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let r = request(&dir.sock(), &show_route(), T).unwrap();
    assert!(matches!(r, Response::Ok(Data::Routes(_))), "{r:?}");
    for d in drips {
        // Within 3 s, under the 10 s request deadline: still connected.
        assert_eq!(d.join().unwrap(), None);
    }
}

/// The deadline bounds the whole request: a client dripping a byte every
/// 50 ms is cut once it has taken the deadline (300 ms here), both in a
/// normal and in the reserved slot; one that sends its request in time is
/// answered, and its next request gets a fresh deadline.
#[test]
fn a_dripping_client_is_cut_at_the_request_deadline() {
    let dir = TempDir::new("deadline");
    let limits = mgmt::server::Limits {
        max: 1,
        reserved: 1,
        request: Duration::from_millis(300),
        reserved_request: Duration::from_millis(300),
    };
    let _srv = mgmt::server::serve_unix_with(&dir.sock(), Arc::new(TestHandler::default()), limits)
        .unwrap();
    let a = unix_drip(
        &dir.sock(),
        Duration::from_millis(50),
        Duration::from_secs(5),
    );
    std::thread::sleep(Duration::from_millis(50));
    let b = unix_drip(
        &dir.sock(),
        Duration::from_millis(50),
        Duration::from_secs(5),
    );
    for d in [a, b] {
        let took = d.join().unwrap().expect("cut by the server");
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_secs(4),
            "{took:?}"
        );
    }
    // Slots free again; two requests 200 ms apart on one connection, each
    // within its own deadline.
    let mut s = UnixStream::connect(dir.sock()).unwrap();
    s.set_read_timeout(Some(T)).unwrap();
    let req = b"{\"version\":1,\"request\":{\"command\":\"show_route\",\"count_only\":false}}\n";
    let mut r = BufReader::new(s.try_clone().unwrap());
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(200));
        s.write_all(req).unwrap();
        let mut line = String::new();
        r.read_line(&mut line).unwrap();
        assert!(line.contains("\"routes\""), "{line}");
    }
}
