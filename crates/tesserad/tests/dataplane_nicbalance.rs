//! NICBalance (seed 004 ch. 4) as a port-group switch of a running
//! tesserad, on veth pairs in namespaces this test creates, under
//! overload:
//!
//! ```text
//! A [a0 198.18.1.2] -- [r0 198.18.1.1] R [r1 198.18.2.1] -- [b0 198.18.2.2] B
//!   tessera trafgen       tesserad, AF_PACKET, 1 core     tbf 20 Mbit/s on r1
//! ```
//!
//! Plain veth never backs up on transmit: the kernel moves each frame to
//! the peer inside our own `sendto`, so overload is shed at the receive
//! ring (docs/BENCHMARKS.md "NICBalance on veth" has the evidence). To
//! make transmit the bottleneck, as on the seed's bus, R sends through
//! the qdisc (`[dataplane] qdisc = true`) and r1 has a 20 Mbit/s token
//! bucket: r1's TPACKET ring fills, the ToDevice queue behind it fills,
//! and what the core received and processed beyond that is dropped
//! (`tx_full`, "dropped after processing").
//!
//! One run, same load twice: A sends 64-byte frames as fast as it can
//! for a few seconds with `nicbalance = false` on the group {r0, r1},
//! then the config is switched to `nicbalance = true` and reloaded
//! (`tessera configure`: the built-in graph is rebuilt with NICBalance
//! elements on the same FIB), and A sends again. Asserted: the switch
//! takes effect (NICBalance elements appear, they evaluate, find the
//! transmitter congested and suspend or cut the receiver; r0's polls are
//! withheld; frames are left on the wire, i.e. dropped by the kernel at
//! r0's ring before any work), and far fewer frames are dropped after
//! processing. No timing is asserted; the figures are printed (run with
//! `--nocapture`) for docs/BENCHMARKS.md. Needs root, `ip`, `tc`, `ping`;
//! every step is bounded and everything is torn down (also on failure).

use e2e as common;

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::cluster::sh;

/// Seconds of offered load per phase.
const SECONDS: &str = "3";

struct Lab {
    tag: String,
    dir: PathBuf,
    child: Option<Child>,
}

impl Lab {
    fn ns(&self, n: &str) -> String {
        format!("nb{n}{}", self.tag)
    }
    fn exec(&self, n: &str, argv: &[&str]) -> Result<String, String> {
        let ns = self.ns(n);
        let mut v = vec!["ip", "netns", "exec", &ns];
        v.extend_from_slice(argv);
        sh(&v)
    }
    fn must(&self, n: &str, argv: &[&str]) -> String {
        self.exec(n, argv).unwrap_or_else(|e| panic!("setup: {e}"))
    }
    fn new() -> Lab {
        // SAFETY: geteuid has no preconditions.
        assert_eq!(unsafe { libc::geteuid() }, 0, "this test needs root");
        for t in ["ip", "tc", "ping"] {
            assert!(
                Command::new("which")
                    .arg(t)
                    .output()
                    .is_ok_and(|o| o.status.success()),
                "this test needs `{t}` installed"
            );
        }
        let tag = format!("{}", std::process::id() % 100_000);
        let dir = std::env::temp_dir().join(format!("tessera-nb-{tag}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("work dir");
        let lab = Lab {
            tag,
            dir,
            child: None,
        };
        for n in ["a", "r", "b"] {
            sh(&["ip", "netns", "add", &lab.ns(n)]).expect("netns");
            lab.must(n, &["ip", "link", "set", "lo", "up"]);
        }
        for (n1, i1, n2, i2) in [("a", "a0", "r", "r0"), ("r", "r1", "b", "b0")] {
            let (x, y) = (lab.ns(n1), lab.ns(n2));
            sh(&[
                "ip", "link", "add", i1, "netns", &x, "type", "veth", "peer", "name", i2, "netns",
                &y,
            ])
            .expect("veth");
        }
        lab.must("a", &["ip", "addr", "add", "198.18.1.2/24", "dev", "a0"]);
        lab.must("b", &["ip", "addr", "add", "198.18.2.2/24", "dev", "b0"]);
        lab.must("b", &["ip", "addr", "add", "198.19.113.1/32", "dev", "lo"]);
        lab.must("r", &["sysctl", "-qw", "net.ipv4.ip_forward=0"]);
        for (n, i) in [("a", "a0"), ("r", "r0"), ("r", "r1"), ("b", "b0")] {
            lab.must(n, &["ip", "link", "set", i, "up"]);
        }
        lab.must("a", &["ip", "route", "add", "default", "via", "198.18.1.1"]);
        lab.must("b", &["ip", "route", "add", "default", "via", "198.18.2.1"]);
        // The slow transmitter: r1 sends at most 20 Mbit/s (about 40 kpps
        // of 64-byte frames; 40 Mbit/s was not a bottleneck for a debug
        // build's core on an AMD EPYC host, which forwarded about 80 kpps);
        // the queue is large, so frames wait in the
        // qdisc holding r1's TPACKET slots rather than being dropped there.
        lab.must(
            "r",
            &[
                "tc", "qdisc", "replace", "dev", "r1", "root", "tbf", "rate", "20mbit", "burst",
                "16kb", "limit", "4mb",
            ],
        );
        lab
    }
    fn path(&self, f: &str) -> PathBuf {
        self.dir.join(f)
    }
    fn sock(&self) -> String {
        self.path("tesserad.sock").display().to_string()
    }
    fn write_config(&self, nicbalance: bool) -> PathBuf {
        let p = self.path("tesserad.toml");
        let text = format!(
            "[router]\nid = \"198.18.9.1\"\nasn = 65000\npipeline = \"sequential\"\n\
             listen = [\"127.0.0.1:179\"]\n\n\
             [control]\nsocket = \"{}\"\nmetrics = \"127.0.0.1:9324\"\n\n\
             [[static]]\nprefix = \"198.19.113.0/24\"\nnext_hop = \"198.18.2.2\"\n\n\
             [dataplane]\nio = \"af_packet\"\nqdisc = true\n\n\
             [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"198.18.1.1/24\"]\n\n\
             [[dataplane.interface]]\nname = \"r1\"\naddresses = [\"198.18.2.1/24\"]\n\n\
             [[dataplane.port_group]]\nname = \"core0\"\ninterfaces = [\"r0\", \"r1\"]\n\
             nicbalance = {nicbalance}\n",
            self.sock(),
        );
        std::fs::write(&p, text).expect("config");
        p
    }
    fn tessera(&self, args: &[&str]) -> Result<String, String> {
        let bin = std::path::Path::new(env!("CARGO_BIN_EXE_tesserad")).with_file_name("tessera");
        let bin = bin.display().to_string();
        let mut v = vec![bin.as_str()];
        v.extend_from_slice(args);
        let sock = self.sock();
        v.extend_from_slice(&["--socket", &sock]);
        self.exec("r", &v)
    }
    fn show(&self) -> serde_json::Value {
        let s = self
            .tessera(&["show", "dataplane", "--json"])
            .expect("show dataplane");
        serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"))
    }
    /// `show dataplane` once the counters stop moving (the worker
    /// publishes when it goes idle), bounded.
    fn settled(&self) -> serde_json::Value {
        let end = Instant::now() + Duration::from_secs(10);
        let mut last = self.show();
        loop {
            std::thread::sleep(Duration::from_millis(300));
            let v = self.show();
            if v == last || Instant::now() > end {
                return v;
            }
            last = v;
        }
    }
    fn log(&self) -> String {
        std::fs::read_to_string(self.path("tesserad.log")).unwrap_or_default()
    }
    fn delivered(&self) -> u64 {
        self.must("b", &["cat", "/sys/class/net/b0/statistics/rx_packets"])
            .trim()
            .parse()
            .expect("rx_packets")
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in ["a", "r", "b"] {
            let _ = sh(&["ip", "netns", "del", &self.ns(n)]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn elem<'a>(v: &'a serde_json::Value, name: &str) -> Option<&'a serde_json::Value> {
    v["elements"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["name"] == name))
}

fn counter(v: &serde_json::Value, name: &str, c: &str) -> u64 {
    elem(v, name).map_or(0, |e| e["counters"][c].as_u64().unwrap_or(0))
}

fn drops(v: &serde_json::Value, name: &str, r: &str) -> u64 {
    elem(v, name).map_or(0, |e| e["drops"][r].as_u64().unwrap_or(0))
}

/// The figures of one phase (deltas over its load).
#[derive(Debug, Default)]
struct Phase {
    offered: u64,
    received: u64,
    delivered: u64,
    after_processing: u64,
    left_on_wire: u64,
    polls_withheld: u64,
    suspensions: u64,
    ticket_cuts: u64,
    congested: u64,
}

/// A full-speed load from A for [`SECONDS`], and what it did.
fn phase(lab: &Lab, mac: &str) -> Phase {
    let before = lab.settled();
    let d0 = lab.delivered();
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_tesserad")).with_file_name("tessera");
    let out = lab
        .exec(
            "a",
            &[
                &bin.display().to_string(),
                "trafgen",
                "--iface",
                "a0",
                "--dst-mac",
                mac,
                "--src",
                "198.18.1.2",
                "--dst",
                "198.19.113.77",
                "--rate",
                "0",
                "--duration",
                SECONDS,
                "--drain-ms",
                "100",
                "--quiet",
            ],
        )
        .expect("trafgen");
    let report: serde_json::Value =
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("{e}: {out}"));
    let after = lab.settled();
    let d = |f: &dyn Fn(&serde_json::Value) -> u64| f(&after).saturating_sub(f(&before));
    let nb = |c: &str| d(&|v: &serde_json::Value| counter(v, "nb0_0", c) + counter(v, "nb0_1", c));
    Phase {
        offered: report["sent"].as_u64().unwrap_or(0),
        received: d(&|v| elem(v, "in0").map_or(0, |e| e["rx"].as_u64().unwrap_or(0))),
        delivered: lab.delivered().saturating_sub(d0),
        after_processing: d(&|v| drops(v, "out1", "tx_full")),
        left_on_wire: d(&|v| counter(v, "in0", "left_on_wire")),
        polls_withheld: d(&|v| counter(v, "in0", "polls_withheld")),
        suspensions: nb("suspensions"),
        ticket_cuts: nb("ticket_cuts"),
        congested: nb("congested"),
    }
}

#[test]
fn nicbalance_switch_sheds_overload_at_the_receiver_on_veth() {
    let mut lab = Lab::new();
    let cfg = lab.write_config(false);
    let cfgs = cfg.display().to_string();
    let bin = env!("CARGO_BIN_EXE_tesserad");
    let log = std::fs::File::create(lab.path("tesserad.log")).expect("log");
    let ns = lab.ns("r");
    lab.child = Some(
        Command::new("ip")
            .args(["netns", "exec", &ns, bin, "-c", &cfgs])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log"))
            .stderr(log)
            .spawn()
            .expect("tesserad"),
    );
    let end = Instant::now() + Duration::from_secs(20);
    while lab.tessera(&["show", "dataplane"]).is_err() {
        assert!(
            Instant::now() < end,
            "tesserad did not start: {}",
            lab.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let end = Instant::now() + Duration::from_secs(15);
    while lab
        .exec("a", &["ping", "-c", "1", "-W", "1", "198.19.113.1"])
        .is_err()
    {
        assert!(Instant::now() < end, "no forwarding: {}", lab.log());
    }
    let mac = lab.must("r", &["cat", "/sys/class/net/r0/address"]);
    let mac = mac.trim();

    // Off: no NICBalance element; transmit is the bottleneck, so most of
    // what the core receives and processes is dropped at r1's queue.
    let v = lab.show();
    assert!(elem(&v, "nb0_1").is_none(), "NICBalance while off: {v}");
    let off = phase(&lab, mac);
    eprintln!("nicbalance off: {off:?}");
    assert!(
        off.after_processing > 0 && off.received > off.delivered,
        "the shaper did not make transmit the bottleneck: {off:?}\nqdisc: {}\nload: {}\nview: {}",
        // What the next failure needs to tell a slow receiver from a
        // transmitter that backs up instead of dropping (seen 4 times in
        // a row on one VM, never reproduced after its restart).
        lab.exec("r", &["tc", "-s", "qdisc", "show", "dev", "r1"])
            .unwrap_or_else(|e| e),
        std::fs::read_to_string("/proc/loadavg").unwrap_or_default(),
        lab.show()
    );
    assert_eq!(off.polls_withheld + off.suspensions, 0, "{off:?}");

    // The switch, by a reload: same process, same FIB.
    lab.write_config(true);
    let out = lab.tessera(&["configure"]).expect("reload");
    assert!(
        out.contains("built-in") && out.contains("FIB kept"),
        "{out}"
    );
    let v = lab.show();
    for e in ["nb0_0", "nb0_1"] {
        assert_eq!(
            elem(&v, e).map(|e| e["class"].clone()),
            Some("NICBalance".into()),
            "{v}"
        );
    }
    let on = phase(&lab, mac);
    eprintln!("nicbalance on:  {on:?}");
    assert!(on.congested > 0, "never congested: {on:?}");
    assert!(on.suspensions + on.ticket_cuts > 0, "never acted: {on:?}");
    assert!(on.polls_withheld > 0 && on.left_on_wire > 0, "{on:?}");
    // Drops after processing per offered frame fall by at least a third
    // (the two phases' offered loads differ on a shared machine, so the
    // rates are compared, not the counts). On an Intel VM, 12 runs of
    // this test alone gave rates of 0.91-0.95 off and 0.20-0.51 on. A
    // halving of the rate failed 2 of 8 runs (0.51 against 0.92, 0.48
    // against 0.93). The earlier halving of the counts failed under the
    // full suite (0.82M against 1.25M, with 1.32x the offered load) and
    // would have failed one of those 8 runs too.
    let rate = |p: &Phase| p.after_processing as f64 / p.offered.max(1) as f64;
    assert!(rate(&on) * 3.0 < rate(&off) * 2.0, "off {off:?}\non {on:?}");
    // Still forwarding.
    assert!(on.delivered > 0, "{on:?}");

    // /metrics and the text view carry the NICBalance counters.
    let m = {
        let ns = lab.ns("r");
        std::thread::spawn(move || {
            use std::io::{Read, Write};
            io::sys::enter_netns(&format!("/run/netns/{ns}")).expect("setns");
            let addr = "127.0.0.1:9324".parse().expect("addr");
            let mut s = std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(5))
                .expect("connect to /metrics");
            s.set_read_timeout(Some(Duration::from_secs(5)))
                .expect("timeout");
            s.write_all(b"GET /metrics HTTP/1.0\r\nHost: x\r\n\r\n")
                .expect("request");
            let mut out = String::new();
            let _ = s.read_to_string(&mut out);
            out
        })
        .join()
        .expect("metrics thread")
    };
    let mut wants = vec![
        "tessera_dataplane_element_counter{element=\"nb0_1\",class=\"NICBalance\",counter=\"suspensions\"}",
        "tessera_dataplane_element_counter{element=\"in0\",class=\"FromDevice\",counter=\"polls_withheld\"}",
    ];
    // The reload built a new graph, whose `out1` counts from zero; a drop
    // reason that never occurred has no series, and on a slow core
    // NICBalance can shed everything before the transmitter drops any.
    if on.after_processing > 0 {
        wants.push(
            "tessera_dataplane_element_drops_total{element=\"out1\",class=\"ToDevice\",reason=\"tx_full\"}",
        );
    }
    for want in wants {
        assert!(m.contains(want), "{want} not in {m}");
    }
    let text = lab.tessera(&["show", "dataplane"]).expect("text");
    assert!(
        text.contains("NICBalance") && text.contains("evaluations="),
        "{text}"
    );
    assert_eq!(
        lab.log().matches("dataplane: started").count(),
        1,
        "restarted: {}",
        lab.log()
    );
}
