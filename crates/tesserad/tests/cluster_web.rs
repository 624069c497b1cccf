//! The web view's Cluster panel against a running two-node cluster
//! (`common::cluster`: tesserads with their dataplanes and `[cluster]` in
//! network namespaces, BFD between the fabric addresses at 100 ms):
//!
//! ```text
//! H0 [e0 198.18.1.2] -- [x0] N0 [f0 198.18.100.1] --+-- br0 --+-- [f0 198.18.100.2] N1 [x0] -- [e0 198.18.2.2] H1
//! ```
//!
//! While H0 pings H1 (every packet crosses the fabric as GENEVE), headless
//! Chromium in N0's namespace loads N0's `/`: the Cluster panel shows this
//! node, node 1 with its BFD session Up, in the live set, and a fabric
//! load above zero on the link to it; the Dataplane panel shows N0's core.
//! Then N1's tesserad is killed: the panel shows the BFD session Down and
//! node 1 out of the live set. Needs root, `ip`, `ping`, `chromium`;
//! bounded (about 15 s when it passes); the namespaces and daemons are
//! removed also on failure.

use e2e as common;

use common::cluster::{self, exec, Cluster};

/// Headless Chromium in namespace `ns`: the DOM of N0's view after four
/// snapshots (`?frames=4` closes the stream, so virtual time runs out).
fn dom(c: &Cluster, ns: &str) -> String {
    let profile = c.lab.path("chromium").display().to_string();
    exec(
        ns,
        &[
            "chromium",
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            &format!("--user-data-dir={profile}"),
            "--virtual-time-budget=2000",
            "--dump-dom",
            "http://127.0.0.1:8080/?frames=4",
        ],
    )
    .unwrap_or_else(|e| c.lab.fail(&format!("chromium: {e}")))
}

/// The text of `<td class="CLASS">` in the row of cluster node `node`.
fn cell(dom: &str, node: u16, class: &str) -> Option<String> {
    let row = dom.split(&format!("<tr data-node=\"{node}\">")).nth(1)?;
    let row = row.split("</tr>").next()?;
    let at = row.find(&format!("<td class=\"{class}"))?;
    let rest = row.get(at..)?;
    let rest = rest.get(rest.find('>')? + 1..)?;
    Some(rest.get(..rest.find("</td>")?)?.to_string())
}

#[test]
fn cluster_panel_shows_nodes_bfd_and_fabric_load() {
    cluster::require(&["ip", "ping", "chromium"]);
    let mut c = Cluster::new("cluster_web", 2);
    let bin = env!("CARGO_BIN_EXE_tesserad");
    let mut pids = Vec::new();
    for i in 0..2 {
        // The web view on 127.0.0.1:8080 in each node's namespace.
        let p = c.static_conf(i, "mode = \"direct\"\nbfd_min_tx = 100\n");
        let text = std::fs::read_to_string(&p).expect("config");
        let text = text.replacen(
            "[control]\n",
            "[control]\nmetrics = \"127.0.0.1:8080\"\n",
            1,
        );
        std::fs::write(&p, text).expect("config");
        pids.push(
            c.lab
                .spawn(&format!("n{i}"), c.node(i), &[bin, "-c", &p], &[]),
        );
    }
    c.pids = pids;
    c.lab.wait(15, "the dataplanes to start", || {
        Ok((0..2)
            .all(|i| c.log(&format!("n{i}")).contains("dataplane: started"))
            .then_some(()))
    });
    // Routes in the FIBs and node 1 live at node 0 (BFD Up): pings cross.
    c.ping(0, &Cluster::host_addr(1), 3, 20);
    // Load on the fabric while the page is read.
    let (h0, n0) = (c.host(0).to_string(), c.node(0).to_string());
    c.lab.spawn(
        "load",
        &h0,
        &[
            "timeout",
            "30",
            "ping",
            "-i",
            "0.01",
            "-q",
            &Cluster::host_addr(1),
        ],
        &[],
    );

    let d = c
        .lab
        .wait(20, "node 1 Up with fabric load on N0's page", || {
            let d = dom(&c, &n0);
            let rate: f64 = cell(&d, 1, "dgram-rate")
                .and_then(|r| r.parse().ok())
                .unwrap_or(0.0);
            Ok((rate > 0.0).then_some(d))
        });
    assert!(
        d.contains("<section id=\"cluster\">"),
        "cluster panel hidden:\n{d}"
    );
    assert!(
        d.contains("this node 0 at 198.18.100.1:6081, mode Direct"),
        "{d}"
    );
    assert_eq!(cell(&d, 1, "bfd").as_deref(), Some("Up"), "{d}");
    assert_eq!(cell(&d, 1, "live").as_deref(), Some("yes"), "{d}");
    assert_eq!(
        cell(&d, 1, "fabric").as_deref(),
        Some("198.18.100.2:6081"),
        "{d}"
    );
    assert!(d.contains("<section id=\"dataplane\">"), "{d}");
    assert!(d.contains("<tr data-core=\"0\">"), "{d}");

    // Node 1 goes away: its BFD session goes Down at node 0 (3 x 100 ms),
    // and it leaves the live set.
    c.lab.signal(c.pids[1], "KILL");
    let d = c.lab.wait(20, "node 1 Down on N0's page", || {
        let d = dom(&c, &n0);
        Ok((cell(&d, 1, "bfd").as_deref() == Some("Down")).then_some(d))
    });
    assert_eq!(cell(&d, 1, "live").as_deref(), Some("no"), "{d}");
}
