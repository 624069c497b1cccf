//! Views through the whole daemon (`daemon::run_with` with
//! `Hooks::views`, the path tesserad's VRs take): three BIRD 2 neighbours
//! on 127.79.19.0/24 announce the same prefix, each with its own address
//! as next hop. A view of {b1} and a view of {b1, b3}, registered before
//! the start, follow their own next hops; b1 disabled moves {b1, b3} to
//! b3 and empties {b1}; a view of {b2} registered while the daemon runs
//! gets its snapshot. The daemon stops on SIGTERM as tesserad does.

mod session_common;

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::mpsc::{sync_channel, Receiver};

use base::Prefix;
use bgp_speaker::daemon::Hooks;
use bgp_speaker::view_feed::{BestChange, ViewRegistry, ViewSpec};
use session_common::{wait_for, Bird, TempDir};

fn ip(n: u8) -> IpAddr {
    IpAddr::from([127, 79, 19, n])
}

fn bird_conf(dir: &std::path::Path, n: u8) -> String {
    format!(
        r#"router id 10.79.19.{n};
log "{dir}/bird.log" all;
protocol device {{ scan time 10; }}
protocol static s4 {{
  ipv4;
  route 198.18.19.0/24 unreachable;
}}
protocol bgp peer {{
  local {bird} as {asn};
  neighbor {us} as 65001;
  multihop 2;
  strict bind on;
  hold time 9;
  keepalive time 3;
  connect retry time 1;
  error wait time 1, 2;
  ipv4 {{ import none; export all; next hop self; }};
}}
"#,
        dir = dir.display(),
        bird = ip(n),
        us = ip(1),
        asn = 65000 + u32::from(n),
    )
}

struct Follower {
    rx: Receiver<Vec<BestChange>>,
    table: BTreeMap<Prefix, Vec<IpAddr>>,
}

impl Follower {
    fn new() -> (std::sync::mpsc::SyncSender<Vec<BestChange>>, Follower) {
        let (tx, rx) = sync_channel(1024);
        let f = Follower {
            rx,
            table: BTreeMap::new(),
        };
        (tx, f)
    }
    fn drain(&mut self) {
        while let Ok(b) = self.rx.try_recv() {
            for c in b {
                if c.next_hop.is_some() {
                    self.table.insert(c.prefix, c.next_hops().collect());
                } else {
                    self.table.remove(&c.prefix);
                }
            }
        }
    }
    fn wait(&mut self, what: &str, want: Option<IpAddr>) {
        let p: Prefix = "198.18.19.0/24".parse().expect("prefix");
        wait_for(30, what, || {
            self.drain();
            let got = self.table.get(&p).and_then(|v| v.first().copied());
            if got == want {
                Ok(())
            } else {
                Err(format!("{got:?}"))
            }
        });
    }
}

fn view(name: &str, neighbors: &[&str]) -> (ViewSpec, Follower) {
    let (tx, f) = Follower::new();
    (
        ViewSpec {
            name: name.into(),
            neighbors: neighbors.iter().map(|s| s.to_string()).collect(),
            tx,
        },
        f,
    )
}

#[test]
fn views_in_the_daemon_follow_their_neighbours() {
    let dir = TempDir::new("daemon-views");
    let mut conf = format!(
        "[router]\nid = \"10.79.19.1\"\nasn = 65001\nlisten = [\"{}:179\"]\n\
         connect_retry = 1\ndefault_import = \"accept\"\ndefault_export = \"reject\"\n\
         pipeline = \"sharded\"\nthreads = 2\n\
         [control]\nsocket = \"{}\"\n",
        ip(1),
        dir.path().join("t.sock").display()
    );
    for n in 2..=4u8 {
        conf.push_str(&format!(
            "[[neighbor]]\nname = \"b{}\"\naddress = \"{}\"\nremote_as = {}\nlocal_address = \"{}\"\n",
            n - 1,
            ip(n),
            65000 + u32::from(n),
            ip(1)
        ));
    }
    let path = dir.path().join("tesserad.toml");
    std::fs::write(&path, conf).expect("config");
    let birds: Vec<Bird> = (2..=4u8)
        .map(|n| {
            let d = dir.path().join(format!("bird{n}"));
            std::fs::create_dir_all(&d).expect("dir");
            Bird::start(&d, &bird_conf(&d, n))
        })
        .collect();

    let reg = ViewRegistry::new();
    let (s1, mut v1) = view("v1", &["b1"]);
    let (s13, mut v13) = view("v13", &["b1", "b3"]);
    reg.register(s1).expect("v1");
    reg.register(s13).expect("v13");
    let hooks = Hooks {
        views: Some(reg.clone()),
        ..Default::default()
    };
    let daemon = std::thread::spawn(move || bgp_speaker::daemon::run_with(&path, None, hooks));

    for (i, b) in birds.iter().enumerate() {
        wait_for(30, &format!("b{} up", i + 1), || {
            if daemon.is_finished() {
                return Ok(());
            }
            b.birdc(&["show", "protocols", "all", "peer"])
                .and_then(|s| {
                    if s.contains("Established") {
                        Ok(())
                    } else {
                        Err(format!("{s}\n{}", b.log()))
                    }
                })
        });
    }
    assert!(!daemon.is_finished(), "{:?}", daemon.join());
    // b1 (10.79.19.2) has the lowest router id: it wins {b1, b3}.
    v1.wait("v1 via b1", Some(ip(2)));
    v13.wait("v13 via b1", Some(ip(2)));
    // A view registered while the daemon runs: every RIB part sends its
    // snapshot before `register` returns, so once b2's route is in the
    // RIB the channel holds it right after registration.
    let mut v2 = wait_for(30, "v2's snapshot via b2", || {
        let (s2, mut v2) = view("v2", &["b2"]);
        reg.register(s2)?;
        v2.drain();
        let p: Prefix = "198.18.19.0/24".parse().expect("prefix");
        if v2.table.get(&p) == Some(&vec![ip(3)]) {
            Ok(v2)
        } else {
            reg.remove("v2")?;
            Err(format!("{:?}", v2.table))
        }
    });
    // b1 goes away: v1 empties, v13 moves to b3.
    birds[0].birdc(&["disable", "peer"]).expect("disable b1");
    v1.wait("v1 withdrawn", None);
    v13.wait("v13 via b3", Some(ip(4)));
    v2.drain();
    assert_eq!(v2.table.len(), 1, "v2 unchanged");

    // SAFETY: the daemon handles SIGTERM (tokio's signal handler is
    // installed once its control socket is up, which the routes above
    // needed); it then shuts down and run_with returns.
    unsafe {
        libc::kill(std::process::id() as i32, libc::SIGTERM);
    }
    wait_for(20, "the daemon to stop", || {
        if daemon.is_finished() {
            Ok(())
        } else {
            Err("running".into())
        }
    });
    let res = daemon.join().expect("daemon thread");
    assert_eq!(res, Ok(()));
    drop(birds);
}
