//! tesserad's HTTP listener against a live BGP peer: a real tesserad on
//! loopback fed by `tessera replay` (paced so the feed lasts ~10 s).
//!
//! - REST, over plain HTTP/1.1: `/status`, `/protocols/bgp` and
//!   `/routes/protocol/gen0` in birdwatcher's shapes, with counts equal to
//!   `tessera show protocols`; pagination; `/routes/prefix` longest match;
//!   `/routes/filtered/gen0` (an import policy rejects /22 and shorter:
//!   exactly those, as many as the CLI's `filtered`) and
//!   `/routes/export/gen0` (the static route, as many as the CLI's `sent`);
//!   429 under a burst; `/metrics` still the exposition.
//! - The web page in headless Chromium (Debian package chromium): the DOM
//!   has the peer row, the counts match the CLI, and the sparkline's points
//!   change between a dump before the feed and one while UPDATEs arrive;
//!   the lookup box shows the longest match with gen0's path marked best;
//!   a screenshot is saved as target/web-view.png.

use serde_json::Value;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

#[path = "support/bins.rs"]
mod bins;

use bins::{free_port, loopback_conf, paced_feed, spawn_tesserad};

const TESSERA: &str = env!("CARGO_BIN_EXE_tessera");
const PREFIXES: u64 = 2_000;

/// Everything this test starts, removed also when it fails.
struct Lab {
    dir: PathBuf,
    children: Vec<Child>,
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn wait<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let end = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < end, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `GET path` over HTTP/1.1: (status, headers, body).
fn get(addr: SocketAddr, path: &str) -> Option<(u16, String, String)> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(5)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n")?;
    let code = head.split_whitespace().nth(1)?.parse().ok()?;
    Some((code, head.to_string(), body.to_string()))
}

fn get_json(addr: SocketAddr, path: &str) -> (u16, Value) {
    let (code, _, body) = get(addr, path).unwrap_or_else(|| panic!("GET {path}"));
    let v = serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"));
    (code, v)
}

fn cli(sock: &std::path::Path, args: &[&str]) -> Option<Value> {
    let o = Command::new(TESSERA)
        .arg("--socket")
        .arg(sock)
        .arg("--json")
        .args(args)
        .output()
        .ok()?;
    serde_json::from_slice(&o.stdout).ok()
}

fn chromium_dom(url: &str, budget_ms: u32) -> String {
    let o = Command::new("timeout")
        .args([
            "60",
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
        ])
        .arg(format!("--virtual-time-budget={budget_ms}"))
        .args(["--dump-dom", url])
        .stderr(Stdio::null())
        .output()
        .expect("chromium (Debian package chromium)");
    assert!(o.status.success(), "chromium --dump-dom: {:?}", o.status);
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The text of the `<td class="CLASS">` in the row of peer `name`.
fn cell(dom: &str, name: &str, class: &str) -> Option<String> {
    let row = dom
        .split("<tr data-peer=\"")
        .find(|r| r.starts_with(&format!("{name}\"")))?;
    let row = row.split("</tr>").next()?;
    let at = row.find(&format!("<td class=\"{class}"))?;
    let rest = row.get(at..)?;
    let rest = rest.get(rest.find('>')? + 1..)?;
    Some(rest.get(..rest.find("</td>")?)?.to_string())
}

#[test]
fn rest_and_web_view_against_a_live_peer() {
    let dir = std::env::temp_dir().join(format!("tessera-web-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let mut lab = Lab {
        dir: dir.clone(),
        children: Vec::new(),
    };
    let (bgp, http) = (free_port(), free_port());
    let addr: SocketAddr = format!("127.0.0.1:{http}").parse().unwrap();
    let (conf, sock) = loopback_conf(&dir, bgp, http);
    // An import policy that filters something (prefixes of /22 and
    // shorter), the pre-policy Adj-RIB-In kept for /routes/filtered, and a
    // static route so that gen0 is sent something (/routes/export).
    let text = std::fs::read_to_string(&conf).unwrap();
    // For /routes/noexport: an export policy that rejects one static
    // (198.51.100.0/24), and a static tagged NO_EXPORT (203.0.113.0/24),
    // which the propagation rules keep from the eBGP neighbour.
    let text = text.replacen(
        "import = \"accept\"\nexport = \"accept\"\n",
        "import = \"lg_in\"\nexport = \"lg_out\"\nsoft_reconfiguration_inbound = true\n",
        1,
    ) + "[policy.lg_in]\ndefault = \"accept\"\n\
         [[policy.lg_in.term]]\nmatch.prefix = [\"0.0.0.0/0 le 22\"]\nthen.action = \"reject\"\n\
         [policy.lg_out]\ndefault = \"accept\"\n\
         [[policy.lg_out.term]]\nmatch.prefix = [\"198.51.100.0/24\"]\nthen.action = \"reject\"\n\
         [[static]]\nprefix = \"192.0.2.0/24\"\n\
         [[static]]\nprefix = \"198.51.100.0/24\"\n\
         [[static]]\nprefix = \"203.0.113.0/24\"\ncommunities = [\"no-export\"]\n";
    assert!(text.contains("export = \"lg_out\""), "{text}");
    std::fs::write(&conf, text).unwrap();
    lab.children.push(spawn_tesserad(&conf));
    wait(10, "the HTTP listener", || get(addr, "/metrics"));

    // /metrics is still the exposition.
    let (code, head, body) = get(addr, "/metrics").unwrap();
    assert_eq!(code, 200);
    assert!(
        head.to_ascii_lowercase()
            .contains("content-type: text/plain; version=0.0.4; charset=utf-8"),
        "{head}"
    );
    assert!(body.contains("tessera_rib_prefixes"), "{body}");

    let (code, st) = get_json(addr, "/status");
    assert_eq!(code, 200, "{st}");
    assert_eq!(st["status"]["router_id"], "198.18.0.1");
    assert!(!st["status"]["version"]
        .as_str()
        .unwrap_or_default()
        .is_empty());
    assert!(st["api"]["Version"].is_string());

    // The page before the feed: the peer row, no UPDATEs yet. `frames`
    // closes the event stream after that many snapshots, so that headless
    // Chromium's virtual time (paused while a fetch is open) runs out.
    let url = format!("http://{addr}/?frames=4");
    let points = |dom: &str| -> Option<String> {
        let h = cell(dom, "gen0", "history")?;
        let at = h.find("points=\"")? + 8;
        Some(h.get(at..)?.split('"').next()?.to_string())
    };
    let first = chromium_dom(&url, 2_000);
    assert!(
        cell(&first, "gen0", "state").is_some(),
        "no peer row:\n{first}"
    );
    let p1 = points(&first).unwrap_or_else(|| panic!("no sparkline:\n{first}"));
    assert_eq!(
        cell(&first, "gen0", "rate").as_deref(),
        Some("0.0"),
        "{first}"
    );

    lab.children.push(paced_feed(bgp, PREFIXES));
    wait(20, "Established and routes arriving", || {
        let (_, p) = get_json(addr, "/protocols/bgp");
        let g = &p["protocols"]["gen0"];
        (g["connection"] == "Established" && g["routes"]["received"].as_u64() > Some(0))
            .then_some(())
    });

    // Before and while UPDATEs arrive: the sparkline moves, the rate is up.
    let second = chromium_dom(&url, 2_000);
    let p2 = points(&second).unwrap_or_else(|| panic!("no sparkline:\n{second}"));
    assert!(
        !p2.is_empty() && p1 != p2,
        "sparkline did not move: {p1} / {p2}"
    );
    let rate: f64 = cell(&second, "gen0", "rate")
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no rate:\n{second}"));
    assert!(rate > 0.0, "rate {rate} while the feed runs:\n{second}");

    // Once the CLI has every route, REST and the page say the same.
    let received = |v: &Value| v.get(0)?.get("routes")?.get("received")?.as_u64();
    let proto = wait(60, "every route at tesserad", || {
        cli(&sock, &["show", "protocols", "all", "gen0"]).filter(|v| received(v) == Some(PREFIXES))
    });
    let c = &proto[0]["routes"];
    let (_, p) = get_json(addr, "/protocols/bgp");
    let g = &p["protocols"]["gen0"];
    assert_eq!(g["routes"]["received"], c["received"]);
    assert_eq!(g["routes"]["imported"], c["accepted"]);
    assert_eq!(g["routes"]["exported"], c["sent"]);
    assert_eq!(g["routes"]["filtered"], c["filtered"]);
    assert_eq!(g["neighbor_address"], "127.0.0.2");
    assert_eq!(g["neighbor_as"], 65001);
    assert_eq!(g["state"], "up");

    // Pagination: page size 500 over the accepted routes.
    let accepted = c["accepted"].as_u64().unwrap();
    let (code, r0) = get_json(addr, "/routes/protocol/gen0?page=0&page_size=500");
    assert_eq!(code, 200, "{r0}");
    assert_eq!(r0["pagination"]["total_results"], accepted);
    assert_eq!(r0["pagination"]["total_pages"], accepted.div_ceil(500));
    assert_eq!(r0["routes"].as_array().unwrap().len(), 500);
    let last = accepted.div_ceil(500) - 1;
    let (_, rl) = get_json(
        addr,
        &format!("/routes/protocol/gen0?page={last}&page_size=500"),
    );
    let tail = accepted - last * 500;
    assert_eq!(rl["routes"].as_array().unwrap().len() as u64, tail);
    let (_, r1) = get_json(addr, "/routes/protocol/gen0?page=1&page_size=500");
    assert_ne!(r0["routes"][0]["network"], r1["routes"][0]["network"]);
    let route = &r0["routes"][0];
    assert_eq!(route["from_protocol"], "gen0");
    assert!(route["bgp"]["as_path"].is_array(), "{route}");

    // Longest match for an address inside the first route.
    let net = route["network"].as_str().unwrap().to_string();
    let addr_in = net.split('/').next().unwrap();
    let (code, lm) = get_json(addr, &format!("/routes/prefix?prefix={addr_in}"));
    assert_eq!(code, 200, "{lm}");
    let found = lm["routes"].as_array().unwrap();
    assert!(found.iter().any(|r| r["primary"] == true), "{lm}");
    assert_eq!(found[0]["network"], net.as_str());
    let (code, _) = get_json(addr, "/routes/protocol/nosuch");
    assert_eq!(code, 404);

    // Filtered: what the import policy rejected, as gen0 sent it, counted
    // as the CLI counts it; paginated as the others.
    let filtered = c["filtered"].as_u64().unwrap();
    assert!(filtered > 0 && accepted > 0, "the policy filters some: {c}");
    let (code, f0) = get_json(addr, "/routes/filtered/gen0?page_size=10000");
    assert_eq!(code, 200, "{f0}");
    assert_eq!(
        f0["pagination"]["total_results"], filtered,
        "{}",
        f0["pagination"]
    );
    let fr = f0["routes"].as_array().unwrap();
    assert_eq!(fr.len() as u64, filtered);
    for r in fr {
        let len: u8 = r["network"]
            .as_str()
            .unwrap()
            .split('/')
            .nth(1)
            .unwrap()
            .parse()
            .unwrap();
        assert!(len <= 22, "filtered, yet not matched by the policy: {r}");
        assert_eq!(r["from_protocol"], "gen0");
        assert_eq!(r["primary"], false);
    }
    let (_, f1) = get_json(addr, "/routes/filtered/gen0?page=1&page_size=1");
    assert_eq!(
        f1["routes"].as_array().unwrap().len(),
        usize::from(filtered > 1)
    );
    assert_eq!(f1["pagination"]["total_pages"], filtered);
    // No accepted route is in the filtered list.
    let nets: std::collections::BTreeSet<&str> =
        fr.iter().map(|r| r["network"].as_str().unwrap()).collect();
    assert!(
        !nets.contains(net.as_str()),
        "{net} is accepted and filtered"
    );
    // Export: what gen0 is sent (the static; gen0's own routes are not
    // sent back to it), as many as the CLI's `sent`.
    let (code, e0) = get_json(addr, "/routes/export/gen0");
    assert_eq!(code, 200, "{e0}");
    assert_eq!(e0["pagination"]["total_results"], c["sent"], "{e0}");
    let er = e0["routes"].as_array().unwrap();
    assert!(
        er.iter().any(|r| r["network"] == "192.0.2.0/24"),
        "the static is not exported: {e0}"
    );
    assert!(
        er.iter().all(|r| r["from_protocol"] != "gen0"),
        "gen0's routes exported back to it: {e0}"
    );
    let (code, _) = get_json(addr, "/routes/export/nosuch");
    assert_eq!(code, 404);
    let (code, _) = get_json(addr, "/routes/filtered/nosuch");
    assert_eq!(code, 404);
    // Noexport: exactly the static the export policy rejects and the one
    // tagged NO_EXPORT; gen0's own routes (never sent back to it) and the
    // exported static are not listed. Paginated like the others.
    let (code, n0) = get_json(addr, "/routes/noexport/gen0");
    assert_eq!(code, 200, "{n0}");
    let held: Vec<&str> = n0["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["network"].as_str().unwrap())
        .collect();
    assert_eq!(held, ["198.51.100.0/24", "203.0.113.0/24"], "{n0}");
    assert_eq!(n0["pagination"]["total_results"], 2);
    assert_eq!(
        n0["routes"][1]["bgp"]["communities"],
        serde_json::json!([[65535, 65281]])
    );
    let (_, n1) = get_json(addr, "/routes/noexport/gen0?page=1&page_size=1");
    assert_eq!(n1["routes"][0]["network"], "203.0.113.0/24", "{n1}");
    assert_eq!(n1["pagination"]["total_pages"], 2);
    let (code, _) = get_json(addr, "/routes/noexport/nosuch");
    assert_eq!(code, 404);
    // The CLI says the same.
    let cli_held = cli(&sock, &["show", "route", "noexport", "gen0"]).expect("noexport CLI");
    assert_eq!(cli_held.as_array().map(Vec::len), Some(2), "{cli_held}");

    // The page shows the CLI's counts.
    let dom = wait(30, "the counts on the page", || {
        let d = chromium_dom(&url, 2_000);
        let shown: u64 = cell(&d, "gen0", "received")?.parse().ok()?;
        (c["received"].as_u64() == Some(shown)).then_some(d)
    });
    assert_eq!(
        cell(&dom, "gen0", "accepted").unwrap(),
        c["accepted"].to_string()
    );
    assert_eq!(
        cell(&dom, "gen0", "exported").unwrap(),
        c["sent"].to_string()
    );
    assert_eq!(cell(&dom, "gen0", "state").unwrap(), "Established");
    // No dataplane and no cluster here: their panels are hidden.
    for id in ["dataplane", "cluster"] {
        assert!(
            dom.contains(&format!("<section id=\"{id}\" hidden=\"\">")),
            "{id} panel not hidden:\n{dom}"
        );
    }
    // Per-stage latency histograms: the parse stage has bars.
    let parse = dom
        .split("<tr data-stage=\"parse\">")
        .nth(1)
        .and_then(|r| r.split("</tr>").next())
        .unwrap_or_else(|| panic!("no parse stage:\n{dom}"));
    assert!(parse.contains("<svg class=\"hist\""), "{parse}");
    assert!(
        parse
            .split("<rect")
            .skip(1)
            .any(|r| !r.contains("height=\"0.0\"")),
        "no bar in the parse histogram: {parse}"
    );

    // The lookup box (`?q=` runs it on load): the longest match, its path
    // from gen0 marked best.
    let looked = chromium_dom(&format!("http://{addr}/?frames=1&q={addr_in}"), 2_000);
    let table = looked
        .split("<table id=\"lookup-table\">")
        .nth(1)
        .and_then(|t| t.split("</table>").next())
        .unwrap_or_else(|| panic!("no lookup table:\n{looked}"));
    let best = table
        .split("<tr class=\"best\">")
        .nth(1)
        .unwrap_or_else(|| panic!("no best path:\n{table}"));
    assert!(best.contains(&format!("<td>{net}</td>")), "{table}");
    assert!(best.contains("<td>gen0</td>"), "{table}");
    // No [rpki] here: the validation columns say "not verified".
    assert!(best.contains("<td class=\"rpki\">-</td>"), "{table}");
    assert!(best.contains("<td class=\"aspa\">-</td>"), "{table}");
    let target = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../web-view.png");
    // Chromium on two loaded cores can miss a deadline: a second try.
    // `--timeout`, not `--virtual-time-budget`: with the page's server-sent
    // events stream open, virtual time often never runs out and the
    // screenshot hung until the outer timeout (seen in about half the
    // runs); `--timeout` takes it once the page has loaded.
    let shoot = || {
        Command::new("timeout")
            .args([
                "60",
                "chromium",
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
            ])
            .args(["--timeout=5000", "--window-size=1200,800"])
            .arg(format!("--screenshot={}", target.display()))
            .arg(&url)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("chromium")
            .success()
    };
    let shot = shoot() || shoot();
    assert!(shot && target.exists(), "no screenshot");

    // A burst over the rate limit gets 429 (burst 20, 10/s).
    let codes: Vec<u16> = (0..60)
        .filter_map(|_| get(addr, "/status").map(|r| r.0))
        .collect();
    assert!(codes.contains(&429), "{codes:?}");
    // /metrics is not rate-limited.
    assert_eq!(get(addr, "/metrics").unwrap().0, 200);
}
