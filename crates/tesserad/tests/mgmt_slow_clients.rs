//! Slow clients against a running tesserad: every control-socket and
//! metrics slot held by clients that drip one byte every half second
//! (each read well within a per-read timeout) must neither lock out the
//! CLI (`tessera show status` sends the request made here) nor a local
//! scrape, and each dripping client is cut once its request has taken the
//! 10 s request deadline (`mgmt::server::READ_TIMEOUT`).
//!
//! tesserad runs in this test's namespace with no BGP listener and no
//! neighbour; metrics on 127.0.0.1 at a port picked from the process id.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// tesserad and its directory, both removed on drop.
struct Daemon {
    child: Child,
    dir: PathBuf,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// One request line on the control socket, as `tessera show status`
/// sends it; the response line.
fn show_status(sock: &Path) -> Result<String, String> {
    let mut s = UnixStream::connect(sock).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    s.write_all(b"{\"version\":1,\"request\":{\"command\":\"show_status\"}}\n")
        .map_err(|e| format!("write: {e}"))?;
    let mut line = String::new();
    BufReader::new(s)
        .read_line(&mut line)
        .map_err(|e| format!("read: {e}"))?;
    if line.contains("\"error\"") {
        Err(line)
    } else {
        Ok(line)
    }
}

fn scrape(port: u16) -> Result<String, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect: {e}"))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .map_err(|e| format!("write: {e}"))?;
    let mut r = String::new();
    s.read_to_string(&mut r).map_err(|e| format!("read: {e}"))?;
    Ok(r)
}

/// Sends one byte every 500 ms, never a whole request, until the server
/// closes (the time from `t0`, taken before connecting: the server's
/// deadline cannot start earlier, however late this thread starts on a
/// loaded machine), `stop` is set, or 20 s pass (`None`).
/// `first` goes out at once (an HTTP request line, so that the server
/// cannot tell the client from a slow but valid one).
fn drip<S: Read + Write + Send + 'static>(
    mut s: S,
    t0: Instant,
    set_timeout: fn(&S, Duration) -> std::io::Result<()>,
    first: &'static [u8],
    stop: Arc<AtomicBool>,
) -> JoinHandle<Option<Duration>> {
    std::thread::spawn(move || {
        if set_timeout(&s, Duration::from_millis(20)).is_err() || s.write_all(first).is_err() {
            return Some(Duration::ZERO);
        }
        let mut buf = [0u8; 512];
        while t0.elapsed() < Duration::from_secs(20) && !stop.load(Ordering::SeqCst) {
            if s.write_all(b"{").is_err() {
                return Some(t0.elapsed());
            }
            let end = Instant::now() + Duration::from_millis(500);
            while Instant::now() < end {
                match s.read(&mut buf) {
                    Ok(0) => return Some(t0.elapsed()),
                    // A 400 or an error line: the server gave up on us;
                    // the close follows.
                    Ok(_) => {}
                    Err(e)
                        if matches!(
                            e.kind(),
                            std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                        ) => {}
                    Err(_) => return Some(t0.elapsed()),
                }
            }
        }
        None
    })
}

#[test]
fn dripping_clients_neither_lock_out_the_cli_nor_a_scrape() {
    let dir = std::env::temp_dir().join(format!("tessera-slow-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    let sock = dir.join("tesserad.sock");
    let port = 20000 + (std::process::id() % 20000) as u16;
    let conf = dir.join("tesserad.toml");
    std::fs::write(
        &conf,
        format!(
            "[router]\nid = \"192.0.2.1\"\nasn = 64500\nlisten = []\n\n\
             [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:{port}\"\n",
            sock.display()
        ),
    )
    .expect("config");
    let child = Command::new(env!("CARGO_BIN_EXE_tesserad"))
        .args(["-c", &conf.display().to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start tesserad");
    let _d = Daemon {
        child,
        dir: dir.clone(),
    };
    let t0 = Instant::now();
    while show_status(&sock).is_err() || scrape(port).is_err() {
        // Generous: a start on a loaded CI machine, not a deadline.
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "tesserad does not answer on {} and 127.0.0.1:{port} within 30 s",
            sock.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let unix_timeout: fn(&UnixStream, Duration) -> std::io::Result<()> =
        |s, t| s.set_read_timeout(Some(t));
    let tcp_timeout: fn(&TcpStream, Duration) -> std::io::Result<()> =
        |s, t| s.set_read_timeout(Some(t));
    let mut drips = Vec::new();
    for _ in 0..mgmt::server::MAX_CONNECTIONS {
        let t0 = Instant::now();
        let s = UnixStream::connect(&sock).expect("connect control socket");
        drips.push(("control", drip(s, t0, unix_timeout, b"", stop.clone())));
    }
    for _ in 0..mgmt::metrics::METRICS_LIMITS.max {
        let t0 = Instant::now();
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect metrics");
        drips.push((
            "metrics",
            drip(
                s,
                t0,
                tcp_timeout,
                b"GET /metrics HTTP/1.1\r\nX-Drip: ",
                stop.clone(),
            ),
        ));
    }
    std::thread::sleep(Duration::from_millis(500));

    // Every normal slot is held: the CLI and a local scrape still answer.
    let cli = show_status(&sock);
    let m = scrape(port);
    if cli.is_err() || m.as_ref().map_or(true, |r| !r.starts_with("HTTP/1.1 200")) {
        stop.store(true, Ordering::SeqCst);
        panic!("locked out by dripping clients: CLI {cli:?}; scrape {m:?}");
    }
    assert!(cli.unwrap_or_default().contains("\"status\""));

    // Each dripping client is cut at the 10 s deadline for its request.
    for (what, d) in drips {
        let took = d.join().expect("drip thread");
        let took = took.unwrap_or_else(|| panic!("a dripping {what} client was never cut"));
        assert!(
            took >= Duration::from_secs(9) && took < Duration::from_secs(14),
            "{what} client cut after {took:?}, want the 10 s request deadline"
        );
    }
    // And the slots are free again.
    show_status(&sock).expect("CLI after the cut");
    assert!(scrape(port)
        .expect("scrape after the cut")
        .starts_with("HTTP/1.1 200"));
}
