//! `[damping]`, `router.damping` and a neighbour's `damping`: defaults,
//! inheritance, and FILE:LINE errors for what cannot work.

use std::time::Duration;

const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n";

fn nb(extra: &str) -> String {
    format!("\n[[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 65001\n{extra}")
}

#[test]
fn off_by_default_rfc7196_parameters() {
    let c = config::parse(&format!("{HEAD}{}", nb("")), "t.toml").unwrap();
    assert!(!c.router.damping);
    assert!(!c.neighbors[0].damping);
    let d = c.damping;
    assert_eq!(d, config::Damping::default());
    assert_eq!((d.suppress, d.reuse), (6000, 750));
    assert_eq!(d.half_life, Duration::from_secs(900));
    assert_eq!(d.max_suppress, Duration::from_secs(3600));
    assert_eq!(
        (
            d.withdraw_penalty,
            d.readvertise_penalty,
            d.attr_change_penalty
        ),
        (1000, 1000, 500)
    );
}

#[test]
fn router_default_neighbour_override_and_parameters() {
    let text = format!(
        "{HEAD}damping = true\n{}{}\n[damping]\nhalf_life = 3\nreuse = 1000\nsuppress = 2500\nmax_suppress = 12\nattr_change_penalty = 0\n",
        nb(""),
        "\n[[neighbor]]\naddress = \"192.0.2.3\"\nremote_as = 65003\ndamping = false\n"
    );
    let c = config::parse(&text, "t.toml").unwrap();
    assert!(c.neighbors[0].damping);
    assert!(!c.neighbors[1].damping);
    assert_eq!(c.damping.half_life, Duration::from_secs(3));
    assert_eq!(c.damping.suppress, 2500);
    assert_eq!(c.damping.attr_change_penalty, 0);
    assert_eq!(c.damping.withdraw_penalty, 1000);

    let only_nb = format!("{HEAD}{}", nb("damping = true\n"));
    let c = config::parse(&only_nb, "t.toml").unwrap();
    assert!(c.neighbors[0].damping && !c.router.damping);
}

fn err(text: &str) -> String {
    config::parse(text, "t.toml").unwrap_err().to_string()
}

#[test]
fn errors_name_file_line_and_field() {
    let on = format!("{HEAD}damping = true\n{}", nb(""));
    // [damping] is on line 10.
    assert_eq!(
        err(&format!("{on}\n[damping]\nsuppress = 700\n")),
        "t.toml:11:12: damping.suppress: suppress (700) must be greater than reuse (750)"
    );
    assert_eq!(
        err(&format!("{on}\n[damping]\nhalf_life = 0\n")),
        "t.toml:11:13: damping.half_life: 0: 1 to 3600"
    );
    assert_eq!(
        err(&format!("{on}\n[damping]\nhalf_life = 600\nmax_suppress = 300\n")),
        "t.toml:12:16: damping.max_suppress: max_suppress (300 s) must be at least half_life (600 s)"
    );
    assert!(err(&format!("{on}\n[damping]\nmax_suppress = 900\n"))
        .starts_with("t.toml:10:1: damping: the penalty can never exceed suppress (6000)"));
    assert!(err(&format!("{on}\n[damping]\nwithdraw_penalty = -1\n"))
        .starts_with("t.toml:11:20: damping.withdraw_penalty: -1: 0 to 20000"));
    assert!(err(&format!("{on}\n[damping]\nhalflife = 3\n")).contains("halflife"));
    // Parameters nobody uses would do nothing.
    assert_eq!(
        err(&format!("{HEAD}{}\n[damping]\nreuse = 800\n", nb(""))),
        "t.toml:9:1: damping: no neighbour is damped: set router.damping = true or damping = true on a neighbour"
    );
}

#[test]
fn reload_reports_damping_changes() {
    let a = config::parse(&format!("{HEAD}{}", nb("")), "t.toml").unwrap();
    let b = config::parse(&format!("{HEAD}{}", nb("damping = true\n")), "t.toml").unwrap();
    let p = config::diff(&a, &b);
    assert_eq!(p.soft, vec!["n192_0_2_2".to_string()]);
    assert!(p.reset.is_empty() && p.other.is_empty());
    let c = config::parse(
        &format!(
            "{HEAD}{}
[damping]
reuse = 800
",
            nb("damping = true
")
        ),
        "t.toml",
    )
    .unwrap();
    let p = config::diff(&b, &c);
    assert_eq!(p.other, vec!["damping".to_string()]);
    assert!(p.soft.is_empty());
}
