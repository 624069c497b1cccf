//! Interop test harness: network namespaces, process guards, bounded waits,
//! config templates and one launcher + query helper per real BGP daemon.
//!
//! tesserad's integration tests use it as `use e2e as common;`. It was
//! their `tests/common` module, compiled into each of 36 test binaries;
//! as a crate it is compiled once.

pub mod bird;
pub mod cluster;
pub mod exabgp;
pub mod frr;
pub mod gobgp;
pub mod lab;
pub mod netlab;
pub mod openbgpd;
pub mod peer;
pub mod rtr;
pub mod scenario;
pub mod tesserad;
pub mod uml;

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

pub use lab::Lab;

/// Repository root (`crates/e2e/../..`).
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `tests/interop/<daemon>/<file>` in the repository.
pub fn interop_file(daemon: &str, file: &str) -> PathBuf {
    repo_root().join("tests/interop").join(daemon).join(file)
}

/// Checks that the test can run: root (namespaces) and every tool present.
/// With `TESSERA_REQUIRE_TOOLS=1` (set by `scripts/test`) a missing
/// prerequisite fails the test; otherwise the reason is printed and the
/// caller returns early.
pub fn ready(tools: &[&str]) -> bool {
    let mut why = Vec::new();
    if !is_root() {
        why.push("not running as root (network namespaces need it)".to_string());
    }
    for t in tools {
        if !tool_exists(t) {
            why.push(format!("`{t}` is not installed"));
        }
    }
    if why.is_empty() {
        return true;
    }
    let msg = format!("interop test cannot run: {}", why.join("; "));
    if std::env::var("TESSERA_REQUIRE_TOOLS").as_deref() == Ok("1") {
        panic!("{msg} (TESSERA_REQUIRE_TOOLS=1)");
    }
    eprintln!("SKIPPED: {msg}");
    false
}

fn is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
        .unwrap_or(false)
}

/// A tool is an absolute path or a name on `PATH`.
pub fn tool_exists(tool: &str) -> bool {
    if tool.starts_with('/') {
        return std::path::Path::new(tool).exists();
    }
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
        .unwrap_or(false)
}

/// Runs a command to completion (bounded by `timeout`), returning stdout on
/// success and a message with stderr on failure.
pub fn run(argv: &[&str], timeout: Duration) -> Result<String, String> {
    let (prog, args) = argv.split_first().ok_or("empty command")?;
    let mut child = Command::new(prog)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", argv.join(" ")))?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("{}: timed out after {timeout:?}", argv.join(" ")));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(20)),
            Err(e) => return Err(format!("{}: {e}", argv.join(" "))),
        }
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{}: {e}", argv.join(" ")))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if out.status.success() {
        Ok(stdout)
    } else {
        Err(format!(
            "{} failed ({}): {}{}",
            argv.join(" "),
            out.status,
            stdout,
            String::from_utf8_lossy(&out.stderr)
        ))
    }
}

/// Quick command: 10 s bound, the usual for CLI queries.
pub fn sh(argv: &[&str]) -> Result<String, String> {
    run(argv, Duration::from_secs(10))
}

/// Fills `{{KEY}}` placeholders; fails if one is left unfilled so a typo in
/// a template cannot silently produce a broken config.
pub fn render(template: &str, vars: &[(&str, String)]) -> Result<String, String> {
    let mut s = template.to_string();
    for (k, v) in vars {
        s = s.replace(&format!("{{{{{k}}}}}"), v);
    }
    if let Some(i) = s.find("{{") {
        let end = s[i..].find("}}").map_or(s.len(), |e| i + e + 2);
        return Err(format!("unfilled placeholder {}", &s[i..end]));
    }
    Ok(s)
}

/// Reads and renders `tests/interop/<daemon>/<file>`.
pub fn render_file(daemon: &str, file: &str, vars: &[(&str, String)]) -> String {
    let path = interop_file(daemon, file);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("template {} unreadable: {e}", path.display()));
    render(&text, vars).unwrap_or_else(|e| panic!("template {}: {e}", path.display()))
}

/// Polls `f` every 100 ms until it returns `Ok(Some(v))` or `timeout`
/// passes. `Ok(None)` and `Err` mean "not yet"; the last reason is kept for
/// the failure message. `context` is called only on failure (log tails).
pub fn wait_until<T>(
    timeout: Duration,
    what: &str,
    context: impl Fn() -> String,
    mut f: impl FnMut() -> Result<Option<T>, String>,
) -> T {
    let start = Instant::now();
    let mut last = String::from("condition never held");
    loop {
        match f() {
            Ok(Some(v)) => return v,
            Ok(None) => {}
            Err(e) => last = e,
        }
        if start.elapsed() > timeout {
            panic!(
                "timed out after {timeout:?} waiting for: {what}\nlast: {last}\n{}",
                context()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Last `n` lines of a file (or a note that it is unreadable).
pub fn tail(path: &std::path::Path, n: usize) -> String {
    match std::fs::read(path) {
        Ok(b) => {
            let s = String::from_utf8_lossy(&b);
            let lines: Vec<&str> = s.lines().collect();
            lines[lines.len().saturating_sub(n)..].join("\n")
        }
        Err(e) => format!("({} unreadable: {e})", path.display()),
    }
}
