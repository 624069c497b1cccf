//! The devices under test: tesserad in each pipeline mode and thread
//! count, and four daemons from Debian. Each gets a configuration written
//! here with accept-all import from the generator peers, export to the
//! monitor only, no route limits, no kernel (FIB) installation, and its
//! own directory for config, control socket and log; it runs in the DUT
//! namespace through `ip netns exec`, in the foreground, so its pid is the
//! one `/proc` is read for (plus its children: OpenBGPD's engines).
//!
//! Why export to the monitor only by default: "accept all" both ways makes
//! every DUT send each generator the others' routes, which multiplies the
//! DUT's work by the peer count in the unique scenarios and loads the
//! generator host with reading it, while convergence is measured at the
//! monitor. `--export all` ([`DutEnv::export_all`]) does exactly that, as
//! operators run it: it measures the memory and CPU per exporting peer
//! (issue 17). The generator peers read and discard what they receive.
//!
//! | DUT | started as | notes |
//! |---|---|---|
//! | tesserad | `tesserad -c FILE --log warn` | `router.pipeline`/`threads`/`locks`/`streams`; a config error naming the pipeline is reported as "not supported" |
//! | BIRD 2 | `bird -f -c FILE -s SOCK` | no `protocol kernel`; traces: `multihop` + recursive next hops over a static default |
//! | FRR | `/usr/lib/frr/bgpd -Z -n -S` | no zebra, no kernel install, own `--vty_socket` dir, `-P 0` (no vty port) |
//! | GoBGP | `gobgpd -f FILE.toml` | global export policy: accept towards the monitor's neighbor set only |
//! | OpenBGPD | `/usr/sbin/bgpd -d -f FILE` | `fib-update no`, own `socket`, root; traces: `nexthop qualify via default` |

use crate::error::BenchError;
use crate::netns::{peer_addr, sh, DUT_ADDR, DUT_ADDR6, MONITOR_ADDR, PEERS_ADDR6};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::str::FromStr;
use std::time::{Duration, Instant};

/// AS numbers: from the RFC 6996 private 4-byte range, outside every
/// range the synthetic generator draws from (origins 1000-61000 and
/// 196608+, transits 10000-13000, extra peer ASes 64512+) and absent from
/// the real dumps (the jinx RIB has paths through 64512, 65000 and 65001:
/// with the DUT in AS 65000, 24 of its prefixes had only looping paths, so
/// every DUT rightly dropped them and (d) never reached its count).
pub const DUT_AS: u32 = 4_200_000_000;
pub const GENERATOR_AS: u32 = 4_200_000_001;
pub const MONITOR_AS: u32 = 4_200_000_002;
/// With `--export all` generator peer i is in AS `GENERATOR_AS_BASE + i`
/// ([`generator_as`]): with one shared generator AS every route a
/// generator sent has that AS on its path, and a DUT that checks the
/// peer's AS against the path before sending (GoBGP does; FRR can be told
/// to) sends the generators nothing, which a real receiver would drop as
/// a loop anyway (RFC 4271 §9.1.2): `--export all` then measured the
/// monitor alone (bench_smoke: GoBGP's generators read 0 messages with
/// one AS, 4000 with distinct ones).
pub const GENERATOR_AS_BASE: u32 = 4_200_001_000;
/// Long enough that a DUT busy for minutes (GoBGP at 1M routes) is not
/// dropped for missed keepalives.
pub const HOLD_TIME: u16 = 240;

/// tesserad's default `router.pipeline`: what plain `--dut tesserad` runs.
pub const DEFAULT_PIPELINE: &str = "sharded";

/// The AS of generator peer `i`: [`GENERATOR_AS`] for all of them, or
/// with `distinct` (`--export all`) `GENERATOR_AS_BASE + i`.
pub fn generator_as(i: usize, distinct: bool) -> u32 {
    if distinct {
        GENERATOR_AS_BASE.saturating_add(u32::try_from(i).unwrap_or(u32::MAX))
    } else {
        GENERATOR_AS
    }
}

/// Which daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DutKind {
    /// tesserad in one mode.
    Tesserad(TesseradSpec),
    Bird,
    Frr,
    Gobgp,
    Openbgpd,
}

/// tesserad's `[router]` keys of one DUT; a key left `None` is not
/// written, so tesserad's default applies.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TesseradSpec {
    /// `router.pipeline`: sequential, per-peer, worker-pool, sharded.
    pub pipeline: String,
    /// `router.threads`.
    pub threads: Option<u32>,
    /// `router.locks` (`stripes`, `fine`; per-peer and worker-pool only).
    pub locks: Option<String>,
    /// `router.streams` (`per-session`, `per-worker`; worker-pool only).
    pub streams: Option<String>,
}

impl TesseradSpec {
    /// `pipeline` with `threads` and the other keys unset.
    pub fn of(pipeline: &str, threads: Option<u32>) -> Self {
        TesseradSpec {
            pipeline: pipeline.to_string(),
            threads,
            locks: None,
            streams: None,
        }
    }

    /// `tesserad-PIPELINE[-THREADS][-LOCKS][-STREAMS]`.
    pub fn label(&self) -> String {
        let mut l = format!("tesserad-{}", self.pipeline);
        let threads = self.threads.map(|t| t.to_string());
        for f in [&threads, &self.locks, &self.streams].into_iter().flatten() {
            l.push('-');
            l.push_str(f);
        }
        l
    }
}

/// A DUT as named on the command line (`tesserad:sharded:2`, `bird`, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DutSpec {
    pub kind: DutKind,
}

/// tesserad's `router.pipeline` values.
const PIPELINES: &[&str] = &["sequential", "per-peer", "worker-pool", "sharded"];
/// `router.locks` values, and the pipelines that take the key.
const LOCKS: &[&str] = &["stripes", "fine"];
const LOCKS_PIPELINES: &[&str] = &["per-peer", "worker-pool"];
/// `router.streams` values, and the pipeline that takes the key.
const STREAMS: &[&str] = &["per-session", "per-worker"];
const STREAMS_PIPELINE: &str = "worker-pool";

const DUT_SYNTAX: &str =
    "tesserad[:PIPELINE[:THREADS][:LOCKS][:STREAMS]], bird, frr, gobgp or openbgpd";

impl FromStr for DutSpec {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut it = s.split(':');
        let kind = match it.next().unwrap_or("") {
            "tesserad" => {
                // Plain `tesserad` is the daemon as it runs by default:
                // `router.pipeline` unset means share-nothing shards
                // (crates/config validate.rs); other modes are named.
                let pipeline = it.next().unwrap_or(DEFAULT_PIPELINE).to_string();
                if !PIPELINES.contains(&pipeline.as_str()) {
                    return Err(format!(
                        "{s}: pipeline must be sequential, per-peer, worker-pool or sharded"
                    ));
                }
                let (mut threads, mut locks, mut streams) = (None, None, None);
                // After the pipeline: the thread count, then `router.locks`
                // and `router.streams` by value, in this order, each at
                // most once (their values are distinct, so no key is
                // needed).
                for (n, f) in it.by_ref().enumerate() {
                    if n == 0 && f.bytes().all(|b| b.is_ascii_digit()) {
                        threads = match f.parse::<u32>() {
                            Ok(t) if t > 0 => Some(t),
                            _ => {
                                return Err(format!("{s}: thread count must be a positive integer"))
                            }
                        };
                    } else if LOCKS.contains(&f) && locks.is_none() && streams.is_none() {
                        if !LOCKS_PIPELINES.contains(&pipeline.as_str()) {
                            return Err(format!(
                                "{s}: router.locks ({f}) applies to per-peer and worker-pool only"
                            ));
                        }
                        locks = Some(f.to_string());
                    } else if STREAMS.contains(&f) && streams.is_none() {
                        if pipeline != STREAMS_PIPELINE {
                            return Err(format!(
                                "{s}: router.streams ({f}) applies to worker-pool only"
                            ));
                        }
                        streams = Some(f.to_string());
                    } else {
                        return Err(format!(
                            "{s}: unexpected field {f:?}: expected {DUT_SYNTAX}; THREADS a \
                             positive integer, LOCKS stripes or fine (router.locks), STREAMS \
                             per-session or per-worker (router.streams), in this order, each \
                             at most once"
                        ));
                    }
                }
                DutKind::Tesserad(TesseradSpec {
                    pipeline,
                    threads,
                    locks,
                    streams,
                })
            }
            "bird" => DutKind::Bird,
            "frr" => DutKind::Frr,
            "gobgp" => DutKind::Gobgp,
            "openbgpd" => DutKind::Openbgpd,
            other => return Err(format!("unknown DUT {other:?}: expected {DUT_SYNTAX}")),
        };
        if it.next().is_some() {
            return Err(format!("{s}: too many ':' fields"));
        }
        Ok(DutSpec { kind })
    }
}

impl DutSpec {
    /// The label in tables and charts, e.g. `tesserad-sharded-2`.
    pub fn label(&self) -> String {
        match &self.kind {
            DutKind::Tesserad(t) => t.label(),
            DutKind::Bird => "bird".into(),
            DutKind::Frr => "frr".into(),
            DutKind::Gobgp => "gobgp".into(),
            DutKind::Openbgpd => "openbgpd".into(),
        }
    }

    /// The spec of a tesserad label ([`DutSpec::label`]), for the charts
    /// that group tesserad's modes; `None` for other DUTs. Labels join
    /// the fields with '-', which the pipeline and stream names contain
    /// too, so the known names are matched whole.
    pub fn from_tesserad_label(label: &str) -> Option<DutSpec> {
        let mut rest = label.strip_prefix("tesserad-")?;
        let mut fields = vec!["tesserad"];
        while !rest.is_empty() {
            let word = PIPELINES
                .iter()
                .chain(LOCKS)
                .chain(STREAMS)
                .copied()
                .find(|w| rest == *w || rest.starts_with(&format!("{w}-")))
                .unwrap_or_else(|| rest.split('-').next().unwrap_or(rest));
            fields.push(word);
            rest = rest[word.len()..].strip_prefix('-').unwrap_or("");
        }
        fields.join(":").parse().ok()
    }

    /// The binary that must exist for this DUT.
    pub fn binary<'a>(&self, tesserad: &'a Path) -> &'a Path {
        match self.kind {
            DutKind::Tesserad(_) => tesserad,
            DutKind::Bird => Path::new("/usr/sbin/bird"),
            DutKind::Frr => Path::new("/usr/lib/frr/bgpd"),
            DutKind::Gobgp => Path::new("/usr/bin/gobgpd"),
            DutKind::Openbgpd => Path::new("/usr/sbin/bgpd"),
        }
    }

    /// `bird --version` and the like, for the report.
    pub fn version(&self, tesserad: &Path) -> String {
        let bin = self.binary(tesserad).display().to_string();
        let args: &[&str] = match self.kind {
            DutKind::Openbgpd => &["-V"],
            _ => &["--version"],
        };
        let out = Command::new(&bin).args(args).stdin(Stdio::null()).output();
        let text = match out {
            Ok(o) => format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
            Err(e) => format!("{bin}: {e}"),
        };
        text.lines()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string()
    }
}

/// What a DUT is configured for.
#[derive(Clone, Debug)]
pub struct DutEnv<'a> {
    pub ns: &'a str,
    /// Config, sockets and log go here (short path: Unix sockets).
    pub dir: &'a Path,
    pub peers: usize,
    pub tesserad: &'a Path,
    /// Trace workloads keep recorded next hops, which are not on the link.
    pub foreign_next_hops: bool,
    /// `--export all`: the DUT exports everything to every peer, the
    /// generator peers included (as an eBGP speaker or route server does),
    /// not to the monitor only. Each generator then has its own AS
    /// ([`generator_as`]), and every config declares it so.
    pub export_all: bool,
    /// Scenario (g): peers below this index feed, the others are
    /// route-server clients (RFC 7947: no AS prepend, next hop and MED
    /// unchanged); odd clients export through a policy of their own that
    /// drops the routes of one feeder. Every peer has its own AS.
    /// tesserad and BIRD only.
    pub route_server: Option<usize>,
    /// `--dut-cpus`: the DUT process's affinity ([`crate::cpus`]).
    pub cpus: Option<&'a [usize]>,
}

/// Whether each generator peer has its own AS ([`generator_as`]).
fn distinct_as(env: &DutEnv<'_>) -> bool {
    env.export_all || env.route_server.is_some()
}

/// Scenario (g): whether peer `i` is a route-server client, and with an
/// export policy of its own (the feeder whose routes it drops).
fn rs_client(env: &DutEnv<'_>, i: usize) -> Option<Option<usize>> {
    let f = env.route_server?;
    let c = i.checked_sub(f)?;
    Some((c % 2 == 1).then_some(c % f.max(1)))
}

/// A started DUT; stopped on drop.
#[derive(Debug)]
pub struct RunningDut {
    pub pid: u32,
    pub log: PathBuf,
    child: Child,
}

impl RunningDut {
    /// The last lines of its log, for error messages.
    pub fn log_tail(&self) -> String {
        log_tail(&self.log)
    }

    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// SIGTERM, then SIGKILL after 5 s.
    pub fn stop(&mut self) {
        // SAFETY: kill(2) has no memory preconditions.
        unsafe {
            libc::kill(self.pid as i32, libc::SIGTERM);
        }
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(5) {
            if !self.alive() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RunningDut {
    fn drop(&mut self) {
        if self.alive() {
            self.stop();
        }
    }
}

fn log_tail(p: &Path) -> String {
    let text = std::fs::read_to_string(p).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(8)..].join(" | ")
}

fn write(dir: &Path, name: &str, text: &str) -> Result<PathBuf, (BenchError, String)> {
    let p = dir.join(name);
    std::fs::write(&p, text)
        .map_err(|e| (BenchError::DutStart, format!("{}: {e}", p.display())))?;
    Ok(p)
}

fn peers(n: usize) -> impl Iterator<Item = (usize, std::net::Ipv4Addr)> {
    (0..n).filter_map(|i| peer_addr(i).map(|a| (i, a)))
}

/// Writes the config, starts the daemon and waits until it listens on
/// port 179 in its namespace (at most 20 s).
pub fn start(spec: &DutSpec, env: &DutEnv<'_>) -> Result<RunningDut, (BenchError, String)> {
    std::fs::create_dir_all(env.dir)
        .map_err(|e| (BenchError::DutStart, format!("{}: {e}", env.dir.display())))?;
    let d = env.dir.display().to_string();
    if env.route_server.is_some() && !matches!(spec.kind, DutKind::Tesserad(_) | DutKind::Bird) {
        return Err((
            BenchError::Unsupported,
            format!(
                "{}: scenario g (route server) is configured for tesserad and BIRD only",
                spec.label()
            ),
        ));
    }
    let argv: Vec<String> = match &spec.kind {
        DutKind::Tesserad(mode) => {
            let conf = write(env.dir, "tesserad.toml", &tesserad_conf(env, mode))?;
            let c = conf.display().to_string();
            let bin = env.tesserad.display().to_string();
            // A pipeline tesserad does not run yet is a config error:
            // report it as such, before anything is started.
            if let Err(e) = sh(&bin, &["-p", "-c", &c]) {
                let kind = if e.contains("pipeline") || e.contains("not supported") {
                    BenchError::Unsupported
                } else {
                    BenchError::DutStart
                };
                return Err((kind, e));
            }
            vec![bin, "-c".into(), c, "--log".into(), "warn".into()]
        }
        DutKind::Bird => {
            let conf = write(env.dir, "bird.conf", &bird_conf(env))?;
            let c = conf.display().to_string();
            sh("bird", &["-p", "-c", &c]).map_err(|e| (BenchError::DutStart, e))?;
            vec![
                "bird".into(),
                "-f".into(),
                "-c".into(),
                c,
                "-s".into(),
                format!("{d}/bird.ctl"),
            ]
        }
        DutKind::Frr => {
            let conf = write(env.dir, "bgpd.conf", &frr_conf(env))?;
            [
                "/usr/lib/frr/bgpd",
                "-Z",
                "-n",
                "-S",
                "-f",
                &conf.display().to_string(),
                "-i",
                &format!("{d}/bgpd.pid"),
                "--vty_socket",
                &d,
                "-P",
                "0",
                "-l",
                &DUT_ADDR.to_string(),
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        }
        DutKind::Gobgp => {
            let conf = write(env.dir, "gobgpd.toml", &gobgp_conf(env))?;
            [
                "gobgpd",
                "-f",
                &conf.display().to_string(),
                "--api-hosts",
                "127.0.0.1:50051",
                "-l",
                "warn",
            ]
            .iter()
            .map(|s| s.to_string())
            .collect()
        }
        DutKind::Openbgpd => {
            ensure_openbgpd_user();
            let conf = write(env.dir, "bgpd.conf", &openbgpd_conf(env))?;
            let c = conf.display().to_string();
            sh("/usr/sbin/bgpd", &["-n", "-f", &c]).map_err(|e| (BenchError::DutStart, e))?;
            vec!["/usr/sbin/bgpd".into(), "-d".into(), "-f".into(), c]
        }
    };
    let log = env.dir.join("daemon.log");
    let out = std::fs::File::create(&log)
        .map_err(|e| (BenchError::DutStart, format!("{}: {e}", log.display())))?;
    let err = out
        .try_clone()
        .map_err(|e| (BenchError::DutStart, e.to_string()))?;
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", env.ns])
        .args(&argv)
        .current_dir(env.dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err);
    // `ip netns exec` execs the daemon in the same process, which keeps
    // the mask; its threads and children inherit it.
    if let Some(c) = env.cpus {
        crate::cpus::pin_command(&mut cmd, c);
    }
    let child = cmd
        .spawn()
        .map_err(|e| (BenchError::DutStart, format!("{}: {e}", argv.join(" "))))?;
    let mut dut = RunningDut {
        pid: child.id(),
        log,
        child,
    };
    let t0 = Instant::now();
    loop {
        if !dut.alive() {
            let tail = dut.log_tail();
            let kind = if tail.contains("pipeline") {
                BenchError::Unsupported
            } else {
                BenchError::DutExited
            };
            return Err((kind, format!("{} exited: {tail}", argv.join(" "))));
        }
        if listening(env.ns) {
            if let Some(c) = env.cpus {
                // The kernel's word, not ours, that the mask holds.
                let want = crate::cpus::format_list(c);
                let got = crate::cpus::allowed_list_of(dut.pid);
                if got.as_deref() != Some(want.as_str()) {
                    return Err((
                        BenchError::Placement,
                        format!("the DUT runs on CPUs {got:?}, not {want}"),
                    ));
                }
            }
            return Ok(dut);
        }
        if t0.elapsed() > Duration::from_secs(20) {
            return Err((
                BenchError::DutStart,
                format!("not listening on port 179 after 20 s: {}", dut.log_tail()),
            ));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Whether something listens on TCP port 179 in `ns`.
fn listening(ns: &str) -> bool {
    sh("ip", &["netns", "exec", ns, "ss", "-Hltn", "sport = :179"])
        .is_ok_and(|o| o.contains("LISTEN"))
}

/// OpenBGPD drops privileges to `_openbgpd` and chroots to its home; the
/// Debian package creates the user through systemd-sysusers, which
/// containers often never run.
fn ensure_openbgpd_user() {
    if sh("getent", &["passwd", "_openbgpd"]).is_err() {
        let _ = sh("systemd-sysusers", &["/usr/lib/sysusers.d/openbgpd.conf"]);
        if sh("getent", &["passwd", "_openbgpd"]).is_err() {
            let _ = sh(
                "useradd",
                &[
                    "-r",
                    "-d",
                    "/run/openbgpd",
                    "-s",
                    "/usr/sbin/nologin",
                    "_openbgpd",
                ],
            );
        }
    }
    let _ = std::fs::create_dir_all("/run/openbgpd");
}

fn tesserad_conf(env: &DutEnv<'_>, mode: &TesseradSpec) -> String {
    let pipeline = &mode.pipeline;
    let mut s = format!(
        "# generated by tessera bench (schema: docs/config.md)\n[router]\nid = \"{DUT_ADDR}\"\n\
         asn = {DUT_AS}\nlisten = [\"{DUT_ADDR}:179\"]\nhold_time = {HOLD_TIME}\n\
         pipeline = \"{pipeline}\"\n"
    );
    if let Some(t) = mode.threads {
        let _ = writeln!(s, "threads = {t}");
    }
    if let Some(l) = &mode.locks {
        let _ = writeln!(s, "locks = \"{l}\"");
    }
    if let Some(v) = &mode.streams {
        let _ = writeln!(s, "streams = \"{v}\"");
    }
    let _ = write!(
        s,
        "\n[control]\nsocket = \"{}/tesserad.sock\"\n",
        env.dir.display()
    );
    let gen_export = if env.export_all { "accept" } else { "reject" };
    let mut policies = String::new();
    for (i, a) in peers(env.peers) {
        let gas = generator_as(i, distinct_as(env));
        let (export, rs) = match rs_client(env, i) {
            None => (gen_export.to_string(), ""),
            Some(None) => ("accept".to_string(), "route_server_client = true\n"),
            Some(Some(f)) => {
                let fas = generator_as(f, true);
                let _ = write!(
                    policies,
                    "\n[policy.rs_g{i}]\ndefault = \"accept\"\n\n[[policy.rs_g{i}.term]]\n\
                     match.as_path = \"^{fas}_\"\nthen.action = \"reject\"\n"
                );
                (format!("rs_g{i}"), "route_server_client = true\n")
            }
        };
        let _ = write!(
            s,
            "\n[[neighbor]]\nname = \"g{i}\"\naddress = \"{a}\"\nremote_as = {gas}\n\
             passive = true\nfamilies = [\"ipv4-unicast\", \"ipv6-unicast\"]\nimport = \"accept\"\nexport = \"{export}\"\n{rs}"
        );
    }
    s.push_str(&policies);
    let _ = write!(
        s,
        "\n[[neighbor]]\nname = \"monitor\"\naddress = \"{MONITOR_ADDR}\"\nremote_as = {MONITOR_AS}\n\
         passive = true\nfamilies = [\"ipv4-unicast\", \"ipv6-unicast\"]\nimport = \"reject\"\nexport = \"accept\"\n"
    );
    s
}

fn bird_conf(env: &DutEnv<'_>) -> String {
    let mut s = format!(
        "# generated by tessera bench\nrouter id {DUT_ADDR};\nlog \"{}/bird.log\" {{ warning, error, fatal }};\n\
         protocol device {{ }}\n",
        env.dir.display()
    );
    // Direct sessions need next hops on the link; trace next hops are
    // elsewhere, so resolve them recursively over a static default.
    let (extra, gw) = if env.foreign_next_hops {
        s.push_str(&format!(
            "protocol static {{ ipv4; route 0.0.0.0/0 via {MONITOR_ADDR}; }}\n\
             protocol static {{ ipv6; route ::/0 via {PEERS_ADDR6}; }}\n"
        ));
        ("  multihop;\n", " gateway recursive;")
    } else {
        ("", "")
    };
    let (ex4, ex6) = if env.export_all {
        (
            "all".to_string(),
            format!("all; next hop address {DUT_ADDR6}"),
        )
    } else {
        ("none".to_string(), "none".to_string())
    };
    let _ = write!(
        s,
        "template bgp gen {{\n  local {DUT_ADDR} as {DUT_AS};\n  passive on;\n  hold time {HOLD_TIME};\n{extra}\
         \x20 ipv4 {{ import all; export {ex4};{gw} }};\n  ipv6 {{ import all; export {ex6};{gw} }};\n}}\n"
    );
    for (i, a) in peers(env.peers) {
        let gas = generator_as(i, distinct_as(env));
        match rs_client(env, i) {
            None => {
                let _ = writeln!(s, "protocol bgp g{i} from gen {{ neighbor {a} as {gas}; }}");
            }
            Some(own) => {
                // RFC 7947 client: `rs client` (no AS prepend), next hop
                // kept; odd clients through their own filter.
                let filter = match own {
                    None => "all".to_string(),
                    Some(f) => format!(
                        "filter {{ if bgp_path.first = {} then reject; accept; }}",
                        generator_as(f, true)
                    ),
                };
                let _ = write!(
                    s,
                    "protocol bgp g{i} {{\n  local {DUT_ADDR} as {DUT_AS};\n  neighbor {a} as {gas};\n\
                     \x20 passive on;\n  hold time {HOLD_TIME};\n  rs client;\n\
                     \x20 ipv4 {{ import all; export {filter}; next hop keep; }};\n\
                     \x20 ipv6 {{ import all; export {filter}; next hop keep; }};\n}}\n"
                );
            }
        }
    }
    let _ = write!(
        s,
        "protocol bgp monitor {{\n  local {DUT_ADDR} as {DUT_AS};\n  neighbor {MONITOR_ADDR} as {MONITOR_AS};\n\
         \x20 passive on;\n  hold time {HOLD_TIME};\n  ipv4 {{ import none; export all; }};\n\
         \x20 ipv6 {{ import none; export all; next hop address {DUT_ADDR6}; }};\n}}\n"
    );
    s
}

fn frr_conf(env: &DutEnv<'_>) -> String {
    let mut s = format!(
        "! generated by tessera bench\nfrr defaults traditional\nhostname dut\n\
         log file {}/bgpd.log warnings\n!\nrouter bgp {DUT_AS}\n bgp router-id {DUT_ADDR}\n\
         \x20no bgp ebgp-requires-policy\n no bgp default ipv4-unicast\n\
         \x20neighbor GEN peer-group\n neighbor GEN passive\n\
         \x20neighbor GEN timers 30 {HOLD_TIME}\n",
        env.dir.display()
    );
    // One generator AS: the peer group's; distinct ones: each member's own
    // (a member's remote-as comes before it joins a group without one).
    if !env.export_all {
        let _ = writeln!(s, " neighbor GEN remote-as {GENERATOR_AS}");
    }
    if env.foreign_next_hops {
        // bgpd without zebra cannot tell connected networks; let it accept
        // next hops that are not on the link.
        s.push_str(" neighbor GEN ebgp-multihop 255\n");
    }
    if env.export_all {
        // As towards the monitor: FRR's eBGP default (30 s, `frr
        // defaults traditional`) would hold the generators' updates back
        // past the end of a run.
        s.push_str(" neighbor GEN advertisement-interval 0\n");
    }
    for (i, a) in peers(env.peers) {
        if env.export_all {
            let _ = writeln!(s, " neighbor {a} remote-as {}", generator_as(i, true));
        }
        let _ = writeln!(s, " neighbor {a} peer-group GEN");
    }
    let (gen4, gen6) = if env.export_all {
        ("ALL", "NH6")
    } else {
        ("NONE", "NONE")
    };
    let _ = write!(
        s,
        " neighbor {MONITOR_ADDR} remote-as {MONITOR_AS}\n neighbor {MONITOR_ADDR} passive\n\
         \x20neighbor {MONITOR_ADDR} timers 30 {HOLD_TIME}\n neighbor {MONITOR_ADDR} advertisement-interval 0\n\
         \x20address-family ipv4 unicast\n  neighbor GEN activate\n  neighbor GEN route-map {gen4} out\n\
         \x20 neighbor {MONITOR_ADDR} activate\n exit-address-family\n address-family ipv6 unicast\n\
         \x20 neighbor GEN activate\n  neighbor GEN route-map {gen6} out\n  neighbor {MONITOR_ADDR} activate\n\
         \x20 neighbor {MONITOR_ADDR} route-map NH6 out\n exit-address-family\n!\nroute-map NONE deny 10\n!\nroute-map ALL permit 10\n!\n\
         route-map NH6 permit 10\n set ipv6 next-hop global {DUT_ADDR6}\n!\n"
    );
    s
}

fn gobgp_conf(env: &DutEnv<'_>) -> String {
    let default_export = if env.export_all {
        "accept-route"
    } else {
        "reject-route"
    };
    let mut s = format!(
        "# generated by tessera bench\n[global.config]\n  as = {DUT_AS}\n  router-id = \"{DUT_ADDR}\"\n\
         \x20 port = 179\n  local-address-list = [\"{DUT_ADDR}\"]\n\
         [global.apply-policy.config]\n  export-policy-list = [\"to-monitor\"]\n\
         \x20 default-export-policy = \"{default_export}\"\n  default-import-policy = \"accept-route\"\n\n\
         [[defined-sets.neighbor-sets]]\n  neighbor-set-name = \"monitor\"\n  neighbor-info-list = [\"{MONITOR_ADDR}\"]\n\n\
         [[policy-definitions]]\n  name = \"to-monitor\"\n  [[policy-definitions.statements]]\n    name = \"accept\"\n\
         \x20   [policy-definitions.statements.conditions.match-neighbor-set]\n      neighbor-set = \"monitor\"\n\
         \x20   [policy-definitions.statements.actions]\n      route-disposition = \"accept-route\"\n"
    );
    let mut neighbor = |addr: String, asn: u32| {
        let _ = write!(
            s,
            "\n[[neighbors]]\n  [neighbors.config]\n    neighbor-address = \"{addr}\"\n    peer-as = {asn}\n\
             \x20 [neighbors.transport.config]\n    passive-mode = true\n    local-address = \"{DUT_ADDR}\"\n\
             \x20 [neighbors.timers.config]\n    hold-time = {HOLD_TIME}\n\
             \x20 [[neighbors.afi-safis]]\n    [neighbors.afi-safis.config]\n      afi-safi-name = \"ipv4-unicast\"\n\
             \x20 [[neighbors.afi-safis]]\n    [neighbors.afi-safis.config]\n      afi-safi-name = \"ipv6-unicast\"\n"
        );
    };
    for (i, a) in peers(env.peers) {
        neighbor(a.to_string(), generator_as(i, distinct_as(env)));
    }
    neighbor(MONITOR_ADDR.to_string(), MONITOR_AS);
    s
}

fn openbgpd_conf(env: &DutEnv<'_>) -> String {
    let allow_to = if env.export_all {
        "any".to_string()
    } else {
        MONITOR_ADDR.to_string()
    };
    let mut s = format!(
        "# generated by tessera bench\nAS {DUT_AS}\nrouter-id {DUT_ADDR}\nsocket \"{}/bgpd.sock\"\n\
         listen on {DUT_ADDR}\nfib-update no\n",
        env.dir.display()
    );
    if env.foreign_next_hops {
        s.push_str("nexthop qualify via default\n");
    }
    // Trace UPDATEs keep their recorded AS_PATH, whose first AS is the
    // recorded peer's, not the generator's: OpenBGPD checks that by default
    // (RFC 4271 §6.3 leaves the check optional) and would reset every
    // trace session with 3/11; the other DUTs accept such paths.
    let _ = write!(
        s,
        "group \"gen\" {{\n  passive\n  holdtime {HOLD_TIME}\n  enforce neighbor-as no\n  announce IPv4 unicast\n\
         \x20 announce IPv6 unicast\n"
    );
    if !env.export_all {
        let _ = writeln!(s, "  remote-as {GENERATOR_AS}");
    }
    for (i, a) in peers(env.peers) {
        if env.export_all {
            let _ = writeln!(
                s,
                "  neighbor {a} {{ remote-as {} }}",
                generator_as(i, true)
            );
        } else {
            let _ = writeln!(s, "  neighbor {a}");
        }
    }
    let _ = write!(
        s,
        "}}\nneighbor {MONITOR_ADDR} {{\n  remote-as {MONITOR_AS}\n  passive\n  holdtime {HOLD_TIME}\n\
         \x20 announce IPv4 unicast\n  announce IPv6 unicast\n  local-address {DUT_ADDR}\n\
         \x20 local-address {DUT_ADDR6}\n}}\nallow from any\nallow to {allow_to}\n"
    );
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dut_specs_parse() {
        let s: DutSpec = "tesserad:sharded:2"
            .parse()
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.label(), "tesserad-sharded-2");
        // Plain `tesserad` is the daemon's default mode, not sequential.
        assert_eq!(
            "tesserad".parse::<DutSpec>().map(|s| s.label()),
            Ok("tesserad-sharded".into())
        );
        assert_eq!(
            "tesserad:sequential".parse::<DutSpec>().map(|s| s.label()),
            Ok("tesserad-sequential".into())
        );
        assert_eq!("bird".parse::<DutSpec>().map(|s| s.kind), Ok(DutKind::Bird));
        assert!("tesserad:fast".parse::<DutSpec>().is_err());
        assert!("tesserad:sharded:0".parse::<DutSpec>().is_err());
        assert!("tesserad:sharded:2:x".parse::<DutSpec>().is_err());
        assert!("quagga".parse::<DutSpec>().is_err());
    }

    /// `router.locks` and `router.streams` (issue 17): named by value after
    /// the thread count, written into the config, part of the label.
    #[test]
    fn dut_specs_with_locks_and_streams() {
        let parse = |s: &str| s.parse::<DutSpec>();
        let s = parse("tesserad:worker-pool:2:fine:per-worker").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            s.kind,
            DutKind::Tesserad(TesseradSpec {
                pipeline: "worker-pool".into(),
                threads: Some(2),
                locks: Some("fine".into()),
                streams: Some("per-worker".into()),
            })
        );
        assert_eq!(s.label(), "tesserad-worker-pool-2-fine-per-worker");
        for (spec, label) in [
            ("tesserad:per-peer:2:fine", "tesserad-per-peer-2-fine"),
            ("tesserad:per-peer:2:stripes", "tesserad-per-peer-2-stripes"),
            ("tesserad:per-peer:fine", "tesserad-per-peer-fine"),
            (
                "tesserad:worker-pool:per-worker",
                "tesserad-worker-pool-per-worker",
            ),
            (
                "tesserad:worker-pool:2:stripes:per-session",
                "tesserad-worker-pool-2-stripes-per-session",
            ),
            ("tesserad:sharded:2", "tesserad-sharded-2"),
            ("tesserad", "tesserad-sharded"),
        ] {
            let s = parse(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
            assert_eq!(s.label(), label);
            // The charts read labels back.
            assert_eq!(DutSpec::from_tesserad_label(label), Some(s), "{label}");
        }
        assert_eq!(DutSpec::from_tesserad_label("bird"), None);
        // Unknown values, wrong pipelines, order and repeats: clear errors.
        for (spec, says) in [
            ("tesserad:per-peer:2:coarse", "unexpected field \"coarse\""),
            ("tesserad:per-peer:2:fine:fine", "unexpected field \"fine\""),
            (
                "tesserad:worker-pool:2:per-worker:fine",
                "unexpected field \"fine\"",
            ),
            ("tesserad:worker-pool:fine:2", "unexpected field \"2\""),
            (
                "tesserad:sharded:2:fine",
                "applies to per-peer and worker-pool only",
            ),
            (
                "tesserad:per-peer:2:per-worker",
                "applies to worker-pool only",
            ),
            ("tesserad:per-peer:0:fine", "positive integer"),
        ] {
            match parse(spec) {
                Ok(s) => panic!("{spec} parsed as {s:?}"),
                Err(e) => assert!(e.contains(says), "{spec}: {e}"),
            }
        }
        let env = DutEnv {
            ns: "n",
            dir: Path::new("/tmp/x"),
            peers: 2,
            tesserad: Path::new("tesserad"),
            foreign_next_hops: false,
            export_all: false,
            route_server: None,
            cpus: None,
        };
        let conf = tesserad_conf(
            &env,
            &TesseradSpec {
                pipeline: "worker-pool".into(),
                threads: Some(2),
                locks: Some("fine".into()),
                streams: Some("per-worker".into()),
            },
        );
        for line in [
            "pipeline = \"worker-pool\"",
            "threads = 2",
            "locks = \"fine\"",
            "streams = \"per-worker\"",
        ] {
            assert!(conf.lines().any(|l| l == line), "{line} missing in\n{conf}");
        }
        // Unnamed, the keys stay unwritten (tesserad's defaults).
        let plain = tesserad_conf(&env, &TesseradSpec::of("per-peer", Some(2)));
        assert!(
            !plain.contains("locks") && !plain.contains("streams"),
            "{plain}"
        );
    }

    #[test]
    fn configs_name_every_peer_and_the_monitor() {
        let dir = Path::new("/tmp/x");
        let env = DutEnv {
            ns: "n",
            dir,
            peers: 3,
            tesserad: Path::new("tesserad"),
            foreign_next_hops: false,
            export_all: false,
            route_server: None,
            cpus: None,
        };
        for text in [
            tesserad_conf(&env, &TesseradSpec::of("sharded", Some(2))),
            bird_conf(&env),
            frr_conf(&env),
            gobgp_conf(&env),
            openbgpd_conf(&env),
        ] {
            for a in ["198.18.1.1", "198.18.1.3", "198.18.0.2"] {
                assert!(text.contains(a), "{a} missing in\n{text}");
            }
            assert!(!text.contains("198.18.1.4"), "{text}");
        }
        assert!(tesserad_conf(&env, &TesseradSpec::of("sharded", Some(2))).contains("threads = 2"));
        assert!(openbgpd_conf(&env).contains("fib-update no"));
        assert!(openbgpd_conf(&env).contains("enforce neighbor-as no"));
        assert!(!bird_conf(&env).contains("multihop"));
        let env = DutEnv {
            foreign_next_hops: true,
            ..env
        };
        assert!(bird_conf(&env).contains("gateway recursive"));
        assert!(openbgpd_conf(&env).contains("nexthop qualify via default"));
        // --export all: every DUT exports to the generator peers too.
        assert!(
            tesserad_conf(&env, &TesseradSpec::of("sharded", None)).contains("export = \"reject\"")
        );
        let env = DutEnv {
            export_all: true,
            ..env
        };
        assert!(!tesserad_conf(&env, &TesseradSpec::of("sharded", None))
            .contains("export = \"reject\""));
        assert!(bird_conf(&env).contains("ipv4 { import all; export all;"));
        assert!(!frr_conf(&env).contains("GEN route-map NONE"));
        assert!(gobgp_conf(&env).contains("default-export-policy = \"accept-route\""));
        assert!(openbgpd_conf(&env).contains("allow to any"));
    }

    /// Scenario (g): feeders export nothing, clients are route-server
    /// clients, odd ones through a policy of their own; other DUTs say
    /// "not supported".
    #[test]
    fn route_server_configs() {
        let env = DutEnv {
            ns: "n",
            dir: Path::new("/tmp/x"),
            peers: 6,
            tesserad: Path::new("tesserad"),
            foreign_next_hops: false,
            export_all: false,
            route_server: Some(2),
            cpus: None,
        };
        let t = tesserad_conf(&env, &TesseradSpec::of("sharded", None));
        assert_eq!(t.matches("route_server_client = true").count(), 4, "{t}");
        assert_eq!(t.matches("export = \"reject\"").count(), 2, "{t}");
        // Clients 1 and 3 (peers 3 and 5) filter feeders 1 and 1.
        assert!(t.contains("export = \"rs_g3\""), "{t}");
        assert!(t.contains("[policy.rs_g5]"), "{t}");
        let fas = generator_as(1, true);
        assert!(t.contains(&format!("match.as_path = \"^{fas}_\"")), "{t}");
        assert!(declares(&t, 0, generator_as(0, true)), "{t}");
        let b = bird_conf(&env);
        assert_eq!(b.matches("rs client;").count(), 4, "{b}");
        assert!(b.contains(&format!("bgp_path.first = {fas}")), "{b}");
        let spec: DutSpec = "frr".parse().unwrap_or_else(|e| panic!("{e}"));
        assert!(matches!(
            start(&spec, &env),
            Err((BenchError::Unsupported, _))
        ));
    }

    /// The lines that declare generator peer `i` with AS `asn`, per DUT.
    fn declares(text: &str, i: usize, asn: u32) -> bool {
        let a = peer_addr(i).map(|a| a.to_string()).unwrap_or_default();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let pos = |l: &str| lines.iter().position(|x| *x == l);
        // tesserad: address then remote_as; GoBGP: neighbor-address then
        // peer-as; both within a few lines.
        let near = |first: &str, then: &str| {
            pos(first).is_some_and(|k| lines.iter().skip(k).take(4).any(|x| *x == then))
        };
        near(&format!("address = \"{a}\""), &format!("remote_as = {asn}"))
            || text.contains(&format!("neighbor {a} as {asn};"))
            || pos(&format!("neighbor {a} remote-as {asn}")).is_some()
            || near(
                &format!("neighbor-address = \"{a}\""),
                &format!("peer-as = {asn}"),
            )
            || pos(&format!("neighbor {a} {{ remote-as {asn} }}")).is_some()
    }

    #[test]
    fn export_all_gives_every_generator_its_own_as() {
        let base = DutEnv {
            ns: "n",
            dir: Path::new("/tmp/x"),
            peers: 3,
            tesserad: Path::new("tesserad"),
            foreign_next_hops: false,
            export_all: false,
            route_server: None,
            cpus: None,
        };
        let all = DutEnv {
            export_all: true,
            ..base.clone()
        };
        let ases: Vec<u32> = (0..3).map(|i| generator_as(i, true)).collect();
        assert_eq!(
            ases,
            [
                GENERATOR_AS_BASE,
                GENERATOR_AS_BASE + 1,
                GENERATOR_AS_BASE + 2
            ]
        );
        for a in &ases {
            assert!(![DUT_AS, MONITOR_AS, GENERATOR_AS].contains(a));
        }
        assert_eq!(generator_as(2, false), GENERATOR_AS);
        let confs = |e: &DutEnv<'_>| {
            [
                (
                    "tesserad",
                    tesserad_conf(e, &TesseradSpec::of("sharded", None)),
                ),
                ("bird", bird_conf(e)),
                ("frr", frr_conf(e)),
                ("gobgp", gobgp_conf(e)),
                ("openbgpd", openbgpd_conf(e)),
            ]
        };
        for (dut, text) in confs(&all) {
            for (i, asn) in ases.iter().enumerate() {
                assert!(declares(&text, i, *asn), "{dut}: g{i} as {asn}\n{text}");
                // ... and with no other AS.
                for other in &ases {
                    if other != asn {
                        assert!(!declares(&text, i, *other), "{dut}: g{i}\n{text}");
                    }
                }
            }
            assert!(
                !text.contains(&GENERATOR_AS.to_string()),
                "{dut}: the shared generator AS is gone\n{text}"
            );
        }
        // Without --export all: one generator AS, as before.
        for (dut, text) in confs(&base) {
            assert!(text.contains(&GENERATOR_AS.to_string()), "{dut}\n{text}");
            assert!(
                !text.contains(&GENERATOR_AS_BASE.to_string()),
                "{dut}\n{text}"
            );
        }
        // The peer group / group carries the shared AS, members their own.
        assert!(frr_conf(&base).contains(" neighbor GEN remote-as "));
        assert!(!frr_conf(&all).contains(" neighbor GEN remote-as "));
        let group_as = format!("\n  remote-as {GENERATOR_AS}\n");
        assert!(openbgpd_conf(&base).contains(&group_as));
        assert!(!openbgpd_conf(&all).contains(&group_as));
    }
}
