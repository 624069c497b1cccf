//! One encoding per update group on a running daemon (issue 17): three
//! BIRD route-server clients (export accept, `route_server_client`, each
//! in its own AS) receive a feeder's table. Their sessions encode alike
//! (no AS prepend, next hop unchanged), so each batch of UPDATEs is
//! encoded once and handed to all three: `/metrics` shows
//! `tessera_update_group_sends_total` at least twice
//! `tessera_update_group_encodings_total`, and every client has the whole
//! table.
//!
//! The same with named export policies (policy analysis, bgp-policy's
//! `analysis.rs`): clients whose named policies are equal and read nothing
//! of the neighbour form one update group and share encodings, whether
//! they name the same policy or an equal copy under another name.

mod common;
mod glue;

use common::bird::{self, Bird};
use common::peer::{wait_established, Peer, Session};
use common::tesserad::Tesserad;
use common::Lab;
use mgmt::metrics::check::value;

const METRICS_PORT: u16 = 19_181;
const PREFIXES: usize = 3000;
const CLIENTS: u8 = 3;

/// Routes BIRD imported on its session (`Routes: N imported`).
fn imported(b: &Bird) -> Result<u64, String> {
    let out = b.protocol()?;
    Ok(out
        .lines()
        .filter(|l| l.trim_start().starts_with("Routes:"))
        .filter_map(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .sum())
}

/// What one run counted: encodings and sends during the table's export.
struct Counted {
    encodings: f64,
    sends: f64,
}

/// A feeder and `CLIENTS` BIRD route-server clients, client k exporting
/// through `exports[k - 2]` (with `policies` appended to the config); the
/// feeder announces `PREFIXES` prefixes once all are up; waits until every
/// client has `want` routes and returns the update-group counters' growth.
fn share(name: &str, port: u16, exports: &[&str], policies: &str, want: u64) -> Option<Counted> {
    if !common::ready(&[bird::TOOLS, &["ip", "curl"]].concat()) {
        return None;
    }
    // One LAN (an IXP): the feeder's next hop, kept for the clients, is
    // on their link.
    let lab = Lab::lan(name, 1 + CLIENTS);
    let t = Tesserad::start_with(&lab, |sock| {
        let mut s = glue::head(sock, Some(port));
        s.push_str(&glue::neighbor(
            "feeder",
            lab.leaf(1),
            65001,
            "accept",
            "reject",
            "",
        ));
        for k in 2..=1 + CLIENTS {
            s.push_str(&glue::neighbor(
                &format!("client{k}"),
                lab.leaf(k),
                65000 + u32::from(k),
                // The clients' own routes (BIRD re-exports what it
                // learns) are not what this test is about.
                "reject",
                exports[usize::from(k - 2)],
                "route_server_client = true\n",
            ));
        }
        s.push_str(policies);
        s
    });
    let feeder = Bird::start(&lab, "feeder", &Session::leaf(lab.leaf(1), 65001, 65000));
    let clients: Vec<Bird> = (2..=1 + CLIENTS)
        .map(|k| {
            let s = Session::leaf(lab.leaf(k), 65000 + u32::from(k), 65000);
            Bird::start(&lab, &format!("client{k}"), &s)
        })
        .collect();
    wait_established(&lab, &feeder, 20);
    for c in &clients {
        wait_established(&lab, c, 20);
    }
    glue::wait_up(&lab, &t, "feeder", 20);
    for k in 2..=1 + CLIENTS {
        glue::wait_up(&lab, &t, &format!("client{k}"), 20);
    }
    let before = glue::scrape(&lab, port).unwrap_or_else(|e| lab.fail(&e));
    let count = |m: &[mgmt::metrics::check::Sample], name: &str| -> f64 {
        value(m, name, &[]).unwrap_or_else(|| lab.fail(&format!("no {name} in /metrics")))
    };
    let (enc0, sends0) = (
        count(&before, "tessera_update_group_encodings_total"),
        count(&before, "tessera_update_group_sends_total"),
    );

    // The table, once every client is up: one export round for all.
    let extra: Vec<String> = (0..PREFIXES)
        .map(|i| format!("10.{}.{}.0/24", i / 256, i % 256))
        .collect();
    feeder.set_extra(&extra).unwrap_or_else(|e| lab.fail(&e));
    for c in &clients {
        lab.wait(60, &format!("{} has the whole table", c.name), || {
            let n = imported(c)?;
            if n >= want {
                Ok(Some(()))
            } else {
                Err(format!("{n} of {want} routes"))
            }
        });
    }
    let after = glue::scrape(&lab, port).unwrap_or_else(|e| lab.fail(&e));
    let encodings = count(&after, "tessera_update_group_encodings_total") - enc0;
    let sends = count(&after, "tessera_update_group_sends_total") - sends0;
    eprintln!("{name}: update groups: {encodings} encodings, {sends} sends");
    for c in &clients {
        let n = imported(c).unwrap_or_else(|e| lab.fail(&e));
        if n != want {
            lab.fail(&format!("{} has {n} routes, want {want}", c.name));
        }
    }
    if !lab.alive("tesserad") {
        lab.fail("tesserad died");
    }
    drop(clients);
    drop(feeder);
    drop(t);
    Some(Counted { encodings, sends })
}

#[test]
fn route_server_clients_share_one_encoding() {
    // The feeder's two fixed routes (IPv4 and IPv6) come too.
    let want = (PREFIXES + 2) as u64;
    let Some(c) = share("ugroup", METRICS_PORT, &["accept"; 3], "", want) else {
        return;
    };
    // At least three batches of 1024 prefixes, each handed to 3 clients.
    assert!(
        c.encodings >= 3.0 && c.sends >= 2.0 * c.encodings,
        "encodings {}, sends {}: want sends >= 2 x encodings (3 clients share)",
        c.encodings,
        c.sends
    );
}

/// Drops 10.0.0.0/16 (256 of the feeder's prefixes) and tags the rest.
const NAMED: &str = "default = \"accept\"\n\n[[policy.NAME.term]]\n\
                     match.prefix = [\"10.0.0.0/16 le 32\"]\nthen.action = \"reject\"\n\n\
                     [[policy.NAME.term]]\nthen.community_add = [\"65000:7\"]\n";

fn named(name: &str) -> String {
    format!("\n[policy.{name}]\n{}", NAMED.replace("NAME", name))
}

/// Two clients name one policy, the third an equal copy under another
/// name: all three form one group and share every encoding.
#[test]
fn equal_named_policies_share_one_encoding() {
    let policies = format!("{}{}", named("rs_same"), named("rs_copy"));
    let want = (PREFIXES - 256 + 2) as u64;
    let exports = ["rs_same", "rs_same", "rs_copy"];
    let Some(c) = share("ugnamed", METRICS_PORT + 1, &exports, &policies, want) else {
        return;
    };
    assert!(
        c.encodings >= 2.0 && c.sends >= 2.5 * c.encodings,
        "encodings {}, sends {}: want sends >= 2.5 x encodings (3 clients share)",
        c.encodings,
        c.sends
    );
}

/// A policy that matches on the neighbour's address reads the neighbour:
/// each client keeps its own Adj-RIB-Out and encoding (the control for the
/// test above: the counters do tell sharing from no sharing).
#[test]
fn neighbour_specific_policies_do_not_share() {
    let pol = "\n[policy.rs_nb]\ndefault = \"accept\"\n\n[[policy.rs_nb.term]]\n\
               match.neighbor = [\"192.0.2.0/24\"]\nthen.action = \"reject\"\n";
    let want = (PREFIXES + 2) as u64;
    let Some(c) = share("ugnbr", METRICS_PORT + 2, &["rs_nb"; 3], pol, want) else {
        return;
    };
    assert!(
        c.encodings >= 3.0 && c.sends <= 1.01 * c.encodings,
        "encodings {}, sends {}: want one send per encoding (no sharing)",
        c.encodings,
        c.sends
    );
}
