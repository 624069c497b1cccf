//! A lab is a star of network namespaces private to one test: a center
//! namespace (the device under test) and N leaf namespaces (its peers), each
//! leaf joined to the center by its own veth pair with IPv4 and IPv6
//! addresses. Test traffic stays inside the lab's own namespaces, on
//! 198.18.0.0/15 (RFC 2544) and 2001:db8::/32 (RFC 3849) addresses: links
//! are 198.18.k.0/24 and 2001:db8:k::/64 (a LAN lab: 198.18.0.0/24 and
//! 2001:db8::/64). Prefixes a test only announces keep out of the links:
//! none in 198.18.0.0/16 or 2001:db8::/40 (the tests use 198.19.0.0/16,
//! 2001:db8:100:: and up, and the other documentation ranges). Names
//! carry the pid and a counter so parallel tests and parallel test binaries
//! never collide. Drop kills every daemon started through the lab (SIGCONT
//! first, so a frozen one can die), kills anything left in the namespaces,
//! deletes them and removes the temp dir (kept when the test panicked, so
//! logs can be read).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;
use std::time::Duration;

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// One link of the star: leaf `k` (1-based) has `198.18.k.2` /
/// `2001:db8:k::2` (`k` in hex), the center's side of that link has
/// `198.18.k.1` / `2001:db8:k::1`. Test traffic stays in
/// 198.18.0.0/15 and 2001:db8::/32 inside the lab's own namespaces.
#[derive(Clone, Debug)]
pub struct Leaf {
    pub k: u8,
    pub ns: String,
    pub v4: String,
    pub v6: String,
    pub center_v4: String,
    pub center_v6: String,
}

pub struct Lab {
    pub name: String,
    pub center_ns: String,
    pub leaves: Vec<Leaf>,
    pub dir: PathBuf,
    daemons: Mutex<Vec<Daemon>>,
    logs: Mutex<Vec<(String, PathBuf)>>,
    lan: bool,
    /// Namespaces added by [`Lab::netns`], removed on drop like the rest.
    extra: Mutex<Vec<String>>,
}

/// A daemon process; killed on drop (after SIGCONT, in case it was frozen).
pub struct Daemon {
    pub name: String,
    pub pid: u32,
    pub log: PathBuf,
    child: Child,
}

impl Daemon {
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }
    fn kill(&mut self) {
        let pid = self.pid.to_string();
        let _ = Command::new("kill").args(["-CONT", &pid]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        self.kill();
    }
}

fn ip(args: &[&str]) -> Result<(), String> {
    super::sh(&[&["ip"], args].concat()).map(|_| ())
}

/// No duplicate address detection in the namespace: link-local addresses
/// are usable at once (BIRD sends a link-local IPv6 next hop when it has
/// one, and a tentative one makes the first UPDATEs differ from later ones).
fn no_dad(ns: &str) -> Result<(), String> {
    for k in ["all", "default"] {
        super::sh(&[
            "ip",
            "netns",
            "exec",
            ns,
            "sysctl",
            "-q",
            "-w",
            &format!("net.ipv6.conf.{k}.accept_dad=0"),
        ])?;
    }
    Ok(())
}

impl Lab {
    /// Creates the center and `leaves` leaf namespaces with their links.
    pub fn star(test: &str, leaves: u8) -> Lab {
        Lab::new(test, leaves, false)
    }

    /// All leaves and the centre on one LAN (a bridge in the centre):
    /// 198.18.0.1 / 2001:db8::1 for the centre, 198.18.0.(k+1) /
    /// 2001:db8::(k+1) (hex) for leaf k. An IXP: what a route server
    /// (RFC 7947) serves, where next hops of other clients are directly
    /// reachable.
    pub fn lan(test: &str, leaves: u8) -> Lab {
        Lab::new(test, leaves, true)
    }

    fn new(test: &str, leaves: u8, lan: bool) -> Lab {
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let name = format!("ts{pid}-{n}");
        let dir = std::env::temp_dir().join(format!("tessera-interop-{pid}-{n}-{test}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("create lab temp dir");
        let mut lab = Lab {
            center_ns: format!("{name}-c"),
            name,
            leaves: Vec::new(),
            dir,
            daemons: Mutex::new(Vec::new()),
            logs: Mutex::new(Vec::new()),
            lan,
            extra: Mutex::new(Vec::new()),
        };
        // Registered before creation so Drop cleans a half-built lab too.
        for k in 1..=leaves {
            let (v4, v6, cv4, cv6) = if lan {
                (
                    format!("198.18.0.{}", k + 1),
                    format!("2001:db8::{:x}", k + 1),
                    "198.18.0.1".to_string(),
                    "2001:db8::1".to_string(),
                )
            } else {
                (
                    format!("198.18.{k}.2"),
                    format!("2001:db8:{k:x}::2"),
                    format!("198.18.{k}.1"),
                    format!("2001:db8:{k:x}::1"),
                )
            };
            lab.leaves.push(Leaf {
                k,
                ns: format!("{}-l{k}", lab.name),
                v4,
                v6,
                center_v4: cv4,
                center_v6: cv6,
            });
        }
        if let Err(e) = lab.build() {
            panic!("lab {}: cannot build namespaces: {e}", lab.name);
        }
        lab
    }

    fn build(&self) -> Result<(), String> {
        let c = self.center_ns.as_str();
        ip(&["netns", "add", c])?;
        no_dad(c)?;
        ip(&["-n", c, "link", "set", "lo", "up"])?;
        if self.lan {
            ip(&["-n", c, "link", "add", "br0", "type", "bridge"])?;
            ip(&["-n", c, "link", "set", "br0", "addrgenmode", "none"])?;
            ip(&["-n", c, "addr", "add", "198.18.0.1/24", "dev", "br0"])?;
            ip(&[
                "-n",
                c,
                "addr",
                "add",
                "2001:db8::1/64",
                "dev",
                "br0",
                "nodad",
            ])?;
            ip(&["-n", c, "link", "set", "br0", "up"])?;
        }
        for l in &self.leaves {
            ip(&["netns", "add", &l.ns])?;
            no_dad(&l.ns)?;
            ip(&["-n", &l.ns, "link", "set", "lo", "up"])?;
            let cif = format!("l{}", l.k);
            ip(&[
                "-n", c, "link", "add", &cif, "type", "veth", "peer", "name", "c", "netns", &l.ns,
            ])?;
            if self.lan {
                ip(&["-n", c, "link", "set", &cif, "master", "br0"])?;
            } else {
                ip(&[
                    "-n",
                    c,
                    "addr",
                    "add",
                    &format!("{}/24", l.center_v4),
                    "dev",
                    &cif,
                ])?;
                // nodad: the address is usable at once (no 1-2 s DAD wait).
                ip(&[
                    "-n",
                    c,
                    "addr",
                    "add",
                    &format!("{}/64", l.center_v6),
                    "dev",
                    &cif,
                    "nodad",
                ])?;
            }
            ip(&[
                "-n",
                &l.ns,
                "addr",
                "add",
                &format!("{}/24", l.v4),
                "dev",
                "c",
            ])?;
            ip(&[
                "-n",
                &l.ns,
                "addr",
                "add",
                &format!("{}/64", l.v6),
                "dev",
                "c",
                "nodad",
            ])?;
            // No link-local addresses: FRR's bgpd without zebra fails to
            // parse an MP_REACH next hop of global + link-local (32 octets)
            // ("wrong prefix length 48 for afi 1"), so every speaker sends
            // global-only IPv6 next hops here.
            ip(&["-n", c, "link", "set", &cif, "addrgenmode", "none"])?;
            ip(&["-n", &l.ns, "link", "set", "c", "addrgenmode", "none"])?;
            ip(&["-n", c, "link", "set", &cif, "up"])?;
            ip(&["-n", &l.ns, "link", "set", "c", "up"])?;
        }
        Ok(())
    }

    /// One more namespace of this lab, `<name>-<suffix>`, with `lo` up and
    /// nothing else (the caller wires it); removed on drop like the
    /// others (registered before it is created, so a half-built one is
    /// removed too).
    pub fn netns(&self, suffix: &str) -> String {
        let ns = format!("{}-{suffix}", self.name);
        self.extra
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(ns.clone());
        ip(&["netns", "add", &ns]).unwrap_or_else(|e| panic!("netns {ns}: {e}"));
        ip(&["-n", &ns, "link", "set", "lo", "up"]).unwrap_or_else(|e| panic!("lo in {ns}: {e}"));
        ns
    }

    pub fn leaf(&self, k: u8) -> &Leaf {
        self.leaves
            .iter()
            .find(|l| l.k == k)
            .unwrap_or_else(|| panic!("lab has no leaf {k}"))
    }

    /// A path in the lab's temp dir.
    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path(name);
        if let Some(d) = p.parent() {
            let _ = std::fs::create_dir_all(d);
        }
        std::fs::write(&p, text).unwrap_or_else(|e| panic!("write {}: {e}", p.display()));
        p
    }

    /// Starts `argv` inside namespace `ns` with stdout+stderr to
    /// `<dir>/<name>.out`; `env` is added to the environment. The returned
    /// pid is the daemon's own (`ip netns exec` execs it).
    pub fn spawn(&self, name: &str, ns: &str, argv: &[&str], env: &[(&str, &str)]) -> u32 {
        let log = self.path(&format!("{name}.out"));
        let out = File::create(&log).expect("create daemon log");
        let err = out.try_clone().expect("clone log fd");
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", ns])
            .args(argv)
            .current_dir(&self.dir)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let child = cmd
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({}): {e}", argv.join(" ")));
        let pid = child.id();
        self.add_log(name, &log);
        self.daemons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Daemon {
                name: name.to_string(),
                pid,
                log,
                child,
            });
        pid
    }

    /// Also show this file's tail in failure messages.
    pub fn add_log(&self, name: &str, path: &Path) {
        self.logs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push((name.to_string(), path.to_path_buf()));
    }

    /// Whether daemon `name` is still running.
    pub fn alive(&self, name: &str) -> bool {
        let mut ds = self.daemons.lock().unwrap_or_else(|e| e.into_inner());
        ds.iter_mut()
            .find(|d| d.name == name)
            .is_some_and(|d| d.alive())
    }

    /// Kills daemon `name` now (it is dropped from the lab).
    pub fn stop(&self, name: &str) {
        let mut ds = self.daemons.lock().unwrap_or_else(|e| e.into_inner());
        ds.retain(|d| d.name != name);
    }

    /// Signals `pid` and all its descendants: OpenBGPD (and FRR's
    /// helpers) run several processes, and freezing only the parent leaves
    /// the session engine sending keepalives.
    pub fn signal(&self, pid: u32, sig: &str) {
        let mut all = vec![pid];
        let mut i = 0;
        while let Some(&p) = all.get(i) {
            all.extend(children(p));
            i += 1;
        }
        for p in all {
            let _ = Command::new("kill")
                .args([&format!("-{sig}"), &p.to_string()])
                .status();
        }
    }

    /// Tails of every registered log, for failure messages.
    pub fn context(&self) -> String {
        let logs = self.logs.lock().unwrap_or_else(|e| e.into_inner()).clone();
        let mut s = format!("lab {} (files in {})", self.name, self.dir.display());
        for (name, p) in logs {
            s.push_str(&format!(
                "\n--- {name}: {} (last 25 lines)\n{}",
                p.display(),
                super::tail(&p, 25)
            ));
        }
        s
    }

    /// `wait_until` with this lab's log tails on failure.
    pub fn wait<T>(
        &self,
        secs: u64,
        what: &str,
        f: impl FnMut() -> Result<Option<T>, String>,
    ) -> T {
        super::wait_until(Duration::from_secs(secs), what, || self.context(), f)
    }

    /// Fails the test with `msg` and the log tails.
    pub fn fail(&self, msg: &str) -> ! {
        panic!("{msg}\n{}", self.context())
    }

    fn namespaces(&self) -> Vec<String> {
        let mut v = vec![self.center_ns.clone()];
        v.extend(self.leaves.iter().map(|l| l.ns.clone()));
        v.extend(
            self.extra
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
                .cloned(),
        );
        v
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        self.daemons
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        for ns in self.namespaces() {
            // Children a daemon forked (OpenBGPD's engines, ExaBGP's API
            // process) live in our namespaces only: kill what is left there.
            if let Ok(pids) = super::sh(&["ip", "netns", "pids", &ns]) {
                for p in pids.split_whitespace() {
                    let _ = Command::new("kill").args(["-CONT", p]).status();
                    let _ = Command::new("kill").args(["-9", p]).status();
                }
            }
            let _ = Command::new("ip")
                .args(["netns", "del", &ns])
                .stderr(Stdio::null())
                .status();
        }
        if std::thread::panicking() {
            eprintln!("lab {}: logs kept in {}", self.name, self.dir.display());
        } else if std::env::var_os("TESSERA_KEEP_LOGS").is_none() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
        std::thread::sleep(Duration::from_millis(0));
    }
}

/// Direct children of `pid`, from /proc.
fn children(pid: u32) -> Vec<u32> {
    let mut v = Vec::new();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return v;
    };
    for e in dir.flatten() {
        let Some(child) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else {
            continue;
        };
        // "pid (comm) state ppid ...": comm may contain spaces; split after ')'.
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            v.push(child);
        }
    }
    v
}
