//! `tessera top` under tmux, read back from the screen: a real tesserad on
//! loopback fed by `tessera replay` (a real BGP session, paced so the feed
//! lasts a few seconds). The screen shows the peer Established, an
//! UPDATE rate above zero while the feed runs (the sparkline moves), and
//! afterwards the same received count as `tessera show protocols`; `q`
//! quits. Needs tmux (Debian package tmux).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/bins.rs"]
mod bins;

use bins::{free_port, loopback_conf, paced_feed, spawn_tesserad, tesserad};

const TESSERA: &str = env!("CARGO_BIN_EXE_tessera");
const PREFIXES: u64 = 2_000;

/// Everything this test starts, removed also when it fails.
struct Lab {
    dir: PathBuf,
    tmux: String,
    children: Vec<Child>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.tmux, "kill-server"])
            .stderr(Stdio::null())
            .status();
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Lab {
    fn tmux(&self, args: &[&str]) -> Result<String, String> {
        let o = Command::new("tmux")
            .args(["-L", &self.tmux])
            .args(args)
            .output()
            .map_err(|e| format!("tmux (Debian package tmux): {e}"))?;
        if o.status.success() {
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        } else {
            Err(String::from_utf8_lossy(&o.stderr).into_owned())
        }
    }
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "top"])
            .unwrap_or_default()
    }
}

/// Waits up to `secs` for `f`; the last screen goes into the failure.
fn wait<T>(lab: &Lab, secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < end,
            "timed out waiting for {what}; screen:\n{}",
            lab.screen()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The whitespace-separated words of the screen line of peer `name`.
fn peer_row(screen: &str, name: &str) -> Option<Vec<String>> {
    screen.lines().find_map(|l| {
        let words: Vec<String> = l
            .split(|c: char| c.is_whitespace() || c == '│')
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect();
        (words.first().map(String::as_str) == Some(name)).then_some(words)
    })
}

#[test]
fn top_under_tmux_shows_live_peers_and_quits() {
    let dir = std::env::temp_dir().join(format!("tessera-top-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut lab = Lab {
        dir: dir.clone(),
        tmux: format!("tessera-top-{}", std::process::id()),
        children: Vec::new(),
    };
    let (bgp, metrics) = (free_port(), free_port());
    let (conf, sock) = loopback_conf(&dir, bgp, metrics);
    let check = Command::new(tesserad())
        .args(["-p", "-c"])
        .arg(&conf)
        .output()
        .expect("tesserad -p");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    lab.children.push(spawn_tesserad(&conf));
    wait(&lab, 10, "the control socket", || {
        sock.exists().then_some(())
    });

    lab.tmux(&[
        "new-session",
        "-d",
        "-s",
        "top",
        "-x",
        "130",
        "-y",
        "40",
        &format!(
            "{TESSERA} top --socket {} --metrics 127.0.0.1:{metrics} --interval 0.5",
            sock.display()
        ),
    ])
    .unwrap_or_else(|e| panic!("tmux new-session: {e}"));
    wait(&lab, 10, "the peer row", || {
        peer_row(&lab.screen(), "gen0").filter(|w| w.len() > 3)
    });

    // The feed: PREFIXES routes at 200 UPDATEs/s (about 10 s).
    lab.children.push(paced_feed(bgp, PREFIXES));
    wait(&lab, 20, "Established", || {
        peer_row(&lab.screen(), "gen0")
            .filter(|w| w.get(1).map(String::as_str) == Some("Established"))
    });
    // Columns: peer state since received accepted sent in/s out/s history.
    let rate = wait(&lab, 20, "an UPDATE rate above zero", || {
        let w = peer_row(&lab.screen(), "gen0")?;
        let r: f64 = w.get(6)?.parse().ok()?;
        (r > 0.0).then_some(r)
    });
    assert!(rate < 10_000.0, "rate {rate} for a feed paced at 200/s");
    // The history column has bars of more than one height.
    wait(&lab, 10, "a moving sparkline", || {
        let w = peer_row(&lab.screen(), "gen0")?;
        let h = w.get(8)?;
        let distinct: std::collections::BTreeSet<char> = h.chars().collect();
        (distinct.len() > 1).then_some(())
    });

    // Once the CLI says all routes are in, the screen says the same.
    let cli = || -> Option<u64> {
        let o = Command::new(TESSERA)
            .args(["--socket"])
            .arg(&sock)
            .args(["--json", "show", "protocols", "all", "gen0"])
            .output()
            .ok()?;
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).ok()?;
        v.get(0)?.get("routes")?.get("received")?.as_u64()
    };
    let n = wait(&lab, 60, "every route at tesserad", || {
        cli().filter(|n| *n == PREFIXES)
    });
    wait(&lab, 10, "the received count on screen", || {
        let w = peer_row(&lab.screen(), "gen0")?;
        (w.get(3)? == &n.to_string()).then_some(())
    });
    let screen = lab.screen();
    assert!(screen.contains("RIB:"), "{screen}");
    assert!(
        screen.contains("parse") && screen.contains("best_path"),
        "no UPDATE stage from /metrics:\n{screen}"
    );

    // q quits: the session (its only pane) ends.
    lab.tmux(&["send-keys", "-t", "top", "q"]).unwrap();
    wait(&lab, 10, "top to exit", || {
        lab.tmux(&["has-session", "-t", "top"])
            .is_err()
            .then_some(())
    });
}
