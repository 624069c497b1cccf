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

use e2e as common;

use std::time::Duration;

use common::cluster::{self, Cluster};

/// A [`Cluster`] with tshark on its fabric.
struct Lab {
    c: Cluster,
}

impl Lab {
    /// `n` nodes, each with one external host, on a bridged fabric.
    fn new(n: usize) -> Lab {
        cluster::require(&["ip", "ping", "tshark"]);
        Lab {
            c: Cluster::new("cluster_fabric", n),
        }
    }
    fn log(&self, name: &str) -> String {
        self.c.log(name)
    }
    fn logs(&self) -> String {
        self.c.lab.context()
    }

    /// Starts every node's tesserad and a capture of `count` fabric
    /// datagrams on the bridge; returns the capture file.
    fn start(&mut self, modes: &[&str], affinity: bool, count: usize) -> String {
        let bin = env!("CARGO_BIN_EXE_tesserad");
        self.c.start(bin, |i| {
            format!(
                "mode = \"{}\"\npacking = 8\naffinity = {affinity}\nbfd_min_tx = 100\n",
                modes[i]
            )
        });
        let pcap = self.c.lab.path("fabric.pcap").display().to_string();
        let count = count.to_string();
        self.c.lab.spawn(
            "tshark",
            self.c.fab(),
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
            &[],
        );
        self.c.lab.wait(10, "tshark to start", || {
            Ok(self.log("tshark").contains("Capturing on").then_some(()))
        });
        pcap
    }

    /// Pings from host `from` to host `to` until `count` replies in a row
    /// come back (the static routes reach the FIBs shortly after start).
    fn ping(&self, from: usize, to: usize, count: usize) {
        self.c.ping(from, &Cluster::host_addr(to), count, 20);
    }

    /// CPU seconds (user + system) the node daemons used over `secs` of
    /// wall time, from /proc: an idle dataplane must sleep in poll(2), not
    /// spin.
    fn cpu_over(&self, secs: u64) -> f64 {
        let tick = 100.0; // USER_HZ on Linux
        let used = || -> u64 {
            self.c
                .pids
                .iter()
                .map(|pid| {
                    let stat =
                        std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
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

    /// The capture once it holds at least `n` GENEVE datagrams, as `fields`;
    /// `again` sends the test's traffic once more while it holds fewer.
    /// tshark logs "Capturing on" before its capture runs: on a loaded
    /// machine (seen at load 7 and above) the traffic sent right after
    /// that message could all pass before the capture began, leaving it
    /// empty for good.
    fn capture(&self, pcap: &str, n: usize, fields: &[&str], again: &dyn Fn()) -> String {
        self.c
            .lab
            .wait(30, "tshark to see enough GENEVE on the fabric", || {
                let t = cluster::sh(&["tshark", "-n", "-r", pcap, "-V"])?;
                if t.matches("Generic Network Virtualization Encapsulation")
                    .count()
                    < n
                {
                    again();
                    return Ok(None);
                }
                if fields.is_empty() {
                    return Ok(Some(t));
                }
                let mut argv = vec!["tshark", "-n", "-r", pcap, "-T", "fields"];
                for f in fields {
                    argv.extend_from_slice(&["-e", f]);
                }
                Ok(Some(cluster::sh(&argv).expect("tshark fields")))
            })
    }
}

#[test]
fn ping_crosses_a_two_node_cluster_over_geneve() {
    let mut lab = Lab::new(2);
    let pcap = lab.start(&["direct", "direct"], true, 4);
    assert!(
        lab.log("n0")
            .contains("cluster fabric on 198.18.100.1:6081, node 0 of 2"),
        "{}",
        lab.logs()
    );
    lab.ping(0, 1, 3);
    let text = lab.capture(&pcap, 4, &[], &|| lab.ping(0, 1, 3));
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
    let traffic = || {
        lab.ping(0, 2, 20);
        lab.ping(0, 1, 5);
        lab.ping(2, 1, 5);
    };
    traffic();
    let rows = lab.capture(&pcap, 60, &["ip.src", "ip.dst"], &traffic);
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

/// The egress forwards by the option's tag and resolves only the
/// neighbour (issue 14: the ingress does the whole lookup). N0 routes
/// 198.19.77.0/24 via H1's address (198.18.2.2), recursively through N1's
/// subnet: N0 resolves it to (node 1, port 0, neighbour 198.18.2.2). N1's
/// own table sends 198.19.77.0/24 to 198.18.2.99, where nobody answers
/// ARP: were N1 to look the destination up, the pings would die there.
/// They come back, so N1 went by the tag. And a tag naming a port N1 does
/// not have (N0 believes N1 has a second port, 198.19.88.0/24) is
/// dropped at N1 and counted as `bad_port`, shown in its final report.
#[test]
fn the_egress_forwards_by_the_tag_not_by_its_own_table() {
    let mut lab = Lab::new(2);
    cluster::must(
        lab.c.host(1),
        &["ip", "addr", "add", "198.19.77.1/32", "dev", "lo"],
    );
    lab.c.extra_port = Some("198.19.88.0/24".into());
    let bin = env!("CARGO_BIN_EXE_tesserad");
    lab.c.start(bin, |i| {
        let mut t = "mode = \"direct\"\nbfd_min_tx = 100\n".to_string();
        if i == 0 {
            t += "\n[[static]]\nprefix = \"198.19.77.0/24\"\nnext_hop = \"198.18.2.2\"\n\
                  \n[[static]]\nprefix = \"198.19.88.0/24\"\nnext_hop = \"198.18.100.2\"\n";
        } else {
            t += "\n[[static]]\nprefix = \"198.19.77.0/24\"\nnext_hop = \"198.18.2.99\"\n";
        }
        t
    });
    lab.c.ping(0, "198.19.77.1", 3, 20);
    // Into port 1 of N1, which has one port: never answered.
    assert!(
        cluster::exec(
            lab.c.host(0),
            &["ping", "-c", "3", "-i", "0.1", "-W", "1", "198.19.88.1"]
        )
        .is_err(),
        "a ping to a port N1 does not have came back"
    );
    // N1's final report counts what it did.
    lab.c.lab.signal(lab.c.pids[1], "TERM");
    let line = lab.c.lab.wait(10, "N1's final fabric counters", || {
        Ok(lab
            .log("n1")
            .lines()
            .find(|l| l.starts_with("cluster-fabric:"))
            .map(str::to_string))
    });
    let field = |k: &str| -> u64 {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(k)?.strip_prefix('=')?.parse().ok())
            .unwrap_or_else(|| panic!("no {k} in {line:?}"))
    };
    assert!(field("bad_port") >= 3, "{line}");
    assert!(field("delivered") >= 3, "{line}");
}

/// Two dataplane cores per node with `[cluster]`: each core has its own
/// fabric socket (one SO_REUSEPORT group on the fabric address) and its
/// own fabric elements. H0 pings 16 addresses of H1 (16 flows, which the
/// AF_PACKET fanout of N0's port spreads over its two cores; the replies
/// spread over N1's): every ping is answered, and both cores of each node
/// sent fabric datagrams (`core_packets` in the final report).
#[test]
fn two_dataplane_cores_per_node_share_the_fabric() {
    let mut lab = Lab::new(2);
    for a in 1..=16 {
        let addr = format!("198.19.77.{a}/32");
        cluster::must(lab.c.host(1), &["ip", "addr", "add", &addr, "dev", "lo"]);
    }
    lab.c.cores = 2;
    let bin = env!("CARGO_BIN_EXE_tesserad");
    lab.c.start(bin, |i| {
        let mut t = "mode = \"direct\"\nbfd_min_tx = 100\n".to_string();
        if i == 0 {
            t += "\n[[static]]\nprefix = \"198.19.77.0/24\"\nnext_hop = \"198.18.2.2\"\n";
        }
        t
    });
    assert!(lab.log("n0").contains("cores 2"), "{}", lab.logs());
    lab.ping(0, 1, 3);
    for a in 1..=16 {
        lab.c.ping(0, &format!("198.19.77.{a}"), 2, 20);
    }
    for i in 0..2 {
        lab.c.lab.signal(lab.c.pids[i], "TERM");
        let name = format!("n{i}");
        let line = lab
            .c
            .lab
            .wait(10, &format!("{name}'s final fabric counters"), || {
                Ok(lab
                    .log(&name)
                    .lines()
                    .find(|l| l.starts_with("cluster-fabric:"))
                    .map(str::to_string))
            });
        let cores: Vec<u64> = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("core_packets="))
            .unwrap_or_else(|| panic!("no core_packets in {line:?}"))
            .split('/')
            .map(|n| n.parse().expect("count"))
            .collect();
        assert_eq!(cores.len(), 2, "{line}");
        assert!(
            cores.iter().all(|&n| n > 0),
            "a core of {name} sent nothing: {line}"
        );
    }
}
