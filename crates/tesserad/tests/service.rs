//! Running tesserad as a service, without a network (the daemon listens
//! nowhere and has no neighbours):
//!
//! * `[log]`: JSON lines in `log.file`, the file reopened on SIGHUP after
//!   it was moved away (what logrotate does), and every line also sent to
//!   syslog (`log.syslog_socket`, here a datagram socket this test binds
//!   in its own directory);
//! * systemd's notify protocol (sd_notify(3), the socket is the test's):
//!   READY=1, WATCHDOG=1 at half of `WATCHDOG_USEC`, RELOADING=1 and
//!   READY=1 around a SIGHUP, STOPPING=1 on SIGTERM;
//! * `packaging/tesserad.service` passes `systemd-analyze verify`.

use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_tesserad");

/// Kills the daemon and removes the directory, also when the test fails.
struct Run {
    child: Child,
    dir: std::path::PathBuf,
}

impl Drop for Run {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Waits up to 10 s for `f` to give `Some`.
fn wait<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_default()
}

/// A config in `dir` with no listener and no neighbour; `log` is the
/// body of its `[log]` table.
fn config(dir: &Path, log: &str) -> std::path::PathBuf {
    let conf = dir.join("tesserad.toml");
    std::fs::write(
        &conf,
        format!(
            "[router]\nid = \"198.18.0.1\"\nasn = 65000\nlisten = []\n\
             [control]\nsocket = \"{}\"\n[log]\n{log}",
            dir.join("ctl.sock").display(),
        ),
    )
    .unwrap();
    conf
}

fn scratch(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn sd_notify_ready_watchdog_reload_stopping() {
    let dir = scratch("notify");
    let sock = dir.join("notify.sock");
    let rx = UnixDatagram::bind(&sock).unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let conf = config(&dir, "level = \"warn\"\n");
    // systemd names the watched process in WATCHDOG_PID: the shell's pid
    // ($$), which `exec` hands to tesserad.
    let child = Command::new("sh")
        .arg("-c")
        .arg("WATCHDOG_PID=$$ exec \"$0\" -c \"$1\"")
        .arg(BIN)
        .arg(&conf)
        .env("NOTIFY_SOCKET", &sock)
        .env("WATCHDOG_USEC", "200000")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let run = Run {
        child,
        dir: dir.clone(),
    };
    let pid = run.child.id() as i32;
    let mut buf = [0u8; 512];
    let mut next = || -> String {
        let n = rx.recv(&mut buf).expect("no sd_notify message in 10 s");
        String::from_utf8_lossy(&buf[..n]).trim_end().to_string()
    };
    assert_eq!(next(), "READY=1");
    // 100 ms pings (half of 200 ms): five in a row.
    for _ in 0..5 {
        assert_eq!(next(), "WATCHDOG=1");
    }
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGHUP) }, 0);
    let mut seen = Vec::new();
    while !seen.iter().any(|m: &String| m == "READY=1") {
        let m = next();
        if m != "WATCHDOG=1" {
            seen.push(m);
        }
    }
    assert!(
        seen.first()
            .is_some_and(|m| m.starts_with("RELOADING=1\nMONOTONIC_USEC=")),
        "{seen:?}"
    );
    // SAFETY: as above.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    loop {
        let m = next();
        if m == "STOPPING=1" {
            break;
        }
        assert_eq!(m, "WATCHDOG=1");
    }
    drop(run);
}

#[test]
fn the_systemd_unit_verifies() {
    let dir = scratch("unit");
    let _clean = Run {
        child: Command::new("true").spawn().unwrap(),
        dir: dir.clone(),
    };
    let unit = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../packaging/tesserad.service"
    ))
    .unwrap();
    assert!(unit.contains("Type=notify") && unit.contains("WatchdogSec="));
    // The installed path is /usr/sbin/tesserad; verify checks that the
    // binary exists, so point it at the one under test.
    let path = dir.join("tesserad.service");
    std::fs::write(&path, unit.replace("/usr/sbin/tesserad", BIN)).unwrap();
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .arg(&path)
        .output()
        .expect("systemd-analyze (Debian package systemd) is needed");
    assert!(
        out.status.success(),
        "systemd-analyze verify: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn json_file_reopened_on_sighup_and_syslog() {
    let dir = std::env::temp_dir().join(format!("tessera-logging-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("tesserad.log");
    let syslog = dir.join("syslog.sock");
    let rx = UnixDatagram::bind(&syslog).unwrap();
    rx.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let conf = dir.join("tesserad.toml");
    std::fs::write(
        &conf,
        format!(
            "[router]\nid = \"198.18.0.1\"\nasn = 65000\nlisten = []\n\
             [control]\nsocket = \"{}\"\n\
             [log]\nlevel = \"info\"\nfile = \"{}\"\nformat = \"json\"\n\
             syslog = true\nsyslog_socket = \"{}\"\n",
            dir.join("ctl.sock").display(),
            log.display(),
            syslog.display()
        ),
    )
    .unwrap();
    let child = Command::new(BIN)
        .arg("-c")
        .arg(&conf)
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let run = Run {
        child,
        dir: dir.clone(),
    };
    let pid = run.child.id();

    // Every line of the file is one JSON object with a level and a message.
    let first = wait("the start line in the log file", || {
        let t = read(&log);
        t.contains("tesserad running").then_some(t)
    });
    for line in first.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
        assert!(v["level"].is_string(), "no level: {line}");
        assert!(v["fields"]["message"].is_string(), "no message: {line}");
    }

    // Syslog got the same start line, facility daemon, severity info.
    let mut buf = [0u8; 4096];
    let got = wait("the start line at syslog", || {
        let n = rx.recv(&mut buf).ok()?;
        let d = String::from_utf8_lossy(&buf[..n]).to_string();
        d.contains("tesserad running").then_some(d)
    });
    assert!(
        got.starts_with(&format!("<30>tesserad[{pid}]: ")),
        "not an RFC 3164 daemon.info datagram: {got}"
    );

    // logrotate: move the file away, SIGHUP. The reload line lands in a
    // new file at the configured path, not in the moved one.
    let moved = dir.join("tesserad.log.1");
    std::fs::rename(&log, &moved).unwrap();
    let before = read(&moved);
    // SAFETY: kill(2) on our own child's pid.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGHUP) }, 0);
    let fresh = wait("the SIGHUP line in a new log file", || {
        let t = read(&log);
        t.contains("SIGHUP").then_some(t)
    });
    assert!(
        !fresh.contains("tesserad running"),
        "old lines in the new file: {fresh}"
    );
    assert!(
        !read(&moved).contains("SIGHUP"),
        "the moved file still gets lines"
    );
    assert!(read(&moved).starts_with(&before));
    for line in fresh.lines() {
        serde_json::from_str::<serde_json::Value>(line)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    }
    drop(run);
}
