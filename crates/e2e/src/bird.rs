//! BIRD 2: `bird -f -c CONF -s SOCK` in the speaker's namespace; queries
//! with `birdc -s SOCK` (the socket is a file, reachable from outside the
//! namespace).

use super::lab::Lab;
use super::peer::{require_all, Expect, Peer, Session};
use std::path::PathBuf;
use std::sync::Mutex;

pub const TOOLS: &[&str] = &["bird", "birdc"];

pub struct Bird {
    pub name: String,
    pub pid: u32,
    pub dir: PathBuf,
    pub sock: PathBuf,
    pub session: Session,
    extra: Mutex<Vec<String>>,
}

impl Bird {
    /// Starts BIRD from `tests/interop/bird/peer.conf.tmpl`.
    pub fn start(lab: &Lab, name: &str, s: &Session) -> Bird {
        let dir = lab.path(name);
        std::fs::create_dir_all(&dir).expect("bird dir");
        let conf = super::render_file("bird", "peer.conf.tmpl", &s.vars(&dir));
        Bird::start_conf(lab, name, s, &conf, &[])
    }

    /// Starts BIRD with the config text `conf` (its log and socket in
    /// `lab.path(name)`) and extra command-line `args` (`-R`: graceful
    /// restart recovery).
    pub fn start_conf(lab: &Lab, name: &str, s: &Session, conf: &str, args: &[&str]) -> Bird {
        let dir = lab.path(name);
        std::fs::create_dir_all(&dir).expect("bird dir");
        std::fs::write(dir.join("extra.conf"), "").expect("extra.conf");
        let conf_path = dir.join("bird.conf");
        std::fs::write(&conf_path, conf).expect("bird.conf");
        let sock = dir.join("bird.ctl");
        if let Err(e) = super::sh(&["bird", "-p", "-c", &conf_path.display().to_string()]) {
            panic!("BIRD rejects its config: {e}");
        }
        let conf_arg = conf_path.display().to_string();
        let sock_arg = sock.display().to_string();
        let mut argv = vec!["bird", "-f", "-c", &conf_arg, "-s", &sock_arg];
        argv.extend_from_slice(args);
        let pid = lab.spawn(name, &s.ns, &argv, &[]);
        lab.add_log(&format!("{name} log"), &dir.join("bird.log"));
        let b = Bird {
            name: name.into(),
            pid,
            dir,
            sock,
            session: s.clone(),
            extra: Mutex::new(Vec::new()),
        };
        lab.wait(10, &format!("{name} control socket"), || {
            Ok(b.birdc(&["show", "status"]).ok())
        });
        b
    }

    pub fn birdc(&self, args: &[&str]) -> Result<String, String> {
        let sock = self.sock.display().to_string();
        let mut argv = vec!["birdc", "-s", &sock];
        argv.extend_from_slice(args);
        super::sh(&argv)
    }

    /// `show protocols all peer`.
    pub fn protocol(&self) -> Result<String, String> {
        self.birdc(&["show", "protocols", "all", "peer"])
    }
}

impl Peer for Bird {
    fn kind(&self) -> &'static str {
        "bird"
    }
    fn pid(&self) -> u32 {
        self.pid
    }
    fn established(&self) -> Result<bool, String> {
        Ok(self.protocol()?.contains("Established"))
    }
    fn route(&self, prefix: &str) -> Result<Option<String>, String> {
        let table = if prefix.contains(':') { "t6" } else { "t4" };
        // birdc exits 1 on "Network not found".
        let out = match self.birdc(&["show", "route", prefix, "table", table, "all"]) {
            Err(e) if e.contains("Network not found") => return Ok(None),
            r => r?,
        };
        Ok((!out.contains("Network not found")
            && out.contains(prefix.split('/').next().unwrap_or(prefix)))
        .then_some(out))
    }
    fn set_extra(&self, prefixes: &[String]) -> Result<(), String> {
        let (v6, v4): (Vec<&String>, Vec<&String>) = prefixes.iter().partition(|p| p.contains(':'));
        let mut conf = String::new();
        for (name, ver, list) in [("extra4", 4, &v4), ("extra6", 6, &v6)] {
            conf.push_str(&format!(
                "protocol static {name} {{\n  ipv{ver} {{ table t{ver}; }};\n"
            ));
            for p in list.iter() {
                conf.push_str(&format!("  route {p} unreachable;\n"));
            }
            conf.push_str("}\n");
        }
        std::fs::write(self.dir.join("extra.conf"), conf).map_err(|e| e.to_string())?;
        *self.extra.lock().unwrap_or_else(|e| e.into_inner()) = prefixes.to_vec();
        let out = self.birdc(&["configure"])?;
        if out.contains("Reconfigured") || out.contains("Reconfiguration in progress") {
            Ok(())
        } else {
            Err(format!("birdc configure: {out}"))
        }
    }
    fn request_refresh(&self) -> Result<(), String> {
        // `reload in` sends ROUTE-REFRESH when the peer supports it.
        self.birdc(&["reload", "in", "peer"]).map(|_| ())
    }
    fn updates_received(&self) -> Result<u64, String> {
        // "Import updates:  received rejected filtered ignored accepted",
        // summed over the channels.
        let out = self.protocol()?;
        let mut n = 0;
        for l in out
            .lines()
            .filter(|l| l.trim_start().starts_with("Import updates:"))
        {
            n += l
                .split_whitespace()
                .nth(2)
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
        }
        Ok(n)
    }
    fn shutdown(&self, msg: &str) -> Result<(), String> {
        self.birdc(&["disable", "peer", &format!("\"{msg}\"")])
            .map(|_| ())
    }
    fn enable(&self) -> Result<(), String> {
        self.birdc(&["enable", "peer"]).map(|_| ())
    }
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("bird.log")).unwrap_or_default()
    }
    fn check(&self, text: &str, e: &Expect<'_>) -> Result<(), String> {
        let r = e.route;
        let path: Vec<String> = e.as_path.iter().map(|a| a.to_string()).collect();
        let mut need = vec![
            format!("BGP.as_path: {}\n", path.join(" ")),
            format!("BGP.next_hop: {}", e.next_hop),
            format!("({},{})", r.community.0, r.community.1),
            format!("(rt, {}, {})", r.ext_rt.0, r.ext_rt.1),
            format!("({}, {}, {})", r.large.0, r.large.1, r.large.2),
        ];
        if e.med {
            need.push(format!("BGP.med: {}\n", r.med));
        }
        require_all("bird", text, &need)
    }
}
