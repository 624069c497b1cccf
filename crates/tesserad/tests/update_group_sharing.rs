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

use e2e as common;
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

/// Route updates BIRD received on its session, all channels (`Import
/// updates:` of `show protocols all`, the "received" column): counts
/// every prefix sent, the same route sent again included.
fn import_updates(b: &Bird) -> Result<u64, String> {
    let out = b.protocol()?;
    Ok(out
        .lines()
        .filter(|l| l.trim_start().starts_with("Import updates:"))
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .sum())
}

/// Drops 10.0.0.0/16 (256 of the feeder's prefixes), accepts the rest.
const DROP16: &str = "\n[policy.rs_drop]\ndefault = \"accept\"\n\n[[policy.rs_drop.term]]\n\
                      match.prefix = [\"10.0.0.0/16 le 32\"]\nthen.action = \"reject\"\n";

/// A reload moves a client into its new update group at once (issue 17):
/// client4 starts with a policy of its own (`rs_drop`), clients 2 and 3
/// accept all and share a group. `configure` gives client4 the others'
/// policy: it is sent the 256 routes it lacked and nothing else (BIRD's
/// received-updates count), clients 2 and 3 are sent nothing (tesserad's
/// UPDATE counters and BIRD's), and the next announcement is encoded once
/// for all three.
#[test]
fn reload_moves_a_client_into_the_shared_group() {
    if !common::ready(&[bird::TOOLS, &["ip", "curl"]].concat()) {
        return;
    }
    let port = METRICS_PORT + 3;
    let lab = Lab::lan("ugmove", 1 + CLIENTS);
    let config = |sock: &std::path::Path, client4: &str| {
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
            let export = if k == 4 { client4 } else { "accept" };
            s.push_str(&glue::neighbor(
                &format!("client{k}"),
                lab.leaf(k),
                65000 + u32::from(k),
                "reject",
                export,
                "route_server_client = true\n",
            ));
        }
        s.push_str(DROP16);
        s
    };
    let t = Tesserad::start_with(&lab, |sock| config(sock, "rs_drop"));
    let sock = t.sock.clone();
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
    let wait_routes = |want: &[u64]| {
        for (c, &w) in clients.iter().zip(want) {
            lab.wait(60, &format!("{} has {w} routes", c.name), || {
                let n = imported(c)?;
                if n == w {
                    Ok(Some(()))
                } else {
                    Err(format!("{n} of {w} routes"))
                }
            });
        }
    };
    let all = (PREFIXES + 2) as u64;
    let mut extra: Vec<String> = (0..PREFIXES)
        .map(|i| format!("10.{}.{}.0/24", i / 256, i % 256))
        .collect();
    feeder.set_extra(&extra).unwrap_or_else(|e| lab.fail(&e));
    wait_routes(&[all, all, all - 256]);

    // What was sent so far, per client: tesserad's UPDATE messages and
    // the route updates BIRD counted.
    let count = |m: &[mgmt::metrics::check::Sample], name: &str, l: &[(&str, &str)]| -> f64 {
        value(m, name, l).unwrap_or_else(|| lab.fail(&format!("no {name} {l:?} in /metrics")))
    };
    let sent = |m: &[mgmt::metrics::check::Sample], k: u8| -> f64 {
        let p = format!("client{k}");
        count(
            m,
            "tessera_bgp_messages_sent_total",
            &[("protocol", &p), ("type", "update")],
        )
    };
    let rx = |c: &Bird| import_updates(c).unwrap_or_else(|e| lab.fail(&e));
    // Settle: the table's last UPDATEs counted on both sides.
    std::thread::sleep(std::time::Duration::from_secs(1));
    let m0 = glue::scrape(&lab, port).unwrap_or_else(|e| lab.fail(&e));
    let rx0: Vec<u64> = clients.iter().map(rx).collect();
    if rx0[2] < all - 256 {
        lab.fail(&format!("client4 counted {} route updates", rx0[2]));
    }

    // Reload: client4 takes the others' policy.
    std::fs::write(&t.config, config(&sock, "accept")).expect("rewrite config");
    let c = glue::configure(&t).unwrap_or_else(|e| lab.fail(&e));
    assert!(c.changed, "the reload changed nothing: {c:?}");
    wait_routes(&[all, all, all]);
    std::thread::sleep(std::time::Duration::from_secs(2));
    let m1 = glue::scrape(&lab, port).unwrap_or_else(|e| lab.fail(&e));
    let rx1: Vec<u64> = clients.iter().map(rx).collect();
    eprintln!("reload: BIRD route updates before {rx0:?}, after {rx1:?}");
    assert_eq!(rx1[2] - rx0[2], 256, "client4 is sent the delta only");
    for (i, k) in [2u8, 3].into_iter().enumerate() {
        assert_eq!(rx1[i], rx0[i], "client{k}: BIRD received nothing");
        assert_eq!(sent(&m1, k), sent(&m0, k), "client{k}: no UPDATE sent");
    }

    // The next announcement: one encoding for the three.
    let (enc0, sends0) = (
        count(&m1, "tessera_update_group_encodings_total", &[]),
        count(&m1, "tessera_update_group_sends_total", &[]),
    );
    extra.extend((0..200).map(|i| format!("10.200.{i}.0/24")));
    feeder.set_extra(&extra).unwrap_or_else(|e| lab.fail(&e));
    wait_routes(&[all + 200, all + 200, all + 200]);
    let m2 = glue::scrape(&lab, port).unwrap_or_else(|e| lab.fail(&e));
    let encodings = count(&m2, "tessera_update_group_encodings_total", &[]) - enc0;
    let sends = count(&m2, "tessera_update_group_sends_total", &[]) - sends0;
    eprintln!("after the move: {encodings} encodings, {sends} sends");
    // client4 encoding alone would make it 1.5 sends per encoding at most.
    assert!(
        encodings >= 1.0 && sends >= 2.5 * encodings,
        "encodings {encodings}, sends {sends}: want sends >= 2.5 x encodings (3 clients share)"
    );
    if !lab.alive("tesserad") {
        lab.fail("tesserad died");
    }
    drop(clients);
    drop(feeder);
    drop(t);
}
