//! The checks an operator's graph (`[dataplane] graph`) passes before
//! tesserad runs it, at start and at every reload
//! (`fib::dataplane::check_graph`): each error names `FILE:LINE:COL`,
//! exactly. The built-in graph passes the same checks.

use fib::dataplane::{check_graph, graph_engine, Engine, GraphPort, GraphText};

const DEVS: [&str; 2] = ["e0", "e1"];

/// A valid graph for interfaces e0 and e1: IPv4 from either, looked up in
/// the FIB, out of either.
const GOOD: &str = "in0 :: FromDevice(e0); in1 :: FromDevice(e1);
rt :: Ip4Lookup(TABLE fib4, PORTS 2);
in0 -> CheckIpHeader -> rt;
in1 -> CheckIpHeader -> rt;
rt [0] -> ToDevice(e0);
rt [1] -> ToDevice(e1);
";

fn check(text: &str) -> Result<(), String> {
    check_graph(
        &GraphText {
            file: "/etc/tessera/dp.click".into(),
            text: text.into(),
        },
        &DEVS,
    )
}

/// `text` must fail with exactly `at` (`LINE:COL`) and a message
/// containing `msg`.
fn fails(text: &str, at: &str, msg: &str) {
    let e = check(text).expect_err(text);
    let want = format!("/etc/tessera/dp.click:{at}: ");
    assert!(e.starts_with(&want), "want {want}..., got {e}");
    assert!(e.contains(msg), "want '{msg}' in {e}");
}

#[test]
fn a_good_graph_passes() {
    check(GOOD).expect("valid");
}

#[test]
fn unknown_element_and_bad_argument() {
    fails(
        &GOOD.replace("Ip4Lookup(TABLE", "Ip4Lookupp(TABLE"),
        "2:7",
        "rt (Ip4Lookupp): unknown element class 'Ip4Lookupp'",
    );
    fails(
        &GOOD.replace("PORTS 2", "PORTS x"),
        "2:29",
        "rt (Ip4Lookup): ",
    );
    fails(
        &GOOD.replace("TABLE fib4", "TABLE fib9"),
        "2:7",
        "no IPv4 table 'fib9'",
    );
    // Syntax errors come from the parser, with its position.
    fails(
        &GOOD.replace("rt [0] ->", "rt [0] =>"),
        "5:8",
        "unexpected character '='",
    );
    // A name used before it is declared is a class (as in Click).
    fails(
        &GOOD.replace(
            "in0 -> CheckIpHeader -> rt;",
            "in0 -> CheckIpHeader -> rt2;",
        ),
        "3:25",
        "rt2@2 (rt2): unknown element class 'rt2'",
    );
}

#[test]
fn unconnected_and_duplicate_ports() {
    // Output 1 of the lookup leads nowhere.
    fails(
        &GOOD.replace("rt [1] -> ToDevice(e1);\n", ""),
        "2:7",
        "rt (Ip4Lookup): output 1 is not connected",
    );
    // An element nothing reaches.
    fails(
        &format!("{GOOD}lonely :: Counter;\nlonely -> Discard;\n"),
        "7:11",
        "lonely (Counter): no connection reaches it",
    );
    // One output, two connections (at the second `->`).
    fails(
        &format!("{GOOD}rt [1] -> Discard;\n"),
        "7:8",
        "rt output 1 connected twice",
    );
    // A port the element does not have.
    fails(
        &format!("{GOOD}rt [2] -> Discard;\n"),
        "7:8",
        "rt has 2 output(s); no output 2",
    );
}

#[test]
fn port_type_mismatch() {
    // IPv6 packets into the IPv4 lookup (at the second `->`).
    fails(
        &GOOD.replace(
            "in1 -> CheckIpHeader -> rt;",
            "in1 -> CheckIp6Header -> rt;",
        ),
        "4:23",
        "type mismatch: CheckIp6Header@2 output 0 carries IPv6 packets, rt input 0 takes IPv4",
    );
}

#[test]
fn what_the_daemon_needs() {
    // Every interface is read.
    fails(
        &GOOD
            .replace(" in1 :: FromDevice(e1);", "")
            .replace("in1 -> CheckIpHeader -> rt;\n", ""),
        "1:1",
        "no FromDevice(e1): the graph must receive from every dataplane interface",
    );
    // A device that is no dataplane interface, at its element.
    fails(
        &GOOD.replace("ToDevice(e1)", "ToDevice(e9)"),
        "6:11",
        "no dataplane interface 'e9' (the interfaces are: e0, e1)",
    );
    fails(
        &format!("{GOOD}again :: FromDevice(e0) -> Discard;\n"),
        "7:10",
        "a second FromDevice(e0)",
    );
    // Routes in the graph only: the FIB would never be used.
    fails(
        &GOOD.replace(
            "Ip4Lookup(TABLE fib4, PORTS 2)",
            "Ip4Lookup(ROUTE 10.0.0.0/8 0, ROUTE 0.0.0.0/0 1)",
        ),
        "1:1",
        "the graph reads no FIB",
    );
}

/// The built-in graph (what `tesserad --print-graph` prints), with either
/// engine, passes the checks an operator's graph passes: both are the
/// same language, built by the same code.
#[test]
fn the_built_in_graph_passes_the_same_checks() {
    let ports = [
        GraphPort {
            mac: [2, 0, 0, 0, 0, 1],
            addrs: vec![
                ("198.18.1.1".parse().unwrap(), 24),
                ("2001:db8:1::1".parse().unwrap(), 64),
            ],
        },
        GraphPort {
            mac: [2, 0, 0, 0, 0, 2],
            addrs: vec![("198.18.2.1".parse().unwrap(), 24)],
        },
    ];
    for engine in [Engine::Auto, Engine::Graph, Engine::Fast] {
        let text = graph_engine::graph_config(&ports, &DEVS, engine);
        check(&text).unwrap_or_else(|e| panic!("{engine:?}: {e}\n{text}"));
    }
    // The default is the fused graph (one `Ip4Forward`, the classifiers
    // checking the header), where it is equivalent: without IPsec and
    // the fabric.
    let auto = graph_engine::graph_config(&ports, &DEVS, Engine::Auto);
    assert_eq!(
        auto,
        graph_engine::graph_config(&ports, &DEVS, Engine::Fast)
    );
    assert!(
        auto.contains("Ip4Forward(") && auto.contains("ip checked"),
        "{auto}"
    );
    assert!(!auto.contains("CheckIpHeader"), "{auto}");
    // With IPsec the default keeps the chain: the ESP elements sit
    // between the header check and the lookup.
    let ipsec = fib::dataplane::IpsecConfig { sas: Vec::new() };
    let ext = |e| graph_engine::graph_config_ext(&ports, &DEVS, e, None, Some(&ipsec));
    assert_eq!(ext(Engine::Auto), ext(Engine::Graph));
    assert!(!ext(Engine::Auto).contains("Ip4Forward("));
}

/// The worked example of docs/elements.md (the ```click block) is a valid
/// graph for interfaces eth0 and eth1.
#[test]
fn the_worked_example_in_the_docs_is_valid() {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/elements.md");
    let doc = std::fs::read_to_string(&p).expect("docs/elements.md");
    let start = doc.find("```click\n").expect("a ```click block") + "```click\n".len();
    let len = doc[start..].find("```").expect("its end");
    let g = GraphText {
        file: "docs/elements.md".into(),
        text: doc[start..start + len].into(),
    };
    check_graph(&g, &["eth0", "eth1"]).unwrap_or_else(|e| panic!("{e}"));
}
