//! ExaBGP 4.2: `exabgp CONF` in the foreground with its settings in the
//! environment; `tests/interop/exabgp/api.py` bridges the text API to two
//! files in the instance dir: `commands` (appended by the harness) and
//! `received.jsonl` (everything ExaBGP reports, one JSON object a line).

use super::lab::Lab;
use super::peer::{require_all, Expect, Peer, Session};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

pub const TOOLS: &[&str] = &["exabgp", "python3"];

pub struct Exabgp {
    pub name: String,
    pub pid: u32,
    pub dir: PathBuf,
    pub session: Session,
    extra: Mutex<Vec<String>>,
}

/// ExaBGP reads its settings from `exabgp.section.key` variables.
pub const ENV: &[(&str, &str)] = &[
    ("exabgp.daemon.user", "root"),
    ("exabgp.daemon.daemonize", "false"),
    ("exabgp.daemon.drop", "false"),
    ("exabgp.api.cli", "false"),
    ("exabgp.log.destination", "stdout"),
    ("exabgp.log.level", "DEBUG"),
    ("exabgp.log.packets", "true"),
    ("exabgp.log.message", "true"),
    ("exabgp.log.network", "true"),
];

impl Exabgp {
    pub fn start(lab: &Lab, name: &str, s: &Session) -> Exabgp {
        Self::start_with(lab, name, s, "peer.conf.tmpl", &[])
    }

    /// With another template (the RFC 7606 scenario adds routes carrying
    /// malformed attributes) and extra variables.
    pub fn start_with(
        lab: &Lab,
        name: &str,
        s: &Session,
        template: &str,
        more: &[(&'static str, String)],
    ) -> Exabgp {
        let dir = lab.path(name);
        std::fs::create_dir_all(&dir).expect("exabgp dir");
        let mut vars = s.vars(&dir);
        vars.push((
            "API_SCRIPT",
            super::interop_file("exabgp", "api.py")
                .display()
                .to_string(),
        ));
        vars.extend_from_slice(more);
        let conf = super::render_file("exabgp", template, &vars);
        let conf_path = dir.join("exabgp.conf");
        std::fs::write(&conf_path, conf).expect("exabgp.conf");
        let _ = std::fs::File::create(dir.join("received.jsonl"));
        let _ = std::fs::File::create(dir.join("commands"));
        let pid = lab.spawn(
            name,
            &s.ns,
            &["exabgp", &conf_path.display().to_string()],
            ENV,
        );
        lab.add_log(&format!("{name} received"), &dir.join("received.jsonl"));
        Exabgp {
            name: name.into(),
            pid,
            dir,
            session: s.clone(),
            extra: Mutex::new(Vec::new()),
        }
    }

    /// Sends one API command (see `exabgp --help` / the API docs).
    pub fn command(&self, line: &str) -> Result<(), String> {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(self.dir.join("commands"))
            .map_err(|e| e.to_string())?;
        writeln!(f, "{line}").map_err(|e| e.to_string())
    }

    pub fn received(&self) -> String {
        std::fs::read_to_string(self.dir.join("received.jsonl")).unwrap_or_default()
    }

    /// The last NOTIFICATION ExaBGP received, as its JSON line.
    pub fn last_notification(&self) -> Option<String> {
        self.received()
            .lines()
            .rev()
            .find(|l| l.contains("\"notification\""))
            .map(str::to_string)
    }
}

fn nlri_key(prefix: &str) -> String {
    format!("\"nlri\": \"{prefix}\"")
}

impl Peer for Exabgp {
    fn kind(&self) -> &'static str {
        "exabgp"
    }
    fn pid(&self) -> u32 {
        self.pid
    }
    fn established(&self) -> Result<bool, String> {
        let r = self.received();
        let last = r.lines().rev().find(|l| l.contains("\"type\": \"state\""));
        Ok(last.is_some_and(|l| l.contains("\"state\": \"up\"")))
    }
    fn route(&self, prefix: &str) -> Result<Option<String>, String> {
        // The newest UPDATE naming the prefix decides: announced or
        // withdrawn. A session going down also drops everything.
        let r = self.received();
        let key = nlri_key(prefix);
        for l in r.lines().rev() {
            if l.contains("\"type\": \"state\"") && !l.contains("\"state\": \"up\"") {
                return Ok(None);
            }
            if let Some(i) = l.find(&key) {
                let w = l.find("\"withdraw\"");
                let a = l.find("\"announce\"");
                let withdrawn = match (a, w) {
                    (_, None) => false,
                    (None, Some(_)) => true,
                    // withdraw precedes announce in ExaBGP's JSON
                    (Some(a), Some(w)) => w < a && i < a || w > a && i > w,
                };
                return Ok((!withdrawn).then(|| l.to_string()));
            }
        }
        Ok(None)
    }
    fn set_extra(&self, prefixes: &[String]) -> Result<(), String> {
        let mut old = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        for p in old.iter().filter(|p| !prefixes.contains(p)) {
            let nh = if p.contains(':') {
                &self.session.local_v6
            } else {
                &self.session.local_v4
            };
            self.command(&format!("withdraw route {p} next-hop {nh}"))?;
        }
        for p in prefixes.iter().filter(|p| !old.contains(p)) {
            let nh = if p.contains(':') {
                &self.session.local_v6
            } else {
                &self.session.local_v4
            };
            self.command(&format!("announce route {p} next-hop {nh}"))?;
        }
        *old = prefixes.to_vec();
        Ok(())
    }
    fn request_refresh(&self) -> Result<(), String> {
        self.command("announce route-refresh ipv4 unicast")
    }
    fn updates_received(&self) -> Result<u64, String> {
        Ok(self
            .received()
            .lines()
            .filter(|l| l.contains("\"type\": \"update\""))
            .count() as u64)
    }
    fn shutdown(&self, _msg: &str) -> Result<(), String> {
        // ExaBGP 4.2's `teardown` sends Cease with a subcode but no
        // RFC 9003 shutdown communication.
        Err("ExaBGP 4.2 cannot send an RFC 9003 shutdown message (teardown has no text)".into())
    }
    fn enable(&self) -> Result<(), String> {
        Ok(())
    }
    fn log(&self) -> String {
        let text = std::fs::read_to_string(self.dir.join("../").join(format!("{}.out", self.name)))
            .unwrap_or_default();
        // ExaBGP 4.2.21 cannot print a received RFC 9003 shutdown
        // communication: its decoder raises a TypeError (bytes % str in
        // notification.py) and it answers 1/0. Its packet log (DEBUG) still
        // shows the bytes, so the payloads are decoded here and appended.
        let mut decoded = String::new();
        for l in text.lines() {
            if let Some((_, hex)) = l.split_once("received complete TCP payload") {
                let hex: String = hex
                    .split(')')
                    .nth(1)
                    .unwrap_or("")
                    .chars()
                    .filter(char::is_ascii_hexdigit)
                    .collect();
                let bytes: Vec<u8> = (0..hex.len() / 2)
                    .filter_map(|i| u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok())
                    .collect();
                decoded.push_str(&String::from_utf8_lossy(&bytes));
                decoded.push('\n');
            }
        }
        text + "\n--- decoded payloads ---\n" + &decoded
    }
    fn check(&self, text: &str, e: &Expect<'_>) -> Result<(), String> {
        let r = e.route;
        let path: Vec<String> = e.as_path.iter().map(|a| a.to_string()).collect();
        // ExaBGP's JSON spacing is irregular ("[ 65000, 200 , 7 ]"):
        // compare without whitespace.
        let text: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        let mut need = vec![
            // ExaBGP leaves "as-path" out of its JSON when the path is
            // empty (iBGP).
            if path.is_empty() {
                "\"attribute\":".to_string()
            } else {
                format!("\"as-path\":[{}]", path.join(","))
            },
            format!("\"{}\":[", e.next_hop),
            format!("[{},{}]", r.community.0, r.community.1),
            format!("target:{}:{}", r.ext_rt.0, r.ext_rt.1),
            format!("[{},{},{}]", r.large.0, r.large.1, r.large.2),
        ];
        if e.med {
            need.push(format!("\"med\":{}", r.med));
        }
        require_all("exabgp", &text, &need)
    }
}
