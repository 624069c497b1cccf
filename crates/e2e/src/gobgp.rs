//! GoBGP: `gobgpd -f conf.toml --api-hosts 127.0.0.1:50051` inside the
//! speaker's namespace (its loopback is private, so the default port never
//! collides); the `gobgp` CLI must run in the same namespace.

use super::lab::Lab;
use super::peer::{require_all, Expect, Peer, Session};
use std::path::PathBuf;
use std::sync::Mutex;

pub const TOOLS: &[&str] = &["gobgpd", "gobgp"];
const API: &str = "127.0.0.1:50051";

pub struct Gobgp {
    pub name: String,
    pub pid: u32,
    pub dir: PathBuf,
    pub session: Session,
    extra: Mutex<Vec<String>>,
}

impl Gobgp {
    pub fn start(lab: &Lab, name: &str, s: &Session) -> Gobgp {
        let dir = lab.path(name);
        std::fs::create_dir_all(&dir).expect("gobgp dir");
        let vars = s.vars(&dir);
        let conf = super::render_file("gobgp", "peer.conf.tmpl", &vars);
        let conf_path = dir.join("gobgpd.toml");
        std::fs::write(&conf_path, conf).expect("gobgpd.toml");
        let pid = lab.spawn(
            name,
            &s.ns,
            &[
                "gobgpd",
                "-f",
                &conf_path.display().to_string(),
                "--api-hosts",
                API,
                "-l",
                "debug",
            ],
            &[],
        );
        let g = Gobgp {
            name: name.into(),
            pid,
            dir,
            session: s.clone(),
            extra: Mutex::new(Vec::new()),
        };
        lab.wait(15, &format!("{name} API"), || Ok(g.gobgp(&["global"]).ok()));
        let routes = super::render_file("gobgp", "routes.tmpl", &vars);
        for line in routes.lines().filter(|l| !l.trim().is_empty()) {
            let mut args = vec!["global", "rib", "add"];
            args.extend(line.split_whitespace());
            if let Err(e) = g.gobgp(&args) {
                lab.fail(&format!("{name}: cannot add route: {e}"));
            }
        }
        g
    }

    pub fn gobgp(&self, args: &[&str]) -> Result<String, String> {
        let mut argv = vec![
            "ip",
            "netns",
            "exec",
            &self.session.ns,
            "gobgp",
            "-u",
            "127.0.0.1",
            "-p",
            "50051",
        ];
        argv.extend_from_slice(args);
        super::sh(&argv)
    }

    pub fn neighbor(&self) -> Result<String, String> {
        self.gobgp(&["neighbor", &self.session.peer_v4])
    }
}

fn afi(prefix: &str) -> &'static str {
    if prefix.contains(':') {
        "ipv6"
    } else {
        "ipv4"
    }
}

impl Peer for Gobgp {
    fn kind(&self) -> &'static str {
        "gobgp"
    }
    fn pid(&self) -> u32 {
        self.pid
    }
    fn established(&self) -> Result<bool, String> {
        Ok(self
            .neighbor()?
            .to_lowercase()
            .contains("bgp state = established"))
    }
    fn route(&self, prefix: &str) -> Result<Option<String>, String> {
        let out = self.gobgp(&["global", "rib", "-a", afi(prefix), prefix])?;
        Ok(out.contains(prefix).then_some(out))
    }
    fn set_extra(&self, prefixes: &[String]) -> Result<(), String> {
        let mut old = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        for p in old.iter().filter(|p| !prefixes.contains(p)) {
            self.gobgp(&["global", "rib", "del", p, "-a", afi(p)])?;
        }
        for p in prefixes.iter().filter(|p| !old.contains(p)) {
            let nh = if p.contains(':') {
                &self.session.local_v6
            } else {
                &self.session.local_v4
            };
            self.gobgp(&["global", "rib", "add", p, "-a", afi(p), "nexthop", nh])?;
        }
        *old = prefixes.to_vec();
        Ok(())
    }
    fn request_refresh(&self) -> Result<(), String> {
        self.gobgp(&[
            "neighbor",
            &self.session.peer_v4,
            "softresetin",
            "-a",
            "ipv4",
        ])
        .map(|_| ())
    }
    fn updates_received(&self) -> Result<u64, String> {
        // "    Updates:                2          3" (sent, received)
        let out = self.neighbor()?;
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with("Update"))
            .ok_or_else(|| format!("no Updates line in gobgp neighbor:\n{out}"))?;
        line.split_whitespace()
            .nth(2)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("unparsable: {line}"))
    }
    fn shutdown(&self, msg: &str) -> Result<(), String> {
        self.gobgp(&[
            "neighbor",
            &self.session.peer_v4,
            "disable",
            "--reason",
            msg,
        ])
        .map(|_| ())
    }
    fn enable(&self) -> Result<(), String> {
        self.gobgp(&["neighbor", &self.session.peer_v4, "enable"])
            .map(|_| ())
    }
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("../").join(format!("{}.out", self.name)))
            .unwrap_or_default()
    }
    fn check(&self, text: &str, e: &Expect<'_>) -> Result<(), String> {
        let r = e.route;
        let path: Vec<String> = e.as_path.iter().map(|a| a.to_string()).collect();
        let mut need = vec![
            format!(" {} ", path.join(" ")),
            format!(" {} ", e.next_hop),
            format!("{{Communities: {}:{}}}", r.community.0, r.community.1),
            format!("{}:{}", r.ext_rt.0, r.ext_rt.1),
            format!("{}:{}:{}", r.large.0, r.large.1, r.large.2),
        ];
        if e.med {
            need.push(format!("{{Med: {}}}", r.med));
        }
        require_all("gobgp", text, &need)
    }
}
