//! The real `gobgp` CLI (Debian's gobgpd package) driving tesserad over
//! its gRPC API (`[api]`, crate `api`), with a real BIRD neighbour: every
//! command's output is checked, and what the CLI changes is checked at
//! BIRD.

use e2e as common;

use std::process::{Child, Command, Stdio};

use common::bird::Bird;
use common::peer::{wait_established, wait_gone, wait_present, Peer, Session};
use common::tesserad::{Config, Neighbor, Tesserad};
use common::Lab;

const T_AS: u32 = 65000;
const P_AS: u32 = 65001;
const ADDED: &str = "198.18.77.0/24";
const WARM: &str = "198.18.78.0/24";

/// `gobgp monitor global rib`, killed when the test ends (also on failure).
struct Monitor(Child);

impl Drop for Monitor {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn gobgp(lab: &Lab, target: &str, args: &[&str]) -> String {
    let mut argv = vec!["gobgp", "--target", target];
    argv.extend_from_slice(args);
    common::sh(&argv).unwrap_or_else(|e| lab.fail(&format!("gobgp {}: {e}", args.join(" "))))
}

#[test]
fn gobgp_cli_drives_tesserad() {
    if !common::ready(&["gobgp", "bird", "birdc", "ip"]) {
        return;
    }
    let lab = Lab::star("grpc-gobgp", 1);
    let leaf = lab.leaf(1);
    let cfg = Config {
        asn: T_AS,
        router_id: "198.18.0.1".into(),
        neighbors: vec![Neighbor {
            name: "peer1".into(),
            addr: leaf.v4.clone(),
            local_addr: leaf.center_v4.clone(),
            remote_as: P_AS,
            hold: 9,
            rr_client: false,
            rs_client: false,
            max_prefix: None,
        }],
        cluster_id: None,
    };
    let api_sock = lab.path("api.sock");
    // `unix:PATH`: with `unix:///PATH` this gobgp (grpc-go) sends the
    // path as :authority, which the h2 server refuses (docs/api.md).
    let target = format!("unix:{}", api_sock.display());
    let t = Tesserad::start_with(&lab, |sock| {
        format!(
            "{}\n[api]\nlisten = \"unix:{}\"\n",
            cfg.render(sock),
            api_sock.display()
        )
    });
    let s = Session::leaf(leaf, P_AS, T_AS);
    let bird = Bird::start(&lab, "peer1", &s);
    wait_established(&lab, &bird, 20);
    let peer_addr = leaf.v4.clone();
    let [r4, _] = s.routes();

    // GetBgp.
    let g = gobgp(&lab, &target, &["global"]);
    if !(g.contains(&T_AS.to_string()) && g.contains("198.18.0.1")) {
        lab.fail(&format!("gobgp global: {g}"));
    }

    // ListPeer: the neighbour, Established, with its AS.
    let n = lab.wait(20, "gobgp neighbor shows the peer Established", || {
        let out = gobgp(&lab, &target, &["neighbor"]);
        Ok(out
            .lines()
            .any(|l| {
                l.contains(&peer_addr) && l.contains(&P_AS.to_string()) && l.contains("Establ")
            })
            .then_some(out))
    });
    eprintln!("gobgp neighbor:\n{n}");

    // ListPath adj-in: BIRD's IPv4 route with BIRD's next hop.
    let adj = lab.wait(20, "gobgp neighbor ADDR adj-in has BIRD's route", || {
        let out = gobgp(&lab, &target, &["neighbor", &peer_addr, "adj-in"]);
        Ok(out.contains(&r4.prefix).then_some(out))
    });
    if !adj.contains(&r4.next_hop) || !adj.contains(&P_AS.to_string()) {
        lab.fail(&format!(
            "adj-in lacks next hop {} / AS {P_AS}: {adj}",
            r4.next_hop
        ));
    }
    if adj.contains("192.0.2.0/24") {
        lab.fail(&format!("adj-in shows tesserad's own static: {adj}"));
    }

    // ListPath global: BIRD's route (best) and tesserad's static.
    let rib = gobgp(&lab, &target, &["global", "rib"]);
    let line = rib
        .lines()
        .find(|l| l.contains(&r4.prefix))
        .unwrap_or_else(|| lab.fail(&format!("global rib lacks {}: {rib}", r4.prefix)));
    if !(line.contains("*>") && line.contains(&r4.next_hop) && line.contains(&P_AS.to_string())) {
        lab.fail(&format!("global rib line for {}: {line}", r4.prefix));
    }
    if !rib.contains("192.0.2.0/24") {
        lab.fail(&format!("global rib lacks the static 192.0.2.0/24: {rib}"));
    }
    // Prefix filter.
    let one = gobgp(&lab, &target, &["global", "rib", &r4.prefix]);
    if !one.contains(&r4.prefix) || one.contains("192.0.2.0/24") {
        lab.fail(&format!("global rib {}: {one}", r4.prefix));
    }
    let six = gobgp(&lab, &target, &["global", "rib", "-a", "ipv6"]);
    if !six.contains("2001:db8:f00::/48") {
        lab.fail(&format!("global rib -a ipv6 lacks the IPv6 static: {six}"));
    }

    // WatchEvent: the monitor, started before the route is added.
    let mon_out = lab.path("monitor.out");
    let file = std::fs::File::create(&mon_out).expect("monitor.out");
    let child = Command::new("gobgp")
        .args(["--target", &target, "monitor", "global", "rib"])
        .stdin(Stdio::null())
        .stdout(file.try_clone().expect("dup"))
        .stderr(file)
        .spawn()
        .unwrap_or_else(|e| lab.fail(&format!("gobgp monitor: {e}")));
    let _mon = Monitor(child);
    // The monitor shows nothing until the table changes, so a warm-up
    // route is withdrawn and added again until it appears: from then on
    // the subscription is known to be in place.
    lab.wait(20, "gobgp monitor global rib is subscribed", || {
        let m = std::fs::read_to_string(&mon_out).unwrap_or_default();
        if m.contains(WARM) {
            return Ok(Some(()));
        }
        let _ = common::sh(&["gobgp", "--target", &target, "global", "rib", "del", WARM]);
        gobgp(&lab, &target, &["global", "rib", "add", WARM]);
        Ok(None)
    });

    // AddPath: BIRD receives the route from AS 65000.
    let out = gobgp(&lab, &target, &["global", "rib", "add", ADDED]);
    eprintln!("gobgp global rib add: {out:?}");
    let got = wait_present(&lab, &bird, ADDED, 20);
    if !got.contains(&T_AS.to_string()) {
        lab.fail(&format!("BIRD's {ADDED} lacks AS {T_AS}: {got}"));
    }
    let rib = gobgp(&lab, &target, &["global", "rib"]);
    if !rib.lines().any(|l| l.contains(ADDED) && l.contains("*>")) {
        lab.fail(&format!("global rib lacks the added {ADDED}: {rib}"));
    }
    lab.wait(10, "gobgp monitor global rib shows the added route", || {
        let m = std::fs::read_to_string(&mon_out).unwrap_or_default();
        Ok(m.contains(ADDED).then_some(()))
    });

    // DeletePath: BIRD loses it, the monitor sees the withdrawal.
    gobgp(&lab, &target, &["global", "rib", "del", ADDED]);
    wait_gone(&lab, &bird, ADDED, 20);
    let rib = gobgp(&lab, &target, &["global", "rib"]);
    if rib.contains(ADDED) {
        lab.fail(&format!("global rib still has {ADDED}: {rib}"));
    }
    let m = lab.wait(10, "gobgp monitor global rib shows the withdrawal", || {
        let m = std::fs::read_to_string(&mon_out).unwrap_or_default();
        Ok(m.lines()
            .any(|l| l.contains(ADDED) && l.contains("DEL"))
            .then_some(m))
    });
    eprintln!("gobgp monitor global rib:\n{m}");

    // DisablePeer / EnablePeer: the session goes down and comes back.
    gobgp(&lab, &target, &["neighbor", &peer_addr, "disable"]);
    lab.wait(20, "BIRD sees the session go down", || {
        Ok((!bird.established()?).then_some(()))
    });
    let n = gobgp(&lab, &target, &["neighbor"]);
    if n.lines()
        .any(|l| l.contains(&peer_addr) && l.contains("Establ"))
    {
        lab.fail(&format!("disabled neighbour still Established: {n}"));
    }
    gobgp(&lab, &target, &["neighbor", &peer_addr, "enable"]);
    wait_established(&lab, &bird, 30);

    // Errors are answers, not hangs.
    let e = common::sh(&[
        "gobgp",
        "--target",
        &target,
        "neighbor",
        "198.18.99.99",
        "adj-in",
    ]);
    if e.is_ok() {
        lab.fail("adj-in of an unknown neighbour succeeded");
    }
    drop(t);
}

/// Makes a CA, a server certificate for 127.0.0.1 and a client
/// certificate with the `openssl` CLI (Debian's `openssl`), in `dir`.
fn make_certs(lab: &Lab) {
    let p = |f: &str| lab.path(f).display().to_string();
    let ossl = |args: &[&str]| {
        let mut argv = vec!["openssl"];
        argv.extend_from_slice(args);
        common::sh(&argv).unwrap_or_else(|e| lab.fail(&format!("openssl: {e}")));
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let mut a = vec!["req", "-x509"];
    a.extend_from_slice(&ec);
    let (ca_key, ca) = (p("ca.key"), p("ca.pem"));
    a.extend_from_slice(&[
        "-keyout",
        &ca_key,
        "-out",
        &ca,
        "-days",
        "2",
        "-subj",
        "/CN=tessera test CA",
    ]);
    ossl(&a);
    for (who, ext) in [
        ("server", "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=serverAuth\n"),
        ("client", "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature\nextendedKeyUsage=clientAuth\n"),
    ] {
        let (key, csr, pem, extf) = (
            p(&format!("{who}.key")),
            p(&format!("{who}.csr")),
            p(&format!("{who}.pem")),
            lab.write(&format!("{who}.ext"), ext).display().to_string(),
        );
        let subj = format!("/CN=tessera test {who}");
        let mut a = vec!["req"];
        a.extend_from_slice(&ec);
        a.extend_from_slice(&["-keyout", &key, "-out", &csr, "-subj", &subj]);
        ossl(&a);
        ossl(&[
            "x509", "-req", "-in", &csr, "-CA", &ca, "-CAkey", &ca_key, "-CAcreateserial",
            "-out", &pem, "-days", "2", "-extfile", &extf,
        ]);
    }
}

/// `gobgp -u 127.0.0.1 -p 50051 ARGS` in tesserad's namespace.
fn gobgp_tcp(lab: &Lab, args: &[&str]) -> Result<String, String> {
    let mut argv = vec![
        "ip",
        "netns",
        "exec",
        &lab.center_ns,
        "gobgp",
        "-u",
        "127.0.0.1",
        "-p",
        "50051",
    ];
    argv.extend_from_slice(args);
    common::sh(&argv)
}

/// One gRPC call (`GetBgp`, an empty request) over TLS with curl, with or
/// without the client certificate; `Ok` holds the response headers and
/// trailers.
fn curl_get_bgp(lab: &Lab, client_cert: bool) -> Result<String, String> {
    let p = |f: &str| lab.path(f).display().to_string();
    // A gRPC frame: not compressed, length 0 (GetBgpRequest has no fields).
    let body = lab.path("getbgp.bin");
    std::fs::write(&body, [0u8; 5]).expect("getbgp.bin");
    let (ca, cert, key, hdr) = (p("ca.pem"), p("client.pem"), p("client.key"), p("curl.hdr"));
    let data = format!("@{}", body.display());
    let mut argv = vec![
        "ip",
        "netns",
        "exec",
        &lab.center_ns,
        "curl",
        "-sS",
        "--http2",
        "--max-time",
        "8",
        "--cacert",
        &ca,
        "-H",
        "content-type: application/grpc",
        "-H",
        "te: trailers",
        "--data-binary",
        &data,
        "-o",
        "/dev/null",
        "-D",
        &hdr,
    ];
    if client_cert {
        argv.extend_from_slice(&["--cert", &cert, "--key", &key]);
    }
    argv.push("https://127.0.0.1:50051/apipb.GobgpApi/GetBgp");
    common::sh(&argv)?;
    Ok(std::fs::read_to_string(lab.path("curl.hdr")).unwrap_or_default())
}

#[test]
fn gobgp_cli_over_tls() {
    if !common::ready(&["gobgp", "openssl", "curl", "ip"]) {
        return;
    }
    let lab = Lab::star("grpc-tls", 1);
    make_certs(&lab);
    let p = |f: &str| lab.path(f).display().to_string();
    let conf = |client_ca: bool| {
        let mut api = format!(
            "\n[api]\nlisten = \"127.0.0.1:50051\"\ntls_cert = \"{}\"\ntls_key = \"{}\"\n",
            p("server.pem"),
            p("server.key")
        );
        if client_ca {
            api.push_str(&format!("tls_client_ca = \"{}\"\n", p("ca.pem")));
        }
        let cfg = Config {
            asn: T_AS,
            router_id: "198.18.0.1".into(),
            neighbors: Vec::new(),
            cluster_id: None,
        };
        move |sock: &std::path::Path| format!("{}{api}", cfg.render(sock))
    };
    let ca = p("ca.pem");

    // TLS, no client certificates: the gobgp CLI with --tls works ...
    let t = Tesserad::start_with(&lab, conf(false));
    let g = lab.wait(10, "gobgp --tls global answers", || {
        Ok(gobgp_tcp(&lab, &["--tls", "--tls-ca-file", &ca, "global"]).ok())
    });
    if !(g.contains(&T_AS.to_string()) && g.contains("198.18.0.1")) {
        lab.fail(&format!("gobgp --tls global: {g}"));
    }
    let rib = gobgp_tcp(&lab, &["--tls", "--tls-ca-file", &ca, "global", "rib"])
        .unwrap_or_else(|e| lab.fail(&format!("gobgp --tls global rib: {e}")));
    if !rib.contains("192.0.2.0/24") {
        lab.fail(&format!("gobgp --tls global rib lacks the static: {rib}"));
    }
    // ... and plain text on the TLS port does not.
    if let Ok(out) = gobgp_tcp(&lab, &["global"]) {
        lab.fail(&format!(
            "plain-text gobgp got an answer from the TLS listener: {out}"
        ));
    }
    lab.stop("tesserad");
    drop(t);

    // tls_client_ca: a client without a certificate is refused, one with
    // a certificate from that CA is served.
    let t = Tesserad::start_with(&lab, conf(true));
    let hdr = lab.wait(10, "GetBgp with a client certificate answers", || {
        Ok(curl_get_bgp(&lab, true).ok())
    });
    if !hdr.lines().any(|l| l.trim() == "grpc-status: 0") {
        lab.fail(&format!(
            "GetBgp with a client certificate: no grpc-status 0 in\n{hdr}"
        ));
    }
    if let Ok(h) = curl_get_bgp(&lab, false) {
        lab.fail(&format!("a client without a certificate was served:\n{h}"));
    }
    match gobgp_tcp(&lab, &["--tls", "--tls-ca-file", &ca, "global"]) {
        Ok(out) => lab.fail(&format!(
            "gobgp --tls without a client certificate was served: {out}"
        )),
        Err(e) => eprintln!("gobgp without a client certificate, refused as it should be: {e}"),
    }
    drop(t);
}

/// The `state` and `since_ms` of neighbour `name` in `show protocols`
/// (the request `tessera show protocols` sends); `None` when absent.
fn protocol_state(t: &Tesserad, name: &str) -> Option<(String, u64)> {
    let out = t
        .request(r#"{"command":"show_protocols","all":false}"#)
        .ok()?;
    let v: serde_json::Value = serde_json::from_str(&out).ok()?;
    let list = v.pointer("/response/ok/data")?;
    let p = list.as_array()?.iter().find(|p| p["name"] == name)?;
    Some((
        p["state"].as_str().unwrap_or("").to_string(),
        p["since_ms"].as_u64().unwrap_or(0),
    ))
}

#[test]
fn gobgp_cli_adds_and_deletes_a_neighbor() {
    if !common::ready(&["gobgp", "bird", "birdc", "ip"]) {
        return;
    }
    const A_AS: u32 = 65002;
    let lab = Lab::star("grpc-addpeer", 2);
    let (leaf1, leaf2) = (lab.leaf(1), lab.leaf(2));
    let cfg = Config {
        asn: T_AS,
        router_id: "198.18.0.1".into(),
        neighbors: vec![Neighbor {
            name: "peer1".into(),
            addr: leaf1.v4.clone(),
            local_addr: leaf1.center_v4.clone(),
            remote_as: P_AS,
            hold: 9,
            rr_client: false,
            rs_client: false,
            max_prefix: None,
        }],
        cluster_id: None,
    };
    let api_sock = lab.path("api.sock");
    let target = format!("unix:{}", api_sock.display());
    let t = Tesserad::start_with(&lab, |sock| {
        format!(
            "{}\n[api]\nlisten = \"unix:{}\"\n",
            cfg.render(sock).replacen(
                "[router]\n",
                "[router]\ndefault_import = \"accept\"\ndefault_export = \"accept\"\n",
                1
            ),
            api_sock.display()
        )
    });
    let s1 = Session::leaf(leaf1, P_AS, T_AS);
    let bird1 = Bird::start(&lab, "peer1", &s1);
    wait_established(&lab, &bird1, 20);
    // BIRD at leaf 2 expects tesserad; tesserad does not know it yet.
    let s2 = Session::leaf(leaf2, A_AS, T_AS);
    let bird2 = Bird::start(&lab, "peer2", &s2);
    let [r4, _] = s2.routes();
    let addr = leaf2.v4.clone();
    let name = format!("n{}", addr.replace('.', "_"));
    if protocol_state(&t, &name).is_some() {
        lab.fail("the neighbour exists before AddPeer");
    }

    // AddPeer: a session, visible in `show protocols` and `gobgp neighbor`,
    // routes both ways.
    gobgp(
        &lab,
        &target,
        &["neighbor", "add", &addr, "as", &A_AS.to_string()],
    );
    wait_established(&lab, &bird2, 30);
    let (state, since) = lab.wait(20, "show protocols has the added neighbour up", || {
        Ok(protocol_state(&t, &name).filter(|(s, _)| s == "up"))
    });
    eprintln!("show protocols: {name} {state} since {since}");
    let n = gobgp(&lab, &target, &["neighbor"]);
    if !n
        .lines()
        .any(|l| l.contains(&addr) && l.contains(&A_AS.to_string()) && l.contains("Establ"))
    {
        lab.fail(&format!("gobgp neighbor lacks the added peer: {n}"));
    }
    wait_present(&lab, &bird2, "192.0.2.0/24", 20);
    lab.wait(20, "the added neighbour's route is in adj-in", || {
        let out = gobgp(&lab, &target, &["neighbor", &addr, "adj-in"]);
        Ok(out.contains(&r4.prefix).then_some(()))
    });
    // Adding it again is refused.
    if let Ok(out) = common::sh(&[
        "gobgp",
        "--target",
        &target,
        "neighbor",
        "add",
        &addr,
        "as",
        &A_AS.to_string(),
    ]) {
        lab.fail(&format!("a second AddPeer of {addr} succeeded: {out}"));
    }

    // A reload of the unchanged file keeps the API's neighbour, session
    // and all (GoBGP keeps them too).
    let out = t
        .request(r#"{"command":"configure","check":false}"#)
        .unwrap_or_else(|e| lab.fail(&format!("configure: {e}")));
    eprintln!("configure: {out}");
    std::thread::sleep(std::time::Duration::from_secs(2));
    match protocol_state(&t, &name) {
        Some((s, since2)) if s == "up" && since2 == since => {}
        other => lab.fail(&format!(
            "after a reload the added neighbour is {other:?}, was up since {since}"
        )),
    }
    if !bird2.established().unwrap_or(false) {
        lab.fail("BIRD's session to the added neighbour dropped on reload");
    }

    // DeletePeer of a neighbour from the file is refused; it stays up.
    let e = common::sh(&["gobgp", "--target", &target, "neighbor", "del", &leaf1.v4]);
    match e {
        Ok(out) => lab.fail(&format!(
            "DeletePeer of the file's neighbour succeeded: {out}"
        )),
        Err(e) if !e.contains("configured in") => lab.fail(&format!(
            "DeletePeer of the file's neighbour: unexpected error {e}"
        )),
        Err(_) => {}
    }
    if !bird1.established().unwrap_or(false) {
        lab.fail("the file's neighbour went down after a refused DeletePeer");
    }

    // DeletePeer: the session ends, the neighbour and its routes go.
    gobgp(&lab, &target, &["neighbor", "del", &addr]);
    lab.wait(
        20,
        "BIRD sees the deleted neighbour's session go down",
        || Ok((!bird2.established()?).then_some(())),
    );
    if let Some(p) = protocol_state(&t, &name) {
        lab.fail(&format!(
            "show protocols still has the deleted neighbour: {p:?}"
        ));
    }
    lab.wait(20, "the deleted neighbour's route leaves the RIB", || {
        Ok(t.route(&r4.prefix)?.is_none().then_some(()))
    });
    let n = gobgp(&lab, &target, &["neighbor"]);
    if n.contains(&addr) {
        lab.fail(&format!("gobgp neighbor still lists {addr}: {n}"));
    }
}
