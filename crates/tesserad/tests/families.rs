//! Address families against real peers, tesserad in the centre of a lab
//! (network namespaces, 198.18.k.0/24 and 2001:db8:k::/64 links).
//!
//! * `multicast_with_bird` (RFC 4760 §6): BIRD "src" announces
//!   198.19.10.0/24 as IPv4 unicast (community 65001:1) and as IPv4
//!   multicast (65001:2), and 198.19.11.0/24 as multicast only. tesserad's
//!   unicast table keeps the unicast route (the multicast one does not
//!   replace it), has no 198.19.11.0/24, and exports the multicast routes
//!   with SAFI 2 only to BIRD "mc", which negotiated IPv4 multicast (they
//!   land in its multicast channel's table); BIRD "uc" (unicast only) and
//!   the unicast tables see only the unicast route. `show route multicast`
//!   shows tesserad's multicast table.
//! * `extended_next_hop_with_frr_and_bird` (RFC 8950): IPv4 unicast over
//!   IPv6 sessions with FRR (`capability extended-nexthop`) and BIRD
//!   (`extended next hop on`). With `extended_nexthop = true` the IPv4
//!   routes flow both ways with IPv6 next hops; without it, no IPv4 route
//!   with an IPv6 next hop goes either way (and the sessions stay up:
//!   neither peer sends one, so nothing is reset).
//!
//! The hand-written-peer side (families not negotiated, the forwarding
//! feed, the 3/9 reset) is in `families_loopback.rs`.

use e2e as common;

use common::frr::Frr;
use common::peer::Session;
use common::tesserad::{compact, Tesserad};
use common::Lab;
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(30);

/// Starts tesserad in the lab's centre with `neighbors` (TOML) after the
/// router, control and static sections.
fn tesserad(lab: &Lab, neighbors: &str) -> Tesserad {
    let dir = lab.path("tesserad");
    std::fs::create_dir_all(&dir).expect("tesserad dir");
    let sock = dir.join("tesserad.sock");
    let config = dir.join("tesserad.toml");
    let text = format!(
        "[router]\nid = \"198.18.0.1\"\nasn = 65000\n\n[control]\nsocket = \"{}\"\n\
         \n[[static]]\nprefix = \"198.19.20.0/24\"\n{neighbors}",
        sock.display()
    );
    std::fs::write(&config, text).expect("tesserad.toml");
    let c = config.display().to_string();
    let bin = common::tesserad::binary();
    let pid = lab.spawn(
        "tesserad",
        &lab.center_ns,
        &[bin, "-c", &c],
        &[("RUST_LOG", "info")],
    );
    let t = Tesserad {
        pid,
        dir,
        sock,
        config,
    };
    lab.wait(10, "tesserad's CLI socket", || {
        Ok(t.request(r#"{"command":"show_status"}"#).ok())
    });
    t
}

fn neighbor(name: &str, addr: &str, local: &str, asn: u32, extra: &str) -> String {
    format!(
        "\n[[neighbor]]\nname = \"{name}\"\naddress = \"{addr}\"\nlocal_address = \"{local}\"\n\
         remote_as = {asn}\nhold_time = 9\nconnect_retry = 1\n\
         import = \"accept\"\nexport = \"accept\"\n{extra}"
    )
}

/// A BIRD with `conf` (its log and socket in the lab dir) in `ns`.
struct Bird {
    sock: String,
}

impl Bird {
    fn start(lab: &Lab, name: &str, ns: &str, conf: &str) -> Bird {
        let dir = lab.path(name);
        std::fs::create_dir_all(&dir).expect("bird dir");
        let conf_path = dir.join("bird.conf");
        let text = format!(
            "log \"{}/bird.log\" all;\nprotocol device {{ scan time 1; }}\n{conf}",
            dir.display()
        );
        std::fs::write(&conf_path, text).expect("bird.conf");
        let c = conf_path.display().to_string();
        if let Err(e) = common::sh(&["bird", "-p", "-c", &c]) {
            lab.fail(&format!("BIRD {name} rejects its config: {e}"));
        }
        let sock = dir.join("bird.ctl").display().to_string();
        lab.spawn(name, ns, &["bird", "-f", "-c", &c, "-s", &sock], &[]);
        lab.add_log(&format!("{name} log"), &dir.join("bird.log"));
        let b = Bird { sock };
        lab.wait(10, &format!("{name} control socket"), || {
            Ok(b.birdc(&["show", "status"]).ok())
        });
        b
    }

    fn birdc(&self, args: &[&str]) -> Result<String, String> {
        let mut argv = vec!["birdc", "-s", &self.sock];
        argv.extend_from_slice(args);
        common::sh(&argv)
    }

    /// `show route table TABLE all` (every route of it, with attributes).
    fn table(&self, table: &str) -> Result<String, String> {
        self.birdc(&["show", "route", "table", table, "all"])
    }
}

/// The BGP part of a BIRD config: one session, the given channels.
fn bird_bgp(local: &str, asn: u32, peer: &str, channels: &str) -> String {
    format!(
        "protocol bgp peer {{\n  local {local} as {asn};\n  neighbor {peer} as 65000;\n\
         hold time 9;\n  keepalive time 1;\n  connect retry time 1;\n  error wait time 1, 2;\n\
         {channels}\n}}\n"
    )
}

fn established(lab: &Lab, t: &Tesserad, addrs: &[&str]) {
    for a in addrs {
        lab.wait(
            WAIT.as_secs(),
            &format!("session with {a} Established"),
            || Ok(t.established(a)?.then_some(())),
        );
    }
}

#[test]
fn multicast_with_bird() {
    if !common::ready(&[common::bird::TOOLS, &["ip"]].concat()) {
        return;
    }
    let lab = Lab::star("fam-mcast", 3);
    let (l1, l2, l3) = (lab.leaf(1), lab.leaf(2), lab.leaf(3));
    let both = "families = [\"ipv4-unicast\", \"ipv4-multicast\"]\n";
    let uc = "families = [\"ipv4-unicast\"]\n";
    let t = tesserad(
        &lab,
        &[
            neighbor("src", &l1.v4, &l1.center_v4, 65001, both),
            neighbor("mc", &l2.v4, &l2.center_v4, 65002, both),
            neighbor("uc", &l3.v4, &l3.center_v4, 65003, uc),
        ]
        .concat(),
    );
    // The source: unicast and multicast routes for 198.19.10.0/24 with
    // different communities, and a multicast-only 198.19.11.0/24.
    let src = format!(
        "router id {};\nipv4 table t4;\nipv4 table m4;\n\
         protocol static su {{ ipv4 {{ table t4; }}; \
           route 198.19.10.0/24 unreachable {{ bgp_community.add((65001,1)); }}; }}\n\
         protocol static sm {{ ipv4 {{ table m4; }}; \
           route 198.19.10.0/24 unreachable {{ bgp_community.add((65001,2)); }}; \
           route 198.19.11.0/24 unreachable {{ bgp_community.add((65001,2)); }}; }}\n{}",
        l1.v4,
        bird_bgp(
            &l1.v4,
            65001,
            &l1.center_v4,
            "  ipv4 { table t4; import all; export all; };\n  \
             ipv4 multicast { table m4; import all; export all; };"
        )
    );
    let _src = Bird::start(&lab, "src", &l1.ns, &src);
    let mc_conf = format!(
        "router id {};\nipv4 table t4;\nipv4 table m4;\n{}",
        l2.v4,
        bird_bgp(
            &l2.v4,
            65002,
            &l2.center_v4,
            "  ipv4 { table t4; import all; export none; };\n  \
             ipv4 multicast { table m4; import all; export none; };"
        )
    );
    let mc = Bird::start(&lab, "mc", &l2.ns, &mc_conf);
    let uc_conf = format!(
        "router id {};\nipv4 table t4;\n{}",
        l3.v4,
        bird_bgp(
            &l3.v4,
            65003,
            &l3.center_v4,
            "  ipv4 { table t4; import all; export none; };"
        )
    );
    let uc = Bird::start(&lab, "uc", &l3.ns, &uc_conf);
    established(&lab, &t, &[&l1.v4, &l2.v4, &l3.v4]);

    // "mc" gets both multicast routes in its multicast table: they were
    // sent with SAFI 2 (everything from src has arrived once they are).
    let m4 = lab.wait(WAIT.as_secs(), "multicast routes at BIRD mc", || {
        let m = mc.table("m4")?;
        Ok((m.contains("198.19.10.0/24") && m.contains("198.19.11.0/24")).then_some(m))
    });
    assert!(
        m4.contains("(65001,2)") && !m4.contains("(65001,1)"),
        "mc's multicast table must hold the multicast routes only:\n{m4}"
    );
    // tesserad's unicast table: the unicast route, untouched.
    let r = t
        .route("198.19.10.0/24")
        .expect("show route")
        .expect("198.19.10.0/24 at tesserad");
    let rc = compact(&r);
    assert!(
        rc.contains("[65001,1]") && !rc.contains("[65001,2]"),
        "the multicast route replaced or joined the unicast one at tesserad:\n{r}"
    );
    assert_eq!(
        t.route("198.19.11.0/24").expect("show route"),
        None,
        "a multicast-only prefix is in tesserad's unicast table"
    );
    // `show route multicast`: tesserad's multicast table, apart.
    let m = compact(
        &t.request(r#"{"command":"show_route","all":true,"multicast":true}"#)
            .expect("show route multicast"),
    );
    assert!(
        m.contains("198.19.10.0/24")
            && m.contains("198.19.11.0/24")
            && m.contains("[65001,2]")
            && !m.contains("[65001,1]"),
        "tesserad's multicast table:\n{m}"
    );
    // Unicast tables of both receivers: the unicast route only.
    for (name, b) in [("mc", &mc), ("uc", &uc)] {
        let t4 = lab.wait(
            WAIT.as_secs(),
            &format!("unicast route at BIRD {name}"),
            || {
                let s = b.table("t4")?;
                Ok(s.contains("198.19.10.0/24").then_some(s))
            },
        );
        assert!(
            t4.contains("(65001,1)") && !t4.contains("(65001,2)") && !t4.contains("198.19.11.0"),
            "{name}'s unicast table got a multicast route:\n{t4}"
        );
    }
    // "uc" negotiated no multicast and may not hear of it: its session
    // stays up (a multicast UPDATE would be an error there).
    assert!(t.established(&l3.v4).expect("show neighbor"));
}

/// FRR with `capability extended-nexthop` towards `peer`, announcing
/// 198.19.21.0/24 over the IPv6 session from `local`.
fn frr_conf(dir: &std::path::Path, local: &str, peer: &str) -> String {
    format!(
        "frr defaults traditional\nhostname enh-frr\nlog file {}/bgpd.log debugging\n!\n\
         router bgp 65001\n bgp router-id 198.18.1.2\n no bgp ebgp-requires-policy\n\
         no bgp network import-check\n no bgp default ipv4-unicast\n\
         neighbor {peer} remote-as 65000\n neighbor {peer} update-source {local}\n\
         neighbor {peer} timers 1 9\n neighbor {peer} timers connect 1\n\
         neighbor {peer} advertisement-interval 0\n\
         neighbor {peer} capability extended-nexthop\n\
         address-family ipv4 unicast\n  neighbor {peer} activate\n\
         neighbor {peer} route-map NH6 out\n  network 198.19.21.0/24\n exit-address-family\n!\n\
         route-map NH6 permit 10\n set ipv6 next-hop global {local}\n!\n",
        dir.display()
    )
}

/// Whether tesserad's `show route` JSON (compact) has an IPv6 next hop
/// (the lab's links are 2001:db8:k::/64).
fn v6_next_hop(json: &str) -> bool {
    json.contains("\"next_hop\":\"2001:db8:")
}

fn run_enh(on: bool) {
    let lab = Lab::star(if on { "fam-enh-on" } else { "fam-enh-off" }, 2);
    let (l1, l2) = (lab.leaf(1), lab.leaf(2));
    let extra = format!("families = [\"ipv4-unicast\"]\nextended_nexthop = {on}\n");
    let t = tesserad(
        &lab,
        &[
            neighbor("frr", &l1.v6, &l1.center_v6, 65001, &extra),
            neighbor("bird", &l2.v6, &l2.center_v6, 65002, &extra),
        ]
        .concat(),
    );
    let conf = frr_conf(&lab.path("frr"), &l1.v6, &l1.center_v6);
    let frr = Frr::start_conf(&lab, "frr", &Session::leaf(l1, 65001, 65000), &conf);
    let vtysh = |cmd: &str| frr.vtysh(&[cmd]);
    let bird_conf = format!(
        "router id {};\nipv4 table t4;\n\
         protocol static s4 {{ ipv4 {{ table t4; }}; route 198.19.22.0/24 unreachable; }}\n{}",
        l2.v4,
        bird_bgp(
            &l2.v6,
            65002,
            &l2.center_v6,
            "  ipv4 { table t4; import all; export all; extended next hop on; };"
        )
    );
    let bird = Bird::start(&lab, "bird", &l2.ns, &bird_conf);
    established(&lab, &t, &[&l1.v6, &l2.v6]);

    // tesserad's own route (198.19.20.0/24) at each peer, and each
    // peer's route at tesserad.
    let at_frr = || vtysh("show bgp ipv4 unicast 198.19.20.0/24");
    let at_bird = || bird.birdc(&["show", "route", "table", "t4", "198.19.20.0/24", "all"]);
    if on {
        for p in ["198.19.21.0/24", "198.19.22.0/24"] {
            let r = lab.wait(WAIT.as_secs(), &format!("{p} at tesserad"), || t.route(p));
            assert!(
                v6_next_hop(&compact(&r)),
                "{p} arrived without an IPv6 next hop:\n{r}"
            );
        }
        // FRR shows the next hop first: "    2001:db8:1::1 from 2001:db8:1::1".
        lab.wait(
            WAIT.as_secs(),
            "198.19.20.0/24 at FRR via 2001:db8:1::1",
            || Ok(at_frr()?.contains(" 2001:db8:1::1 from").then_some(())),
        );
        let b = lab.wait(WAIT.as_secs(), "198.19.20.0/24 at BIRD", || {
            let s = at_bird()?;
            Ok(s.contains("198.19.20.0/24").then_some(s))
        });
        assert!(
            b.contains("via 2001:db8:2::1"),
            "BIRD: not via our IPv6 address:\n{b}"
        );
    } else {
        // Give both sides time to send what they would (the static route
        // goes out at once after Established, MRAI 0).
        std::thread::sleep(Duration::from_secs(5));
        for p in ["198.19.21.0/24", "198.19.22.0/24"] {
            if let Some(r) = t.route(p).expect("show route") {
                assert!(
                    !v6_next_hop(&compact(&r)),
                    "{p} arrived with an IPv6 next hop without RFC 8950:\n{r}"
                );
            }
        }
        let f = at_frr().expect("vtysh");
        let b = at_bird().expect("birdc");
        assert!(
            !f.contains(" 2001:db8:1::1 from") && !b.contains("via 2001:db8:2::1"),
            "tesserad sent an IPv6 next hop for IPv4 without RFC 8950:\nFRR:\n{f}\nBIRD:\n{b}"
        );
        // Nothing was reset: no peer sent what we did not advertise.
        for a in [&l1.v6, &l2.v6] {
            assert!(t.established(a).expect("show neighbor"), "{a} went down");
        }
    }
}

#[test]
fn extended_next_hop_with_frr_and_bird() {
    if !common::ready(&[common::bird::TOOLS, common::frr::TOOLS, &["ip"]].concat()) {
        return;
    }
    run_enh(true);
    run_enh(false);
}
