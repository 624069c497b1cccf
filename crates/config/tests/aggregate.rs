//! `[[aggregate]]`: parsed with defaults, and FILE:LINE errors for a bad
//! prefix, duplicates, a static's prefix and a RIB split over threads.

const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\npipeline = \"sequential\"\n";

#[test]
fn parsed_with_defaults() {
    let c = config::parse(
        &format!(
            "{HEAD}\n[[aggregate]]\nprefix = \"198.19.16.0/22\"\nsummary_only = true\n\n[[aggregate]]\nprefix = \"2001:db8::/32\"\nas_set = true\n"
        ),
        "t.toml",
    )
    .unwrap();
    assert_eq!(c.aggregates.len(), 2);
    let a = c.aggregates[0];
    assert_eq!(a.prefix, "198.19.16.0/22".parse().unwrap());
    assert!(a.summary_only && !a.as_set);
    assert!(!c.aggregates[1].summary_only && c.aggregates[1].as_set);
    // One sharded RIB thread is one RIB too.
    let one = "[router]\nid = \"192.0.2.1\"\nasn = 65000\nthreads = 1\n\n[[aggregate]]\nprefix = \"198.19.16.0/22\"\n";
    assert!(config::parse(one, "t.toml").is_ok());
}

fn err(text: &str) -> String {
    config::parse(text, "t.toml").unwrap_err().to_string()
}

#[test]
fn errors_name_file_line_and_field() {
    assert_eq!(
        err(&format!("{HEAD}\n[[aggregate]]\nprefix = \"198.19.16.1/22\"\n")),
        "t.toml:7:10: aggregate[0].prefix: \"198.19.16.1/22\" has bits set beyond the prefix length (did you mean 198.19.16.0/22?)"
    );
    assert_eq!(
        err(&format!(
            "{HEAD}\n[[aggregate]]\nprefix = \"198.19.16.0/22\"\n\n[[aggregate]]\nprefix = \"198.19.16.0/22\"\n"
        )),
        "t.toml:10:10: aggregate[1].prefix: 198.19.16.0/22 is also aggregate[0]"
    );
    assert_eq!(
        err(&format!(
            "{HEAD}\n[[static]]\nprefix = \"198.19.16.0/22\"\n\n[[aggregate]]\nprefix = \"198.19.16.0/22\"\n"
        )),
        "t.toml:10:10: aggregate[0].prefix: 198.19.16.0/22 is also a [[static]] route"
    );
    let sharded =
        "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n[[aggregate]]\nprefix = \"198.19.16.0/22\"\n";
    assert_eq!(
        err(sharded),
        "t.toml:5:1: aggregate[0]: aggregation across RIB threads is not supported yet: set router.pipeline = \"sequential\" (or threads = 1)"
    );
    assert!(err(&format!(
        "{HEAD}\n[[aggregate]]\nprefix = \"198.19.16.0/22\"\nsummary = true\n"
    ))
    .contains("summary"));
}

#[test]
fn reload_lists_aggregate_changes() {
    let a = config::parse(HEAD, "t.toml").unwrap();
    let b = config::parse(
        &format!("{HEAD}\n[[aggregate]]\nprefix = \"198.19.16.0/22\"\n"),
        "t.toml",
    )
    .unwrap();
    assert_eq!(config::diff(&a, &b).other, vec!["aggregate".to_string()]);
}
