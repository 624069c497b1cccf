//! Graceful restart (RFC 4724) end to end, tesserad as the helper: BIRD
//! with `graceful restart on` (IPv4 only: its IPv6 channel has it off)
//! restarts gracefully (`birdc graceful restart`, then `bird -R`);
//! tesserad keeps BIRD's IPv4 routes as stale while it is away, drops
//! the IPv6 ones at once (not in BIRD's GR capability), and when BIRD is
//! back sweeps the IPv4 route BIRD no longer sends at its End-of-RIB
//! while the re-sent one is fresh again.

mod common;

use common::bird::Bird;
use common::peer::{wait_established, Session};
use common::tesserad::{compact, Config, Neighbor, Tesserad};
use common::Lab;

const T_AS: u32 = 65000;
const P_AS: u32 = 65001;
const KEPT: &str = "198.18.1.0/24";
const DROPPED: &str = "198.18.2.0/24";
const V6: &str = "2001:db8:1::/48";

/// BIRD with graceful restart for IPv4 only; `with_dropped`: also
/// originates [`DROPPED`].
fn bird_conf(s: &Session, dir: &std::path::Path, with_dropped: bool) -> String {
    let dropped = if with_dropped {
        format!("route {DROPPED} unreachable;")
    } else {
        String::new()
    };
    format!(
        "router id {l4};\nlog \"{dir}/bird.log\" all;\n\
         protocol device {{ scan time 1; }}\n\
         ipv4 table t4;\nipv6 table t6;\n\
         protocol static s4 {{ ipv4 {{ table t4; }}; route {KEPT} unreachable; {dropped} }}\n\
         protocol static s6 {{ ipv6 {{ table t6; }}; route {V6} unreachable; }}\n\
         protocol bgp peer {{\n\
           local {l4} as {las};\n  neighbor {p4} as {pas};\n\
           hold time 9;\n  keepalive time 1;\n  connect retry time 1;\n\
           error wait time 1, 2;\n\
           graceful restart on;\n  graceful restart time 30;\n\
           ipv4 {{ table t4; import all; export all; next hop self; }};\n\
           ipv6 {{ table t6; import all; export all; next hop address {l6}; \
                   graceful restart off; }};\n\
         }}\n",
        l4 = s.local_v4,
        l6 = s.local_v6,
        p4 = s.peer_v4,
        las = s.local_as,
        pas = s.peer_as,
        dir = dir.display(),
    )
}

fn tesserad_config(lab: &Lab) -> Config {
    let l = lab.leaf(1);
    Config {
        asn: T_AS,
        router_id: "10.0.0.1".into(),
        neighbors: vec![Neighbor {
            name: "peer1".into(),
            addr: l.v4.clone(),
            local_addr: l.center_v4.clone(),
            remote_as: P_AS,
            hold: 9,
            rr_client: false,
            rs_client: false,
            max_prefix: None,
        }],
        cluster_id: None,
    }
}

/// tesserad's path for `prefix`: `Some(stale)` when it has one.
fn t_stale(t: &Tesserad, prefix: &str) -> Result<Option<bool>, String> {
    Ok(t.route(prefix)?
        .map(|r| compact(&r).contains("\"stale\":true")))
}

#[test]
fn helper_keeps_gr_families_stale_and_sweeps_at_end_of_rib() {
    if !common::ready(&[common::bird::TOOLS, &["ip"]].concat()) {
        return;
    }
    let lab = Lab::star("gr-helper-bird", 1);
    let t = Tesserad::start(&lab, &tesserad_config(&lab));
    let s = Session::leaf(lab.leaf(1), P_AS, T_AS);
    let conf = bird_conf(&s, &lab.path("bird1"), true);
    let b = Bird::start_conf(&lab, "bird1", &s, &conf, &[]);
    wait_established(&lab, &b, 20);
    for p in [KEPT, DROPPED, V6] {
        lab.wait(10, &format!("tesserad has {p} from BIRD"), || {
            Ok(t_stale(&t, p)?.filter(|stale| !stale))
        });
    }

    // BIRD goes away gracefully: its IPv4 routes stay, stale; IPv6 is not
    // in its GR capability and goes at once.
    b.birdc(&["graceful", "restart"])
        .unwrap_or_else(|e| lab.fail(&format!("birdc graceful restart: {e}")));
    lab.wait(10, "BIRD exits", || Ok((!lab.alive("bird1")).then_some(())));
    lab.wait(10, "tesserad flushes the IPv6 route at once", || {
        Ok(t.route(V6)?.is_none().then_some(()))
    });
    for p in [KEPT, DROPPED] {
        lab.wait(5, &format!("tesserad keeps {p} as stale"), || {
            Ok(t_stale(&t, p)?.filter(|stale| *stale))
        });
    }
    lab.stop("bird1");

    // BIRD back in recovery mode (R and F bits), without DROPPED.
    std::thread::sleep(std::time::Duration::from_secs(2));
    for p in [KEPT, DROPPED] {
        if t_stale(&t, p) != Ok(Some(true)) {
            lab.fail(&format!("{p} not kept stale while BIRD is down"));
        }
    }
    let conf = bird_conf(&s, &lab.path("bird2"), false);
    let b2 = Bird::start_conf(&lab, "bird2", &s, &conf, &["-R"]);
    wait_established(&lab, &b2, 20);
    lab.wait(
        15,
        &format!("tesserad sweeps {DROPPED} at End-of-RIB"),
        || Ok(t.route(DROPPED)?.is_none().then_some(())),
    );
    lab.wait(5, &format!("{KEPT} fresh again"), || {
        Ok(t_stale(&t, KEPT)?.filter(|stale| !stale))
    });
    lab.wait(5, &format!("{V6} back"), || t.route(V6));
    // The sweep came from End-of-RIB, not from a flush at session start.
    let log = || std::fs::read_to_string(lab.path("tesserad.out")).unwrap_or_default();
    let swept = "End-of-RIB (ipv4-unicast) after graceful restart: 1 stale routes swept";
    lab.wait(5, "tesserad logs the End-of-RIB sweep", || {
        Ok(log().contains(swept).then_some(()))
    });
    let log = log();
    if log.contains("flushed at once: forwarding") {
        lab.fail("tesserad flushed stale routes at session start");
    }
    if !log.contains("Ipv6 routes flushed at once: not in the peer's graceful restart capability") {
        lab.fail("tesserad's log does not say IPv6 was flushed at the graceful down");
    }
}
