//! `tessera top`: polls tesserad's control socket (and `/metrics` with
//! `--metrics`) every `--interval` and draws crate `top`'s view; sleeps
//! between polls (waiting for a key, never spinning). `q` or Ctrl-C quits.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use mgmt::proto::{Data, Request, Response};
use ratatui::crossterm::event::{self, Event, KeyCode, KeyModifiers};

use super::CmdResult;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// tesserad's control socket [default: $TESSERA_SOCKET, else
    /// /run/tessera/tesserad.sock].
    #[arg(long, value_name = "PATH")]
    socket: Option<PathBuf>,
    /// tesserad's `control.metrics` address (ADDR:PORT), for the per-stage
    /// UPDATE latencies.
    #[arg(long, value_name = "ADDR:PORT")]
    metrics: Option<String>,
    /// Seconds between polls.
    #[arg(long, default_value_t = 1.0)]
    interval: f64,
    /// Print one frame as text after two polls (`--interval` apart, so
    /// that rates show) and exit; for scripts.
    #[arg(long)]
    once: bool,
    /// Frame size for `--once`.
    #[arg(long, default_value_t = 120)]
    width: u16,
    #[arg(long, default_value_t = 40)]
    height: u16,
}

/// `GET /metrics` over HTTP/1.0, the body.
fn scrape(addr: &str, timeout: Duration) -> Result<String, String> {
    let sa: std::net::SocketAddr = addr.parse().map_err(|e| format!("--metrics {addr}: {e}"))?;
    let mut s = TcpStream::connect_timeout(&sa, timeout).map_err(|e| format!("metrics: {e}"))?;
    s.set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    s.write_all(b"GET /metrics HTTP/1.0\r\nHost: tesserad\r\n\r\n")
        .map_err(|e| format!("metrics: {e}"))?;
    let mut body = String::new();
    s.read_to_string(&mut body)
        .map_err(|e| format!("metrics: {e}"))?;
    Ok(body
        .split_once("\r\n\r\n")
        .map_or(body.clone(), |(_, b)| b.to_string()))
}

/// One poll: every request, failures noted and the rest kept.
fn poll(
    sock: &std::path::Path,
    metrics: Option<&str>,
    t0: Instant,
    timeout: Duration,
) -> top::Sample {
    let mut s = top::Sample {
        at: t0.elapsed().as_secs_f64(),
        ..Default::default()
    };
    let ask = |r: Request| mgmt::client::request(sock, &r, timeout);
    match ask(Request::ShowStatus) {
        Ok(Response::Ok(Data::Status(st))) => s.status = Some(st),
        Ok(r) => s_error(&mut s.error, format!("status: {r:?}")),
        Err(e) => s_error(&mut s.error, e.to_string()),
    }
    if let Ok(Response::Ok(Data::Protocols(p))) = ask(Request::ShowProtocols {
        all: true,
        name: None,
    }) {
        s.protocols = p;
    }
    if let Ok(Response::Ok(Data::RouteCount(c))) = ask(Request::ShowRoute {
        prefix: None,
        longest_match: false,
        all: false,
        protocol: None,
        count_only: true,
        multicast: false,
    }) {
        s.count = Some(c);
    }
    if let Ok(Response::Ok(Data::Bfd(b))) = ask(Request::ShowBfd) {
        s.bfd = b;
    }
    // Unsupported without a dataplane: then no pane.
    if let Ok(Response::Ok(Data::Dataplane(d))) = ask(Request::ShowDataplane) {
        s.dataplane = Some(*d);
    }
    if let Some(a) = metrics {
        match scrape(a, timeout) {
            Ok(t) => s.metrics = Some(t),
            Err(e) => s_error(&mut s.error, e),
        }
    }
    s
}

fn s_error(slot: &mut Option<String>, e: String) {
    if slot.is_none() {
        *slot = Some(e);
    }
}

pub fn run(a: Args) -> CmdResult {
    let sock = super::ctl::resolve_socket(a.socket.clone(), std::env::var_os("TESSERA_SOCKET"));
    if !(a.interval.is_finite() && a.interval >= 0.05) {
        return Err("--interval: at least 0.05 seconds".into());
    }
    let interval = Duration::from_secs_f64(a.interval);
    let timeout = interval.max(Duration::from_secs(2));
    let t0 = Instant::now();
    let mut model = top::Model::default();
    if a.once {
        model.update(poll(&sock, a.metrics.as_deref(), t0, timeout));
        std::thread::sleep(interval);
        model.update(poll(&sock, a.metrics.as_deref(), t0, timeout));
        print!("{}", top::render_text(&model, a.width, a.height));
        return Ok(if model.status.is_some() {
            std::process::ExitCode::SUCCESS
        } else {
            std::process::ExitCode::from(1)
        });
    }
    let mut term = ratatui::try_init()?;
    let r = (|| -> Result<(), Box<dyn std::error::Error>> {
        loop {
            model.update(poll(&sock, a.metrics.as_deref(), t0, timeout));
            term.draw(|f| top::draw(f, &model))?;
            let next = Instant::now() + interval;
            // Wait for a key until the next poll: blocks in poll(2).
            loop {
                let left = next.saturating_duration_since(Instant::now());
                if left.is_zero() || !event::poll(left)? {
                    break;
                }
                if let Event::Key(k) = event::read()? {
                    let ctrl_c =
                        k.code == KeyCode::Char('c') && k.modifiers.contains(KeyModifiers::CONTROL);
                    if k.code == KeyCode::Char('q') || k.code == KeyCode::Esc || ctrl_c {
                        return Ok(());
                    }
                }
            }
        }
    })();
    ratatui::restore();
    r.map(|()| std::process::ExitCode::SUCCESS)
}
