//! An operator's element graph (`[dataplane] graph`) in a running
//! tesserad, on veth pairs in namespaces this test creates:
//!
//! ```text
//! A [a0 198.18.1.2] -- [r0 198.18.1.1] R [r1 198.18.2.1] -- [b0 198.18.2.2] B
//!                                                  (lo 198.19.113.1, 198.19.114.1)
//! ```
//!
//! R forwards with its own dataplane only (AF_PACKET, no kernel
//! addresses on r0/r1, kernel forwarding off). Two static routes,
//! 198.19.113.0/24 and 198.19.114.0/24 via B, are the FIB. The graph is
//! the built-in one (`tesserad --print-graph`: the default, fused IPv4
//! path) with a `Counter` on port 0's IPv4 path, between its classifier
//! and `Ip4Forward`: pings from A to both prefixes cross R, and `tessera
//! show dataplane --json` counts them at the Counter. Then `tessera
//! configure` with a broken graph: the reload fails with the
//! `FILE:LINE:COL` of the error, and the old graph still forwards. Then a
//! changed graph that drops 198.19.114.0/24 in a Classifier: pings to it
//! die and are counted as drops of the Discard, those to 198.19.113.1
//! still cross, with no restart (same pid) and no new route: the FIB was
//! kept. `/metrics` carries the element counters too. Needs root, `ip`,
//! `ping`; every step is bounded and everything is torn down (also on
//! failure).

use e2e as common;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use common::netlab::NetLab;

e2e::netlab_newtype!(
    /// A, R and B; dropping it tears everything down.
    Lab
);

impl Lab {
    fn new() -> Lab {
        let lab = NetLab::new("dg", &["a", "r", "b"], "this test", &["ip", "ping"]);
        lab.link("a", "a0", "r", "r0");
        lab.link("r", "r1", "b", "b0");
        for (n, cmd) in [
            ("a", "ip addr add 198.18.1.2/24 dev a0"),
            ("b", "ip addr add 198.18.2.2/24 dev b0"),
            ("b", "ip addr add 198.19.113.1/32 dev lo"),
            ("b", "ip addr add 198.19.114.1/32 dev lo"),
            ("r", "sysctl -qw net.ipv4.ip_forward=0"),
            ("a", "ip link set a0 up"),
            ("r", "ip link set r0 up"),
            ("r", "ip link set r1 up"),
            ("b", "ip link set b0 up"),
            ("a", "ip route add default via 198.18.1.1"),
            ("b", "ip route add default via 198.18.2.1"),
        ] {
            lab.must_cmd(n, cmd);
        }
        Lab(lab)
    }
    fn sock(&self) -> String {
        self.path("tesserad.sock").display().to_string()
    }
    fn write_config(&self) -> PathBuf {
        let text = format!(
            "[router]\nid = \"198.18.9.1\"\nasn = 65000\npipeline = \"sequential\"\n\
             listen = [\"127.0.0.1:179\"]\n\n\
             [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:9324\"\n\n\
             [[static]]\nprefix = \"198.19.113.0/24\"\nnext_hop = \"198.18.2.2\"\n\n\
             [[static]]\nprefix = \"198.19.114.0/24\"\nnext_hop = \"198.18.2.2\"\n\n\
             [dataplane]\nio = \"af_packet\"\ngraph = \"{}\"\n\n\
             [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"198.18.1.1/24\"]\n\n\
             [[dataplane.interface]]\nname = \"r1\"\naddresses = [\"198.18.2.1/24\"]\n",
            self.sock(),
            self.path("dp.click").display()
        );
        PathBuf::from(self.write("tesserad.toml", &text))
    }
    /// `tessera ARGS` in R.
    fn tessera(&self, args: &[&str]) -> Result<String, String> {
        self.0.tessera("r", args)
    }
    fn ping(&self, dst: &str) -> bool {
        self.exec(
            "a",
            &["ping", "-c", "3", "-i", "0.2", "-W", "1", "-w", "3", dst],
        )
        .is_ok()
    }
    fn tesserad_log(&self) -> String {
        self.log("tesserad.log")
    }
}

/// The element called `name` in a `show dataplane --json` answer.
fn elem<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["elements"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["name"] == name))
        .unwrap_or_else(|| panic!("no element {name} in {v}"))
}

fn counter(v: &serde_json::Value, name: &str, c: &str) -> u64 {
    elem(v, name)["counters"][c].as_u64().unwrap_or(0)
}

fn drops(v: &serde_json::Value, name: &str, r: &str) -> u64 {
    elem(v, name)["drops"][r].as_u64().unwrap_or(0)
}

#[test]
fn an_operator_graph_forwards_counts_and_reloads_without_dropping_the_fib() {
    let mut lab = Lab::new();
    let cfg = lab.write_config();
    let bin = env!("CARGO_BIN_EXE_tesserad");
    // The built-in graph for these interfaces, as the operator starts.
    let cfgs = cfg.display().to_string();
    let builtin = lab
        .exec("r", &[bin, "-c", &cfgs, "--print-graph"])
        .expect("--print-graph");
    // The default graph: port 0's checked IPv4 enters the fused
    // Ip4Forward (which also rewrites the MAC for resolved gateways).
    assert!(builtin.contains("c0 [3] -> fwd4;"), "{builtin}");
    assert!(builtin.contains("REWRITE rw1"), "{builtin}");
    let counted = builtin.replace("c0 [3] -> fwd4;", "c0 [3] -> cnt :: Counter -> fwd4;");
    let graph = lab.path("dp.click");
    // A bad graph at start: tesserad refuses to start, with the position.
    std::fs::write(&graph, counted.replace("PORTS 2", "PORTS two")).expect("graph");
    let e = lab
        .exec("r", &[bin, "-c", &cfg.display().to_string()])
        .expect_err("tesserad started with a bad graph");
    let want = format!("{}:1:30: rt4 (Ip4Lookup): ", graph.display());
    assert!(e.contains(&want), "want {want} in {e}");
    std::fs::write(&graph, &counted).expect("graph");
    // `tesserad --check` checks the graph too.
    lab.exec("r", &[bin, "-c", &cfgs, "--check"])
        .expect("the graph is valid");

    lab.spawn("r", &[bin, "-c", &cfgs], "tesserad.log");
    let pid = lab.pid("tesserad.log");
    let end = Instant::now() + Duration::from_secs(20);
    while lab.tessera(&["show", "dataplane"]).is_err() {
        assert!(
            Instant::now() < end,
            "tesserad did not start: {}",
            lab.tesserad_log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // Static routes reach the FIB shortly after start.
    let end = Instant::now() + Duration::from_secs(15);
    while !lab.ping("198.19.113.1") {
        assert!(
            Instant::now() < end,
            "no forwarding: {}",
            lab.tesserad_log()
        );
    }
    assert!(lab.ping("198.19.114.1"), "198.19.114.1 not reached");
    let v = lab.wait_show("the Counter saw the pings", |v| {
        counter(v, "cnt", "packets") >= 6
    });
    assert!(
        v["graph"].as_str().is_some_and(|g| g.ends_with("dp.click")),
        "{v}"
    );
    assert_eq!(elem(&v, "cnt")["class"], "Counter");
    assert!(elem(&v, "rt4")["drops"].get("no_route").is_some(), "{v}");
    let text = lab.tessera(&["show", "dataplane"]).expect("text");
    assert!(
        text.contains("cnt") && text.contains("Counter") && text.contains("packets="),
        "{text}"
    );
    // /metrics: the same counters with element and class labels.
    let m = common::netlab::metrics(&lab.ns("r"), "127.0.0.1:9324");
    assert!(
        m.contains(
            "tessera_dataplane_element_counter{element=\"cnt\",class=\"Counter\",counter=\"packets\"}"
        ),
        "{m}"
    );
    assert!(
        m.contains("tessera_dataplane_element_drops_total{element=\"rt4\",class=\"Ip4Lookup\",reason=\"no_route\"}"),
        "{m}"
    );
    assert!(
        m.contains(
            "tessera_dataplane_element_packets_total{element=\"cnt\",class=\"Counter\",dir=\"in\"}"
        ),
        "{m}"
    );

    // A broken graph: the reload fails with FILE:LINE:COL, nothing changes.
    let lines = counted.lines().count();
    let broken = format!("{counted}oops :: NoSuchElement(1);\n");
    std::fs::write(&graph, &broken).expect("graph");
    let e = lab
        .tessera(&["configure"])
        .expect_err("a broken graph reloads");
    let want = format!(
        "{}:{}:9: oops (NoSuchElement): ",
        graph.display(),
        lines + 1
    );
    assert!(e.contains(&want), "want {want} in {e}");
    let before = counter(&lab.show(), "cnt", "packets");
    assert!(lab.ping("198.19.113.1"), "the old graph stopped forwarding");
    lab.wait_show("the old graph still counts", |v| {
        counter(v, "cnt", "packets") >= before + 3
    });

    // A changed graph: 198.19.114.0/24 from port 0 is dropped on its way
    // to the forwarding.
    let filtered = counted.replace(
        "c0 [3] -> cnt :: Counter -> fwd4;",
        "c0 [3] -> deny :: Classifier(30/c61372, -);\n\
         deny [0] -> denied :: Discard;\ndeny [1] -> cnt :: Counter -> fwd4;",
    );
    assert_ne!(filtered, counted);
    std::fs::write(&graph, &filtered).expect("graph");
    let out = lab
        .tessera(&["configure"])
        .expect("the changed graph loads");
    assert!(out.contains("FIB kept"), "{out}");
    assert!(lab.ping("198.19.113.1"), "198.19.113.1 after the change");
    assert!(!lab.ping("198.19.114.1"), "198.19.114.1 still crosses");
    let v = lab.wait_show("the new graph counts", |v| {
        drops(v, "denied", "discarded") >= 3 && counter(v, "cnt", "packets") >= 3
    });
    assert_eq!(elem(&v, "deny")["class"], "Classifier");
    assert_eq!(lab.pid("tesserad.log"), pid);
    let log = lab.tesserad_log();
    assert_eq!(
        log.matches("dataplane: started").count(),
        1,
        "restarted: {log}"
    );
}
