//! FRR: `/usr/lib/frr/bgpd` standalone (`-Z` no zebra, `-n` no kernel,
//! `-S` no user switch) with its own `--vty_socket DIR`; queries with
//! `vtysh --vty_socket DIR -d bgpd -c ...`.

use super::lab::Lab;
use super::peer::{require_all, Expect, Peer, Session};
use std::path::PathBuf;
use std::sync::Mutex;

pub const BGPD: &str = "/usr/lib/frr/bgpd";
pub const TOOLS: &[&str] = &[BGPD, "vtysh"];

pub struct Frr {
    pub name: String,
    pub pid: u32,
    pub dir: PathBuf,
    pub session: Session,
    extra: Mutex<Vec<String>>,
}

impl Frr {
    pub fn start(lab: &Lab, name: &str, s: &Session) -> Frr {
        let dir = lab.path(name);
        std::fs::create_dir_all(&dir).expect("frr dir");
        let mut vars = s.vars(&dir);
        vars.push(("NAME", name.to_string()));
        let conf = super::render_file("frr", "peer.conf.tmpl", &vars);
        Frr::start_conf(lab, name, s, &conf)
    }

    /// Starts bgpd with the config text `conf` (its files in
    /// `lab.path(name)`).
    pub fn start_conf(lab: &Lab, name: &str, s: &Session, conf: &str) -> Frr {
        let dir = lab.path(name);
        std::fs::create_dir_all(&dir).expect("frr dir");
        let conf_path = dir.join("bgpd.conf");
        std::fs::write(&conf_path, conf).expect("bgpd.conf");
        let d = dir.display().to_string();
        let pid = lab.spawn(
            name,
            &s.ns,
            &[
                BGPD,
                "-Z",
                "-n",
                "-S",
                "-f",
                &conf_path.display().to_string(),
                "-i",
                &format!("{d}/bgpd.pid"),
                "--vty_socket",
                &d,
                "-P",
                "0",
                "-l",
                &s.local_v4,
                "-l",
                &s.local_v6,
            ],
            &[],
        );
        lab.add_log(&format!("{name} log"), &dir.join("bgpd.log"));
        let f = Frr {
            name: name.into(),
            pid,
            dir,
            session: s.clone(),
            extra: Mutex::new(Vec::new()),
        };
        lab.wait(15, &format!("{name} vty socket"), || {
            Ok(f.vtysh(&["show version"]).ok())
        });
        f
    }

    /// Runs `vtysh -c` commands in order (one session).
    pub fn vtysh(&self, cmds: &[&str]) -> Result<String, String> {
        let d = self.dir.display().to_string();
        let mut argv = vec!["vtysh", "--vty_socket", &d, "-d", "bgpd"];
        for c in cmds {
            argv.push("-c");
            argv.push(c);
        }
        super::sh(&argv)
    }

    fn config(&self, lines: &[String]) -> Result<String, String> {
        let mut cmds = vec![
            "configure terminal".to_string(),
            format!("router bgp {}", self.session.local_as),
        ];
        cmds.extend_from_slice(lines);
        let refs: Vec<&str> = cmds.iter().map(|s| s.as_str()).collect();
        self.vtysh(&refs)
    }

    pub fn neighbor(&self) -> Result<String, String> {
        self.vtysh(&[&format!("show bgp neighbors {}", self.session.peer_v4)])
    }
}

impl Peer for Frr {
    fn kind(&self) -> &'static str {
        "frr"
    }
    fn pid(&self) -> u32 {
        self.pid
    }
    fn established(&self) -> Result<bool, String> {
        Ok(self.neighbor()?.contains("BGP state = Established"))
    }
    fn route(&self, prefix: &str) -> Result<Option<String>, String> {
        let afi = if prefix.contains(':') { "ipv6" } else { "ipv4" };
        let out = self.vtysh(&[&format!("show bgp {afi} unicast {prefix}")])?;
        Ok(
            (!out.contains("Network not in table") && out.contains("BGP routing table entry"))
                .then_some(out),
        )
    }
    fn set_extra(&self, prefixes: &[String]) -> Result<(), String> {
        let mut old = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        let mut lines = Vec::new();
        for (afi, v6) in [("ipv4", false), ("ipv6", true)] {
            lines.push(format!("address-family {afi} unicast"));
            for p in old
                .iter()
                .filter(|p| p.contains(':') == v6 && !prefixes.contains(p))
            {
                lines.push(format!("no network {p}"));
            }
            for p in prefixes.iter().filter(|p| p.contains(':') == v6) {
                lines.push(format!("network {p}"));
            }
            lines.push("exit-address-family".into());
        }
        let out = self.config(&lines)?;
        if out.contains('%') {
            return Err(format!("vtysh: {out}"));
        }
        *old = prefixes.to_vec();
        Ok(())
    }
    fn request_refresh(&self) -> Result<(), String> {
        self.vtysh(&[&format!(
            "clear bgp ipv4 unicast {} soft in",
            self.session.peer_v4
        )])
        .map(|_| ())
    }
    fn updates_received(&self) -> Result<u64, String> {
        // "    Updates:                2          3" (sent, received)
        let out = self.neighbor()?;
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with("Updates:"))
            .ok_or("no Updates: line in show bgp neighbors")?;
        line.split_whitespace()
            .nth(2)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("unparsable: {line}"))
    }
    fn shutdown(&self, msg: &str) -> Result<(), String> {
        self.config(&[format!(
            "neighbor {} shutdown message {msg}",
            self.session.peer_v4
        )])
        .map(|_| ())
    }
    fn enable(&self) -> Result<(), String> {
        self.config(&[format!("no neighbor {} shutdown", self.session.peer_v4)])
            .map(|_| ())
    }
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("bgpd.log")).unwrap_or_default()
    }
    fn check(&self, text: &str, e: &Expect<'_>) -> Result<(), String> {
        let r = e.route;
        let path: Vec<String> = e.as_path.iter().map(|a| a.to_string()).collect();
        let mut need = vec![
            // FRR prints an empty AS path (iBGP) as "Local".
            if path.is_empty() {
                "\n  Local".to_string()
            } else {
                format!("\n  {}\n", path.join(" "))
            },
            format!("    {} from", e.next_hop),
            format!("Community: {}:{}", r.community.0, r.community.1),
            format!("RT:{}:{}", r.ext_rt.0, r.ext_rt.1),
            format!("Large Community: {}:{}:{}", r.large.0, r.large.1, r.large.2),
        ];
        if e.med {
            need.push(format!("metric {},", r.med));
        }
        require_all("frr", text, &need)
    }
}
