//! The lab of the dataplane tests (`dataplane_bird`, `dataplane_graph`,
//! `dataplane_vr`, `dataplane_xdp_fast`, `ipsec_interop`,
//! `multipath_bird`): a few network namespaces named
//! `<prefix><name><tag>`, veth links between them, processes started in
//! them with their output in a log file of the lab's work directory, and
//! bounded waits. Dropping the lab kills the processes, deletes the
//! namespaces and the work directory (also when a test fails).
//!
//! Unlike [`super::Lab`] (a star of BGP speakers around tesserad, which
//! skips without root or tools unless `TESSERA_REQUIRE_TOOLS=1`), these
//! tests always fail when root or a tool is missing.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::cluster::sh;

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Namespaces, processes and the work directory of one test.
pub struct NetLab {
    prefix: String,
    pub tag: String,
    pub dir: PathBuf,
    names: Vec<String>,
    /// Processes started by [`NetLab::spawn`], by log file name.
    children: Vec<(String, Child)>,
}

/// Fails the test unless it runs as root and every tool is on `PATH`.
pub fn require(what: &str, tools: &[&str]) {
    // SAFETY: geteuid has no preconditions.
    assert_eq!(unsafe { libc::geteuid() }, 0, "{what} need root");
    for t in tools {
        assert!(
            Command::new("which")
                .arg(t)
                .output()
                .is_ok_and(|o| o.status.success()),
            "{what} need `{t}` installed"
        );
    }
}

impl NetLab {
    /// The namespaces `names` (with `lo` up) and a fresh work directory;
    /// `prefix` keeps the names of different tests apart. Fails the test
    /// (see [`require`]) without root or one of `tools`.
    pub fn new(prefix: &str, names: &[&str], what: &str, tools: &[&str]) -> NetLab {
        require(what, tools);
        let tag = format!(
            "{}{}",
            std::process::id() % 100_000,
            SEQ.fetch_add(1, Ordering::Relaxed)
        );
        let dir = std::env::temp_dir().join(format!("tessera-{prefix}-{tag}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("work dir");
        let mut lab = NetLab {
            prefix: prefix.to_string(),
            tag,
            dir,
            names: Vec::new(),
            children: Vec::new(),
        };
        for n in names {
            // Registered first: a half-made namespace is deleted too.
            lab.names.push(n.to_string());
            if let Err(e) = sh(&["ip", "netns", "add", &lab.ns(n)]) {
                panic!("netns {n}: {e}");
            }
            lab.must(n, &["ip", "link", "set", "lo", "up"]);
        }
        lab
    }

    /// The full name of namespace `n`.
    pub fn ns(&self, n: &str) -> String {
        format!("{}{n}{}", self.prefix, self.tag)
    }

    /// Runs `argv` in namespace `n` (10 s bound); its standard output.
    pub fn exec(&self, n: &str, argv: &[&str]) -> Result<String, String> {
        let ns = self.ns(n);
        let mut v = vec!["ip", "netns", "exec", &ns];
        v.extend_from_slice(argv);
        sh(&v)
    }

    /// [`Self::exec`] that fails the test on error (setup steps).
    pub fn must(&self, n: &str, argv: &[&str]) {
        if let Err(e) = self.exec(n, argv) {
            panic!("setup in {n}: {e}");
        }
    }

    /// [`Self::must`] with the command as one string, split on spaces.
    pub fn must_cmd(&self, n: &str, cmd: &str) {
        let argv: Vec<&str> = cmd.split_whitespace().collect();
        self.must(n, &argv);
    }

    /// A veth pair: `i1` in namespace `n1`, `i2` in `n2`.
    pub fn link(&self, n1: &str, i1: &str, n2: &str, i2: &str) {
        let (a, b) = (self.ns(n1), self.ns(n2));
        if let Err(e) = sh(&[
            "ip", "link", "add", i1, "netns", &a, "type", "veth", "peer", "name", i2, "netns", &b,
        ]) {
            panic!("veth {i1}-{i2}: {e}");
        }
    }

    /// A veth pair with `q` RX and TX queues on each end (veth hands a
    /// frame sent on TX queue k to the peer's RX queue k).
    pub fn link_queues(&self, n1: &str, i1: &str, n2: &str, i2: &str, q: u32) {
        let (a, b) = (self.ns(n1), self.ns(n2));
        let q = q.to_string();
        if let Err(e) = sh(&[
            "ip",
            "link",
            "add",
            i1,
            "netns",
            &a,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
            "type",
            "veth",
            "peer",
            "name",
            i2,
            "netns",
            &b,
            "numtxqueues",
            &q,
            "numrxqueues",
            &q,
        ]) {
            panic!("veth {i1}-{i2} with {q} queues: {e}");
        }
    }

    /// Sets interface `i` of namespace `n` up, with full checksums on
    /// the wire (offloads off: a forwarded veth frame must not carry a
    /// partial, offloaded one).
    pub fn up(&self, n: &str, i: &str) {
        self.must(n, &["ip", "link", "set", i, "up"]);
        let _ = self.exec(
            n,
            &[
                "ethtool", "-K", i, "tx", "off", "tso", "off", "gso", "off", "gro", "off",
            ],
        );
    }

    /// A file of the work directory.
    pub fn path(&self, f: &str) -> PathBuf {
        self.dir.join(f)
    }

    /// Writes `text` to the work directory's file `f`; its path.
    pub fn write(&self, f: &str, text: &str) -> String {
        let p = self.path(f);
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
        p.display().to_string()
    }

    /// Starts `argv` in namespace `n`, its stdout and stderr to the work
    /// directory's file `log` (which also names the process).
    pub fn spawn(&mut self, n: &str, argv: &[&str], log: &str) {
        let ns = self.ns(n);
        let f = std::fs::File::create(self.dir.join(log)).expect("log file");
        let c = Command::new("ip")
            .args(["netns", "exec", &ns])
            .args(argv)
            .stdin(Stdio::null())
            .stdout(f.try_clone().expect("log"))
            .stderr(f)
            .spawn()
            .unwrap_or_else(|e| panic!("spawn {}: {e}", argv.join(" ")));
        self.children.push((log.to_string(), c));
    }

    /// The pid of the process started with log file `log`.
    pub fn pid(&self, log: &str) -> Option<u32> {
        self.children
            .iter()
            .find(|(l, _)| l == log)
            .map(|(_, c)| c.id())
    }

    /// Sends `sig` (`TERM`, `HUP`, ...) to the process of log `log`.
    pub fn signal(&self, log: &str, sig: &str) {
        if let Some(pid) = self.pid(log) {
            let _ = sh(&["kill", &format!("-{sig}"), &pid.to_string()]);
        }
    }

    /// The work directory's file `name` (empty when unreadable).
    pub fn log(&self, name: &str) -> String {
        std::fs::read_to_string(self.dir.join(name)).unwrap_or_default()
    }

    /// Waits (bounded) until `log` contains `what`.
    pub fn wait_log(&self, log: &str, what: &str, secs: u64) {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if self.log(log).contains(what) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "timed out waiting for `{what}` in {log}:\n{}\n--- tesserad.log\n{}",
            self.log(log),
            self.log("tesserad.log")
        );
    }

    /// Polls `f` every 200 ms for up to `secs`; on timeout fails the test
    /// with `what` and `diag()` (the lab goes away as the panic unwinds).
    pub fn wait_for(
        &self,
        what: &str,
        secs: u64,
        diag: impl FnOnce() -> String,
        mut f: impl FnMut() -> bool,
    ) {
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            if f() {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!("timed out waiting for {what}\n{}", diag());
    }

    /// Runs `ping -n ARGS` (split on spaces) in namespace `n`; its whole
    /// output (a failed ping is not an error here: the caller checks the
    /// text).
    pub fn ping(&self, n: &str, args: &str) -> String {
        let mut v = vec!["ping", "-n"];
        v.extend(args.split_whitespace());
        self.exec(n, &v).unwrap_or_else(|e| e)
    }

    /// `tessera ARGS --socket <work dir>/tesserad.sock` in namespace `n`.
    pub fn tessera(&self, n: &str, args: &[&str]) -> Result<String, String> {
        let bin = Path::new(&super::tesserad::sibling_binary("tessera")).to_path_buf();
        let bin = bin.display().to_string();
        let sock = self.path("tesserad.sock").display().to_string();
        let mut v = vec![bin.as_str()];
        v.extend_from_slice(args);
        v.extend_from_slice(&["--socket", &sock]);
        self.exec(n, &v)
    }

    /// `tessera show dataplane --json` against the tesserad under test,
    /// which every dataplane lab runs in namespace `r`; fails the test
    /// when it does not answer or the answer is not JSON.
    pub fn show(&self) -> serde_json::Value {
        let s = self
            .tessera("r", &["show", "dataplane", "--json"])
            .unwrap_or_else(|e| panic!("show dataplane: {e}"));
        serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"))
    }

    /// Polls [`Self::show`] every 100 ms until `f` holds on it (the
    /// dataplane's cores publish their counters when they go idle), for
    /// up to 10 s; then fails the test with `what`, the last answer and
    /// tesserad's log. The answer `f` accepted.
    pub fn wait_show(
        &self,
        what: &str,
        f: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let v = self.show();
            if f(&v) {
                return v;
            }
            assert!(
                Instant::now() < end,
                "{what}: {v}\n--- tesserad.log\n{}",
                self.log("tesserad.log")
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// One control request (what `tessera` sends) to the tesserad of
    /// `<work dir>/tesserad.sock`: the response line.
    pub fn ctl(&self, request_json: &str) -> Result<String, String> {
        super::tesserad::request_line(&self.path("tesserad.sock"), request_json)
    }
}

impl Drop for NetLab {
    fn drop(&mut self) {
        for (_, c) in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for n in &self.names {
            let _ = sh(&["ip", "netns", "del", &self.ns(n)]);
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `struct $name(NetLab)` that dereferences to the [`NetLab`], for a
/// test's lab with methods of its own.
#[macro_export]
macro_rules! netlab_newtype {
    ($(#[$m:meta])* $name:ident) => {
        $(#[$m])*
        struct $name($crate::netlab::NetLab);

        impl std::ops::Deref for $name {
            type Target = $crate::netlab::NetLab;
            fn deref(&self) -> &Self::Target {
                &self.0
            }
        }

        impl std::ops::DerefMut for $name {
            fn deref_mut(&mut self) -> &mut Self::Target {
                &mut self.0
            }
        }
    };
}

/// Runs `f` on a thread inside namespace `ns`.
pub fn in_ns<T: Send + 'static>(
    ns: String,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    std::thread::spawn(move || {
        io::sys::enter_netns(&format!("/run/netns/{ns}")).expect("setns");
        f()
    })
}

/// Datagrams counted by the low 4 bits of their first byte (the tests
/// tag each flow's payload so that one sink tells the flows apart).
pub type TagCounts = Arc<[AtomicU32; 16]>;

/// A UDP sink on `addr`:`port` inside namespace `ns` until `stop` is set:
/// counts each datagram under the low 4 bits of its first byte.
pub fn udp_sink(
    ns: String,
    addr: &'static str,
    port: u16,
    stop: Arc<AtomicBool>,
) -> (TagCounts, std::thread::JoinHandle<()>) {
    let c: TagCounts = Arc::new(Default::default());
    let c2 = Arc::clone(&c);
    let h = in_ns(ns, move || {
        let s = std::net::UdpSocket::bind((addr, port)).expect("bind sink");
        s.set_read_timeout(Some(Duration::from_millis(100)))
            .expect("timeout");
        let mut b = [0u8; 1500];
        while !stop.load(Ordering::Relaxed) {
            if let Ok(len) = s.recv(&mut b) {
                if len > 0 {
                    c2[usize::from(b[0] & 15)].fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    });
    (c, h)
}

/// `KEY=N` from a counters line (`dataplane: rx=1 ...`); fails the test
/// when it is missing.
pub fn counter(line: &str, key: &str) -> u64 {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {key} in {line:?}"))
}

/// Sets the flag when dropped: stops sink threads also when a test fails.
pub struct StopOnDrop(pub Arc<AtomicBool>);

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// GET /metrics from `addr` inside namespace `ns` (bounded by socket
/// timeouts): the whole HTTP answer.
pub fn metrics(ns: &str, addr: &str) -> String {
    let ns = ns.to_string();
    let addr: std::net::SocketAddr = addr.parse().expect("metrics address");
    in_ns(ns, move || {
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
}

/// BIRD's configuration (written to `path`, logging to `log`) announcing
/// 198.19.113.0/24 over eBGP from `me` (AS 65001) to `peer` (AS 65000)
/// with the third-party next hop `via`.
///
/// The export filter sets `bgp_next_hop`: to an eBGP peer, BIRD advertises
/// a non-BGP route's gateway only when it is on the session's interface,
/// else its own session address (on no dataplane port, so tesserad could
/// never resolve it); `next hop keep` only keeps an existing BGP next hop.
/// Setting it gives the third-party next hop of RFC 4271 §5.1.3. The
/// static route's gateway must be on BIRD's interface `gw0`.
pub fn bird_third_party_conf(path: &Path, log: &Path, me: &str, peer: &str, via: &str) -> String {
    let text = format!(
        "log \"{}\" all;\nrouter id {me};\nprotocol device {{}}\n\
         protocol direct {{ ipv4; interface \"gw0\"; }}\n\
         protocol static st {{ ipv4; route 198.19.113.0/24 via {via}; }}\n\
         protocol bgp peer {{\n  local {me} as 65001;\n  neighbor {peer} as 65000;\n\
           hold time 9;\n  connect retry time 1;\n\
           ipv4 {{ import none; next hop keep;\n\
             export filter {{ if proto = \"st\" then {{ bgp_next_hop = {via}; accept; }} reject; }};\n\
           }};\n}}\n",
        log.display()
    );
    std::fs::write(path, text).expect("bird.conf");
    path.display().to_string()
}
