//! Every BGP message and RIB attribute block in the shared real MRT samples
//! must decode, re-encode byte for byte, and yield the prefix counts that
//! `bgpdump -m` reports (see the data README).

#[path = "common/mrt.rs"]
mod mrt;

use bgp_wire::consts::attr_type as at;
use bgp_wire::*;

#[derive(Default, Debug)]
struct Counts {
    messages: usize,
    announced: usize,
    withdrawn: usize,
    validate_errors: usize,
}

fn walk_updates(name: &str) -> Counts {
    let data = mrt::load_required(name);
    let mut c = Counts::default();
    let mut out = Vec::new();
    for r in mrt::records(&data) {
        let Some((msg, ctx)) = mrt::bgp4mp_message(&r) else {
            continue;
        };
        let (m, len) = Message::parse(msg, ctx)
            .unwrap_or_else(|e| panic!("{name}: message {} does not parse: {e}", c.messages));
        assert_eq!(len, msg.len(), "{name}: trailing bytes");
        c.messages += 1;
        out.clear();
        m.to_owned()
            .unwrap_or_else(|e| panic!("{name}: to_owned: {e}"))
            .encode(ctx, &mut out)
            .unwrap();
        assert_eq!(
            out, msg,
            "{name}: message {} re-encodes differently",
            c.messages
        );
        let Message::Update(u) = m else { continue };
        if u.validate().is_err() {
            c.validate_errors += 1;
        }
        c.announced += u.nlri().count();
        c.withdrawn += u.withdrawn().count();
        if let Some(Ok(mp)) = u.mp_reach() {
            c.announced += mp.nlri().filter(Result::is_ok).count();
        }
        if let Some(Ok(mp)) = u.mp_unreach() {
            c.withdrawn += mp.withdrawn().filter(Result::is_ok).count();
        }
    }
    c
}

#[test]
fn updates_2019_ris() {
    let c = walk_updates("updates.20190101.0000.gz");
    assert_eq!(c.messages, 54_471);
    assert_eq!((c.announced, c.withdrawn), (159_948, 2_626), "{c:?}");
    assert_eq!(c.validate_errors, 0);
}

#[test]
fn updates_2016_ris_v4_over_v6() {
    let c = walk_updates("updates.20160811.1600.gz");
    assert_eq!((c.announced, c.withdrawn), (39_256, 1_956), "{c:?}");
}

#[test]
fn updates_routeviews() {
    let c = walk_updates("update.bz2");
    assert_eq!(c.messages, 15_044);
    assert_eq!((c.announced, c.withdrawn), (23_622, 2_020), "{c:?}");
    let c = walk_updates("routeviews.route-views.jinx.updates.1401493500.bz2");
    assert_eq!((c.announced, c.withdrawn), (1_238, 116), "{c:?}");
}

#[test]
fn updates_et_header_full_table() {
    let c = walk_updates("updates.et-header.2015.gz");
    assert_eq!((c.announced, c.withdrawn), (577_737, 3), "{c:?}");
}

fn walk_rib(name: &str) -> (usize, usize) {
    let data = mrt::load_required(name);
    let (mut blocks, mut abbreviated) = (0, 0);
    let mut out = Vec::new();
    for r in mrt::records(&data) {
        let Some((af, list)) = mrt::rib_attr_blocks(&r) else {
            continue;
        };
        let ctx = ParseCtx::mrt_rib(af);
        for attrs in list {
            blocks += 1;
            out.clear();
            for a in AttrIter::new(attrs) {
                let a = a.unwrap_or_else(|e| panic!("{name}: {e}"));
                if a.type_code == at::MP_REACH_NLRI {
                    let PathAttribute::MpReach(m) = a.typed(ctx).unwrap() else {
                        panic!()
                    };
                    assert!(m.next_hop().is_some(), "{name}: next hop {:?}", m.next_hop);
                    abbreviated += usize::from(m.abbreviated);
                }
                a.to_owned(ctx).encode(ctx, &mut out);
            }
            assert_eq!(out, attrs, "{name}: RIB attributes re-encode differently");
        }
    }
    (blocks, abbreviated)
}

#[test]
fn rib_files_full_and_abbreviated_mp_reach() {
    // Blocks, and how many MP_REACH values used the abbreviated form. All of
    // these dumpers wrote the full form (the RFC 6396 erratum case), some
    // with a stray 1-octet NLRI of /0 after the reserved octet; the
    // detection must pick the full form for every one of them.
    for (name, blocks, abbr) in [
        ("rib.bz2", 609_246, 0),
        ("rib6.20151101.0600_firstMB.bz2", 149_578, 0),
        (
            "routeviews.route-views.jinx.ribs.1401487200.bz2",
            503_590,
            0,
        ),
        ("rib.20140523.0600_firstMB.bz2", 270_005, 0),
        ("bview.ipv4_unicast_add_path.gz", 62, 0),
        ("bview.ipv6_unicast_add_path.gz", 62, 0),
    ] {
        let got = walk_rib(name);
        println!("{name}: {got:?}");
        assert_eq!(got, (blocks, abbr), "{name}");
    }
}
