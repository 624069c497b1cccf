//! BFD (RFC 5880, single hop RFC 5881) between tesserad and FRR's `bfdd`,
//! and between tesserad and BIRD's BFD protocol, in network namespaces:
//!
//! 1. tesserad (neighbour with `bfd = true`, 100 ms x 3) and the peer's
//!    BFD come Up, over IPv4 (the BGP session's address) and IPv6 (a
//!    second neighbour, BFD only);
//! 2. the peer's BFD is frozen (SIGSTOP): tesserad declares the session
//!    Down with "detection time expired" within the Detection Time
//!    (300 ms) plus slack for a loaded machine, tears the BGP session down
//!    (Cease / BFD Down) and withdraws the peer's routes;
//! 3. the peer resumes (SIGCONT): BFD comes Up again, and with it the BGP
//!    session and the routes.
//!
//! Every wait is bounded; the lab removes its namespaces and processes on
//! drop, failures included.

use e2e as common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::peer::{wait_established, Peer, Session};
use common::tesserad::{Config, Neighbor, Tesserad};
use common::Lab;

const BFDD: &str = "/usr/lib/frr/bfdd";
const INTERVAL_MS: u64 = 100;
const MULT: u64 = 3;
/// Scheduling slack on a shared two-core machine.
const SLACK_MS: u64 = 400;

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// tesserad's `show bfd` entry for `peer`.
fn bfd_session(t: &Tesserad, peer: &str) -> Result<Option<serde_json::Value>, String> {
    let line = t.request(r#"{"command":"show_bfd"}"#)?;
    let v: serde_json::Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
    let list = v["response"]["ok"]["data"]
        .as_array()
        .ok_or_else(|| format!("not a BFD list: {line}"))?;
    Ok(list.iter().find(|s| s["peer"] == peer).cloned())
}

fn wait_bfd(lab: &Lab, t: &Tesserad, peer: &str, state: &str, secs: u64) -> serde_json::Value {
    lab.wait(
        secs,
        &format!("tesserad BFD to {peer} {state}"),
        || match bfd_session(t, peer)? {
            Some(s) if s["state"] == state => Ok(Some(s)),
            Some(s) => Err(format!("session {s}")),
            None => Err(format!("no BFD session to {peer}")),
        },
    )
}

fn start_tesserad(lab: &Lab) -> Tesserad {
    let l = lab.leaf(1);
    let cfg = Config {
        asn: 65000,
        router_id: "198.18.0.1".into(),
        neighbors: vec![Neighbor {
            name: "peer1".into(),
            addr: l.v4.clone(),
            local_addr: l.center_v4.clone(),
            remote_as: 65001,
            hold: 9,
            rr_client: false,
            rs_client: false,
            max_prefix: None,
        }],
        cluster_id: None,
    };
    let bfd_keys = format!(
        "bfd = true\nbfd_min_tx = {INTERVAL_MS}\nbfd_min_rx = {INTERVAL_MS}\nbfd_multiplier = {MULT}\n"
    );
    // A second neighbour on the peer's IPv6 address: its BGP session never
    // comes up (the peer has none there), its BFD session must.
    let v6 = format!(
        "\n[[neighbor]]\nname = \"peer1v6\"\naddress = \"{}\"\nlocal_address = \"{}\"\n\
         remote_as = 65001\nconnect_retry = 60\nbfd = true\n",
        l.v6, l.center_v6
    );
    Tesserad::start_with(lab, |sock| {
        let text = cfg.render(sock);
        let text = text.replacen(
            "export = \"accept\"\n",
            &format!("export = \"accept\"\n{bfd_keys}"),
            1,
        );
        format!("[bfd]\nmin_tx = {INTERVAL_MS}\nmin_rx = {INTERVAL_MS}\n\n{text}{v6}")
    })
}

/// The steps after both daemons run. `peer_up(v6)` says whether the peer
/// sees its BFD session Up; `freeze(true/false)` stops and resumes the
/// peer's BFD.
fn scenario(
    lab: &Lab,
    t: &Tesserad,
    peer: &dyn Peer,
    pfx: &str,
    peer_bfd_up: &dyn Fn(bool) -> Result<bool, String>,
    freeze: &dyn Fn(bool),
) {
    let l = lab.leaf(1);
    let (v4, v6) = (l.v4.clone(), l.v6.clone());

    wait_established(lab, peer, 30);
    let s = wait_bfd(lab, t, &v4, "Up", 20);
    assert_eq!(s["neighbor"], "peer1", "{s}");
    wait_bfd(lab, t, &v6, "Up", 20);
    lab.wait(20, "the peer sees both BFD sessions Up", || {
        Ok((peer_bfd_up(false)? && peer_bfd_up(true)?).then_some(()))
    });
    // Negotiated: 100 ms both ways, detection 3 x 100 ms.
    let s = lab.wait(10, "fast timers negotiated (Poll/Final done)", || {
        let s = bfd_session(t, &v4)?.ok_or("no session")?;
        Ok((s["tx_interval_us"] == INTERVAL_MS * 1000
            && s["detection_time_us"] == INTERVAL_MS * MULT * 1000)
            .then_some(s))
    });
    let downs_before = s["transitions_down"].as_u64().unwrap_or(0);
    lab.wait(20, &format!("tesserad has the peer's {pfx}"), || {
        Ok(t.route(pfx)?.map(|_| ()))
    });

    // Failure: the peer's BFD goes silent.
    // The peer stops somewhere between t0 and t1: `freeze` runs `kill`
    // for each of its processes, which can take a while on a loaded
    // machine, and the peer keeps sending until the signal lands. So the
    // earliest Down is reckoned from t0 and the latest from t1: SLACK_MS
    // is then the daemon's own scheduling margin, not kill's.
    let t0 = now_ms();
    freeze(true);
    let t1 = now_ms();
    let s = wait_bfd(lab, t, &v4, "Down", 10);
    let at = s["last_change_ms"].as_u64().unwrap_or(0);
    let took = at.saturating_sub(t0);
    let late = at.saturating_sub(t1);
    let detect = INTERVAL_MS * MULT;
    assert_eq!(s["diag"], "detection-time-expired", "{s}");
    assert_eq!(
        s["transitions_down"].as_u64(),
        Some(downs_before + 1),
        "{s}"
    );
    assert!(
        took + INTERVAL_MS >= detect && late <= detect + SLACK_MS,
        "Down {took} ms after the peer was told to stop ({late} ms after the \
         signal was sent); the Detection Time is {detect} ms (allowed {}..={} ms)\n{}",
        detect - INTERVAL_MS,
        detect + SLACK_MS,
        lab.context()
    );
    eprintln!("BFD Down detected {took} ms after the peer stopped (Detection Time {detect} ms)");
    // Fast fall-over: the BGP session and the peer's routes go at once
    // (the hold time is 9 s, so this is BFD's doing).
    lab.wait(3, "tesserad's BGP session to the peer torn down", || {
        Ok((!t.established(&v4)?).then_some(()))
    });
    lab.wait(3, &format!("tesserad withdrew {pfx}"), || {
        Ok(t.route(pfx)?.is_none().then_some(()))
    });
    // While BFD stays down, BGP stays down.
    std::thread::sleep(Duration::from_millis(1500));
    if t.established(&v4).unwrap_or(false) {
        lab.fail("the BGP session came back while BFD was still Down");
    }

    // Recovery.
    freeze(false);
    wait_bfd(lab, t, &v4, "Up", 20);
    lab.wait(30, "tesserad's BGP session back", || {
        Ok(t.established(&v4)?.then_some(()))
    });
    lab.wait(20, &format!("tesserad has {pfx} again"), || {
        Ok(t.route(pfx)?.map(|_| ()))
    });
    wait_bfd(lab, t, &v6, "Up", 20);
}

#[test]
fn frr_bfdd() {
    let tools = [common::frr::TOOLS, &[BFDD, "ip"]].concat();
    if !common::ready(&tools) {
        return;
    }
    let lab = Lab::star("bfd-frr", 1);
    let l = lab.leaf(1).clone();
    let s = Session::leaf(&l, 65001, 65000);
    let frr = common::frr::Frr::start(&lab, "frr", &s);
    // bfdd runs without zebra, as the frr user: its directory is open to it.
    let dir = lab.path("bfdd");
    std::fs::create_dir_all(&dir).expect("bfdd dir");
    let _ = common::sh(&["chmod", "0777", &dir.display().to_string()]);
    let d = dir.display().to_string();
    let conf = format!(
        "log file {d}/bfdd.log debugging\n\
         bfd\n peer {pv4} local-address {lv4}\n  receive-interval {INTERVAL_MS}\n  \
         transmit-interval {INTERVAL_MS}\n  detect-multiplier {MULT}\n !\n \
         peer {pv6} local-address {lv6}\n  receive-interval {INTERVAL_MS}\n  \
         transmit-interval {INTERVAL_MS}\n  detect-multiplier {MULT}\n !\n!\n",
        pv4 = l.center_v4,
        lv4 = l.v4,
        pv6 = l.center_v6,
        lv6 = l.v6,
    );
    let conf_path = lab.write("bfdd/bfdd.conf", &conf);
    let _ = common::sh(&["chmod", "0644", &conf_path.display().to_string()]);
    let pid = lab.spawn(
        "bfdd",
        &l.ns,
        &[
            BFDD,
            "-f",
            &conf_path.display().to_string(),
            "--vty_socket",
            &d,
            "-P",
            "0",
            "--bfdctl",
            &format!("{d}/bfdd.sock"),
            "-z",
            &format!("{d}/zserv.api"),
            "-i",
            &format!("{d}/bfdd.pid"),
        ],
        &[],
    );
    lab.add_log("bfdd log", &dir.join("bfdd.log"));
    let vty = |cmd: &str| common::sh(&["vtysh", "--vty_socket", &d, "-d", "bfdd", "-c", cmd]);
    lab.wait(15, "bfdd vty socket", || Ok(vty("show version").ok()));
    let t = start_tesserad(&lab);
    let peer_up = |v6: bool| -> Result<bool, String> {
        let addr = if v6 { &l.center_v6 } else { &l.center_v4 };
        let out = vty(&format!(
            "show bfd peer {addr} local-address {}",
            if v6 { &l.v6 } else { &l.v4 }
        ))?;
        Ok(out.contains("Status: up"))
    };
    let freeze = |stop: bool| lab.signal(pid, if stop { "STOP" } else { "CONT" });
    scenario(&lab, &t, &frr, &s.routes()[0].prefix, &peer_up, &freeze);
    // bgpd was told why (RFC 9384).
    let log = std::fs::read_to_string(lab.path("frr").join("bgpd.log")).unwrap_or_default();
    if !log.contains("6/10 (Cease/BFD Down)") {
        lab.fail("FRR's bgpd did not receive NOTIFICATION Cease / BFD Down");
    }
    lab.wait(20, "bfdd sees the session Up again", || {
        Ok(peer_up(false)?.then_some(()))
    });
    // tesserad stopping tells bfdd AdminDown (RFC 5880 §6.8.16) instead
    // of letting it time out.
    lab.signal(t.pid, "TERM");
    lab.wait(10, "bfdd hears AdminDown from tesserad", || {
        let out = vty(&format!(
            "show bfd peer {} local-address {}",
            l.center_v4, l.v4
        ))?;
        if out.contains("Status: down") && out.to_lowercase().contains("administratively down") {
            Ok(Some(()))
        } else {
            Err(out)
        }
    });
}

#[test]
fn bird_bfd() {
    if !common::ready(&["bird", "birdc", "ip"]) {
        return;
    }
    let lab = Lab::star("bfd-bird", 1);
    let l = lab.leaf(1).clone();
    let s = Session::leaf(&l, 65001, 65000);
    let dir = lab.path("bird");
    std::fs::create_dir_all(&dir).expect("bird dir");
    let mut conf = common::render_file("bird", "peer.conf.tmpl", &s.vars(&dir));
    conf.push_str(&format!(
        "\nprotocol bfd bfd1 {{\n  interface \"*\" {{ min rx interval {INTERVAL_MS} ms; \
         min tx interval {INTERVAL_MS} ms; multiplier {MULT}; }};\n  \
         neighbor {} local {};\n  neighbor {} local {};\n}}\n",
        l.center_v4, l.v4, l.center_v6, l.v6
    ));
    let bird = common::bird::Bird::start_conf(&lab, "bird", &s, &conf, &[]);
    let t = start_tesserad(&lab);
    let peer_up = |v6: bool| -> Result<bool, String> {
        let out = bird.birdc(&["show", "bfd", "sessions"])?;
        let addr = if v6 { &l.center_v6 } else { &l.center_v4 };
        Ok(out
            .lines()
            .any(|line| line.contains(addr.as_str()) && line.contains("Up")))
    };
    // BIRD runs BGP and BFD in one process: freezing it freezes both, but
    // its BGP hold time (9 s) outlasts the test's pause, so what tears the
    // session down is tesserad's BFD.
    let pid = bird.pid;
    let freeze = |stop: bool| lab.signal(pid, if stop { "STOP" } else { "CONT" });
    scenario(&lab, &t, &bird, &s.routes()[0].prefix, &peer_up, &freeze);
}

/// A BFD peer written here (python3 in the leaf namespace) that sends a
/// Down packet every 100 ms with this TTL for `secs` seconds.
fn python_peer(lab: &Lab, ns: &str, name: &str, to: &str, ttl: u8, secs: f64) {
    let script = format!(
        "import socket, struct, time\n\
         s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n\
         s.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, {ttl})\n\
         s.bind(('0.0.0.0', 49000 + {ttl}))\n\
         pkt = bytes([0x20, 0x40, 3, 24]) + struct.pack('>IIIII', 0x4242, 0, 1000000, 100000, 0)\n\
         end = time.time() + {secs}\n\
         n = 0\n\
         while time.time() < end:\n    s.sendto(pkt, ('{to}', 3784))\n    n += 1\n    time.sleep(0.1)\n\
         print('sent', n, flush=True)\n"
    );
    let path = lab.write(&format!("{name}.py"), &script);
    lab.spawn(name, ns, &["python3", &path.display().to_string()], &[]);
}

/// GTSM (RFC 5881 §5): packets that arrive with a TTL below 255 are
/// dropped, those with 255 are taken. And `bfd = true` added by a reload
/// starts the session without resetting BGP.
#[test]
fn gtsm_and_reload() {
    if !common::ready(&["python3", "ip"]) {
        return;
    }
    let lab = Lab::star("bfd-gtsm", 1);
    let l = lab.leaf(1).clone();
    let toml = |bfd: bool| {
        let c = l.center_v4.clone();
        let v4 = l.v4.clone();
        move |sock: &std::path::Path| {
            format!(
                "[router]\nid = \"198.18.0.1\"\nasn = 65000\n\n\
                 [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:9464\"\n\n\
                 [[neighbor]]\nname = \"py\"\naddress = \"{v4}\"\nlocal_address = \"{c}\"\n\
                 remote_as = 65001\nconnection = \"passive\"\n{}",
                sock.display(),
                if bfd {
                    "bfd = true\nbfd_min_rx = 100\n"
                } else {
                    ""
                }
            )
        }
    };
    let t = Tesserad::start_with(&lab, toml(false));
    // No BFD configured: no session, nothing on port 3784.
    assert_eq!(
        bfd_session(&t, &l.v4).unwrap_or_else(|e| lab.fail(&e)),
        None
    );
    std::fs::write(&t.config, toml(true)(&t.sock)).expect("rewrite config");
    let r = t
        .request(r#"{"command":"configure","check":false}"#)
        .unwrap_or_else(|e| lab.fail(&e));
    assert!(
        r.contains("py"),
        "reload did not mention the neighbour: {r}"
    );
    let s = wait_bfd(&lab, &t, &l.v4, "Down", 10);
    assert_eq!(s["neighbor"], "py");

    // TTL 254: one hop too far, dropped; the session stays Down and
    // learns nothing.
    python_peer(&lab, &l.ns, "py254", &l.center_v4, 254, 1.0);
    lab.wait(10, "the TTL 254 sender done", || {
        let out = std::fs::read_to_string(lab.path("py254.out")).map_err(|e| e.to_string())?;
        let n: u32 = out
            .split("sent ")
            .nth(1)
            .and_then(|x| x.trim().parse().ok())
            .ok_or("not done")?;
        Ok((n >= 5).then_some(()))
    });
    let s = bfd_session(&t, &l.v4)
        .unwrap_or_else(|e| lab.fail(&e))
        .unwrap_or_else(|| lab.fail("session gone"));
    assert_eq!(s["state"], "Down", "{s}");
    assert_eq!(s["packets_received"], 0, "{s}");
    // ... and /metrics says why.
    let metrics = common::sh(&[
        "ip",
        "netns",
        "exec",
        &lab.center_ns,
        "python3",
        "-c",
        "import urllib.request; print(urllib.request.urlopen('http://127.0.0.1:9464/metrics', timeout=5).read().decode())",
    ])
    .unwrap_or_else(|e| lab.fail(&format!("/metrics: {e}")));
    let sample = |name: &str| -> u64 {
        metrics
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| lab.fail(&format!("no {name} in /metrics:\n{metrics}")))
    };
    assert!(sample("tessera_bfd_rx_bad_ttl_total") >= 5, "{metrics}");
    assert_eq!(sample("tessera_bfd_rx_malformed_total"), 0, "{metrics}");
    assert_eq!(
        sample(&format!("tessera_bfd_session_up{{peer=\"{}\"}}", l.v4)),
        0
    );
    assert_eq!(s["remote_disc"], 0, "{s}");
    // TTL 255: taken; a Down from the peer moves us to Init (§6.8.6).
    python_peer(&lab, &l.ns, "py255", &l.center_v4, 255, 1.5);
    let s = wait_bfd(&lab, &t, &l.v4, "Init", 5);
    assert_eq!(s["remote_disc"], 0x4242, "{s}");
    assert!(s["packets_received"].as_u64().unwrap_or(0) >= 1, "{s}");
    // The peer falls silent: back to Down after its Detection Time
    // (3 x max(our 100 ms, its 1 s)).
    let s = wait_bfd(&lab, &t, &l.v4, "Down", 10);
    assert_eq!(s["diag"], "detection-time-expired", "{s}");
}
