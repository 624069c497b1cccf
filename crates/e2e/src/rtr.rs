//! RPKI over RTR in the star lab (`rpki_stayrtr`, `aspa_stayrtr`): a real
//! `stayrtr` serving a JSON file in the center namespace, BIRD leaves
//! announcing static routes, the tesserad config of those scenarios, and
//! the per-path validation states `show route` gives.

use super::bird::Bird;
use super::lab::Lab;
use super::peer::{wait_established, Session};
use super::tesserad::{Config, Neighbor, Tesserad};
use serde_json::Value;

/// tesserad's AS in these scenarios.
pub const T_AS: u32 = 65000;
/// stayrtr's RTR port.
pub const RTR_PORT: u16 = 3323;

/// What the scenarios need: BIRD, stayrtr, ip.
pub fn tools() -> Vec<&'static str> {
    [super::bird::TOOLS, &["stayrtr", "ip"]].concat()
}

/// Replaces the lab's file `name` at once (written aside, then renamed:
/// stayrtr never sees half a file).
pub fn replace_file(lab: &Lab, name: &str, text: &str) {
    let tmp = lab.write(&format!("{name}.tmp"), text);
    std::fs::rename(&tmp, lab.path(name)).unwrap_or_else(|e| panic!("rename {name}: {e}"));
}

/// Starts stayrtr in the center namespace on `addr`:[`RTR_PORT`], serving
/// the lab's file `file` (re-read every second).
pub fn start_stayrtr(lab: &Lab, addr: &str, file: &str) {
    let cache = lab.path(file).display().to_string();
    let bind = format!("{addr}:{RTR_PORT}");
    let metrics = format!("{addr}:0");
    lab.spawn(
        "stayrtr",
        &lab.center_ns,
        &[
            "stayrtr",
            "-bind",
            &bind,
            "-cache",
            &cache,
            "-checktime=false",
            "-refresh",
            "1",
            "-metrics.addr",
            &metrics,
        ],
        &[],
    );
}

/// Neighbor `peer<k>` of tesserad: leaf `k` in AS `asn`.
pub fn neighbor(lab: &Lab, k: u8, asn: u32) -> Neighbor {
    let l = lab.leaf(k);
    Neighbor {
        name: format!("peer{k}"),
        addr: l.v4.clone(),
        local_addr: l.center_v4.clone(),
        remote_as: asn,
        hold: 9,
        rr_client: false,
        rs_client: false,
        max_prefix: None,
    }
}

/// Starts tesserad with `peer1` (leaf 1, AS 65001) importing everything
/// and `peer2` (leaf 2, AS 65002) importing through policy `policy`,
/// `pipeline` as its UPDATE pipeline, `neighbor_keys` (TOML lines) added
/// to both neighbours, and `tail` (the policy and `[[rpki.cache]]`
/// sections) appended.
pub fn start_tesserad(
    lab: &Lab,
    pipeline: &str,
    neighbor_keys: &str,
    policy: &str,
    tail: &str,
) -> Tesserad {
    let cfg = Config {
        asn: T_AS,
        router_id: "198.18.0.1".into(),
        neighbors: vec![neighbor(lab, 1, 65001), neighbor(lab, 2, 65002)],
        cluster_id: None,
    };
    Tesserad::start_with(lab, |sock| {
        let base = cfg.render(sock).replacen(
            "[router]\n",
            &format!("[router]\npipeline = \"{pipeline}\"\n"),
            1,
        );
        let base = base.replace(
            "import = \"accept\"",
            &format!("{neighbor_keys}import = \"accept\""),
        );
        let at = base.find("name = \"peer2\"").expect("peer2 section");
        let (head, rest) = base.split_at(at);
        let rest = rest.replacen("import = \"accept\"", &format!("import = \"{policy}\""), 1);
        format!("{head}{rest}\n{tail}")
    })
}

/// A leaf's BIRD config: static routes `routes` (BIRD `route` lines) in
/// table t4, exported over eBGP to tesserad; `extra` (tables, an `rpki`
/// protocol) before them.
pub fn bird_conf(dir: &std::path::Path, s: &Session, extra: &str, routes: &str) -> String {
    format!(
        "router id {local};\nlog \"{dir}/bird.log\" all;\nprotocol device {{ scan time 1; }}\n\
         ipv4 table t4;\n{extra}\
         protocol static s4 {{\n  ipv4 {{ table t4; }};\n{routes}}}\n\
         protocol bgp peer {{\n  local {local} as {las};\n  neighbor {peer} as {pas};\n\
         \x20 hold time 9;\n  keepalive time 1;\n  connect retry time 1;\n  error wait time 1, 2;\n\
         \x20 ipv4 {{ table t4; import all; export all; next hop self; }};\n}}\n",
        local = s.local_v4,
        dir = dir.display(),
        las = s.local_as,
        peer = s.peer_v4,
        pas = s.peer_as,
    )
}

/// Starts BIRD `bird<k>` on leaf `k` (AS `asn`) with the config `conf`
/// gives for its directory and session, and waits for its session.
pub fn start_bird(
    lab: &Lab,
    k: u8,
    asn: u32,
    conf: impl FnOnce(&std::path::Path, &Session) -> String,
) -> Bird {
    let s = Session::leaf(lab.leaf(k), asn, T_AS);
    let name = format!("bird{k}");
    let d = lab.path(&name);
    std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{name} dir: {e}"));
    let b = Bird::start_conf(lab, &name, &s, &conf(&d, &s), &[]);
    wait_established(lab, &b, 30);
    b
}

/// Each path of `prefix` at tesserad: its protocol, then the fields
/// `keys` (`rpki`, `aspa`; "absent" when missing), sorted.
pub fn path_states(t: &Tesserad, prefix: &str, keys: &[&str]) -> Result<Vec<Vec<String>>, String> {
    let r = t.request(&format!(
        r#"{{"command":"show_route","prefix":"{prefix}"}}"#
    ))?;
    let v: Value = serde_json::from_str(&r).map_err(|e| format!("{e}: {r}"))?;
    let mut out = Vec::new();
    let routes = v["response"]["ok"]["data"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for route in routes {
        for p in route["paths"].as_array().cloned().unwrap_or_default() {
            let mut row = vec![p["from"].as_str().unwrap_or("?").to_string()];
            row.extend(
                keys.iter()
                    .map(|k| p[*k].as_str().unwrap_or("absent").to_string()),
            );
            out.push(row);
        }
    }
    out.sort();
    Ok(out)
}

/// Expected paths of one prefix: (protocol, fields...) rows, sorted.
pub type Paths = Vec<Vec<String>>;

/// Waits (30 s) until every prefix has exactly the expected paths (see
/// [`path_states`]).
pub fn wait_states(lab: &Lab, t: &Tesserad, what: &str, keys: &[&str], expect: &[(&str, Paths)]) {
    lab.wait(30, what, || {
        let mut diffs = Vec::new();
        for (p, w) in expect {
            let got = path_states(t, p, keys)?;
            if &got != w {
                diffs.push(format!("{p}: got {got:?}, want {w:?}"));
            }
        }
        if diffs.is_empty() {
            Ok(Some(()))
        } else {
            Err(diffs.join("; "))
        }
    });
}

/// `show rpki`'s data.
pub fn show_rpki(t: &Tesserad) -> Result<Value, String> {
    let r = t.request(r#"{"command":"show_rpki"}"#)?;
    let v: Value = serde_json::from_str(&r).map_err(|e| format!("{e}: {r}"))?;
    Ok(v["response"]["ok"]["data"].clone())
}
