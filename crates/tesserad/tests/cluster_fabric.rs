//! Two tesserads as one cluster router over a GENEVE fabric (`[cluster]`,
//! docs/cluster-fabric.md), in network namespaces:
//!
//! ```text
//! HA [a0 198.18.1.2] -- [x0 198.18.1.1] A [f0 198.18.100.1] == fabric == [f1 198.18.100.2] B [x0 198.18.2.1] -- [b0 198.18.2.2] HB
//! ```
//!
//! A and B each run tesserad with its own dataplane (AF_PACKET on `x0`,
//! which has no kernel address; kernel forwarding off) and `[cluster]`
//! with the other as peer; the fabric link carries only the kernel's UDP
//! between the fabric addresses. A static route on each node sends the
//! other's external subnet via the other's fabric address (standing in for
//! iBGP, which is not wired yet). A ping from HA to HB enters A's external
//! port, crosses the fabric as GENEVE and leaves B's external port, and
//! back. tshark, capturing on the fabric link, decodes the datagrams as
//! GENEVE with the inner ICMP. Needs root, `ip`, `ping`, `tshark`; every
//! step is bounded and the namespaces are removed (also on failure).

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static SEQ: AtomicU32 = AtomicU32::new(0);

fn sh(argv: &[&str]) -> Result<String, String> {
    let o = Command::new("timeout")
        .args(["-k", "2", "20"])
        .args(argv)
        .output()
        .map_err(|e| format!("{argv:?}: {e}"))?;
    let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&o.stderr));
    if o.status.success() {
        Ok(s)
    } else {
        Err(format!("{argv:?}: {s}"))
    }
}

fn require() {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the cluster test needs root");
    for t in ["ip", "ping", "tshark"] {
        let ok = Command::new("which")
            .arg(t)
            .output()
            .is_ok_and(|o| o.status.success());
        assert!(ok, "the cluster test needs `{t}` installed");
    }
}

const NODES: [&str; 4] = ["ha", "na", "nb", "hb"];

/// The namespaces, daemons and work directory of one run; dropping it
/// kills the daemons and removes everything.
struct Lab {
    tag: String,
    dir: PathBuf,
    children: Vec<Child>,
}

impl Lab {
    fn ns(&self, n: &str) -> String {
        format!("cl{n}{}", self.tag)
    }
    fn exec(&self, n: &str, argv: &[&str]) -> Result<String, String> {
        let ns = self.ns(n);
        let mut v = vec!["ip", "netns", "exec", &ns];
        v.extend_from_slice(argv);
        sh(&v)
    }
    fn must(&self, n: &str, argv: &[&str]) {
        if let Err(e) = self.exec(n, argv) {
            panic!("setup in {n}: {e}");
        }
    }
    fn link(&self, n1: &str, i1: &str, n2: &str, i2: &str) {
        let (a, b) = (self.ns(n1), self.ns(n2));
        let r = sh(&[
            "ip", "link", "add", i1, "netns", &a, "type", "veth", "peer", "name", i2, "netns", &b,
        ]);
        r.unwrap_or_else(|e| panic!("veth: {e}"));
    }
    fn new() -> Lab {
        require();
        let tag = format!(
            "{}{}",
            std::process::id() % 100_000,
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(format!("tessera-cluster-{tag}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("work dir");
        let lab = Lab {
            tag,
            dir,
            children: Vec::new(),
        };
        for n in NODES {
            sh(&["ip", "netns", "add", &lab.ns(n)]).expect("netns");
            lab.must(n, &["ip", "link", "set", "lo", "up"]);
        }
        lab.link("ha", "a0", "na", "x0");
        lab.link("na", "f0", "nb", "f1");
        lab.link("nb", "x0", "hb", "b0");
        for (n, cmd) in [
            ("ha", "ip addr add 198.18.1.2/24 dev a0"),
            ("hb", "ip addr add 198.18.2.2/24 dev b0"),
            ("na", "ip addr add 198.18.100.1/24 dev f0"),
            ("nb", "ip addr add 198.18.100.2/24 dev f1"),
            ("na", "sysctl -qw net.ipv4.ip_forward=0"),
            ("nb", "sysctl -qw net.ipv4.ip_forward=0"),
        ] {
            lab.must(n, &cmd.split(' ').collect::<Vec<_>>());
        }
        for (n, i) in [
            ("ha", "a0"),
            ("na", "x0"),
            ("na", "f0"),
            ("nb", "f1"),
            ("nb", "x0"),
            ("hb", "b0"),
        ] {
            lab.must(n, &["ip", "link", "set", i, "up"]);
            // Full checksums on the wire: a forwarded veth frame must not
            // carry a partial (offloaded) one.
            let _ = lab.exec(
                n,
                &["ethtool", "-K", i, "tx", "off", "gso", "off", "gro", "off"],
            );
        }
        lab.must(
            "ha",
            &["ip", "route", "add", "default", "via", "198.18.1.1"],
        );
        lab.must(
            "hb",
            &["ip", "route", "add", "default", "via", "198.18.2.1"],
        );
        lab
    }
    fn spawn(&mut self, n: &str, argv: &[&str], log: &str) {
        let ns = self.ns(n);
        let f = std::fs::File::create(self.dir.join(log)).expect("log file");
        let c = Command::new("ip")
            .args(["netns", "exec", &ns])
            .args(argv)
            .stdin(Stdio::null())
            .stdout(f.try_clone().expect("log"))
            .stderr(f)
            .spawn()
            .expect("spawn");
        self.children.push(c);
    }
    fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }
    fn logs(&self) -> String {
        ["a.log", "b.log", "tshark.log"]
            .iter()
            .map(|l| format!("--- {l}\n{}", self.log(l)))
            .collect()
    }
    /// A node's tesserad configuration: its external port, the fabric, and
    /// the other node's external subnet via the other's fabric address.
    fn conf(
        &self,
        me: u16,
        ext: &str,
        fabric: &str,
        peer: &str,
        remote: &str,
        mode: &str,
    ) -> String {
        let p = self.dir.join(format!("n{me}.toml"));
        let text = format!(
            "[router]\nid = \"{fabric}\"\nasn = 65000\n\n\
             [control]\nsocket = \"{}\"\n\n\
             [dataplane]\nio = \"af_packet\"\n\n\
             [[dataplane.interface]]\nname = \"x0\"\naddresses = [\"{ext}\"]\n\n\
             [cluster]\nnode_id = {me}\nfabric_address = \"{fabric}\"\nmode = \"{mode}\"\npacking = 8\n\n\
             [[cluster.peer]]\nnode_id = {}\nfabric_address = \"{peer}\"\n\n\
             [[static]]\nprefix = \"{remote}\"\nnext_hop = \"{peer}\"\n",
            self.dir.join(format!("n{me}.sock")).display(),
            1 - me,
        );
        std::fs::write(&p, text).expect("config");
        p.display().to_string()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in NODES {
            let _ = sh(&["ip", "netns", "del", &self.ns(n)]);
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[test]
fn ping_crosses_a_two_node_cluster_over_geneve() {
    let mut lab = Lab::new();
    let bin = env!("CARGO_BIN_EXE_tesserad");
    let ca = lab.conf(
        0,
        "198.18.1.1/24",
        "198.18.100.1",
        "198.18.100.2",
        "198.18.2.0/24",
        "vlb",
    );
    let cb = lab.conf(
        1,
        "198.18.2.1/24",
        "198.18.100.2",
        "198.18.100.1",
        "198.18.1.0/24",
        "direct",
    );
    lab.spawn("na", &[bin, "-c", &ca], "a.log");
    lab.spawn("nb", &[bin, "-c", &cb], "b.log");
    let end = Instant::now() + Duration::from_secs(15);
    while !(lab.log("a.log").contains("dataplane: started")
        && lab.log("b.log").contains("dataplane: started"))
    {
        assert!(
            Instant::now() < end,
            "dataplanes did not start\n{}",
            lab.logs()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        lab.log("a.log")
            .contains("cluster fabric on 198.18.100.1:6081, node 0 of 2"),
        "{}",
        lab.logs()
    );

    // Capture the fabric while the first pings cross it.
    let pcap = lab.dir.join("fabric.pcap").display().to_string();
    lab.spawn(
        "na",
        &[
            "timeout",
            "20",
            "tshark",
            "-n",
            "-i",
            "f0",
            "-f",
            "udp port 6081",
            "-c",
            "4",
            "-w",
            &pcap,
        ],
        "tshark.log",
    );
    let end = Instant::now() + Duration::from_secs(10);
    while !lab.log("tshark.log").contains("Capturing on") {
        assert!(Instant::now() < end, "tshark did not start\n{}", lab.logs());
        std::thread::sleep(Duration::from_millis(100));
    }
    // The static routes reach the FIB shortly after start: retry.
    let end = Instant::now() + Duration::from_secs(20);
    loop {
        if lab
            .exec(
                "ha",
                &["ping", "-c", "3", "-i", "0.2", "-W", "1", "198.18.2.2"],
            )
            .is_ok()
        {
            break;
        }
        assert!(
            Instant::now() < end,
            "no ping across the cluster\n{}",
            lab.logs()
        );
    }
    let end = Instant::now() + Duration::from_secs(20);
    let text = loop {
        let r = sh(&["tshark", "-n", "-r", &pcap, "-V"]);
        if let Ok(t) = r {
            if t.matches("Generic Network Virtualization Encapsulation")
                .count()
                >= 4
            {
                break t;
            }
        }
        assert!(
            Instant::now() < end,
            "tshark saw no GENEVE on the fabric\n{}",
            lab.logs()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    for want in [
        "Class: Experimental (0xfff1)",
        "Transparent Ethernet bridging",
        "Internet Control Message Protocol",
        "Src: 198.18.1.2, Dst: 198.18.2.2",
        "Src: 198.18.2.2, Dst: 198.18.1.2",
    ] {
        assert!(
            text.contains(want),
            "fabric capture lacks {want:?}:\n{text}"
        );
    }
    // Both ways went through the fabric, and nothing else did: the kernel
    // of A and B forwards nothing (ip_forward = 0, no address on x0).
    assert!(!text.contains("[Malformed"), "{text}");
}
