//! BGP confederations (RFC 5065) on a running tesserad, against FRR and
//! BIRD in network namespaces. tesserad (centre, 198.18.1.1 and
//! 198.18.2.1) is member AS 65001 of confederation 64512; FRR's bgpd
//! (leaf 1, 198.18.1.2) is member AS 65002 of the same confederation (a
//! confederation-external peer of ours); BIRD 2 (leaf 2, 198.18.2.2) is the
//! true external AS 65100, which sees the confederation as AS 64512.
//!
//! Checked end to end:
//! 1. routes from the member AS arrive behind an AS_CONFED_SEQUENCE
//!    `(65002)`, keep their LOCAL_PREF and MED, and count as internal: a
//!    route of equal length from the true external peer wins over one
//!    from the member AS at the eBGP-over-iBGP step (as an eBGP route
//!    would lose on router id);
//! 2. what goes to the true external peer starts with 64512 and carries
//!    no confederation segment (BIRD checks the first AS too);
//! 3. what goes to the member AS carries `(65001)` in front, with the
//!    next hop unchanged;
//! 4. NO_EXPORT stops at the confederation's edge (FRR gets it, BIRD not),
//!    NO_EXPORT_SUBCONFED at our member AS (neither gets it).

use e2e as common;

use common::bird::Bird;
use common::frr::Frr;
use common::peer::{Peer, Session};
use common::tesserad::{compact, Tesserad};
use common::Lab;

const FRR_CONF: &str = r#"! FRR bgpd in member AS 65002 of confederation 64512
! (crates/tesserad/tests/confederation.rs).
frr defaults traditional
hostname confed-frr
log file {{DIR}}/bgpd.log debugging
!
router bgp 65002
 bgp router-id 198.18.1.2
 bgp log-neighbor-changes
 bgp confederation identifier 64512
 bgp confederation peers 65001
 no bgp ebgp-requires-policy
 no bgp network import-check
 no bgp default ipv4-unicast
 neighbor 198.18.1.1 remote-as 65001
 neighbor 198.18.1.1 update-source 198.18.1.2
 neighbor 198.18.1.1 timers 1 9
 neighbor 198.18.1.1 timers connect 1
 neighbor 198.18.1.1 advertisement-interval 0
 address-family ipv4 unicast
  neighbor 198.18.1.1 activate
  neighbor 198.18.1.1 send-community all
  neighbor 198.18.1.1 route-map NH out
  network 198.51.1.0/24 route-map PREF
  network 198.51.3.0/24 route-map LONGER
 exit-address-family
!
route-map PREF permit 10
 set local-preference 250
 set metric 7
!
route-map LONGER permit 10
 set as-path prepend 65200
!
! Without zebra bgpd knows no interface address, and towards a member AS
! (as inside an AS) it would send its own routes with next hop 0.0.0.0.
route-map NH permit 10
 set ip next-hop 198.18.1.2
!
"#;

const BIRD_CONF: &str = r#"# BIRD 2 as the true external AS 65100 of the confederation test
# (crates/tesserad/tests/confederation.rs).
router id 198.18.2.2;
log "{{DIR}}/bird.log" all;

protocol device { scan time 1; }
ipv4 table t4;

protocol static own4 {
  ipv4 { table t4; };
  route 198.51.2.0/24 unreachable { bgp_origin = ORIGIN_IGP; };
  route 198.51.3.0/24 unreachable { bgp_origin = ORIGIN_IGP; };
}

protocol bgp peer {
  local 198.18.2.2 as 65100;
  neighbor 198.18.2.1 as 64512;
  hold time 9;
  keepalive time 1;
  connect retry time 1;
  error wait time 1, 2;
  ipv4 { table t4; import all; export all; next hop self; };
}
"#;

fn tesserad_conf(sock: &std::path::Path) -> String {
    format!(
        "[router]\nid = \"198.18.1.1\"\nasn = 65001\n\
         confederation = {{ identifier = 64512, members = [65001, 65002] }}\n\
         \n[control]\nsocket = \"{}\"\n\
         \n[[static]]\nprefix = \"198.51.100.0/24\"\n\
         \n[[static]]\nprefix = \"203.0.113.0/24\"\ncommunities = [\"no-export\"]\n\
         \n[[static]]\nprefix = \"192.0.2.0/24\"\ncommunities = [\"no-export-subconfed\"]\n\
         \n[[neighbor]]\nname = \"member\"\naddress = \"198.18.1.2\"\n\
         local_address = \"198.18.1.1\"\nremote_as = 65002\nhold_time = 9\n\
         connect_retry = 1\n\
         \n[[neighbor]]\nname = \"external\"\naddress = \"198.18.2.2\"\n\
         local_address = \"198.18.2.1\"\nremote_as = 65100\nhold_time = 9\n\
         connect_retry = 1\nimport = \"accept\"\nexport = \"accept\"\n",
        sock.display()
    )
}

fn tools() -> Vec<&'static str> {
    [common::frr::TOOLS, &["bird", "birdc", "ip"]].concat()
}

/// `show route PREFIX all` as one compact JSON line, once tesserad has
/// `n` paths for it.
fn paths(lab: &Lab, t: &Tesserad, prefix: &str, n: usize) -> String {
    lab.wait(30, &format!("tesserad: {n} path(s) for {prefix}"), || {
        Ok(t.route(prefix)?
            .map(|r| compact(&r))
            .filter(|r| r.matches("\"as_path\"").count() >= n))
    })
}

#[test]
fn confederation_with_frr_member_and_bird_external() {
    if !common::ready(&tools()) {
        return;
    }
    let lab = Lab::star("confed", 2);
    let (l1, l2) = (lab.leaf(1).clone(), lab.leaf(2).clone());
    let t = Tesserad::start_with(&lab, tesserad_conf);
    let s1 = Session::leaf(&l1, 65002, 65001);
    let frr_dir = lab.path("frr");
    let frr_conf = FRR_CONF.replace("{{DIR}}", &frr_dir.display().to_string());
    let frr = Frr::start_conf(&lab, "frr", &s1, &frr_conf);
    let s2 = Session::leaf(&l2, 65100, 64512);
    let bird_dir = lab.path("bird");
    let bird_conf = BIRD_CONF.replace("{{DIR}}", &bird_dir.display().to_string());
    let bird = Bird::start_conf(&lab, "bird", &s2, &bird_conf, &[]);
    lab.wait(30, "both sessions Established", || {
        Ok((t.established("198.18.1.2")? && t.established("198.18.2.2")?).then_some(()))
    });
    // BIRD shows the AS it sees: the confederation identifier.
    let proto = bird.protocol().unwrap_or_default();
    assert!(
        proto.contains("Neighbor AS:      64512"),
        "BIRD does not see AS 64512:\n{proto}"
    );

    // `show protocols`: the AS each neighbour sees us as.
    let n = compact(&t.neighbor("198.18.2.2").unwrap_or_default());
    assert!(n.contains("\"local_as\":64512"), "{n}");
    let n = compact(&t.neighbor("198.18.1.2").unwrap_or_default());
    assert!(n.contains("\"local_as\":65001"), "{n}");

    // 1. From the member AS: (65002), LOCAL_PREF 250 and MED 7 kept.
    let r = paths(&lab, &t, "198.51.1.0/24", 1);
    for want in ["\"as_path\":\"(65002)\"", "\"local_pref\":250", "\"med\":7"] {
        assert!(r.contains(want), "198.51.1.0/24 lacks {want}: {r}");
    }
    // Equal lengths ((65002) 65200 against 65100; confederation segments
    // count nothing), no MED comparison (other neighbour ASes): the true
    // eBGP path wins at §9.1.2.2 d because the member-AS path is internal.
    // Were it external, FRR's lower router id would win.
    let r = paths(&lab, &t, "198.51.3.0/24", 2);
    assert!(r.contains("\"as_path\":\"(65002) 65200\""), "{r}");
    let best = best_from(&r);
    assert_eq!(
        best.as_deref(),
        Some("198.18.2.2"),
        "best path of 198.51.3.0/24: {r}"
    );

    // 2. To the true external peer: 64512 first, no confederation segment,
    // no MED (not passed to eBGP, RFC 4271 §5.1.4).
    let b = lab.wait(30, "BIRD: 198.51.1.0/24", || bird.route("198.51.1.0/24"));
    assert!(
        b.contains("BGP.as_path: 64512\n"),
        "BIRD's path of 198.51.1.0/24:\n{b}"
    );
    assert!(!b.contains("BGP.med"), "MED leaked to eBGP:\n{b}");
    // BIRD gives eBGP routes its default 100 itself; 250 would be ours.
    assert!(
        !b.contains("BGP.local_pref: 250"),
        "LOCAL_PREF leaked to eBGP:\n{b}"
    );
    let b = lab.wait(30, "BIRD: 198.51.100.0/24", || {
        bird.route("198.51.100.0/24")
    });
    assert!(b.contains("BGP.as_path: 64512\n"), "{b}");

    // 3. To the member AS: (65001) in front, next hop unchanged, MED
    // and LOCAL_PREF as inside an AS.
    let f = lab.wait(30, "FRR: 198.51.2.0/24", || frr.route("198.51.2.0/24"));
    assert!(
        f.contains("(65001) 65100"),
        "FRR's path of 198.51.2.0/24:\n{f}"
    );
    assert!(
        f.contains("198.18.2.2 from 198.18.1.1"),
        "next hop changed:\n{f}"
    );
    assert!(
        f.contains("confed-external"),
        "FRR does not see a confederation peer:\n{f}"
    );
    let f = lab.wait(30, "FRR: 198.51.100.0/24", || frr.route("198.51.100.0/24"));
    assert!(
        f.contains("\n  (65001)\n"),
        "FRR's path of 198.51.100.0/24:\n{f}"
    );
    assert!(f.contains("localpref 100"), "{f}");

    // 4. NO_EXPORT: to the member AS only. NO_EXPORT_SUBCONFED: to
    // nobody. Both went out in the export round that carried the plain
    // static (seen above), so their absence now is final.
    let f = lab.wait(30, "FRR: 203.0.113.0/24 (no-export)", || {
        frr.route("203.0.113.0/24")
    });
    assert!(f.contains("no-export"), "{f}");
    assert_eq!(
        bird.route("203.0.113.0/24").ok().flatten(),
        None,
        "no-export to eBGP"
    );
    assert_eq!(
        frr.route("192.0.2.0/24").ok().flatten(),
        None,
        "no-export-subconfed to a member AS"
    );
    assert_eq!(
        bird.route("192.0.2.0/24").ok().flatten(),
        None,
        "no-export-subconfed to eBGP"
    );

    drop(lab);
}

/// The `from_addr` of the path marked best in a compact `show route`
/// answer.
fn best_from(r: &str) -> Option<String> {
    r.split("{\"")
        .filter(|p| p.contains("\"best\":true"))
        .find_map(|p| {
            let i = p.find("\"from_addr\":\"")? + "\"from_addr\":\"".len();
            p.get(i..)?.split('"').next().map(str::to_string)
        })
}
