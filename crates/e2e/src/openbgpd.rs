//! OpenBGPD (portable 7.x): `/usr/sbin/bgpd -d -f CONF`; the control socket
//! is set in the config (`socket "..."`; bgpd has no `-s`), queried with
//! `bgpctl -s SOCK`. bgpd needs the `_openbgpd` user and chroots into its
//! home `/run/openbgpd`; both are created here when missing.

use super::lab::Lab;
use super::peer::{require_all, Expect, Peer, Session};
use std::path::PathBuf;
use std::sync::Mutex;

pub const BGPD: &str = "/usr/sbin/bgpd";
pub const TOOLS: &[&str] = &[BGPD, "bgpctl"];

pub struct Openbgpd {
    pub name: String,
    pub pid: u32,
    pub dir: PathBuf,
    pub sock: PathBuf,
    pub session: Session,
    extra: Mutex<Vec<String>>,
}

/// The Debian package ships a sysusers.d entry but the user only exists
/// once systemd-sysusers ran; containers often skip that.
fn ensure_user() {
    if super::sh(&["getent", "passwd", "_openbgpd"]).is_err() {
        let _ = super::sh(&["systemd-sysusers", "/usr/lib/sysusers.d/openbgpd.conf"]);
        if super::sh(&["getent", "passwd", "_openbgpd"]).is_err() {
            let _ = super::sh(&[
                "useradd",
                "-r",
                "-d",
                "/run/openbgpd",
                "-s",
                "/usr/sbin/nologin",
                "_openbgpd",
            ]);
        }
    }
    let _ = std::fs::create_dir_all("/run/openbgpd");
}

impl Openbgpd {
    pub fn start(lab: &Lab, name: &str, s: &Session) -> Openbgpd {
        ensure_user();
        let dir = lab.path(name);
        std::fs::create_dir_all(&dir).expect("openbgpd dir");
        let conf = super::render_file("openbgpd", "peer.conf.tmpl", &s.vars(&dir));
        let conf_path = dir.join("bgpd.conf");
        std::fs::write(&conf_path, conf).expect("bgpd.conf");
        let c = conf_path.display().to_string();
        if let Err(e) = super::sh(&[BGPD, "-n", "-f", &c]) {
            panic!("OpenBGPD rejects its config: {e}");
        }
        let pid = lab.spawn(name, &s.ns, &[BGPD, "-d", "-v", "-f", &c], &[]);
        let sock = dir.join("bgpd.sock");
        let o = Openbgpd {
            name: name.into(),
            pid,
            dir,
            sock,
            session: s.clone(),
            extra: Mutex::new(Vec::new()),
        };
        lab.wait(15, &format!("{name} control socket"), || {
            Ok(o.bgpctl(&["show"]).ok())
        });
        o
    }

    pub fn bgpctl(&self, args: &[&str]) -> Result<String, String> {
        let sock = self.sock.display().to_string();
        let mut argv = vec!["bgpctl", "-s", &sock];
        argv.extend_from_slice(args);
        super::sh(&argv)
    }

    pub fn neighbor(&self) -> Result<String, String> {
        self.bgpctl(&["show", "neighbor", &self.session.peer_v4])
    }
}

impl Peer for Openbgpd {
    fn kind(&self) -> &'static str {
        "openbgpd"
    }
    fn pid(&self) -> u32 {
        self.pid
    }
    fn established(&self) -> Result<bool, String> {
        Ok(self.neighbor()?.contains("BGP state = Established"))
    }
    fn route(&self, prefix: &str) -> Result<Option<String>, String> {
        let out = self.bgpctl(&["show", "rib", "detail", prefix])?;
        Ok(out.contains(&format!("entry for {prefix}")).then_some(out))
    }
    fn set_extra(&self, prefixes: &[String]) -> Result<(), String> {
        let mut old = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        for p in old.iter().filter(|p| !prefixes.contains(p)) {
            self.bgpctl(&["network", "delete", p])?;
        }
        for p in prefixes.iter().filter(|p| !old.contains(p)) {
            self.bgpctl(&["network", "add", p])?;
        }
        *old = prefixes.to_vec();
        Ok(())
    }
    fn request_refresh(&self) -> Result<(), String> {
        self.bgpctl(&["neighbor", &self.session.peer_v4, "refresh"])
            .map(|_| ())
    }
    fn updates_received(&self) -> Result<u64, String> {
        // "  Updates                  3          2" (sent, received)
        let out = self.neighbor()?;
        let line = out
            .lines()
            .find(|l| l.trim_start().starts_with("Updates "))
            .ok_or("no Updates line in bgpctl show neighbor")?;
        line.split_whitespace()
            .nth(2)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("unparsable: {line}"))
    }
    fn shutdown(&self, msg: &str) -> Result<(), String> {
        self.bgpctl(&["neighbor", &self.session.peer_v4, "down", msg])
            .map(|_| ())
    }
    fn enable(&self) -> Result<(), String> {
        self.bgpctl(&["neighbor", &self.session.peer_v4, "up"])
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
            // bgpctl prints no AS path line at all for an empty path
            // (iBGP); then the other needles must still hold.
            if path.is_empty() {
                "BGP routing table entry".to_string()
            } else {
                format!("\n    {}\n", path.join(" "))
            },
            // OpenBGPD 7.7 sends ::1 as the IPv6 next hop on an IPv4
            // session (README); tesserad refuses such routes, so an IPv6
            // route here comes from another daemon kind.
            if e.next_hop.contains(':') {
                "Nexthop ".to_string()
            } else {
                format!("Nexthop {} ", e.next_hop)
            },
            format!("Communities: {}:{}", r.community.0, r.community.1),
            format!("rt {}:{}", r.ext_rt.0, r.ext_rt.1),
            format!(
                "Large Communities: {}:{}:{}",
                r.large.0, r.large.1, r.large.2
            ),
        ];
        if e.med {
            need.push(format!("metric {},", r.med));
        }
        require_all("openbgpd", text, &need)
    }
}
