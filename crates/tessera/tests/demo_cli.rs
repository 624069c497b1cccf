//! `tessera demo` on a tiny configuration (50 ASes, 200 prefixes, two
//! modes, two repetitions each): every row of the table converged with the trace's prefix count,
//! both SVG charts exist and are well-formed SVG, and no tesserad the demo
//! started is left (checked by the pids it prints). A second test stops
//! the demo with SIGINT while a replay is under way: it exits 1 and its
//! daemon is gone.
//!
//! Needs only loopback (127.13.0.0/24, local on Linux). Bounded: each demo
//! gets 90 s, is killed after that, and the test's guard kills any daemon
//! left and removes the output directory, also on failure.

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[path = "support/bins.rs"]
mod bins;

use bins::tesserad;

/// A live process (not a zombie) whose command line is tesserad's.
fn tesserad_alive(pid: u32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok();
    let live = stat
        .and_then(|s| s.rsplit(')').next().map(|r| r.trim_start().to_string()))
        .is_some_and(|r| !r.starts_with('Z'));
    live && std::fs::read(format!("/proc/{pid}/cmdline"))
        .is_ok_and(|c| String::from_utf8_lossy(&c).contains("tesserad"))
}

/// Kills the demo and any daemon it printed, and removes the output
/// directory, whatever happened.
struct Guard {
    child: Option<Child>,
    pids: Vec<u32>,
    out: PathBuf,
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
        for &p in &self.pids {
            if tesserad_alive(p) {
                let _ = Command::new("kill")
                    .args(["-KILL", &p.to_string()])
                    .status();
            }
        }
        let _ = std::fs::remove_dir_all(&self.out);
    }
}

fn spawn(out: &Path, extra: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args([
            "demo",
            "--ases",
            "50",
            "--prefixes",
            "200",
            "--timeout",
            "30",
            "--tesserad",
        ])
        .arg(tesserad())
        .arg("--out")
        .arg(out)
        .args(extra)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn tessera demo")
}

/// Stderr lines, as they come, on a channel.
fn lines(r: impl Read + Send + 'static) -> mpsc::Receiver<String> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for l in BufReader::new(r).lines().map_while(Result::ok) {
            if tx.send(l).is_err() {
                break;
            }
        }
    });
    rx
}

fn pid_of(line: &str) -> Option<u32> {
    line.split("tesserad pid ")
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// Waits at most `secs` for the child; kills it after that and fails.
fn wait_bounded(g: &mut Guard, secs: u64) -> std::process::ExitStatus {
    let t0 = Instant::now();
    let c = g.child.as_mut().expect("child");
    loop {
        if let Some(st) = c.try_wait().expect("try_wait") {
            return st;
        }
        assert!(
            t0.elapsed() < Duration::from_secs(secs),
            "tessera demo still running after {secs} s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Well-formed enough: an XML declaration, one `svg` root, and every
/// element closed in order.
fn assert_svg(p: &Path) {
    let s = std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(
        s.starts_with("<?xml"),
        "{}: no XML declaration",
        p.display()
    );
    let mut stack: Vec<String> = Vec::new();
    let mut roots = 0;
    let mut rest = s.as_str();
    while let Some(i) = rest.find('<') {
        let j = rest[i..].find('>').expect("unclosed tag") + i;
        let tag = &rest[i + 1..j];
        rest = &rest[j + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            assert_eq!(stack.pop().as_deref(), Some(name.trim()), "{}", p.display());
            continue;
        }
        let name = tag
            .split_whitespace()
            .next()
            .unwrap_or("")
            .trim_end_matches('/');
        if stack.is_empty() {
            assert_eq!(name, "svg", "{}: root element", p.display());
            roots += 1;
        }
        if !tag.ends_with('/') {
            stack.push(name.to_string());
        }
    }
    assert!(stack.is_empty(), "{}: unclosed {stack:?}", p.display());
    assert_eq!(roots, 1, "{}", p.display());
}

#[test]
fn tiny_demo_converges_in_every_mode_and_leaves_nothing() {
    let out = std::env::temp_dir().join(format!("tessera-demo-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut g = Guard {
        child: Some(spawn(
            &out,
            &["--modes", "sequential,sharded", "--reps", "2"],
        )),
        pids: Vec::new(),
        out: out.clone(),
    };
    let c = g.child.as_mut().expect("child");
    let err = lines(c.stderr.take().expect("stderr"));
    let mut stdout = c.stdout.take().expect("stdout");
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let st = wait_bounded(&mut g, 90);
    let text = reader.join().expect("stdout reader");
    let errs: Vec<String> = err.try_iter().collect();
    g.pids = errs.iter().filter_map(|l| pid_of(l)).collect();
    let all = format!("{text}\n--- stderr ---\n{}", errs.join("\n"));
    assert!(st.success(), "tessera demo failed: {st}\n{all}");
    assert_eq!(
        g.pids.len(),
        6,
        "one daemon per run, 3 modes x 2 reps: {all}"
    );
    for &p in &g.pids {
        assert!(!tesserad_alive(p), "tesserad {p} left running\n{all}");
    }

    // The trace's prefix count: "... N distinct at the end".
    let trace = text
        .lines()
        .find(|l| l.starts_with("trace:"))
        .unwrap_or_else(|| panic!("no trace line\n{all}"));
    let want: u64 = trace
        .split(", ")
        .find_map(|f| f.strip_suffix(" distinct at the end")?.parse().ok())
        .unwrap_or_else(|| panic!("no prefix count in {trace:?}"));
    assert!(
        want > 100,
        "a 200-prefix trace carries most of them: {want}"
    );
    for (mode, threads) in [("sequential", "-"), ("sharded", "1"), ("sharded", "2")] {
        let row = text
            .lines()
            .find(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                f.first() == Some(&mode) && f.get(1) == Some(&threads)
            })
            .unwrap_or_else(|| panic!("no row {mode} {threads}\n{all}"));
        let f: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(f.len(), 9, "{row}");
        assert_eq!(f[2].parse::<u64>().ok(), Some(want), "{row}");
        let conv: f64 = f[3].parse().expect("convergence");
        assert!((0.0..30.0).contains(&conv), "{row}");
        let (lo, hi) = f[4].split_once('-').expect("range");
        let (lo, hi): (f64, f64) = (lo.parse().expect("min"), hi.parse().expect("max"));
        assert!(lo <= conv && conv <= hi, "median within the range: {row}");
        assert!(f[8].ends_with('x'), "{row}");
    }
    for name in ["speedup.svg", "prefixes.svg"] {
        let p = out.join(name);
        assert!(
            text.contains(&format!("chart: {}", p.display())),
            "{name} not announced\n{all}"
        );
        assert_svg(&p);
    }
}

#[test]
fn sigint_mid_replay_stops_the_daemon() {
    let out = std::env::temp_dir().join(format!("tessera-demo-sig-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    // A long quiet period keeps the one run under way when the signal comes.
    let mut g = Guard {
        child: Some(spawn(
            &out,
            &["--modes", "sequential", "--quiet", "60", "--reps", "1"],
        )),
        pids: Vec::new(),
        out: out.clone(),
    };
    let c = g.child.as_mut().expect("child");
    let pid = c.id();
    let err = lines(c.stderr.take().expect("stderr"));
    let t0 = Instant::now();
    let dut = loop {
        let l = err
            .recv_timeout(Duration::from_secs(60).saturating_sub(t0.elapsed()))
            .expect("no 'tesserad pid' line within 60 s");
        if let Some(p) = pid_of(&l) {
            break p;
        }
    };
    g.pids.push(dut);
    std::thread::sleep(Duration::from_millis(1500));
    assert!(
        tesserad_alive(dut),
        "daemon {dut} should run until the signal"
    );
    let st = Command::new("kill")
        .args(["-INT", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(st.success());
    let st = wait_bounded(&mut g, 20);
    assert_eq!(st.code(), Some(1), "interrupted demo exits 1");
    assert!(!tesserad_alive(dut), "tesserad {dut} left running");
}
