//! One encoding per update group on a running daemon (issue 17): three
//! BIRD route-server clients (export accept, `route_server_client`, each
//! in its own AS) receive a feeder's table. Their sessions encode alike
//! (no AS prepend, next hop unchanged), so each batch of UPDATEs is
//! encoded once and handed to all three: `/metrics` shows
//! `tessera_update_group_sends_total` at least twice
//! `tessera_update_group_encodings_total`, and every client has the whole
//! table.

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

#[test]
fn route_server_clients_share_one_encoding() {
    if !common::ready(&[bird::TOOLS, &["ip", "curl"]].concat()) {
        return;
    }
    // One LAN (an IXP): the feeder's next hop, kept for the clients, is
    // on their link.
    let lab = Lab::lan("ugroup", 1 + CLIENTS);
    let t = Tesserad::start_with(&lab, |sock| {
        let mut s = glue::head(sock, Some(METRICS_PORT));
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
                "accept",
                "route_server_client = true\n",
            ));
        }
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
    let before = glue::scrape(&lab, METRICS_PORT).unwrap_or_else(|e| lab.fail(&e));
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
    // The feeder's two fixed routes (IPv4 and IPv6) come too.
    let want = (PREFIXES + 2) as u64;
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
    let after = glue::scrape(&lab, METRICS_PORT).unwrap_or_else(|e| lab.fail(&e));
    let enc = count(&after, "tessera_update_group_encodings_total") - enc0;
    let sends = count(&after, "tessera_update_group_sends_total") - sends0;
    eprintln!("update groups: {enc} encodings, {sends} sends");
    // At least three batches of 1024 prefixes, each handed to 3 clients.
    if enc < 3.0 || sends < 2.0 * enc {
        lab.fail(&format!(
            "encodings {enc}, sends {sends}: want sends >= 2 x encodings (3 clients share)"
        ));
    }
    if !lab.alive("tesserad") {
        lab.fail("tesserad died");
    }
    drop(clients);
    drop(feeder);
    drop(t);
}
