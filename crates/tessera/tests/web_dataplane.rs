//! The live views of a tesserad whose dataplane forwards real traffic, in
//! network namespaces this test creates:
//!
//! ```text
//! A [a0 198.18.1.2] -- [r0 198.18.1.1] R [r1 198.18.2.1] -- [b0 198.18.2.2] B
//! ```
//!
//! R runs tesserad with `[dataplane]` (AF_PACKET, two cores) on r0 and r1;
//! R's ports have no kernel addresses and kernel forwarding is off, so
//! every packet that crosses R was moved by Tessera. A sends UDP to B over
//! eight flows (the fanout hash spreads them over the cores) and a few
//! packets to 198.51.100.9, for which R has no route (`no_route` drops).
//!
//! - Headless Chromium (run in R's namespace, where the web view listens)
//!   loads `/`: the Dataplane panel is shown, with a row per core, a
//!   received rate above zero while the traffic runs, the `no_route`
//!   drops in the drops table, and the sparkline moves (the rate is back
//!   to 0 once the traffic stops). The Cluster panel stays hidden (no
//!   `[cluster]`).
//! - `/metrics` and `tessera show dataplane --json` have the per-core
//!   counters, and they account for the packets A sent.
//! - `tessera top` under tmux shows the dataplane pane with a core row
//!   whose rate is above zero.
//!
//! Needs root, `ip`, `chromium`, `tmux`; bounded (about 20 s when it
//! passes) and everything is torn down, also on failure.

use serde_json::Value;
use std::net::UdpSocket;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "support/bins.rs"]
mod bins;

use bins::{require_root_and, tesserad};

const TESSERA: &str = env!("CARGO_BIN_EXE_tessera");
const HTTP: u16 = 8080;

/// Namespaces, daemons, tmux and the work directory; dropping it tears
/// all of them down.
struct Lab {
    tag: String,
    dir: PathBuf,
    children: Vec<Child>,
    stop: Arc<AtomicBool>,
}

impl Lab {
    fn ns(&self, n: &str) -> String {
        format!("wd{n}{}", self.tag)
    }
    fn sh(&self, argv: &[&str]) -> Result<String, String> {
        let o = Command::new(argv[0])
            .args(&argv[1..])
            .output()
            .map_err(|e| format!("{argv:?}: {e}"))?;
        if o.status.success() {
            Ok(String::from_utf8_lossy(&o.stdout).into_owned())
        } else {
            Err(format!(
                "{argv:?}: {}",
                String::from_utf8_lossy(&o.stderr).trim()
            ))
        }
    }
    fn exec(&self, n: &str, argv: &[&str]) {
        let ns = self.ns(n);
        let mut v = vec!["ip", "netns", "exec", &ns];
        v.extend_from_slice(argv);
        if let Err(e) = self.sh(&v) {
            panic!("setup: {e}");
        }
    }
    fn tmux(&self, args: &[&str]) -> Result<String, String> {
        let mut v = vec!["tmux", "-L", &self.tag];
        v.extend_from_slice(args);
        self.sh(&v)
    }
    fn screen(&self) -> String {
        self.tmux(&["capture-pane", "-p", "-t", "top"])
            .unwrap_or_default()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.tmux(&["kill-server"]);
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in ["a", "r", "b"] {
            let _ = self.sh(&["ip", "netns", "del", &self.ns(n)]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn wait<T>(
    secs: u64,
    what: &str,
    diag: &dyn Fn() -> String,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            Instant::now() < end,
            "timed out waiting for {what}\n{}",
            diag()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Runs `f` on a thread inside network namespace `ns`.
fn in_ns<T: Send + 'static>(
    ns: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::spawn(move || {
        let file = std::fs::File::open(format!("/run/netns/{ns}")).expect("netns file");
        // SAFETY: setns(2) on an open namespace descriptor; it changes only
        // this thread's network namespace.
        let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
        f()
    })
}

/// GET `path` from the web view in R's namespace: the body.
fn http_get(lab: &Lab, path: &str) -> Option<String> {
    let ns = lab.ns("r");
    let path = path.to_string();
    let h = in_ns(ns, move || -> Option<String> {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", HTTP)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: r\r\nConnection: close\r\n\r\n"
        )
        .ok()?;
        let mut b = String::new();
        s.read_to_string(&mut b).ok()?;
        Some(b.split_once("\r\n\r\n")?.1.to_string())
    });
    h.join().ok().flatten()
}

/// Headless Chromium in R's namespace: the DOM after `?frames=4` (the
/// event stream closes after four snapshots, so virtual time runs out).
fn chromium_dom(lab: &Lab) -> String {
    let ns = lab.ns("r");
    let o = Command::new("timeout")
        .args(["60", "ip", "netns", "exec", &ns, "chromium"])
        .args(["--headless", "--no-sandbox", "--disable-gpu"])
        .arg(format!(
            "--user-data-dir={}",
            lab.dir.join("chromium").display()
        ))
        .args(["--virtual-time-budget=2000", "--dump-dom"])
        .arg(format!("http://127.0.0.1:{HTTP}/?frames=4"))
        .stderr(Stdio::null())
        .output()
        .expect("chromium (Debian package chromium)");
    assert!(o.status.success(), "chromium --dump-dom: {:?}", o.status);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The `<tr data-ATTR="KEY">` row's cell of class `class`.
fn cell(dom: &str, attr: &str, key: &str, class: &str) -> Option<String> {
    let row = dom.split(&format!("<tr data-{attr}=\"{key}\">")).nth(1)?;
    let row = row.split("</tr>").next()?;
    let at = row.find(&format!("<td class=\"{class}"))?;
    let rest = row.get(at..)?;
    let rest = rest.get(rest.find('>')? + 1..)?;
    Some(rest.get(..rest.find("</td>")?)?.to_string())
}

/// The sparkline points of core `core`'s row.
fn points(dom: &str, core: u32) -> Option<String> {
    let h = cell(dom, "core", &core.to_string(), "history")?;
    let at = h.find("points=\"")? + 8;
    Some(h.get(at..)?.split('"').next()?.to_string())
}

fn rx_rates(dom: &str) -> Vec<f64> {
    (0..2)
        .filter_map(|c| cell(dom, "core", &c.to_string(), "rx-rate")?.parse().ok())
        .collect()
}

fn setup() -> Lab {
    require_root_and(
        "the dataplane web test",
        &["ip", "ping", "chromium", "tmux"],
    );
    let tag = format!("{}", std::process::id() % 100_000);
    let dir = std::env::temp_dir().join(format!("tessera-webdp-{tag}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("work dir");
    let lab = Lab {
        tag,
        dir,
        children: Vec::new(),
        stop: Arc::new(AtomicBool::new(false)),
    };
    for n in ["a", "r", "b"] {
        lab.sh(&["ip", "netns", "add", &lab.ns(n)])
            .unwrap_or_else(|e| panic!("setup: {e}"));
        lab.exec(n, &["ip", "link", "set", "lo", "up"]);
        // No IPv6 (router solicitations, MLD): nothing but the test's
        // traffic reaches R's ports, so its rates can go back to 0.
        lab.exec(n, &["sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1"]);
        lab.exec(
            n,
            &["sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"],
        );
    }
    for (n1, i1, n2, i2) in [("a", "a0", "r", "r0"), ("r", "r1", "b", "b0")] {
        let (x, y) = (lab.ns(n1), lab.ns(n2));
        lab.sh(&[
            "ip", "link", "add", i1, "netns", &x, "type", "veth", "peer", "name", i2, "netns", &y,
        ])
        .unwrap_or_else(|e| panic!("setup: {e}"));
    }
    lab.exec("a", &["ip", "addr", "add", "198.18.1.2/24", "dev", "a0"]);
    lab.exec("b", &["ip", "addr", "add", "198.18.2.2/24", "dev", "b0"]);
    lab.exec("r", &["sysctl", "-qw", "net.ipv4.ip_forward=0"]);
    for (n, i) in [("a", "a0"), ("r", "r0"), ("r", "r1"), ("b", "b0")] {
        lab.exec(n, &["ip", "link", "set", i, "up"]);
    }
    lab.exec("a", &["ip", "route", "add", "default", "via", "198.18.1.1"]);
    lab.exec("b", &["ip", "route", "add", "default", "via", "198.18.2.1"]);
    lab
}

#[test]
fn web_view_and_top_show_the_dataplane_forwarding_in_a_netns() {
    let mut lab = setup();
    let sock = lab.dir.join("ctl.sock");
    let conf = lab.dir.join("tesserad.toml");
    std::fs::write(
        &conf,
        format!(
            "[router]\nid = \"198.18.1.1\"\nasn = 65000\nlisten = [\"127.0.0.1:1179\"]\n\n\
             [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:{HTTP}\"\n\n\
             [log]\nlevel = \"warn\"\n\n\
             [dataplane]\nio = \"af_packet\"\ncores = 2\n\n\
             [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"198.18.1.1/24\"]\n\n\
             [[dataplane.interface]]\nname = \"r1\"\naddresses = [\"198.18.2.1/24\"]\n",
            sock.display()
        ),
    )
    .expect("tesserad.toml");
    let log = std::fs::File::create(lab.dir.join("tesserad.log")).expect("log");
    let ns = lab.ns("r");
    lab.children.push(
        Command::new("ip")
            .args(["netns", "exec", &ns])
            .arg(tesserad())
            .arg("-c")
            .arg(&conf)
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("tesserad"),
    );
    let dir = lab.dir.clone();
    let diag = move || {
        format!(
            "--- tesserad.log\n{}",
            std::fs::read_to_string(dir.join("tesserad.log")).unwrap_or_default()
        )
    };
    wait(15, "the web view", &diag, || http_get(&lab, "/metrics"));

    // Neighbours resolved on every hop (A's kernel would drop packets
    // queued behind an unresolved ARP entry): a ping through R answers.
    let a = lab.ns("a");
    wait(15, "a ping from A to B through R", &diag, || {
        lab.sh(&[
            "ip",
            "netns",
            "exec",
            &a,
            "ping",
            "-c",
            "1",
            "-W",
            "1",
            "198.18.2.2",
        ])
        .ok()
    });

    // A's traffic: 8 UDP flows to B, ~2000 packets/s, and one packet in
    // 20 to an address R has no route for, until the lab stops it.
    let sent = Arc::new(AtomicU64::new(0));
    let (stop, n) = (Arc::clone(&lab.stop), Arc::clone(&sent));
    let sender = in_ns(lab.ns("a"), move || {
        let socks: Vec<UdpSocket> = (0..8)
            .map(|_| UdpSocket::bind(("198.18.1.2", 0)).expect("bind"))
            .collect();
        let b = [0u8; 64];
        let mut i = 0u64;
        while !stop.load(Ordering::Relaxed) {
            for s in &socks {
                let to = if i % 20 == 19 {
                    "198.51.100.9"
                } else {
                    "198.18.2.2"
                };
                if s.send_to(&b, (to, 5001)).is_ok() {
                    n.fetch_add(1, Ordering::Relaxed);
                }
                i += 1;
            }
            std::thread::sleep(Duration::from_millis(4));
        }
    });

    // The page while the traffic runs: per-core rows, a rate above zero,
    // the no_route drops; no cluster panel.
    let dom = wait(30, "a dataplane rate above zero on the page", &diag, || {
        let d = chromium_dom(&lab);
        (rx_rates(&d).iter().sum::<f64>() > 0.0).then_some(d)
    });
    assert!(
        dom.contains("<section id=\"dataplane\">"),
        "dataplane panel hidden:\n{dom}"
    );
    assert!(
        dom.contains("<section id=\"cluster\" hidden=\"\">"),
        "cluster panel shown without a cluster:\n{dom}"
    );
    assert_eq!(rx_rates(&dom).len(), 2, "one row per core:\n{dom}");
    let drops: u64 = cell(&dom, "reason", "no_route", "total")
        .and_then(|t| t.parse().ok())
        .unwrap_or_else(|| panic!("no no_route drops row:\n{dom}"));
    assert!(drops > 0);
    let busy = (0..2)
        .find(|&c| {
            cell(&dom, "core", &c.to_string(), "rx-rate")
                .and_then(|r| r.parse::<f64>().ok())
                .is_some_and(|r| r > 0.0)
        })
        .expect("a busy core");
    let p1 = points(&dom, busy).unwrap_or_else(|| panic!("no sparkline:\n{dom}"));

    // /metrics and the CLI have the per-core counters.
    let m = http_get(&lab, "/metrics").expect("/metrics");
    for core in ["0", "1"] {
        for dir in ["rx", "tx"] {
            let l =
                format!("tessera_dataplane_core_packets_total{{core=\"{core}\",dir=\"{dir}\"}}");
            assert!(m.contains(&l), "no {l} in /metrics:\n{m}");
        }
    }
    assert!(
        m.contains("tessera_dataplane_core_drops_total{core=\"")
            && m.contains("reason=\"no_route\"}"),
        "{m}"
    );

    // tessera top under tmux: the dataplane pane, a core with a rate.
    lab.tmux(&[
        "new-session",
        "-d",
        "-s",
        "top",
        "-x",
        "130",
        "-y",
        "45",
        &format!("{TESSERA} top --socket {} --interval 0.5", sock.display()),
    ])
    .unwrap_or_else(|e| panic!("tmux (Debian package tmux): {e}"));
    let screen_diag = || format!("screen:\n{}", lab.screen());
    wait(
        15,
        "a core row with a rate in top's dataplane pane",
        &screen_diag,
        || {
            let s = lab.screen();
            s.contains(" dataplane ").then_some(())?;
            s.lines().find(|l| {
                let w: Vec<&str> = l
                    .split(|c: char| c.is_whitespace() || c == '│')
                    .filter(|w| !w.is_empty())
                    .collect();
                w.first().is_some_and(|c| c.starts_with("core"))
                    && w.get(1)
                        .and_then(|r| r.parse::<f64>().ok())
                        .is_some_and(|r| r > 0.0)
            })?;
            s.contains("no_route=").then_some(())
        },
    );
    let _ = lab.tmux(&["send-keys", "-t", "top", "q"]);

    // Traffic stops: the rate goes to 0 and the sparkline has moved.
    lab.stop.store(true, Ordering::Relaxed);
    sender.join().expect("sender");
    let total_sent = sent.load(Ordering::Relaxed);
    std::thread::sleep(Duration::from_secs(2));
    let still = wait(20, "the rates back to 0", &diag, || {
        let d = chromium_dom(&lab);
        (rx_rates(&d) == [0.0, 0.0]).then_some(d)
    });
    let p2 = points(&still, busy).unwrap_or_else(|| panic!("no sparkline:\n{still}"));
    assert_ne!(p1, p2, "the sparkline did not move");

    // The CLI's totals account for what A sent (ARP and the like add a
    // few packets; nothing A sent was lost on the way in).
    let o = Command::new(TESSERA)
        .arg("--socket")
        .arg(&sock)
        .args(["--json", "show", "dataplane"])
        .output()
        .expect("tessera show dataplane");
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&o.stdout)));
    let cores = v["per_core"].as_array().expect("per_core");
    assert_eq!(cores.len(), 2, "{v}");
    let rx: u64 = cores.iter().map(|c| c["rx"].as_u64().unwrap_or(0)).sum();
    assert!(
        rx >= total_sent,
        "cores received {rx} of {total_sent} sent: {v}"
    );
    let no_route: u64 = cores
        .iter()
        .map(|c| c["drops"]["no_route"].as_u64().unwrap_or(0))
        .sum();
    assert!(
        no_route >= (total_sent / 20).saturating_sub(8),
        "{no_route} no_route drops for {total_sent} sent: {v}"
    );
}
