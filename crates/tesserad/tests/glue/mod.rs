//! Typed queries of tesserad's CLI protocol and config snippets shared by
//! the end-to-end tests of the daemon's glue (`counters_metrics.rs`,
//! `daemon_glue.rs`); the lab and the peers come from `common`.
#![allow(dead_code)]

use crate::common::lab::{Lab, Leaf};
use crate::common::tesserad::Tesserad;
use mgmt::proto::{ConfigureResult, Data, ProtocolInfo, Response, ResponseEnvelope, RouteInfo};

/// Sends `request_json` and decodes the answer.
pub fn ask(t: &Tesserad, request_json: &str) -> Result<Data, String> {
    let line = t.request(request_json)?;
    let env: ResponseEnvelope = serde_json::from_str(&line).map_err(|e| format!("{e}: {line}"))?;
    match env.response {
        Response::Ok(d) => Ok(d),
        Response::Error { code, message } => Err(format!("{code:?}: {message}")),
    }
}

/// `show protocols all NAME`.
pub fn protocol(t: &Tesserad, name: &str) -> Result<ProtocolInfo, String> {
    match ask(
        t,
        &format!(r#"{{"command":"show_protocols","all":true,"name":"{name}"}}"#),
    )? {
        Data::Protocols(mut v) if !v.is_empty() => Ok(v.remove(0)),
        d => Err(format!("no protocol {name}: {d:?}")),
    }
}

/// `show route PREFIX all`: `None` when tesserad has no path for it.
pub fn route(t: &Tesserad, prefix: &str) -> Result<Option<RouteInfo>, String> {
    match ask(
        t,
        &format!(r#"{{"command":"show_route","prefix":"{prefix}","all":true}}"#),
    )? {
        Data::Routes(v) => Ok(v.into_iter().find(|r| r.prefix == prefix)),
        d => Err(format!("show route: {d:?}")),
    }
}

/// `configure`: re-reads the file given with `-c`.
pub fn configure(t: &Tesserad) -> Result<ConfigureResult, String> {
    match ask(t, r#"{"command":"configure","check":false}"#)? {
        Data::Configure(c) => Ok(c),
        d => Err(format!("configure: {d:?}")),
    }
}

/// `[router]` and `[control]` (with `/metrics` on 127.0.0.1:`metrics` in
/// the lab's centre namespace when given).
pub fn head(sock: &std::path::Path, metrics: Option<u16>) -> String {
    let mut s = format!(
        "[router]\nid = \"198.18.0.1\"\nasn = 65000\n\n[control]\nsocket = \"{}\"\n",
        sock.display()
    );
    if let Some(p) = metrics {
        s.push_str(&format!("metrics = \"127.0.0.1:{p}\"\n"));
    }
    s
}

/// One IPv4-session neighbour on `leaf` with the given policies; `more`
/// is appended inside the `[[neighbor]]` table.
pub fn neighbor(
    name: &str,
    leaf: &Leaf,
    remote_as: u32,
    import: &str,
    export: &str,
    more: &str,
) -> String {
    format!(
        "\n[[neighbor]]\nname = \"{name}\"\naddress = \"{}\"\nlocal_address = \"{}\"\n\
         remote_as = {remote_as}\nhold_time = 9\nconnect_retry = 1\n\
         families = [\"ipv4-unicast\", \"ipv6-unicast\"]\n\
         import = \"{import}\"\nexport = \"{export}\"\n{more}",
        leaf.v4, leaf.center_v4
    )
}

/// `GET /metrics` from inside the centre namespace, parsed (and checked)
/// with the strict exposition-format reader.
pub fn scrape(lab: &Lab, port: u16) -> Result<Vec<mgmt::metrics::check::Sample>, String> {
    let url = format!("http://127.0.0.1:{port}/metrics");
    let text = crate::common::sh(&[
        "ip",
        "netns",
        "exec",
        &lab.center_ns,
        "curl",
        "-sf",
        "--max-time",
        "5",
        &url,
    ])?;
    mgmt::metrics::check::parse(&text).map_err(|e| format!("{e:?} in /metrics:\n{text}"))
}

/// Waits until tesserad's session `name` is Established.
pub fn wait_up(lab: &Lab, t: &Tesserad, name: &str, secs: u64) {
    lab.wait(secs, &format!("tesserad's {name} Established"), || {
        Ok(protocol(t, name)?
            .bgp
            .is_some_and(|b| b.bgp_state == mgmt::proto::BgpState::Established)
            .then_some(()))
    });
}
