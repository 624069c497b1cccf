//! Where tesserad's log lines go (`[log]`, docs/config.md): standard
//! error (default; under systemd each line gets the `<N>` level prefix
//! journald reads), or a file reopened on SIGHUP (for logrotate), as text
//! or JSON lines, and optionally syslog (RFC 3164 over the local datagram
//! socket, facility daemon).
//!
//! Lines are formatted by `tracing-subscriber` (text or its `json`
//! format); each event is written with one `write` under a lock, so lines
//! of several threads never interleave. The syslog sender is ours: a
//! datagram per line to a socket path that the config can name (glibc's
//! `syslog(3)` always uses `/dev/log`, which a test cannot redirect).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use tracing::{Level, Metadata};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::prelude::*;

/// The open log file and its path, for [`reopen`].
struct LogFile {
    path: PathBuf,
    file: Mutex<File>,
}

static LOG_FILE: OnceLock<LogFile> = OnceLock::new();

/// The syslog socket and its path.
struct Syslog {
    sock: UnixDatagram,
    path: PathBuf,
    tag: String,
}

static SYSLOG: OnceLock<Syslog> = OnceLock::new();

fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().create(true).append(true).open(path)
}

/// Where one writer sends its line.
#[derive(Clone, Copy)]
enum Dest {
    Stderr { journal: bool },
    File,
    Syslog,
}

/// Makes a [`Line`] per event.
#[derive(Clone, Copy)]
struct Sink(Dest);

/// One event's bytes, written out whole when dropped.
struct Line {
    buf: Vec<u8>,
    dest: Dest,
    level: Level,
}

impl Write for Line {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.buf.extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// RFC 5424 §6.2.1 severity of a tracing level.
fn severity(l: Level) -> u8 {
    match l {
        Level::ERROR => 3,
        Level::WARN => 4,
        Level::INFO => 6,
        _ => 7,
    }
}

/// `<PRI>TAG[PID]: MESSAGE` for facility daemon (3), the RFC 3164 form
/// local syslog daemons (rsyslog, syslog-ng, journald) accept; they add
/// the timestamp and host.
pub fn syslog_datagram(tag: &str, pid: u32, level: Level, msg: &str) -> String {
    let pri = 3 * 8 + u32::from(severity(level));
    format!("<{pri}>{tag}[{pid}]: {}", msg.trim_end_matches('\n'))
}

impl Drop for Line {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        match self.dest {
            Dest::Stderr { journal } => {
                let mut out = Vec::with_capacity(self.buf.len() + 4);
                if journal {
                    // sd-daemon(3): "<N>" before the line is its level.
                    out.extend_from_slice(format!("<{}>", severity(self.level)).as_bytes());
                }
                out.extend_from_slice(&self.buf);
                let _ = std::io::stderr().lock().write_all(&out);
            }
            Dest::File => {
                if let Some(f) = LOG_FILE.get() {
                    let mut g = f.file.lock().unwrap_or_else(|e| e.into_inner());
                    let _ = g.write_all(&self.buf);
                }
            }
            Dest::Syslog => {
                if let Some(s) = SYSLOG.get() {
                    let msg = String::from_utf8_lossy(&self.buf);
                    let d = syslog_datagram(&s.tag, std::process::id(), self.level, &msg);
                    // A syslog daemon that is down loses lines; it must
                    // never block or stop the daemon.
                    let _ = s.sock.send_to(d.as_bytes(), &s.path);
                }
            }
        }
    }
}

impl<'a> MakeWriter<'a> for Sink {
    type Writer = Line;
    fn make_writer(&'a self) -> Line {
        Line {
            buf: Vec::new(),
            dest: self.0,
            level: Level::INFO,
        }
    }
    fn make_writer_for(&'a self, meta: &Metadata<'_>) -> Line {
        Line {
            buf: Vec::with_capacity(256),
            dest: self.0,
            level: *meta.level(),
        }
    }
}

type BoxedLayer = Box<dyn tracing_subscriber::Layer<tracing_subscriber::Registry> + Send + Sync>;

/// Installs the subscriber for `filter` (an `EnvFilter` directive; an
/// invalid one falls back to `info`) and `[log]`.
pub fn init(filter: &str, c: &config::Config) -> Result<(), String> {
    let f = tracing_subscriber::EnvFilter::try_new(filter)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let json = c.log_format == config::LogFormat::Json;
    let mut layers: Vec<BoxedLayer> = Vec::new();
    let main = match &c.log_file {
        Some(path) => {
            let file = open_append(path)
                .map_err(|e| format!("log.file {}: cannot open: {e}", path.display()))?;
            let _ = LOG_FILE.set(LogFile {
                path: path.clone(),
                file: Mutex::new(file),
            });
            Sink(Dest::File)
        }
        None => Sink(Dest::Stderr {
            journal: std::env::var_os("JOURNAL_STREAM").is_some() && !json,
        }),
    };
    let ansi = matches!(main.0, Dest::Stderr { journal: false })
        && std::io::IsTerminal::is_terminal(&std::io::stderr());
    layers.push(if json {
        tracing_subscriber::fmt::layer()
            .json()
            .with_writer(main)
            .boxed()
    } else if matches!(main.0, Dest::Stderr { journal: true }) {
        // The journal stamps each line itself.
        tracing_subscriber::fmt::layer()
            .without_time()
            .with_ansi(false)
            .with_target(false)
            .with_writer(main)
            .boxed()
    } else {
        tracing_subscriber::fmt::layer()
            .with_ansi(ansi)
            .with_target(false)
            .with_writer(main)
            .boxed()
    });
    if let Some(path) = &c.log_syslog {
        let sock = UnixDatagram::unbound().map_err(|e| format!("log.syslog: {e}"))?;
        let _ = SYSLOG.set(Syslog {
            sock,
            path: path.clone(),
            tag: "tesserad".into(),
        });
        layers.push(
            tracing_subscriber::fmt::layer()
                .without_time()
                .with_ansi(false)
                .with_level(false)
                .with_target(false)
                .with_writer(Sink(Dest::Syslog))
                .boxed(),
        );
    }
    tracing_subscriber::registry()
        .with(layers)
        .with(f)
        .try_init()
        .map_err(|e| format!("cannot install the logger: {e}"))
}

/// SIGHUP: open `log.file` again (logrotate moved the old one away). If
/// that fails, the old file stays in use and the reason goes to stderr.
pub fn reopen() {
    let Some(f) = LOG_FILE.get() else {
        return;
    };
    match open_append(&f.path) {
        Ok(new) => *f.file.lock().unwrap_or_else(|e| e.into_inner()) = new,
        Err(e) => eprintln!(
            "tesserad: SIGHUP: cannot reopen log file {}: {e}",
            f.path.display()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syslog_datagrams_carry_facility_daemon_and_severity() {
        assert_eq!(
            syslog_datagram("tesserad", 42, Level::ERROR, "down\n"),
            "<27>tesserad[42]: down"
        );
        assert_eq!(
            syslog_datagram("tesserad", 1, Level::INFO, "up"),
            "<30>tesserad[1]: up"
        );
        assert_eq!(syslog_datagram("t", 1, Level::TRACE, "x"), "<31>t[1]: x");
    }
}
