//! Replay into a real BIRD 2 on 127.0.0.1 (high port, temp dir): two peers
//! from 127.0.0.2 and 127.0.0.3, 1000 shared prefixes each, must appear in
//! `birdc show route count`, and disappear when replay says goodbye.

use base::Asn;
use replay::{
    source_addresses, start, FeedParams, ReplayConfig, SenderVariant, Sharing, SyntheticSpec,
    Workload,
};
use std::net::{IpAddr, SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const BIRD: &str = "/usr/sbin/bird";
const BIRDC: &str = "/usr/sbin/birdc";

/// Kills BIRD and removes its directory however the test ends.
struct BirdGuard {
    child: Child,
    dir: PathBuf,
}

impl Drop for BirdGuard {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn start_bird(port: u16, peers: &[IpAddr]) -> BirdGuard {
    assert!(
        Path::new(BIRD).exists() && Path::new(BIRDC).exists(),
        "BIRD 2 is not installed ({BIRD}, {BIRDC}); apt-get install bird2"
    );
    let dir = std::env::temp_dir().join(format!("replay-bird-{}-{port}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    // multihop: BIRD refuses direct eBGP neighbours on the loopback
    // interface ("Invalid remote address"); the static route makes the
    // 127.0.0.x next hops resolvable so routes are stored as reachable.
    let mut conf = format!(
        "router id 127.0.0.1;\n\
         protocol device {{ }}\n\
         protocol static {{ ipv4; route 127.0.0.0/8 via \"lo\"; }}\n\
         template bgp peers {{\n  local 127.0.0.1 port {port} as 65000;\n  passive on;\n  multihop;\n  \
         ipv4 {{ import all; export none; }};\n}}\n"
    );
    for (i, p) in peers.iter().enumerate() {
        conf.push_str(&format!(
            "protocol bgp p{i} from peers {{ neighbor {p} port {port} as 65001; }}\n"
        ));
    }
    let cfg = dir.join("bird.conf");
    std::fs::write(&cfg, conf).expect("write bird.conf");
    let child = Command::new(BIRD)
        .arg("-f")
        .arg("-c")
        .arg(&cfg)
        .arg("-s")
        .arg(dir.join("bird.ctl"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start bird");
    let g = BirdGuard { child, dir };
    let t0 = Instant::now();
    while birdc(&g, &["show", "status"]).is_none() {
        // Generous: a start on a loaded CI machine, not a deadline.
        assert!(t0.elapsed() < Duration::from_secs(30), "BIRD did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    g
}

fn birdc(g: &BirdGuard, args: &[&str]) -> Option<String> {
    let out = Command::new(BIRDC)
        .arg("-s")
        .arg(g.dir.join("bird.ctl"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// (routes, networks) of table master4 from `show route count`:
/// "2000 of 2000 routes for 1000 networks in table master4".
fn route_count(g: &BirdGuard) -> Option<(u64, u64)> {
    let out = birdc(g, &["show", "route", "count"])?;
    let line = out.lines().find(|l| l.ends_with("table master4"))?;
    let w: Vec<&str> = line.split_whitespace().collect();
    Some((w.first()?.parse().ok()?, w.get(5)?.parse().ok()?))
}

#[test]
fn two_peers_reach_bird_and_leave_cleanly() {
    let t0 = Instant::now();
    let port = free_port();
    let sources = source_addresses("127.0.0.2".parse().unwrap(), 2).unwrap();
    let bird = start_bird(port, &sources);
    let cfg = ReplayConfig {
        target: SocketAddr::new("127.0.0.1".parse().unwrap(), port),
        target_as: Asn(65000),
        local_as: Asn(65001),
        sources: sources.clone(),
        hold_time: 30,
        connect_timeout: Duration::from_secs(5),
        open_timeout: Duration::from_secs(5),
        variant: SenderVariant::ThreadPerPeer,
        mix: replay::Mix::Normal,
        pacing: replay::Pacing::Fast,
        seed: 1,
        session_as: Vec::new(),
    };
    let params: Vec<FeedParams> = sources
        .iter()
        .map(|s| FeedParams {
            local_as: cfg.local_as,
            as_recorded: false,
            ibgp: false,
            next_hop: match s {
                IpAddr::V4(a) => *a,
                IpAddr::V6(_) => unreachable!(),
            },
            next_hop6: None,
        })
        .collect();
    let spec = SyntheticSpec {
        peers: 2,
        prefixes: 1000,
        sharing: Sharing::Shared,
        seed: 5,
    };
    let w = Arc::new(Workload::synthetic(&spec, &params).unwrap());
    let r = start(&cfg, w).expect("replay starts");
    let mut last = None;
    while last != Some((2000, 1000)) {
        let s = r.stats().snapshot();
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "BIRD has {last:?} (routes, networks), want (2000, 1000); replay {s:?}, errors {:?}",
            r.stats()
                .peers
                .iter()
                .map(|p| p.error())
                .collect::<Vec<_>>()
        );
        assert_eq!(s.failed, 0, "{:?}", r.stats().peers[0].error());
        std::thread::sleep(Duration::from_millis(100));
        last = route_count(&bird);
    }
    let snap = r.stats().snapshot();
    assert_eq!((snap.eor_sent, snap.prefixes_sent), (2, 2000));
    // Both sessions show as Established in BIRD.
    let protos = birdc(&bird, &["show", "protocols"]).unwrap_or_default();
    assert_eq!(protos.matches("Established").count(), 2, "{protos}");

    // Stopping sends Cease; BIRD flushes the routes.
    let results = r.join();
    assert!(results.iter().all(Result::is_ok), "{results:?}");
    while route_count(&bird).map(|c| c.0) != Some(0) {
        assert!(
            t0.elapsed() < Duration::from_secs(25),
            "routes not flushed after Cease"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(t0.elapsed() < Duration::from_secs(30));
}
