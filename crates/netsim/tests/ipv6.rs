//! IPv6 prefixes travel in MP_REACH_NLRI: a line A - B - C where A
//! originates an IPv4 and an IPv6 prefix; C receives the IPv6 one in an
//! UPDATE whose MP_REACH carries it with B's IPv6 address as next hop, and
//! ends with the path B A for both.

mod common;

use common::*;
use netsim::{node_addr6, NodeId, Observer, Scenario, Sim};
use topo::Rel;

#[derive(Default)]
struct Got(Vec<(NodeId, Vec<u8>)>);

impl Observer for Got {
    fn received(&mut self, _: u64, _: NodeId, from: NodeId, msg: &[u8]) {
        self.0.push((from, msg.to_vec()));
    }
}

#[test]
fn ipv6_prefixes_travel_in_mp_reach_with_an_ipv6_next_hop() {
    let mut ns = nodes(3);
    let v6: base::Prefix = "2001:db8:1::/48".parse().unwrap();
    ns[0].prefixes = vec!["198.18.0.0/24".parse().unwrap(), v6];
    ns[1].prefixes.clear();
    ns[2].prefixes.clear();
    let g = netsim::Graph {
        nodes: ns,
        links: vec![
            link(0, 1, Rel::ProviderCustomer),
            link(1, 2, Rel::ProviderCustomer),
        ],
    };
    let mut s = Sim::new(&g, instant_config());
    s.trace(2);
    s.start(&Scenario::default()).unwrap();
    let mut got = Got::default();
    s.run_to_end(u64::MAX, &mut got);
    let ctx = bgp_wire::ParseCtx::modern();
    let mut seen = 0;
    for (from, m) in &got.0 {
        if m.get(18) != Some(&2) {
            continue;
        }
        let u = bgp_wire::UpdateView::parse(&m[19..], ctx).unwrap();
        let Some(r) = u.mp_reach() else { continue };
        let r = r.unwrap();
        let ps: Vec<base::Prefix> = r.nlri().map(|n| n.unwrap().prefix).collect();
        if ps.contains(&v6) {
            assert_eq!(*from, 1);
            assert_eq!(
                r.next_hop(),
                Some(bgp_wire::NextHop::V6(node_addr6(1))),
                "next hop is B's IPv6 address"
            );
            assert_eq!(u.nlri().count(), 0, "not in the IPv4 NLRI field");
            seen += 1;
        }
    }
    assert_eq!(seen, 1, "one UPDATE with the IPv6 prefix");
    let routes = s.best_routes(2);
    assert_eq!(routes.len(), 2);
    for r in routes {
        assert_eq!(r.as_path, asns(&[1, 0]), "{}", r.prefix);
    }
}
