//! The cluster lab: `n` tesserad nodes in network namespaces, each with
//! one external host, on a bridged fabric (the lab's centre namespace),
//! shared by `tests/cluster_fabric.rs`, `tests/cluster_bgp.rs` and
//! `tests/cc_lab` (the cluster_cc test and bench). Node index `i` is
//! 0-based, its subnets use `k = i + 1`:
//!
//! ```text
//! H{i} [e0 198.18.k.2] -- [x0] N{i} [f0 198.18.100.k] -- [p{i}] br0 (fabric)
//! ```
//!
//! `x0` has no kernel address (the node's dataplane owns 198.18.k.1, the
//! host's default gateway), kernel forwarding is off on the nodes, and
//! checksum / segmentation offloads are off on every veth end so that a
//! forwarded frame carries a full checksum. The namespaces are the
//! [`Lab`]'s: dropping the cluster kills every daemon and whatever else
//! runs in them and deletes them (also on failure).

use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::Lab;

/// Runs `argv` under `timeout` (20 s); its stdout and stderr. Unlike
/// [`super::run`] it reads the output while the command runs, so a long
/// one (`tshark -V`) cannot fill the pipe and stall.
pub fn sh(argv: &[&str]) -> Result<String, String> {
    let o = Command::new("timeout")
        .args(["-k", "2", "20"])
        .args(argv)
        .stdin(Stdio::null())
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

/// Runs `argv` in namespace `ns` ([`sh`]).
pub fn exec(ns: &str, argv: &[&str]) -> Result<String, String> {
    let mut v = vec!["ip", "netns", "exec", ns];
    v.extend_from_slice(argv);
    sh(&v)
}

/// [`exec`] for setup steps: a failure fails the test.
pub fn must(ns: &str, argv: &[&str]) {
    if let Err(e) = exec(ns, argv) {
        panic!("setup in {ns}: {e}");
    }
}

/// A veth pair: `ia` in namespace `a`, `ib` in `b`.
pub fn veth(a: &str, ia: &str, b: &str, ib: &str) {
    let r = sh(&[
        "ip", "link", "add", ia, "netns", a, "type", "veth", "peer", "name", ib, "netns", b,
    ]);
    r.unwrap_or_else(|e| panic!("veth: {e}"));
}

/// Fails the test unless it runs as root with every tool of `tools`.
pub fn require(tools: &[&str]) {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "the cluster test needs root");
    for t in tools {
        assert!(
            super::tool_exists(t),
            "the cluster test needs `{t}` installed"
        );
    }
}

pub struct Cluster {
    pub lab: Lab,
    /// Cluster nodes.
    pub n: usize,
    nodes: Vec<String>,
    hosts: Vec<String>,
    /// The node daemons [`Cluster::start`] started, in node order.
    pub pids: Vec<u32>,
    /// A prefix [`Cluster::static_conf`] lists as every peer's second
    /// port, a port no node has (a tag naming it must be dropped).
    pub extra_port: Option<String>,
    /// `[dataplane] cores` of every node (default 1).
    pub cores: usize,
}

impl Cluster {
    /// `n` nodes, each with one external host, on a bridged fabric.
    pub fn new(test: &str, n: usize) -> Cluster {
        let lab = Lab::star(test, 0);
        let mut nodes = Vec::new();
        let mut hosts = Vec::new();
        for i in 0..n {
            nodes.push(lab.netns(&format!("n{i}")));
            hosts.push(lab.netns(&format!("h{i}")));
        }
        let c = Cluster {
            lab,
            n,
            nodes,
            hosts,
            pids: Vec::new(),
            extra_port: None,
            cores: 1,
        };
        let fab = c.fab();
        must(fab, &["ip", "link", "add", "br0", "type", "bridge"]);
        must(fab, &["ip", "link", "set", "br0", "up"]);
        for i in 0..n {
            let (node, host, port) = (c.node(i), c.host(i), format!("p{i}"));
            veth(host, "e0", node, "x0");
            veth(node, "f0", fab, &port);
            must(fab, &["ip", "link", "set", &port, "master", "br0", "up"]);
            let k = i + 1;
            for (ns, cmd) in [
                (host, format!("ip addr add 198.18.{k}.2/24 dev e0")),
                (node, format!("ip addr add 198.18.100.{k}/24 dev f0")),
                (node, "sysctl -qw net.ipv4.ip_forward=0".to_string()),
            ] {
                must(ns, &cmd.split(' ').collect::<Vec<_>>());
            }
            for (ns, dev) in [(host, "e0"), (node, "x0"), (node, "f0")] {
                must(ns, &["ip", "link", "set", dev, "up"]);
                // Full checksums on the wire: a forwarded veth frame must
                // not carry a partial (offloaded) one.
                let _ = exec(
                    ns,
                    &[
                        "ethtool", "-K", dev, "tx", "off", "gso", "off", "gro", "off",
                    ],
                );
            }
            let gw = format!("198.18.{k}.1");
            must(host, &["ip", "route", "add", "default", "via", &gw]);
        }
        c
    }

    /// The fabric's namespace (holds `br0`).
    pub fn fab(&self) -> &str {
        &self.lab.center_ns
    }
    /// Node `i`'s namespace.
    pub fn node(&self, i: usize) -> &str {
        &self.nodes[i]
    }
    /// Host `i`'s namespace.
    pub fn host(&self, i: usize) -> &str {
        &self.hosts[i]
    }
    /// Host `i`'s address.
    pub fn host_addr(i: usize) -> String {
        format!("198.18.{}.2", i + 1)
    }
    /// Node `i`'s control socket.
    pub fn sock(&self, i: usize) -> PathBuf {
        self.lab.path(&format!("n{i}.sock"))
    }
    /// The output so far of daemon `name` (started through the lab).
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.lab.path(&format!("{name}.out"))).unwrap_or_default()
    }

    /// Node `me`'s configuration with static routes instead of iBGP: its
    /// external port, the fabric (`cluster` holds the `[cluster]` keys
    /// after `fabric_address`, and may end with more `[[static]]`s),
    /// every other node as a peer with its port's subnet (and
    /// [`Cluster::extra_port`]) and its external subnet via its fabric
    /// address. The file's path.
    pub fn static_conf(&self, me: usize, cluster: &str) -> String {
        let k = me + 1;
        let mut text = format!(
            "[router]\nid = \"198.18.100.{k}\"\nasn = 65000\n\n\
             [control]\nsocket = \"{}\"\n\n\
             [dataplane]\nio = \"af_packet\"\ncores = {}\n\n\
             [[dataplane.interface]]\nname = \"x0\"\naddresses = [\"198.18.{k}.1/24\"]\n\n\
             [cluster]\nnode_id = {me}\nfabric_address = \"198.18.100.{k}\"\n{cluster}",
            self.sock(me).display(),
            self.cores,
        );
        let extra = self
            .extra_port
            .as_ref()
            .map_or(String::new(), |p| format!(", \"{p}\""));
        for j in (0..self.n).filter(|&j| j != me) {
            let pk = j + 1;
            text += &format!(
                "\n[[cluster.peer]]\nnode_id = {j}\nfabric_address = \"198.18.100.{pk}\"\n\
                 ports = [\"198.18.{pk}.0/24\"{extra}]\n\
                 \n[[static]]\nprefix = \"198.18.{pk}.0/24\"\nnext_hop = \"198.18.100.{pk}\"\n"
            );
        }
        let p = self.lab.write(&format!("n{me}.toml"), &text);
        p.display().to_string()
    }

    /// Starts `bin` on every node (daemon `n{i}`) with
    /// [`Cluster::static_conf`]`(i, cluster(i))` and waits (15 s at most)
    /// until every dataplane has started.
    pub fn start(&mut self, bin: &str, cluster: impl Fn(usize) -> String) {
        for i in 0..self.n {
            let c = self.static_conf(i, &cluster(i));
            let pid = self
                .lab
                .spawn(&format!("n{i}"), self.node(i), &[bin, "-c", &c], &[]);
            self.pids.push(pid);
        }
        self.lab.wait(15, "the dataplanes to start", || {
            Ok((0..self.n)
                .all(|i| self.log(&format!("n{i}")).contains("dataplane: started"))
                .then_some(()))
        });
    }

    /// Pings `dst` from host `from` until `count` replies in a row come
    /// back (routes reach the FIBs shortly after start), `secs` at most.
    pub fn ping(&self, from: usize, dst: &str, count: usize, secs: u64) {
        let ns = self.host(from);
        let c = count.to_string();
        self.lab
            .wait(secs, &format!("ping from h{from} to {dst}"), || {
                Ok(exec(ns, &["ping", "-c", &c, "-i", "0.05", "-W", "1", dst]).ok())
            });
    }
}
