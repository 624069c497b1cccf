//! The shipped example and every TOML block of docs/config.md parse, and
//! say what the documentation says they do.

use std::path::PathBuf;

use base::{AfiSafi, Asn};
use config::{Config, Connection, MaxPrefixAction, NextHop, PolicyName};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn example() -> Config {
    let p = root().join("examples/tesserad.toml");
    config::load(&p).unwrap_or_else(|e| panic!("{e}"))
}

/// The ```toml blocks of docs/config.md with the line each starts on.
fn doc_blocks() -> Vec<(usize, String)> {
    let p = root().join("docs/config.md");
    let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let mut blocks = Vec::new();
    let mut cur: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        match (&mut cur, line.trim_end()) {
            (None, "```toml") => cur = Some((i + 2, String::new())),
            (Some(_), "```") => blocks.extend(cur.take()),
            (Some((_, b)), l) => {
                b.push_str(l);
                b.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

#[test]
fn complete_example() {
    let c = example();
    assert_eq!(c.router.asn, Asn(64500));
    assert_eq!(c.neighbors.len(), 6);
    assert_eq!(c.statics.len(), 2);
    assert_eq!(c.policies.len(), 4);
    let t = c.neighbor("transit1_v4").expect("transit1_v4");
    assert!(t.ebgp);
    assert_eq!(t.families, [AfiSafi::IPV4_UNICAST]);
    assert_eq!(t.import, PolicyName::Named("transit_in".into()));
    assert_eq!(t.password.as_deref(), Some("s3cret"));
    let t6 = c.neighbor("transit1_v6").expect("transit1_v6");
    assert_eq!(t6.families, [AfiSafi::IPV6_UNICAST]);
    let acme = c.neighbor("cust_acme").expect("cust_acme");
    assert_eq!(
        acme.max_prefix
            .map(|m| (m.limit, m.action, m.warn_threshold)),
        Some((50, MaxPrefixAction::Restart(300), 80))
    );
    let core = c.neighbor("core2").expect("core2");
    assert!(!core.ebgp && core.route_reflector_client && core.add_path.send);
    assert_eq!(core.next_hop, NextHop::SelfAlways);
    assert_eq!(c.control.metrics, Some("127.0.0.1:9179".parse().unwrap()));
    assert!(c.mrt.as_ref().is_some_and(|m| m.rib_interval == 7200));
    // Where things are, for errors found later.
    let l = c.locate("policy.acme_in").expect("located");
    assert_eq!(
        l.file,
        root().join("examples/tesserad.toml").display().to_string()
    );
    assert!(l.line > 100, "{l}");
}

#[test]
fn docs_complete_example_is_the_shipped_file() {
    let blocks = doc_blocks();
    let shipped = std::fs::read_to_string(root().join("examples/tesserad.toml")).unwrap();
    assert!(
        blocks.iter().any(|(_, b)| *b == shipped),
        "docs/config.md must contain examples/tesserad.toml verbatim"
    );
}

#[test]
fn every_doc_block_parses() {
    let blocks = doc_blocks();
    assert!(blocks.len() >= 10, "only {} toml blocks", blocks.len());
    for (line, b) in &blocks {
        if let Err(e) = config::parse(b, "docs/config.md") {
            panic!("block at docs/config.md:{line}:\n{e}");
        }
    }
}

/// The block of docs/config.md under the heading `title`.
fn block_after(title: &str) -> Config {
    let p = root().join("docs/config.md");
    let text = std::fs::read_to_string(&p).unwrap();
    let at = text.find(&format!("### {title}\n")).expect(title);
    let rest = text.get(at..).unwrap_or("");
    let start = rest.find("```toml\n").expect("block") + "```toml\n".len();
    let body = rest.get(start..).unwrap_or("");
    let end = body.find("```").expect("end of block");
    config::parse(body.get(..end).unwrap_or(""), title).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn feature_examples_mean_what_they_say() {
    let c = block_after("eBGP edge with policies");
    let up = c.neighbor("upstream").unwrap();
    assert!(up.ebgp && up.export == PolicyName::Named("upstream_out".into()));

    let c = block_after("iBGP route reflector with clients");
    let rr: Vec<bool> = c
        .neighbors
        .iter()
        .map(|n| n.route_reflector_client)
        .collect();
    assert_eq!(rr, [true, true, false]);
    assert_eq!(
        c.router.cluster_id,
        "10.0.0.254".parse::<std::net::Ipv4Addr>().unwrap()
    );
    // iBGP without policy: accept both ways.
    assert!(c
        .neighbors
        .iter()
        .all(|n| n.import == PolicyName::Accept && n.export == PolicyName::Accept));

    let c = block_after("Route server");
    assert!(c
        .neighbors
        .iter()
        .all(|n| n.route_server_client && n.role.is_some()));

    let c = block_after("Confederation");
    let cf = c.router.confederation.clone().expect("confederation");
    assert_eq!(cf.identifier, Asn(64512));
    let kinds: Vec<(bool, bool, Asn)> = c
        .neighbors
        .iter()
        .map(|n| (n.ebgp, n.confed, n.local_as))
        .collect();
    assert_eq!(
        kinds,
        [
            (true, true, Asn(65001)),
            (false, false, Asn(65001)),
            (true, false, Asn(64512))
        ]
    );

    let c = block_after("Max-prefix");
    let m: Vec<_> = c
        .neighbors
        .iter()
        .map(|n| n.max_prefix.map(|m| (m.limit, m.action)))
        .collect();
    assert_eq!(
        m,
        [
            Some((1000, MaxPrefixAction::Restart(600))),
            Some((100000, MaxPrefixAction::Warn))
        ]
    );

    let c = block_after("TCP-MD5");
    assert_eq!(
        c.neighbors[0].password.as_deref(),
        Some("correct horse battery staple")
    );

    let c = block_after("ADD-PATH");
    let col = c.neighbor("collector").unwrap();
    assert!(col.add_path.send && !col.add_path.receive);
    assert_eq!(col.connection, Connection::Passive);
    assert_eq!(col.ttl, Some(255));
    assert!(c.neighbor("rr").unwrap().add_path.receive);

    let c = block_after("Static routes");
    assert_eq!(c.statics.len(), 3);
    // RFC 7999 BLACKHOLE and RFC 1997 NO_EXPORT.
    assert_eq!(c.statics[2].communities, [0xFFFF_029A, 0xFFFF_FF01]);
    assert_eq!(c.statics[0].large_communities, [(64500, 1, 100)]);

    let c = block_after("MRT dumps");
    assert!(c.mrt.is_some_and(|m| m.updates.is_some()
        && m.rib.as_deref() == Some("/var/lib/tessera/mrt/bview.%Y%m%d.%H%M.gz")
        && m.rib_interval == 7200));

    let c = block_after("Metrics and the control socket");
    assert!(c.router.listen.is_empty());
    assert_eq!(
        c.log_file.as_deref(),
        Some(std::path::Path::new("/var/log/tessera/tesserad.log"))
    );

    let c = block_after("Open eBGP by default (lab setups)");
    assert!(c
        .neighbors
        .iter()
        .all(|n| n.ebgp && n.import == PolicyName::Accept));
    assert_eq!(c.neighbors[1].connection, Connection::Passive);
    assert_eq!(c.neighbors[1].families, [AfiSafi::IPV6_UNICAST]);
    assert_eq!(
        (c.neighbors[1].hold_time, c.neighbors[1].keepalive),
        (9, Some(3))
    );
}

#[test]
fn rfc8212_without_policies() {
    let c = config::parse(
        "[router]\nid = \"192.0.2.1\"\nasn = 64500\n\
         [[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 64501\n\
         [[neighbor]]\naddress = \"192.0.2.3\"\nremote_as = 64500\n",
        "t.toml",
    )
    .unwrap();
    assert_eq!(
        (&c.neighbors[0].import, &c.neighbors[0].export),
        (&PolicyName::Reject, &PolicyName::Reject)
    );
    assert_eq!(
        (&c.neighbors[1].import, &c.neighbors[1].export),
        (&PolicyName::Accept, &PolicyName::Accept)
    );
    // Defaults of everything else.
    let n = &c.neighbors[0];
    assert_eq!(
        (n.port, n.hold_time, n.keepalive, n.connect_retry),
        (179, 90, None, 120)
    );
    assert_eq!(n.connection, Connection::Both);
    assert!(n.graceful_restart && n.four_octet_asn && n.enabled && n.soft_reconfiguration_inbound);
    assert_eq!(c.router.listen.len(), 2);
    assert_eq!(
        c.control.socket,
        std::path::Path::new("/run/tessera/tesserad.sock")
    );
    assert_eq!(c.log_level, "info");
    assert_eq!(c.router.cluster_id, c.router.id);
}

#[test]
fn asdot_and_string_asns() {
    let c = config::parse(
        "[router]\nid = \"192.0.2.1\"\nasn = \"1.10\"\n\
         [[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = \"65546\"\n",
        "t.toml",
    )
    .unwrap();
    assert_eq!(c.router.asn, Asn(65546));
    assert!(!c.neighbors[0].ebgp);
}
