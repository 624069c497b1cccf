//! `router.multipath`: off by default, a count for both session kinds or a
//! table, FILE:LINE errors outside 1..=64, and a reload diff when changed.

use config::Multipath;

const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n";

fn mp(line: &str) -> Result<Multipath, String> {
    config::parse(&format!("{HEAD}{line}\n"), "t.toml")
        .map(|c| c.router.bestpath.multipath)
        .map_err(|e| e.to_string())
}

#[test]
fn default_count_and_table() {
    assert_eq!(mp(""), Ok(Multipath::default()));
    assert_eq!(Multipath::default().ebgp, 1);
    assert_eq!(
        mp("multipath = 4"),
        Ok(Multipath {
            ebgp: 4,
            ibgp: 4,
            relax_as_path: false
        })
    );
    assert_eq!(
        mp("multipath = { ebgp = 8, relax_as_path = true }"),
        Ok(Multipath {
            ebgp: 8,
            ibgp: 1,
            relax_as_path: true
        })
    );
    assert_eq!(
        mp("multipath = { ibgp = 64 }"),
        Ok(Multipath {
            ebgp: 1,
            ibgp: 64,
            relax_as_path: false
        })
    );
}

#[test]
fn bad_values_name_the_field() {
    assert_eq!(
        mp("multipath = 0"),
        Err("t.toml:4:13: router.multipath: 0: 1 to 64 paths (1 is off)".into())
    );
    let e = mp("multipath = { ebgp = 65 }").unwrap_err();
    assert!(
        e.contains("router.multipath.ebgp: 65: 1 to 64 paths"),
        "{e}"
    );
    let e = mp("multipath = { paths = 2 }").unwrap_err();
    assert!(e.contains("unknown field `paths`"), "{e}");
    let e = mp("multipath = true").unwrap_err();
    assert!(e.contains("a path count, or a table"), "{e}");
}

#[test]
fn change_is_a_bestpath_reload() {
    let a = config::parse(HEAD, "t.toml").unwrap();
    let b = config::parse(&format!("{HEAD}multipath = 2\n"), "t.toml").unwrap();
    let plan = config::diff(&a, &b);
    assert!(plan.bestpath_changed);
}
