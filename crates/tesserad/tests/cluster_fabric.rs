//! tesserads as one cluster router over a GENEVE fabric (`[cluster]`,
//! docs/cluster-fabric.md), in network namespaces:
//!
//! ```text
//! H0 [e0 198.18.1.2] -- [x0 198.18.1.1] N0 [f0 198.18.100.1] --+
//! H1 [e0 198.18.2.2] -- [x0 198.18.2.1] N1 [f0 198.18.100.2] --+-- br0 (fabric namespace)
//! H2 [e0 198.18.3.2] -- [x0 198.18.3.1] N2 [f0 198.18.100.3] --+
//! ```
//!
//! Each node runs tesserad with its own dataplane (AF_PACKET on `x0`,
//! which has no kernel address; kernel forwarding off) and `[cluster]`
//! with the others as peers (BFD between the fabric addresses at 100 ms:
//! a peer counts as live once its session is Up); the fabric, a Linux bridge, carries only the
//! kernel's UDP between the fabric addresses. Static routes send the
//! other nodes' external subnets via their fabric addresses (standing in
//! for iBGP; `cluster_bgp.rs` carries them by iBGP). Pings between hosts on different
//! nodes enter one node's external port, cross the fabric as GENEVE
//! (through a random intermediate under VLB) and leave another's. tshark,
//! capturing on the bridge, decodes the datagrams as GENEVE with the inner
//! ICMP. Needs root, `ip`, `ping`, `tshark`; every step is bounded and the
//! namespaces are removed (also on failure).

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

/// The namespaces, daemons and work directory of one run; dropping it
/// kills the daemons and removes everything.
struct Lab {
    tag: String,
    dir: PathBuf,
    children: Vec<Child>,
    /// Cluster nodes (namespaces `n{i}`, hosts `h{i}`, and `fab`).
    n: usize,
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
    fn names(&self) -> Vec<String> {
        let mut v = vec!["fab".to_string()];
        for i in 0..self.n {
            v.push(format!("n{i}"));
            v.push(format!("h{i}"));
        }
        v
    }
    /// `n` nodes, each with one external host, on a bridged fabric.
    fn new(n: usize) -> Lab {
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
            n,
        };
        for ns in lab.names() {
            sh(&["ip", "netns", "add", &lab.ns(&ns)]).expect("netns");
            lab.must(&ns, &["ip", "link", "set", "lo", "up"]);
        }
        lab.must("fab", &["ip", "link", "add", "br0", "type", "bridge"]);
        lab.must("fab", &["ip", "link", "set", "br0", "up"]);
        for i in 0..n {
            let (node, host, port) = (format!("n{i}"), format!("h{i}"), format!("p{i}"));
            lab.link(&host, "e0", &node, "x0");
            lab.link(&node, "f0", "fab", &port);
            lab.must("fab", &["ip", "link", "set", &port, "master", "br0", "up"]);
            let k = i + 1;
            for (ns, cmd) in [
                (&host, format!("ip addr add 198.18.{k}.2/24 dev e0")),
                (&node, format!("ip addr add 198.18.100.{k}/24 dev f0")),
                (&node, "sysctl -qw net.ipv4.ip_forward=0".to_string()),
            ] {
                lab.must(ns, &cmd.split(' ').collect::<Vec<_>>());
            }
            for (ns, dev) in [(&host, "e0"), (&node, "x0"), (&node, "f0")] {
                lab.must(ns, &["ip", "link", "set", dev, "up"]);
                // Full checksums on the wire: a forwarded veth frame must
                // not carry a partial (offloaded) one.
                let _ = lab.exec(
                    ns,
                    &[
                        "ethtool", "-K", dev, "tx", "off", "gso", "off", "gro", "off",
                    ],
                );
            }
            let gw = format!("198.18.{k}.1");
            lab.must(&host, &["ip", "route", "add", "default", "via", &gw]);
        }
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
        let mut names: Vec<String> = (0..self.n).map(|i| format!("n{i}.log")).collect();
        names.push("tshark.log".into());
        names
            .iter()
            .map(|l| format!("--- {l}\n{}", self.log(l)))
            .collect()
    }
    /// Node `me`'s tesserad configuration: its external port, the fabric,
    /// and every other node's external subnet via that node's fabric
    /// address.
    fn conf(&self, me: usize, mode: &str, affinity: bool) -> String {
        let p = self.dir.join(format!("n{me}.toml"));
        let k = me + 1;
        let mut text = format!(
            "[router]\nid = \"198.18.100.{k}\"\nasn = 65000\n\n\
             [control]\nsocket = \"{}\"\n\n\
             [dataplane]\nio = \"af_packet\"\n\n\
             [[dataplane.interface]]\nname = \"x0\"\naddresses = [\"198.18.{k}.1/24\"]\n\n\
             [cluster]\nnode_id = {me}\nfabric_address = \"198.18.100.{k}\"\nmode = \"{mode}\"\n\
             packing = 8\naffinity = {affinity}\nbfd_min_tx = 100\n",
            self.dir.join(format!("n{me}.sock")).display(),
        );
        for j in (0..self.n).filter(|&j| j != me) {
            let pk = j + 1;
            text += &format!(
                "\n[[cluster.peer]]\nnode_id = {j}\nfabric_address = \"198.18.100.{pk}\"\n\
                 \n[[static]]\nprefix = \"198.18.{pk}.0/24\"\nnext_hop = \"198.18.100.{pk}\"\n"
            );
        }
        std::fs::write(&p, text).expect("config");
        p.display().to_string()
    }

    /// Starts every node's tesserad and a capture of `count` fabric
    /// datagrams on the bridge; returns the capture file.
    fn start(&mut self, modes: &[&str], affinity: bool, count: usize) -> String {
        let bin = env!("CARGO_BIN_EXE_tesserad");
        for (i, mode) in modes.iter().enumerate() {
            let c = self.conf(i, mode, affinity);
            let ns = format!("n{i}");
            self.spawn(&ns, &[bin, "-c", &c], &format!("n{i}.log"));
        }
        let end = Instant::now() + Duration::from_secs(15);
        while !(0..self.n).all(|i| {
            self.log(&format!("n{i}.log"))
                .contains("dataplane: started")
        }) {
            assert!(
                Instant::now() < end,
                "dataplanes did not start\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        let pcap = self.dir.join("fabric.pcap").display().to_string();
        let count = count.to_string();
        self.spawn(
            "fab",
            &[
                "timeout",
                "30",
                "tshark",
                "-n",
                "-i",
                "br0",
                "-f",
                "udp port 6081",
                "-c",
                &count,
                "-w",
                &pcap,
            ],
            "tshark.log",
        );
        let end = Instant::now() + Duration::from_secs(10);
        while !self.log("tshark.log").contains("Capturing on") {
            assert!(
                Instant::now() < end,
                "tshark did not start\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        pcap
    }

    /// Pings from host `from` to host `to` until `count` replies in a row
    /// come back (the static routes reach the FIBs shortly after start).
    fn ping(&self, from: usize, to: usize, count: usize) {
        let dst = format!("198.18.{}.2", to + 1);
        let c = count.to_string();
        let end = Instant::now() + Duration::from_secs(20);
        while self
            .exec(
                &format!("h{from}"),
                &["ping", "-c", &c, "-i", "0.05", "-W", "1", &dst],
            )
            .is_err()
        {
            assert!(
                Instant::now() < end,
                "no ping from h{from} to {dst}\n{}",
                self.logs()
            );
        }
    }

    /// CPU seconds (user + system) the node daemons used over `secs` of
    /// wall time, from /proc: an idle dataplane must sleep in poll(2), not
    /// spin.
    fn cpu_over(&self, secs: u64) -> f64 {
        let tick = 100.0; // USER_HZ on Linux
        let used = || -> u64 {
            self.children
                .iter()
                .take(self.n)
                .map(|c| {
                    let stat = std::fs::read_to_string(format!("/proc/{}/stat", c.id()))
                        .unwrap_or_default();
                    // Fields after the ")" of the command: utime is the
                    // 12th, stime the 13th (fields 14 and 15 of stat(5)).
                    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
                    let f: Vec<u64> = rest
                        .split_whitespace()
                        .map(|x| x.parse().unwrap_or(0))
                        .collect();
                    f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0)
                })
                .sum()
        };
        let before = used();
        std::thread::sleep(Duration::from_secs(secs));
        (used() - before) as f64 / tick
    }

    /// The capture once it holds at least `n` GENEVE datagrams, as `fields`.
    fn capture(&self, pcap: &str, n: usize, fields: &[&str]) -> String {
        let end = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok(t) = sh(&["tshark", "-n", "-r", pcap, "-V"]) {
                if t.matches("Generic Network Virtualization Encapsulation")
                    .count()
                    >= n
                {
                    if fields.is_empty() {
                        return t;
                    }
                    let mut argv = vec!["tshark", "-n", "-r", pcap, "-T", "fields"];
                    for f in fields {
                        argv.extend_from_slice(&["-e", f]);
                    }
                    return sh(&argv).expect("tshark fields");
                }
            }
            assert!(
                Instant::now() < end,
                "tshark saw too little GENEVE on the fabric\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in self.names() {
            let _ = sh(&["ip", "netns", "del", &self.ns(&n)]);
        }
        if !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

#[test]
fn ping_crosses_a_two_node_cluster_over_geneve() {
    let mut lab = Lab::new(2);
    let pcap = lab.start(&["direct", "direct"], true, 4);
    assert!(
        lab.log("n0.log")
            .contains("cluster fabric on 198.18.100.1:6081, node 0 of 2"),
        "{}",
        lab.logs()
    );
    lab.ping(0, 1, 3);
    let text = lab.capture(&pcap, 4, &[]);
    for want in [
        "Class: Experimental (0xfff1)",
        "Transparent Ethernet bridging",
        "Internet Control Message Protocol",
        "Src: 198.18.100.1, Dst: 198.18.100.2",
        "Src: 198.18.1.2, Dst: 198.18.2.2",
        "Src: 198.18.2.2, Dst: 198.18.1.2",
    ] {
        assert!(
            text.contains(want),
            "fabric capture lacks {want:?}:\n{text}"
        );
    }
    assert!(!text.contains("[Malformed"), "{text}");
    // Idle, the two dataplanes sleep on their sockets: a spinning one
    // would use a whole second of CPU per second.
    let cpu = lab.cpu_over(2);
    assert!(
        cpu < 0.5,
        "idle cluster used {cpu} CPU seconds in 2 s\n{}",
        lab.logs()
    );
}

/// Three nodes under VLB without flow affinity: each packet draws an
/// intermediate among the three nodes, so about a third of the pings from
/// H0 to H2 go N0 -> N1 -> N2, N1 forwarding on the option's egress tag.
#[test]
fn three_node_vlb_forwards_through_an_intermediate() {
    let mut lab = Lab::new(3);
    let pcap = lab.start(&["vlb", "vlb", "vlb"], false, 60);
    lab.ping(0, 2, 20);
    lab.ping(0, 1, 5);
    lab.ping(2, 1, 5);
    let rows = lab.capture(&pcap, 60, &["ip.src", "ip.dst"]);
    // One row per datagram: "outer,inner\touter,inner" (sources, then
    // destinations).
    let hops: Vec<(String, String, String)> = rows
        .lines()
        .filter_map(|l| {
            let (s, d) = l.split_once('\t')?;
            let (os, _) = s.split_once(',')?;
            let (od, id) = d.split_once(',')?;
            Some((os.to_string(), od.to_string(), id.to_string()))
        })
        .collect();
    let seen = |os: &str, od: &str, inner: &str| {
        hops.iter()
            .filter(|(a, b, c)| a == os && b == od && c == inner)
            .count()
    };
    // To H2: straight to N2, and via N1 (both legs seen).
    assert!(
        seen("198.18.100.1", "198.18.100.3", "198.18.3.2") > 0,
        "{rows}"
    );
    assert!(
        seen("198.18.100.1", "198.18.100.2", "198.18.3.2") > 0,
        "no N0 -> N1 leg:\n{rows}"
    );
    assert!(
        seen("198.18.100.2", "198.18.100.3", "198.18.3.2") > 0,
        "no N1 -> N2 leg:\n{rows}"
    );
}
