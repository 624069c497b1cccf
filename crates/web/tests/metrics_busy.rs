//! `/metrics` never queues behind slow control calls (issue 17): with every
//! control call the listener allows at once ([`web::MAX_CONTROL_CALLS`])
//! held inside a control handler that does not answer, a scrape is still
//! answered, and while those calls are still held. Before, the scrape took
//! one of the same permits and waited for a held call to end.
//!
//! No timing threshold: the scrape must come back before the test
//! releases the held calls (it releases them only after the scrape, or
//! when the client's generous 10 s read timeout fails the test).

use mgmt::metrics::{MetricsSource, MetricsWriter};
use mgmt::proto::{ErrorCode, Request, Response};
use mgmt::server::ControlHandler;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a held call waits for its release at most (the test's bound
/// on itself, also when it fails before releasing).
const HOLD_AT_MOST: Duration = Duration::from_secs(30);

#[derive(Default)]
struct Gate {
    /// (calls inside the handler, released)
    state: Mutex<(usize, bool)>,
    cv: Condvar,
}

impl Gate {
    fn held(&self) -> usize {
        self.state.lock().unwrap().0
    }

    fn release(&self) {
        self.state.lock().unwrap().1 = true;
        self.cv.notify_all();
    }

    /// Waits until `n` calls are inside the handler, at most `limit`.
    fn wait_held(&self, n: usize, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        let mut g = self.state.lock().unwrap();
        while g.0 < n {
            let left = end.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            g = self.cv.wait_timeout(g, left).unwrap().0;
        }
        true
    }
}

/// A control handler that does not answer until the gate opens.
struct Held(Arc<Gate>);

impl ControlHandler for Held {
    fn handle(&self, _req: Request) -> Response {
        let end = Instant::now() + HOLD_AT_MOST;
        let mut g = self.0.state.lock().unwrap();
        g.0 += 1;
        self.0.cv.notify_all();
        while !g.1 && Instant::now() < end {
            g = self
                .0
                .cv
                .wait_timeout(g, Duration::from_millis(100))
                .unwrap()
                .0;
        }
        g.0 -= 1;
        Response::error(ErrorCode::Unsupported, "held by the test")
    }
}

struct Source;
impl MetricsSource for Source {
    fn render(&self, out: &mut MetricsWriter) {
        out.gauge("tessera_test_up", "Up.", 1.0);
    }
}

/// Opens the gate when dropped, so that a failing test leaves no thread
/// waiting (each would also give up after `HOLD_AT_MOST`).
struct Release(Arc<Gate>);
impl Drop for Release {
    fn drop(&mut self) {
        self.0.release();
    }
}

fn get(addr: SocketAddr, path: &str) -> std::io::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\n\r\n")?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    Ok((code, body.to_string()))
}

#[test]
fn scrape_answers_while_every_control_call_is_held() {
    let gate = Arc::new(Gate::default());
    let _release = Release(Arc::clone(&gate));
    let server = web::serve(
        "127.0.0.1:0".parse().unwrap(),
        web::Sources {
            control: Arc::new(Held(Arc::clone(&gate))),
            metrics: Arc::new(Source),
        },
    )
    .unwrap();
    let addr = server.local_addr();

    // Every control call the listener runs at once, each held.
    let callers: Vec<_> = (0..web::MAX_CONTROL_CALLS)
        .map(|_| std::thread::spawn(move || get(addr, "/status")))
        .collect();
    assert!(
        gate.wait_held(web::MAX_CONTROL_CALLS, Duration::from_secs(10)),
        "only {} of {} control calls reached the handler",
        gate.held(),
        web::MAX_CONTROL_CALLS
    );

    let (code, body) = get(addr, "/metrics").expect("/metrics answered while the calls are held");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("tessera_test_up 1\n"), "{body}");
    assert_eq!(
        gate.held(),
        web::MAX_CONTROL_CALLS,
        "the scrape came back only after a held call ended"
    );

    gate.release();
    for c in callers {
        let (code, _) = c.join().unwrap().expect("held call answered once released");
        assert_eq!(code, 501);
    }
}

/// Records the thread each part of a scrape ran on.
#[derive(Default)]
struct Where {
    render: Mutex<Option<String>>,
    waiting: Mutex<Option<String>>,
}

struct Split(Arc<Where>);
impl MetricsSource for Split {
    fn render(&self, out: &mut MetricsWriter) {
        *self.0.render.lock().unwrap() = std::thread::current().name().map(String::from);
        out.gauge("tessera_test_first", "Written by render.", 1.0);
    }
    fn waits(&self) -> bool {
        true
    }
    fn render_waiting(&self, out: &mut MetricsWriter) {
        *self.0.waiting.lock().unwrap() = std::thread::current().name().map(String::from);
        out.gauge("tessera_test_second", "Written by render_waiting.", 2.0);
    }
}

/// `render` runs on the listener's own thread (named `web`), never on a
/// pool thread whose wake-up and CPU slice a scrape would wait for; the
/// part that may wait runs elsewhere, and its text follows.
#[test]
fn render_runs_on_the_listener_thread() {
    let at = Arc::new(Where::default());
    let server = web::serve(
        "127.0.0.1:0".parse().unwrap(),
        web::Sources {
            control: Arc::new(Held(Arc::new(Gate::default()))),
            metrics: Arc::new(Split(Arc::clone(&at))),
        },
    )
    .unwrap();
    let (code, body) = get(server.local_addr(), "/metrics").expect("/metrics");
    assert_eq!(code, 200, "{body}");
    assert_eq!(at.render.lock().unwrap().as_deref(), Some("web"));
    assert_eq!(
        body,
        "# HELP tessera_test_first Written by render.\n\
         # TYPE tessera_test_first gauge\n\
         tessera_test_first 1\n\
         # HELP tessera_test_second Written by render_waiting.\n\
         # TYPE tessera_test_second gauge\n\
         tessera_test_second 2\n"
    );
    let waiting = at.waiting.lock().unwrap().clone();
    assert!(
        waiting.is_some() && waiting.as_deref() != Some("web"),
        "render_waiting ran on {waiting:?}, not on a pool thread"
    );
}
