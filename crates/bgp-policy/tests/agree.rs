//! Import (on a builder) and export (on the interned set) must reach the
//! same verdict and the same attributes for any route.

mod common;

use bgp_wire::AttrValue;
use common::*;
use proptest::prelude::*;

const POLICY: &str = r#"
default = "accept"
[[term]]
name = "bogons"
match.prefix = ["10.0.0.0/8 le 32", "192.168.0.0/16 le 32", "0.0.0.0/0 ge 25"]
then.action = "reject"

[[term]]
name = "tag-transit"
match.as_path = "_(3|4)_"
then = { community_add = ["65000:3"], local_pref = 80 }

[[term]]
name = "customers"
match = { as_path = "^1(_1)*(_[2-5])?$", community = ["65000:*"] }
then = { local_pref = 200, med = "+10", community_remove = ["65000:3"], action = "accept" }

[[term]]
name = "long"
match.as_path_len = ">= 5"
then = { prepend = 2, action = "accept" }

[[term]]
name = "origin"
match = { origin_as = [2, 5], large_community = ["1:*:*"] }
then = { med = "-3", large_community_add = ["1:2:3"], next_hop = "self" }

[[term]]
name = "drop-tagged"
match.community = ["7:7"]
then.action = "reject"
"#;

fn arb_prefix() -> impl Strategy<Value = String> {
    (
        prop_oneof![Just(10u8), Just(11), Just(192), Just(193)],
        0u8..=255,
        8u8..=28,
    )
        .prop_map(|(a, b, l)| {
            let p = base::Prefix4::new(u32::from_be_bytes([a, b, 0, 0]), l)
                .unwrap()
                .masked();
            p.to_string()
        })
}

proptest! {
    #[test]
    fn import_and_export_agree(
        prefix in arb_prefix(),
        path in proptest::collection::vec(1u32..7, 0..7),
        comms in proptest::collection::vec((prop_oneof![Just(65000u16), Just(7)], 0u16..8), 0..4),
        med in proptest::option::of(0u32..20),
        lc in proptest::option::of(0u32..3),
    ) {
        let p = policy(POLICY);
        let mut r = route(&path, &comms);
        if let Some(m) = med {
            r = with(r, AttrValue::Med(m));
        }
        if let Some(g) = lc {
            r = with(r, AttrValue::LargeCommunities(vec![large(g, 0, 0)]));
        }
        // `run` asserts the agreement.
        let _ = run(&p, &ctx(), &prefix, &r);
    }
}
