//! Reload plans: what each kind of change does.

use config::{diff, ReloadPlan};

const BASE: &str = r#"
[router]
id = "192.0.2.1"
asn = 64500

[[static]]
prefix = "203.0.113.0/24"

[[neighbor]]
name = "a"
address = "192.0.2.2"
remote_as = 64501
import = "pin"
export = "accept"
hold_time = 90

[[neighbor]]
name = "b"
address = "192.0.2.3"
remote_as = 64502
import = "accept"
export = "pout"

[[neighbor]]
name = "c"
address = "10.0.0.2"
remote_as = 64500

[policy.pin]
default = "accept"

[policy.pout]
default = "accept"
"#;

fn plan(edit: impl Fn(&str) -> String) -> ReloadPlan {
    let old = config::parse(BASE, "old.toml").unwrap_or_else(|e| panic!("{e}"));
    let text = edit(BASE);
    let new = config::parse(&text, "new.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    diff(&old, &new)
}

fn names(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn identical_is_empty() {
    let p = plan(|t| t.to_string());
    assert!(p.is_empty(), "{p:?}");
    assert!(p.describe().is_empty());
    // Comments and order of keys do not matter.
    let p = plan(|t| format!("# a comment\n{}", t.replace("hold_time = 90\n", "")));
    assert!(p.is_empty(), "{p:?}");
}

#[test]
fn added_and_removed() {
    let p = plan(|t| {
        t.replace("name = \"b\"", "name = \"b2\"")
            + "\n[[neighbor]]\naddress = \"192.0.2.9\"\nremote_as = 64509\n"
    });
    assert_eq!(p.added, names(&["b2", "n192_0_2_9"]));
    assert_eq!(p.removed, names(&["b"]));
    assert!(p.reset.is_empty() && p.soft.is_empty() && !p.global_reset);
}

#[test]
fn session_parameters_reset_only_that_neighbor() {
    for (from, to) in [
        ("hold_time = 90", "hold_time = 30"),
        ("hold_time = 90", "hold_time = 90\npassword = \"x\""),
        ("hold_time = 90", "hold_time = 90\nport = 1179"),
        ("hold_time = 90", "hold_time = 90\nadd_path = \"both\""),
        (
            "hold_time = 90",
            "hold_time = 90\nfamilies = [\"ipv4-unicast\", \"ipv6-unicast\"]",
        ),
        ("hold_time = 90", "hold_time = 90\nrole = \"peer\""),
        ("hold_time = 90", "hold_time = 90\nttl = 2"),
        ("hold_time = 90", "hold_time = 90\nttl_security = true"),
        ("hold_time = 90", "hold_time = 90\ngraceful_restart = false"),
        ("hold_time = 90", "hold_time = 90\npassive = true"),
        (
            "hold_time = 90",
            "hold_time = 90\nlocal_address = \"192.0.2.1\"",
        ),
        ("remote_as = 64501", "remote_as = 64511"),
        ("address = \"192.0.2.2\"", "address = \"192.0.2.22\""),
    ] {
        let p = plan(|t| t.replacen(from, to, 1));
        assert_eq!(p.reset, names(&["a"]), "{to}");
        assert!(
            p.soft.is_empty() && p.added.is_empty() && p.removed.is_empty(),
            "{to}: {p:?}"
        );
    }
}

#[test]
fn router_defaults_reach_the_neighbors_that_inherit_them() {
    // a sets its own hold time; b and c inherit the router's.
    let p = plan(|t| t.replace("asn = 64500\n", "asn = 64500\nhold_time = 30\n"));
    assert_eq!(p.reset, names(&["b", "c"]));
    assert!(!p.global_reset);
}

#[test]
fn router_id_or_asn_resets_everything() {
    let p = plan(|t| t.replace("id = \"192.0.2.1\"", "id = \"192.0.2.100\""));
    assert!(p.global_reset);
    assert_eq!(p.reset, names(&["a", "b", "c"]));
    let p = plan(|t| {
        t.replace("asn = 64500", "asn = 64599")
            .replace("remote_as = 64500", "remote_as = 64599")
    });
    assert!(p.global_reset);
    assert_eq!(p.reset, names(&["a", "b", "c"]));
    assert_eq!(
        p.describe().first().map(String::as_str),
        Some("router id, AS or listen addresses changed: all sessions restart")
    );
}

#[test]
fn import_policy_change_is_soft() {
    // Inside the named policy: only its user re-imports.
    let p = plan(|t| {
        t.replace(
            "[policy.pin]\ndefault = \"accept\"",
            "[policy.pin]\ndefault = \"reject\"",
        )
    });
    assert_eq!(p.reimport, names(&["a"]));
    assert!(p.reexport.is_empty());
    assert_eq!(p.soft, names(&["a"]));
    assert!(p.reset.is_empty());
    assert_eq!(p.describe(), ["a: import re-applied"]);
    // The attachment itself.
    let p = plan(|t| t.replace("import = \"pin\"", "import = \"reject\""));
    assert_eq!(p.reimport, names(&["a"]));
}

#[test]
fn export_side_changes_are_soft() {
    let p = plan(|t| {
        t.replace(
            "[policy.pout]\ndefault = \"accept\"",
            "[policy.pout]\ndefault = \"reject\"",
        )
    });
    assert_eq!(p.reexport, names(&["b"]));
    assert!(p.reimport.is_empty() && p.reset.is_empty());
    assert_eq!(p.describe(), ["b: export re-applied"]);
    for (from, to) in [
        (
            "remote_as = 64500\n",
            "remote_as = 64500\nroute_reflector_client = true\n",
        ),
        (
            "remote_as = 64500\n",
            "remote_as = 64500\nnext_hop = \"self\"\n",
        ),
    ] {
        let p = plan(|t| t.replace(from, to));
        assert_eq!(p.reexport, names(&["c"]), "{to}");
        assert_eq!(p.soft, names(&["c"]));
        assert!(p.reset.is_empty());
    }
    let p = plan(|t| {
        t.replace(
            "remote_as = 64502\n",
            "remote_as = 64502\nroute_server_client = true\n",
        )
    });
    assert_eq!(p.reexport, names(&["b"]));
}

#[test]
fn cluster_id_touches_ibgp_only() {
    let p = plan(|t| {
        t.replace(
            "asn = 64500\n",
            "asn = 64500\ncluster_id = \"192.0.2.200\"\n",
        )
    });
    assert_eq!(p.reimport, names(&["c"]));
    assert_eq!(p.reexport, names(&["c"]));
    assert_eq!(p.other, names(&["router.cluster_id"]));
    assert!(p.reset.is_empty());
}

#[test]
fn metadata_only_changes() {
    let p = plan(|t| {
        t.replace(
            "remote_as = 64502\n",
            "remote_as = 64502\nmax_prefix = 10\ndescription = \"B\"\nenabled = false\n",
        )
    });
    assert_eq!(p.soft, names(&["b"]));
    assert!(p.reimport.is_empty() && p.reexport.is_empty() && p.reset.is_empty());
    assert_eq!(p.describe(), ["b: settings updated"]);
}

#[test]
fn statics_and_other_globals() {
    let p = plan(|t| t.replace("203.0.113.0/24", "203.0.113.0/25"));
    assert!(p.statics_changed);
    assert!(p.soft.is_empty() && p.reset.is_empty());
    assert_eq!(p.describe(), ["static routes changed"]);
    let p = plan(|t| {
        t.to_string()
            + "\n[control]\nmetrics = \"127.0.0.1:9179\"\n[log]\nlevel = \"debug\"\n\
               [mrt]\nrib = \"/tmp/rib.%Y\"\n"
    });
    assert_eq!(p.other, names(&["control.metrics", "log.level", "mrt"]));
    assert!(!p.is_empty() && p.reset.is_empty() && !p.global_reset);
    let p = plan(|t| {
        t.replace(
            "asn = 64500\n",
            "asn = 64500\nlisten = [\"0.0.0.0:1179\"]\n",
        )
    });
    assert!(p.global_reset);
    assert!(p.other.contains(&"router.listen".to_string()));
}

#[test]
fn route_selection_options_reselect_without_resets() {
    let old = config::parse(BASE, "old.toml").unwrap_or_else(|e| panic!("{e}"));
    let b = old.router.bestpath;
    assert!(!b.deterministic_med && !b.always_compare_med && !b.med_missing_as_worst);
    assert!(b.compare_router_id);
    for key in [
        "deterministic_med = true",
        "always_compare_med = true",
        "med_missing_as_worst = true",
        "compare_router_id = false",
    ] {
        let p = plan(|t| t.replace("asn = 64500\n", &format!("asn = 64500\n{key}\n")));
        assert!(p.bestpath_changed, "{key}: {p:?}");
        assert!(
            p.reset.is_empty() && p.soft.is_empty() && !p.global_reset,
            "{key}: {p:?}"
        );
        assert_eq!(
            p.describe(),
            vec!["route selection options changed: best paths selected again".to_string()]
        );
    }
    let text = BASE.replace(
        "asn = 64500\n",
        "asn = 64500\ndeterministic_med = true\nalways_compare_med = true\n\
         med_missing_as_worst = true\ncompare_router_id = false\n",
    );
    let c = config::parse(&text, "new.toml").unwrap_or_else(|e| panic!("{e}"));
    let b = c.router.bestpath;
    assert!(b.deterministic_med && b.always_compare_med && b.med_missing_as_worst);
    assert!(!b.compare_router_id);
    // Not a boolean: FILE:LINE.
    let bad = BASE.replace("asn = 64500\n", "asn = 64500\nalways_compare_med = 1\n");
    let e = config::parse(&bad, "bad.toml").unwrap_err().to_string();
    assert!(e.contains("bad.toml:5"), "{e}");
}

#[test]
fn bfd_changes_are_soft() {
    let p = plan(|t| t.replace("remote_as = 64502\n", "remote_as = 64502\nbfd = true\n"));
    assert_eq!(p.soft, names(&["b"]));
    assert!(p.reset.is_empty() && p.reimport.is_empty() && p.reexport.is_empty());
    // [bfd] reaches the neighbours that inherit it.
    let old = config::parse(
        &BASE.replace("remote_as = 64502\n", "remote_as = 64502\nbfd = true\n"),
        "o",
    )
    .unwrap();
    let new = config::parse(
        &format!(
            "[bfd]\nmin_tx = 10\n{}",
            BASE.replace("remote_as = 64502\n", "remote_as = 64502\nbfd = true\n")
        ),
        "n",
    )
    .unwrap();
    let p = diff(&old, &new);
    assert_eq!(p.soft, names(&["b"]));
    assert!(p.reset.is_empty());
}

/// `[[dataplane.vr]]` changes are applied by the reload itself (the
/// dataplane's VR set), not left for a restart; other `[dataplane]`
/// changes still are.
#[test]
fn vr_changes_are_not_a_restart() {
    let dp = "\n[dataplane]\n[[dataplane.interface]]\nname = \"r0\"\n\
              [[dataplane.interface]]\nname = \"r1\"\n";
    let vr = |port: &str, tickets: u32| {
        format!(
            "[[dataplane.vr]]\nname = \"red\"\ningress = \"{port}\"\ntable = \"main\"\n\
             tickets = {tickets}\n"
        )
    };
    let old = config::parse(&format!("{BASE}{dp}{}", vr("r0", 100)), "old.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    let new = config::parse(&format!("{BASE}{dp}{}", vr("r1", 300)), "new.toml")
        .unwrap_or_else(|e| panic!("{e}"));
    let p = diff(&old, &new);
    assert!(!p.other.contains(&"dataplane".to_string()), "{p:?}");
    let new = config::parse(
        &format!(
            "{BASE}{}{}",
            dp.replace("[dataplane]\n", "[dataplane]\ncores = 2\n"),
            vr("r0", 100)
        ),
        "new.toml",
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert!(diff(&old, &new).other.contains(&"dataplane".to_string()));
}
