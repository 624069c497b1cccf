//! `tessera cluster up|status|down`: an N-node Tessera cluster router in
//! network namespaces on one machine (issue 14; docs/cluster.md).
//!
//! ```text
//!   <name>-h<k>-<p>  external host of node k, port p: data link e0 to the
//!                    node's dataplane port x<p>, control link c0 to the
//!                    node's kernel (g<p>), BIRD (eBGP) announcing a /29
//!   <name>-n<k>      node k (id k-1): tesserad with [dataplane] on x1..xK
//!                    and [cluster] on f0 (198.18.100.k)
//!   <name>-fab       the fabric: Linux bridge br0 joining every f0
//! ```
//!
//! Addresses (all inside 198.18.0.0/15): fabric 198.18.100.k/24; data
//! link of (k, p) 198.18.k.8(p-1)/29 (node .1, host .2); control link
//! 198.19.k.8(p-1)/29 (node .1, host .2); the host's announced prefix
//! 198.19.(100+k).8(p-1)/29 (its .1 on the host's loopback), with the
//! host's data address as next hop. Nodes 1 and 2 are iBGP route
//! reflectors (RFC 4456), the others their clients; every iBGP session has
//! BFD fast fall-over and no graceful restart (a dead node's routes must
//! go at once; docs/cluster.md says why), and both ends connect (the
//! session edge resolves the collision when BFD restarts both at once).
//! Each node originates its data subnets (`[[static]]`, next hop = its
//! fabric address) and lists every peer's data subnets as its
//! `[[cluster.peer]] ports` (the ingress tags each frame with the egress
//! port).
//!
//! Everything created is listed in the state file (`<dir>/state`) before
//! it is created, so `down` removes it all also after a crash or an
//! interrupted `up`. The pure parts ([`Plan`]: names, addresses,
//! configurations; [`State`]: the state file) are unit tested; the rest
//! runs `ip`, `tesserad` and `bird`.

use std::io::{BufRead, BufReader, Write};
use std::net::Ipv4Addr;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::netns::sh;

/// The cluster's AS (iBGP between the nodes).
pub const CLUSTER_AS: u32 = 65000;
/// Most nodes `up` builds (fabric addresses 198.18.100.1..=32 stay clear
/// of the data links 198.18.1-32.*).
pub const MAX_NODES: usize = 32;
/// Most external ports per node (/29 each in one /24).
pub const MAX_PORTS: usize = 32;

/// What `up` builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Namespace prefix.
    pub name: String,
    pub nodes: usize,
    pub ports: usize,
    /// `direct`, `vlb` or `direct-vlb`.
    pub mode: String,
    /// BFD interval between the nodes, ms (x 3).
    pub bfd_ms: u32,
    /// Fabric knobs `tessera cluster bench` varies (`[cluster] packing`,
    /// `affinity`, `port_rate_mbps`); `None`: the `[cluster]` default.
    pub fabric: FabricKnobs,
}

/// `[cluster]` keys beyond the mode, for the experiments.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FabricKnobs {
    pub packing: Option<u8>,
    pub affinity: Option<bool>,
    pub port_rate_mbps: Option<u32>,
}

impl FabricKnobs {
    /// The `[cluster]` lines (empty when all are defaults).
    pub fn toml(&self) -> String {
        let mut t = String::new();
        if let Some(p) = self.packing {
            t += &format!("packing = {p}\n");
        }
        if let Some(a) = self.affinity {
            t += &format!("affinity = {a}\n");
        }
        if let Some(r) = self.port_rate_mbps {
            t += &format!("port_rate_mbps = {r}\n");
        }
        t
    }
}

fn v4(a: u8, b: u8, c: u8, d: u8) -> Ipv4Addr {
    Ipv4Addr::new(a, b, c, d)
}

impl Plan {
    /// Checks the sizes, the mode and the name.
    pub fn new(
        name: &str,
        nodes: usize,
        ports: usize,
        mode: &str,
        bfd_ms: u32,
    ) -> Result<Plan, String> {
        if !(2..=MAX_NODES).contains(&nodes) {
            return Err(format!("{nodes} nodes: a cluster has 2..={MAX_NODES}"));
        }
        if !(1..=MAX_PORTS).contains(&ports) {
            return Err(format!(
                "{ports} ports per node: 1..={MAX_PORTS} are supported"
            ));
        }
        if !["direct", "vlb", "direct-vlb"].contains(&mode) {
            return Err(format!("mode {mode:?}: expected direct, vlb or direct-vlb"));
        }
        if name.is_empty()
            || name.len() > 12
            || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        {
            return Err(format!(
                "name {name:?}: 1 to 12 letters, digits or '_' (it prefixes namespace names)"
            ));
        }
        if !(1..=60_000).contains(&bfd_ms) {
            return Err(format!("BFD interval {bfd_ms} ms: 1..=60000"));
        }
        Ok(Plan {
            name: name.into(),
            nodes,
            ports,
            mode: mode.into(),
            bfd_ms,
            fabric: FabricKnobs::default(),
        })
    }
    pub fn fab_ns(&self) -> String {
        format!("{}-fab", self.name)
    }
    pub fn node_ns(&self, k: usize) -> String {
        format!("{}-n{k}", self.name)
    }
    pub fn host_ns(&self, k: usize, p: usize) -> String {
        format!("{}-h{k}-{p}", self.name)
    }
    /// Every namespace, fabric first.
    pub fn namespaces(&self) -> Vec<String> {
        let mut v = vec![self.fab_ns()];
        for k in 1..=self.nodes {
            v.push(self.node_ns(k));
            for p in 1..=self.ports {
                v.push(self.host_ns(k, p));
            }
        }
        v
    }
    pub fn fabric_addr(k: usize) -> Ipv4Addr {
        v4(198, 18, 100, k as u8)
    }
    fn base(p: usize) -> u8 {
        ((p - 1) * 8) as u8
    }
    /// The data link of (k, p): (node, host) addresses, /29.
    pub fn data(k: usize, p: usize) -> (Ipv4Addr, Ipv4Addr) {
        let b = Self::base(p);
        (v4(198, 18, k as u8, b + 1), v4(198, 18, k as u8, b + 2))
    }
    /// The control (eBGP) link of (k, p): (node, host), /29.
    pub fn control(k: usize, p: usize) -> (Ipv4Addr, Ipv4Addr) {
        let b = Self::base(p);
        (v4(198, 19, k as u8, b + 1), v4(198, 19, k as u8, b + 2))
    }
    /// The /29 the host of (k, p) announces; its .1 is on the host.
    pub fn announced(k: usize, p: usize) -> (Ipv4Addr, Ipv4Addr) {
        let b = Self::base(p);
        (
            v4(198, 19, 100 + k as u8, b),
            v4(198, 19, 100 + k as u8, b + 1),
        )
    }
    pub fn host_as(k: usize, p: usize) -> u32 {
        4_200_000_000 + (k as u32) * 100 + p as u32
    }
    fn rr(k: usize) -> bool {
        k <= 2
    }

    /// Node `k`'s tesserad.toml; `dir` holds its control socket.
    pub fn tesserad_conf(&self, k: usize, dir: &Path) -> String {
        let f = Self::fabric_addr(k);
        let mut t = format!(
            "# tessera cluster up: node {k} of {n} (node id {id})\n\
             [router]\nid = \"{f}\"\nasn = {CLUSTER_AS}\npipeline = \"sequential\"\n\
             default_import = \"accept\"\ndefault_export = \"accept\"\n\n\
             [control]\nsocket = \"{sock}\"\n\n\
             [dataplane]\nio = \"af_packet\"\n\n",
            n = self.nodes,
            id = k - 1,
            sock = dir.join(format!("n{k}.sock")).display(),
        );
        for p in 1..=self.ports {
            let (a, _) = Self::data(k, p);
            t += &format!("[[dataplane.interface]]\nname = \"x{p}\"\naddresses = [\"{a}/29\"]\n\n");
        }
        t += &format!(
            "[cluster]\nnode_id = {id}\nfabric_address = \"{f}\"\nmode = \"{mode}\"\n\
             bfd_min_tx = {bfd}\nbfd_multiplier = 3\n{knobs}\n",
            id = k - 1,
            mode = self.mode,
            bfd = self.bfd_ms,
            knobs = self.fabric.toml()
        );
        for j in (1..=self.nodes).filter(|&j| j != k) {
            // Its ports' subnets, in its interface order: the egress tag.
            let ports: Vec<String> = (1..=self.ports)
                .map(|p| {
                    let o = Self::data(j, p).0.octets();
                    format!("\"{}/29\"", v4(o[0], o[1], o[2], o[3] - 1))
                })
                .collect();
            t += &format!(
                "[[cluster.peer]]\nnode_id = {}\nfabric_address = \"{}\"\nports = [{}]\n\n",
                j - 1,
                Self::fabric_addr(j),
                ports.join(", ")
            );
        }
        for p in 1..=self.ports {
            let (a, _) = Self::data(k, p);
            let net = v4(
                a.octets()[0],
                a.octets()[1],
                a.octets()[2],
                a.octets()[3] - 1,
            );
            t += &format!("[[static]]\nprefix = \"{net}/29\"\n\n");
        }
        for j in (1..=self.nodes).filter(|&j| j != k && (Self::rr(k) || Self::rr(j))) {
            t += &format!(
                "[[neighbor]]\nname = \"node{j}\"\naddress = \"{}\"\nlocal_address = \"{f}\"\n\
                 remote_as = {CLUSTER_AS}\nhold_time = 9\nconnect_retry = 1\n\
                 graceful_restart = false\nroute_reflector_client = {}\n\
                 bfd = true\nbfd_min_tx = {b}\nbfd_min_rx = {b}\nbfd_multiplier = 3\n\n",
                Self::fabric_addr(j),
                Self::rr(k) && !Self::rr(j),
                b = self.bfd_ms
            );
        }
        for p in 1..=self.ports {
            let (me, host) = Self::control(k, p);
            t += &format!(
                "[[neighbor]]\nname = \"ext{p}\"\naddress = \"{host}\"\nlocal_address = \"{me}\"\n\
                 remote_as = {}\nhold_time = 9\nconnect_retry = 1\n\n",
                Self::host_as(k, p)
            );
        }
        t
    }

    /// BIRD's configuration on the host of (k, p): announce its /29 with
    /// its data address as next hop (third party, RFC 4271 §5.1.3).
    pub fn bird_conf(&self, k: usize, p: usize, log: &Path) -> String {
        let (node, host) = Self::control(k, p);
        let (_, data_host) = Self::data(k, p);
        let (net, _) = Self::announced(k, p);
        format!(
            "log \"{log}\" all;\nrouter id {host};\nprotocol device {{}}\n\
             protocol static st {{ ipv4; route {net}/29 via {node}; }}\n\
             protocol bgp node {{\n  local {host} as {asn};\n  neighbor {node} as {CLUSTER_AS};\n\
               hold time 9;\n  connect retry time 1;\n\
               ipv4 {{ import none; next hop keep;\n\
                 export filter {{ if proto = \"st\" then {{ bgp_next_hop = {data_host}; accept; }} reject; }};\n\
               }};\n}}\n",
            log = log.display(),
            asn = Self::host_as(k, p),
        )
    }
}

/// What the state file lists: everything `up` created, in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct State {
    pub namespaces: Vec<String>,
    /// (pid, what: "tesserad n1", "bird h1-1").
    pub pids: Vec<(u32, String)>,
    /// (node k, control socket).
    pub nodes: Vec<(usize, PathBuf)>,
}

impl State {
    /// One line per entry: `ns NAME`, `pid PID WHAT`, `node K SOCKET`;
    /// unknown or broken lines are skipped (a crash may cut the last one).
    pub fn parse(text: &str) -> State {
        let mut s = State::default();
        for l in text.lines() {
            let mut w = l.splitn(3, ' ');
            match (w.next(), w.next(), w.next()) {
                (Some("ns"), Some(n), None) if !n.is_empty() => s.namespaces.push(n.into()),
                (Some("pid"), Some(p), Some(what)) => {
                    if let Ok(p) = p.parse() {
                        s.pids.push((p, what.into()));
                    }
                }
                (Some("node"), Some(k), Some(sock)) => {
                    if let Ok(k) = k.parse() {
                        s.nodes.push((k, PathBuf::from(sock)));
                    }
                }
                _ => {}
            }
        }
        s
    }
}

fn state_path(dir: &Path) -> PathBuf {
    dir.join("state")
}

/// Appends one line to the state file, synced before what it names is
/// created.
fn record(dir: &Path, line: &str) -> Result<(), String> {
    let p = state_path(dir);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p)
        .map_err(|e| format!("{}: {e}", p.display()))?;
    writeln!(f, "{line}").map_err(|e| format!("{}: {e}", p.display()))?;
    f.sync_data().map_err(|e| format!("{}: {e}", p.display()))
}

fn ns_sh(ns: &str, cmd: &str) -> Result<String, String> {
    let mut v = vec!["netns", "exec", ns];
    v.extend(cmd.split(' '));
    sh("ip", &v)
}

fn veth(a: &str, ia: &str, b: &str, ib: &str) -> Result<(), String> {
    sh(
        "ip",
        &[
            "link", "add", ia, "netns", a, "type", "veth", "peer", "name", ib, "netns", b,
        ],
    )
    .map(|_| ())
}

/// Starts `argv` in namespace `ns`, detached (own process group, output
/// to `log`); its pid (`ip netns exec` execs the program).
fn spawn(ns: &str, argv: &[&str], log: &Path) -> Result<u32, String> {
    let out = std::fs::File::create(log).map_err(|e| format!("{}: {e}", log.display()))?;
    let err = out.try_clone().map_err(|e| e.to_string())?;
    let c = Command::new("ip")
        .args(["netns", "exec", ns])
        .args(argv)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("{}: {e}", argv.join(" ")))?;
    Ok(c.id())
}

/// One JSON request on a node's control socket; the response.
pub fn request(sock: &Path, json: &str) -> Result<serde_json::Value, String> {
    let mut s = UnixStream::connect(sock).map_err(|e| format!("{}: {e}", sock.display()))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))
        .map_err(|e| e.to_string())?;
    writeln!(s, "{{\"version\":1,\"request\":{json}}}").map_err(|e| e.to_string())?;
    let mut line = String::new();
    BufReader::new(s)
        .read_line(&mut line)
        .map_err(|e| e.to_string())?;
    serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))
}

/// Options of `up` beyond the plan.
pub struct UpConfig {
    pub plan: Plan,
    /// Where the state file, configs, sockets and logs go.
    pub dir: PathBuf,
    pub tesserad: PathBuf,
    /// How long to wait for every BFD and BGP session.
    pub wait: Duration,
}

/// Builds the cluster; on error, what was created stays listed in the
/// state file (run `down`).
pub fn up(c: &UpConfig) -> Result<(), String> {
    let (p, dir) = (&c.plan, &c.dir);
    if state_path(dir).exists() {
        return Err(format!(
            "{} exists: a cluster is up (or was not taken down); run `tessera cluster down --dir {}`",
            state_path(dir).display(),
            dir.display()
        ));
    }
    crate::netns::check_privileges()?;
    for t in ["bird", "birdc"] {
        sh("which", &[t]).map_err(|_| format!("`{t}` is not installed (BIRD 2)"))?;
    }
    if !c.tesserad.exists() {
        return Err(format!("{} does not exist", c.tesserad.display()));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    for ns in p.namespaces() {
        record(dir, &format!("ns {ns}"))?;
        sh("ip", &["netns", "add", &ns])?;
        ns_sh(&ns, "ip link set lo up")?;
    }
    let fab = p.fab_ns();
    ns_sh(&fab, "ip link add br0 type bridge")?;
    ns_sh(&fab, "ip link set br0 up")?;
    for k in 1..=p.nodes {
        let n = p.node_ns(k);
        veth(&n, "f0", &fab, &format!("p{k}"))?;
        ns_sh(&fab, &format!("ip link set p{k} master br0 up"))?;
        ns_sh(
            &n,
            &format!("ip addr add {}/24 dev f0", Plan::fabric_addr(k)),
        )?;
        ns_sh(&n, "ip link set f0 up")?;
        ns_sh(&n, "sysctl -qw net.ipv4.ip_forward=0")?;
        for q in 1..=p.ports {
            let h = p.host_ns(k, q);
            let (x, g) = (format!("x{q}"), format!("g{q}"));
            veth(&h, "e0", &n, &x)?;
            veth(&h, "c0", &n, &g)?;
            let (_, dh) = Plan::data(k, q);
            let (cn, ch) = Plan::control(k, q);
            let (_, lo) = Plan::announced(k, q);
            let (dn, _) = Plan::data(k, q);
            ns_sh(&h, &format!("ip addr add {dh}/29 dev e0"))?;
            ns_sh(&h, &format!("ip addr add {ch}/29 dev c0"))?;
            ns_sh(&h, &format!("ip addr add {lo}/32 dev lo"))?;
            ns_sh(&n, &format!("ip addr add {cn}/29 dev {g}"))?;
            for (ns, dev) in [(&h, "e0"), (&h, "c0"), (&n, x.as_str()), (&n, g.as_str())] {
                ns_sh(ns, &format!("ip link set {dev} up"))?;
                // Full checksums on the wire: a forwarded veth frame must
                // not carry a partial (offloaded) one.
                let _ = ns_sh(ns, &format!("ethtool -K {dev} tx off gso off gro off"));
            }
            ns_sh(&h, &format!("ip route add default via {dn}"))?;
        }
    }
    let bin = c.tesserad.display().to_string();
    for k in 1..=p.nodes {
        let conf = dir.join(format!("n{k}.toml"));
        std::fs::write(&conf, p.tesserad_conf(k, dir))
            .map_err(|e| format!("{}: {e}", conf.display()))?;
        let cs = conf.display().to_string();
        let pid = spawn(
            &p.node_ns(k),
            &[&bin, "-c", &cs],
            &dir.join(format!("n{k}.log")),
        )?;
        record(dir, &format!("pid {pid} tesserad n{k}"))?;
        record(
            dir,
            &format!("node {k} {}", dir.join(format!("n{k}.sock")).display()),
        )?;
    }
    for k in 1..=p.nodes {
        for q in 1..=p.ports {
            let conf = dir.join(format!("bird-{k}-{q}.conf"));
            let log = dir.join(format!("bird-{k}-{q}.log"));
            std::fs::write(&conf, p.bird_conf(k, q, &log))
                .map_err(|e| format!("{}: {e}", conf.display()))?;
            let (cs, ss) = (
                conf.display().to_string(),
                dir.join(format!("bird-{k}-{q}.ctl")).display().to_string(),
            );
            let pid = spawn(
                &p.host_ns(k, q),
                &["bird", "-f", "-c", &cs, "-s", &ss],
                &dir.join(format!("bird-{k}-{q}.out")),
            )?;
            record(dir, &format!("pid {pid} bird h{k}-{q}"))?;
        }
    }
    // Every node: BFD Up to every peer, every BGP session Established.
    let end = Instant::now() + c.wait;
    loop {
        let st = status(dir)?;
        if st.iter().all(NodeStatus::all_up) {
            return Ok(());
        }
        if Instant::now() > end {
            return Err(format!(
                "not every session came up within {:?}:\n{}",
                c.wait,
                render(&st)
            ));
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One node as `status` sees it.
#[derive(Clone, Debug, Default)]
pub struct NodeStatus {
    pub k: usize,
    pub pid: Option<u32>,
    pub alive: bool,
    /// CPU seconds (user + system) so far.
    pub cpu_s: f64,
    /// (peer, state) of every BFD session.
    pub bfd: Vec<(String, String)>,
    /// (name, BGP state) of every neighbour.
    pub bgp: Vec<(String, String)>,
    /// Kernel counters of the fabric link f0: rx/tx packets and bytes,
    /// rx/tx drops.
    pub fabric: [u64; 6],
    /// Why the control socket did not answer.
    pub error: Option<String>,
}

impl NodeStatus {
    /// Alive, every BFD session Up, every BGP session Established.
    pub fn all_up(&self) -> bool {
        self.alive
            && self.error.is_none()
            && !self.bfd.is_empty()
            && self.bfd.iter().all(|(_, s)| s == "Up")
            && !self.bgp.is_empty()
            && self.bgp.iter().all(|(_, s)| s == "Established")
    }
}

fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = stat.rsplit_once(')')?.1;
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    // utime and stime: fields 14 and 15 of proc(5), in USER_HZ (100).
    Some((f.get(11)? + f.get(12)?) as f64 / 100.0)
}

/// Whether `pid` runs a program whose name contains `what` (not a
/// recycled pid).
fn runs(pid: u32, what: &str) -> bool {
    std::fs::read(format!("/proc/{pid}/cmdline"))
        .map(|c| String::from_utf8_lossy(&c).contains(what))
        .unwrap_or(false)
}

fn fabric_counters(ns: &str) -> [u64; 6] {
    let mut c = [0u64; 6];
    let Ok(out) = sh("ip", &["-n", ns, "-s", "-j", "link", "show", "f0"]) else {
        return c;
    };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&out) else {
        return c;
    };
    let s = &v[0]["stats64"];
    for (i, (dir, key)) in [
        ("rx", "packets"),
        ("tx", "packets"),
        ("rx", "bytes"),
        ("tx", "bytes"),
        ("rx", "dropped"),
        ("tx", "dropped"),
    ]
    .iter()
    .enumerate()
    {
        c[i] = s[dir][key].as_u64().unwrap_or(0);
    }
    c
}

/// The nodes of the cluster in `dir`, from their control sockets, /proc
/// and the kernel's counters of their fabric links.
pub fn status(dir: &Path) -> Result<Vec<NodeStatus>, String> {
    let text = std::fs::read_to_string(state_path(dir))
        .map_err(|e| format!("no cluster in {}: {e}", dir.display()))?;
    let st = State::parse(&text);
    let mut out = Vec::new();
    for (k, sock) in &st.nodes {
        let mut n = NodeStatus {
            k: *k,
            ..Default::default()
        };
        n.pid = st
            .pids
            .iter()
            .find(|(_, w)| *w == format!("tesserad n{k}"))
            .map(|p| p.0);
        n.alive = n.pid.is_some_and(|p| runs(p, "tesserad"));
        n.cpu_s = n.pid.and_then(cpu_seconds).unwrap_or(0.0);
        if let Some(ns) = st
            .namespaces
            .iter()
            .find(|s| s.ends_with(&format!("-n{k}")))
        {
            n.fabric = fabric_counters(ns);
        }
        match request(sock, r#"{"command":"show_bfd"}"#) {
            Ok(v) => {
                for s in v["response"]["ok"]["data"].as_array().into_iter().flatten() {
                    n.bfd.push((
                        s["peer"].as_str().unwrap_or("?").to_string(),
                        s["state"].as_str().unwrap_or("?").to_string(),
                    ));
                }
            }
            Err(e) => n.error = Some(e),
        }
        match request(sock, r#"{"command":"show_protocols","all":true}"#) {
            Ok(v) => {
                let list = &v["response"]["ok"]["data"];
                let list = list["protocols"].as_array().or(list.as_array());
                for p in list.into_iter().flatten() {
                    let bgp = &p["bgp"];
                    if bgp.is_null() {
                        continue;
                    }
                    let state = bgp["bgp_state"].as_str().unwrap_or("?");
                    n.bgp.push((
                        p["name"].as_str().unwrap_or("?").to_string(),
                        state.to_string(),
                    ));
                }
            }
            Err(e) => n.error = Some(e),
        }
        out.push(n);
    }
    Ok(out)
}

/// The status as a table.
pub fn render(nodes: &[NodeStatus]) -> String {
    let mut s = format!(
        "{:<5} {:>8} {:<6} {:>7} {:<9} {:<12} {:>10} {:>10} {:>12} {:>12} {:>7}\n",
        "node",
        "pid",
        "alive",
        "cpu_s",
        "bfd_up",
        "bgp_estab",
        "fab_rx_pkt",
        "fab_tx_pkt",
        "fab_rx_B",
        "fab_tx_B",
        "drops"
    );
    for n in nodes {
        let up = n.bfd.iter().filter(|(_, x)| x == "Up").count();
        let est = n.bgp.iter().filter(|(_, x)| x == "Established").count();
        s += &format!(
            "n{:<4} {:>8} {:<6} {:>7.2} {:<9} {:<12} {:>10} {:>10} {:>12} {:>12} {:>7}\n",
            n.k,
            n.pid.map_or("-".into(), |p| p.to_string()),
            if n.alive { "yes" } else { "NO" },
            n.cpu_s,
            format!("{up}/{}", n.bfd.len()),
            format!("{est}/{}", n.bgp.len()),
            n.fabric[0],
            n.fabric[1],
            n.fabric[2],
            n.fabric[3],
            n.fabric[4] + n.fabric[5],
        );
        for (peer, st) in &n.bfd {
            s += &format!("      bfd {peer:<16} {st}\n");
        }
        for (name, st) in &n.bgp {
            s += &format!("      bgp {name:<16} {st}\n");
        }
        if let Some(e) = &n.error {
            s += &format!("      control socket: {e}\n");
        }
    }
    s
}

/// Removes everything the state file in `dir` lists: kills the daemons
/// (and whatever else runs in the namespaces), deletes the namespaces,
/// then the directory. Works on a half-built or crashed cluster; `Ok`
/// with a note when there is nothing to remove.
pub fn down(dir: &Path) -> Result<String, String> {
    let Ok(text) = std::fs::read_to_string(state_path(dir)) else {
        return Ok(format!("no cluster in {}", dir.display()));
    };
    let st = State::parse(&text);
    let mut killed = 0;
    for (pid, what) in &st.pids {
        let prog = what.split(' ').next().unwrap_or("");
        if !prog.is_empty() && runs(*pid, prog) {
            // SAFETY: kill(2) has no memory preconditions; the pid runs
            // the program we started (checked just above).
            unsafe {
                libc::kill(*pid as i32, libc::SIGKILL);
            }
            killed += 1;
        }
    }
    for ns in &st.namespaces {
        if let Ok(pids) = sh("ip", &["netns", "pids", ns]) {
            for pid in pids
                .split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok())
            {
                if pid != std::process::id() as i32 {
                    // SAFETY: as above; only processes inside our own
                    // namespaces.
                    unsafe {
                        libc::kill(pid, libc::SIGKILL);
                    }
                    killed += 1;
                }
            }
        }
        let _ = sh("ip", &["netns", "del", ns]);
    }
    // Killed processes are reaped by init; wait (bounded) until they are
    // gone so a caller sees no leftover.
    let end = Instant::now() + Duration::from_secs(5);
    while st.pids.iter().any(|(p, w)| {
        let prog = w.split(' ').next().unwrap_or("");
        !prog.is_empty() && runs(*p, prog)
    }) && Instant::now() < end
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    let left: Vec<&String> = st
        .namespaces
        .iter()
        .filter(|ns| Path::new("/run/netns").join(ns).exists())
        .collect();
    if !left.is_empty() {
        return Err(format!("could not delete namespaces {left:?}"));
    }
    std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(format!(
        "removed {} namespaces, killed {killed} processes",
        st.namespaces.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_checks_its_sizes_mode_and_name() {
        assert!(Plan::new("tcl", 3, 2, "vlb", 100).is_ok());
        assert!(Plan::new("tcl", 1, 1, "direct", 100).is_err());
        assert!(Plan::new("tcl", 33, 1, "direct", 100).is_err());
        assert!(Plan::new("tcl", 3, 0, "direct", 100).is_err());
        assert!(Plan::new("tcl", 3, 33, "direct", 100).is_err());
        assert!(Plan::new("tcl", 3, 1, "ecmp", 100).is_err());
        assert!(Plan::new("a b", 3, 1, "direct", 100).is_err());
        assert!(Plan::new("tcl", 3, 1, "direct", 0).is_err());
    }

    #[test]
    fn addresses_stay_in_the_benchmarking_range_and_do_not_overlap() {
        let p = Plan::new("tcl", MAX_NODES, MAX_PORTS, "direct", 100).expect("plan");
        let mut seen = std::collections::BTreeSet::new();
        for k in 1..=p.nodes {
            assert!(seen.insert(Plan::fabric_addr(k)));
            for q in 1..=p.ports {
                for a in [
                    Plan::data(k, q).0,
                    Plan::data(k, q).1,
                    Plan::control(k, q).0,
                    Plan::control(k, q).1,
                    Plan::announced(k, q).1,
                ] {
                    let o = a.octets();
                    assert!(o[0] == 198 && (o[1] == 18 || o[1] == 19), "{a}");
                    assert!(seen.insert(a), "{a} twice");
                }
            }
        }
        assert_eq!(p.namespaces().len(), 1 + MAX_NODES * (1 + MAX_PORTS));
    }

    #[test]
    fn every_node_config_parses_with_reflectors_and_clients() {
        let p = Plan::new("tcl", 4, 2, "direct-vlb", 100).expect("plan");
        let dir = Path::new("/tmp/x");
        for k in 1..=4 {
            let text = p.tesserad_conf(k, dir);
            let c = config::parse(&text, "n.toml").unwrap_or_else(|e| panic!("{e}\n{text}"));
            let kc = c.cluster.expect("cluster");
            assert_eq!(usize::from(kc.node_id), k - 1);
            assert_eq!(kc.peers.len(), 3);
            assert_eq!(kc.bfd_min_tx_ms, 100);
            let ibgp: Vec<_> = c
                .neighbors
                .iter()
                .filter(|n| n.remote_as.0 == CLUSTER_AS)
                .collect();
            // Reflectors peer with everyone, clients with the two RRs.
            assert_eq!(ibgp.len(), if k <= 2 { 3 } else { 2 }, "node {k}");
            assert!(ibgp.iter().all(|n| n.bfd.is_some()));
            let clients = ibgp.iter().filter(|n| n.route_reflector_client).count();
            assert_eq!(clients, if k <= 2 { 2 } else { 0 }, "node {k}");
            assert_eq!(c.neighbors.len() - ibgp.len(), 2, "eBGP per port");
            assert_eq!(c.statics.len(), 2);
        }
    }

    #[test]
    fn state_file_round_trip_skips_broken_lines() {
        let s = State::parse(
            "ns tcl-fab\nns tcl-n1\npid 42 tesserad n1\nnode 1 /tmp/x/n1.sock\npid x bird\nnode\nns tcl-h1-1\npid 4",
        );
        assert_eq!(s.namespaces, vec!["tcl-fab", "tcl-n1", "tcl-h1-1"]);
        assert_eq!(s.pids, vec![(42, "tesserad n1".to_string())]);
        assert_eq!(s.nodes, vec![(1, PathBuf::from("/tmp/x/n1.sock"))]);
    }
}
