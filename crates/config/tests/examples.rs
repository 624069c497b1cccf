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
