//! Virtual routers matched by 802.1Q VLAN and by destination prefix
//! (`[[dataplane.vr]] vlan = N`, `prefix = [...]`) in a running tesserad,
//! on veth pairs in namespaces this test creates. R forwards with its own
//! dataplane only (AF_PACKET, one core, kernel forwarding off); every VR
//! has `table = "main"` (a static route to 198.19.113.0/24 via
//! 198.18.2.2).
//!
//! `vrs_split_by_vlan_on_one_port`: two VRs on one pair of ports, split
//! by VLAN:
//!
//! ```text
//! A [a0 198.18.1.2] -- pa (VLAN 10)                  (VLAN 10) pb -- [b0 198.18.2.2] B (lo 198.19.113.1)
//!                        S: t0 ==trunk== r0  R  r1 ==trunk== t1 :S
//! C [c0 198.18.1.2] -- pc (VLAN 20)                  (VLAN 20) pd -- [d0 198.18.2.2] D (lo 198.19.113.1)
//! ```
//!
//! A and C, and B and D, have the same addresses: the VLANs are separate
//! layer-2 domains, and only the VLAN tells red (VLAN 10) from blue (VLAN
//! 20). S is an 802.1Q access switch: frames from pa/pc (pb/pd) go to
//! the trunk tagged 10/20 and tagged frames from the trunk go untagged to
//! the access port of their VLAN. The test's kernel has no 802.1Q
//! (`CONFIG_VLAN_8021Q`, bridge VLAN filtering and `act_vlan` are all
//! off), so S is user-space code of this test (AF_PACKET sockets of
//! crate `io`); A, B, C and D are plain kernel hosts. Proven: pings from
//! A and C both get through; A's datagrams reach B only and C's reach D
//! only (each VR's ARP resolved 198.18.2.2 in its own VLAN, and its
//! frames left with its own tag); per-VR counters in `show dataplane
//! --json` count each VLAN's traffic at its VR.
//!
//! `vrs_split_by_destination_prefix`: two VRs split by destination:
//! red takes 198.19.113.0/25 and A's subnet (the answers to A), blue
//! 198.19.113.128/25 and C's subnet. Proven: A's pings to .1 run through
//! red only and to .129 through blue (whose answers come back through
//! red); a destination in no prefix is dropped as `no_vr`; the hosts'
//! ARP requests for R's port addresses are answered (by the VR holding
//! the address, or the first VR).
//!
//! Needs root, `ip`, `ping`, `ethtool`; bounded, torn down also on
//! failure.

use e2e as common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::netlab::{in_ns, udp_sink, NetLab, StopOnDrop};
use pkt::Device;

e2e::netlab_newtype!(
    /// The namespaces; dropping it tears everything down.
    Lab
);

/// Datagrams received per tag (the first byte, 0..16).
type Counts = common::netlab::TagCounts;

fn counts(c: &Counts) -> [u32; 16] {
    std::array::from_fn(|i| c[i].load(Ordering::Relaxed))
}

/// The destination of the test's datagrams and pings.
const DST: &str = "198.19.113.1";

impl Lab {
    /// tesserad's configuration on ports `ports` (name, addresses) with
    /// `vrs` (each a `[[dataplane.vr]]` body without its header) and
    /// `extra` appended; its path.
    fn write_config(&self, ports: &[(&str, &str)], vrs: &[&str], extra: &str) -> PathBuf {
        let mut text = format!(
            "[router]\nid = \"198.18.9.1\"\nasn = 65000\npipeline = \"sequential\"\n\
             listen = [\"127.0.0.1:179\"]\n\n\
             [control]\nsocket = \"{}\"\n\n\
             [[static]]\nprefix = \"198.19.113.0/24\"\nnext_hop = \"198.18.2.2\"\n\n\
             [dataplane]\nio = \"af_packet\"\ncores = 1\n",
            self.path("tesserad.sock").display(),
        );
        for (name, addr) in ports {
            text +=
                &format!("\n[[dataplane.interface]]\nname = \"{name}\"\naddresses = [{addr}]\n");
        }
        for v in vrs {
            text += &format!("\n[[dataplane.vr]]\n{v}table = \"main\"\ngranularity_us = 100\n");
        }
        text += extra;
        PathBuf::from(self.write("tesserad.toml", &text))
    }

    /// Checks the configuration with `--check`, starts tesserad on it in
    /// R and waits (bounded) until it answers `show dataplane`.
    fn start(&mut self, cfg: &Path) {
        let bin = env!("CARGO_BIN_EXE_tesserad");
        let cfg = cfg.display().to_string();
        self.exec("r", &[bin, "-c", &cfg, "--check"])
            .expect("--check accepts the VRs");
        self.spawn("r", &[bin, "-c", &cfg], "tesserad.log");
        let end = Instant::now() + Duration::from_secs(20);
        while self.0.tessera("r", &["show", "dataplane"]).is_err() {
            assert!(
                Instant::now() < end,
                "tesserad did not start: {}",
                self.diag()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// IPv6 off in namespaces `ns`, for the interfaces made after.
    fn no_ipv6(&self, ns: &[&str]) {
        for n in ns {
            for k in ["all", "default"] {
                self.must_cmd(n, &format!("sysctl -qw net.ipv6.conf.{k}.disable_ipv6=1"));
            }
        }
    }

    fn diag(&self) -> String {
        format!("--- tesserad.log\n{}", self.log("tesserad.log"))
    }

    /// `show dataplane --json`.
    fn show(&self) -> serde_json::Value {
        let s = self
            .0
            .tessera("r", &["show", "dataplane", "--json"])
            .expect("show dataplane");
        serde_json::from_str(&s).unwrap_or_else(|e| panic!("{e}: {s}"))
    }

    /// Waits (bounded) until `f` holds on `show dataplane`.
    fn wait_show(&self, what: &str, f: impl Fn(&serde_json::Value) -> bool) -> serde_json::Value {
        let end = Instant::now() + Duration::from_secs(10);
        loop {
            let v = self.show();
            if f(&v) {
                return v;
            }
            assert!(Instant::now() < end, "{what}: {v}\n{}", self.diag());
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// `count` pings from namespace `n` to `dst`; whether all came back.
    fn ping_ok(&self, n: &str, dst: &str, count: u32) -> bool {
        let out = self.ping(n, &format!("-c {count} -i 0.2 -W 1 -w 5 {dst}"));
        out.contains(&format!("{count} received"))
    }

    /// Pings (one at a time, bounded) until one from `n` to `dst` comes
    /// back: the first ones may be lost while R resolves ARP.
    fn wait_ping(&self, n: &str, dst: &str) {
        let end = Instant::now() + Duration::from_secs(15);
        while !self.ping_ok(n, dst, 1) {
            assert!(
                Instant::now() < end,
                "{n}: no answer from {dst}\n{}",
                self.diag()
            );
        }
    }

    /// A UDP sink on [`DST`]:5001 in namespace `n` until `stop`.
    fn sink(
        &self,
        n: &str,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> (Counts, std::thread::JoinHandle<()>) {
        udp_sink(self.ns(n), DST, 5001, stop)
    }

    /// Sends `count` datagrams tagged `tag` to [`DST`]:5001 from
    /// namespace `n`, paced (10 per 2 ms).
    fn send(&self, n: &str, tag: u8, count: u32) {
        in_ns(self.ns(n), move || {
            let s = std::net::UdpSocket::bind(("0.0.0.0", 0)).expect("bind");
            let mut b = [0u8; 100];
            b[0] = tag;
            for i in 0..count {
                let _ = s.send_to(&b, (DST, 5001));
                if i % 10 == 9 {
                    std::thread::sleep(Duration::from_millis(2));
                }
            }
        })
        .join()
        .expect("sender");
    }
}

/// The VR called `name` in a `show dataplane --json` answer.
fn vr<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["vrs"]
        .as_array()
        .and_then(|a| a.iter().find(|e| e["name"] == name))
        .unwrap_or_else(|| panic!("no VR {name} in {v}"))
}

/// A number of VR `name` (`rx`, `tx`, ...).
fn num(v: &serde_json::Value, name: &str, key: &str) -> u64 {
    vr(v, name)[key].as_u64().unwrap_or(0)
}

/// The core's `no_vr` drops.
fn no_vr(v: &serde_json::Value) -> u64 {
    v["per_core"][0]["drops"]["no_vr"].as_u64().unwrap_or(0)
}

/// An 802.1Q access switch in namespace `ns` until `stop`: frames read on
/// an access port `(name, vid)` leave `trunk` tagged `vid`; frames read on
/// `trunk` tagged `vid` leave that access port untagged; anything else is
/// dropped. It sleeps in `poll(2)` (50 ms) when nothing comes.
fn switch(
    ns: String,
    trunk: &'static str,
    access: [(&'static str, u16); 2],
    stop: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Result<(), String>> {
    in_ns(ns, move || {
        let open = |n: &str| {
            io::packet::PacketSocket::open(&io::packet::PacketConfig::new(n))
                .map_err(|e| format!("AF_PACKET on {n}: {e:?}"))
        };
        let mut t = open(trunk)?;
        let mut ports = [open(access[0].0)?, open(access[1].0)?];
        let fds: Vec<i32> = std::iter::once(t.poll_fd())
            .chain(ports.iter().map(|p| p.poll_fd()))
            .flatten()
            .collect();
        let pool = pkt::Pool::new(1024);
        let mut b = pkt::Batch::with_capacity(64);
        let mut out = [pkt::Batch::with_capacity(64), pkt::Batch::with_capacity(64)];
        while !stop.load(Ordering::Relaxed) {
            io::sys::poll_many(&fds, 50).map_err(|e| format!("poll: {e:?}"))?;
            for (i, p) in ports.iter_mut().enumerate() {
                p.rx_burst(&pool, &mut b, 64);
                for f in b.iter_mut() {
                    let vid = access[i].1.to_be_bytes();
                    if f.len() >= 14 && f.push_front(4).is_ok() {
                        let d = f.data_mut();
                        d.copy_within(4..16, 0);
                        d[12..16].copy_from_slice(&[0x81, 0x00, vid[0], vid[1]]);
                    }
                }
                t.tx_burst(&mut b);
                b.clear();
            }
            t.flush();
            t.rx_burst(&pool, &mut b, 64);
            for mut f in b.drain() {
                let d = f.data();
                if d.len() < 18 || d[12..14] != [0x81, 0x00] {
                    continue;
                }
                let vid = u16::from_be_bytes([d[14], d[15]]) & 0x0fff;
                let Some(i) = access.iter().position(|a| a.1 == vid) else {
                    continue;
                };
                f.data_mut().copy_within(0..12, 4);
                if f.pull_front(4).is_ok() {
                    let _ = out[i].push(f);
                }
            }
            for (p, o) in ports.iter_mut().zip(out.iter_mut()) {
                p.tx_burst(o);
                o.clear();
                p.flush();
            }
        }
        Ok(())
    })
}

#[test]
fn vrs_split_by_vlan_on_one_port() {
    const N: u32 = 200;
    let mut lab = Lab(NetLab::new(
        "vm",
        &["a", "b", "c", "d", "s", "r"],
        "this test",
        &["ip", "ping", "ethtool"],
    ));
    // No IPv6 in the lab: its autoconfiguration's multicast frames would
    // land at the VRs at unpredictable times.
    lab.no_ipv6(&["a", "b", "c", "d", "s", "r"]);
    lab.link("s", "t0", "r", "r0");
    lab.link("r", "r1", "s", "t1");
    lab.link("a", "a0", "s", "pa");
    lab.link("c", "c0", "s", "pc");
    lab.link("b", "b0", "s", "pb");
    lab.link("d", "d0", "s", "pd");
    for (n, cmd) in [
        ("a", "ip addr add 198.18.1.2/24 dev a0"),
        ("c", "ip addr add 198.18.1.2/24 dev c0"),
        ("b", "ip addr add 198.18.2.2/24 dev b0"),
        ("d", "ip addr add 198.18.2.2/24 dev d0"),
        ("b", "ip addr add 198.19.113.1/32 dev lo"),
        ("d", "ip addr add 198.19.113.1/32 dev lo"),
        ("r", "sysctl -qw net.ipv4.ip_forward=0"),
    ] {
        lab.must_cmd(n, cmd);
    }
    for (n, i) in [
        ("a", "a0"),
        ("b", "b0"),
        ("c", "c0"),
        ("d", "d0"),
        ("s", "t0"),
        ("s", "t1"),
        ("s", "pa"),
        ("s", "pb"),
        ("s", "pc"),
        ("s", "pd"),
        ("r", "r0"),
        ("r", "r1"),
    ] {
        lab.up(n, i);
    }
    for n in ["a", "c"] {
        lab.must_cmd(n, "ip route add default via 198.18.1.1");
    }
    for n in ["b", "d"] {
        lab.must_cmd(n, "ip route add default via 198.18.2.1");
    }
    let stop = Arc::new(AtomicBool::new(false));
    let _stop = StopOnDrop(Arc::clone(&stop));
    let sw = [
        switch(
            lab.ns("s"),
            "t0",
            [("pa", 10), ("pc", 20)],
            Arc::clone(&stop),
        ),
        switch(
            lab.ns("s"),
            "t1",
            [("pb", 10), ("pd", 20)],
            Arc::clone(&stop),
        ),
    ];
    let cfg = lab.write_config(
        &[("r0", "\"198.18.1.1/24\""), ("r1", "\"198.18.2.1/24\"")],
        &[
            "name = \"red\"\nvlan = 10\n",
            "name = \"blue\"\nvlan = 20\ntickets = 300\n",
        ],
        "",
    );
    lab.start(&cfg);
    let (nb, sink_b) = lab.sink("b", Arc::clone(&stop));
    let (nd, sink_d) = lab.sink("d", Arc::clone(&stop));

    // Both VLANs forward: each VR resolves 198.18.2.2 in its own VLAN.
    lab.wait_ping("a", DST);
    lab.wait_ping("c", DST);
    let before = lab.show();
    assert!(lab.ping_ok("a", DST, 5), "A: pings lost\n{}", lab.diag());
    let v = lab.wait_show("red counts A's pings and their answers", |v| {
        num(v, "red", "rx") >= num(&before, "red", "rx") + 10
            && num(v, "red", "tx") >= num(&before, "red", "tx") + 10
    });
    assert!(
        num(&v, "blue", "rx") < num(&before, "blue", "rx") + 5
            && num(&v, "blue", "tx") <= num(&before, "blue", "tx") + 1,
        "blue got VLAN 10's pings: {before} {v}"
    );
    assert_eq!(num(&v, "blue", "tickets"), 300);

    // Each VLAN's datagrams to its own B: A's (tag 2) at B only, C's
    // (tag 3) at D only, counted at their VRs.
    let before = lab.show();
    lab.send("a", 2, N);
    lab.send("c", 3, N);
    lab.wait_for(
        "tag 2 at B and tag 3 at D",
        10,
        || lab.diag(),
        || counts(&nb)[2] >= N * 9 / 10 && counts(&nd)[3] >= N * 9 / 10,
    );
    std::thread::sleep(Duration::from_millis(300));
    let (b, d) = (counts(&nb), counts(&nd));
    assert_eq!(d[2], 0, "A's datagrams at D: B {b:?} D {d:?}");
    assert_eq!(b[3], 0, "C's datagrams at B: B {b:?} D {d:?}");
    let v = lab.show();
    for name in ["red", "blue"] {
        for key in ["rx", "tx"] {
            assert!(
                num(&v, name, key) >= num(&before, name, key) + u64::from(N * 9 / 10),
                "{name} {key}: {before} {v}"
            );
        }
    }
    let tx = |n: &str| num(&v, n, "tx") - num(&before, n, "tx");
    assert!(
        tx("red") < u64::from(N) * 3 / 2 && tx("blue") < u64::from(N) * 3 / 2,
        "a VR sent the other's datagrams: {before} {v}"
    );

    stop.store(true, Ordering::Relaxed);
    sink_b.join().expect("sink B");
    sink_d.join().expect("sink D");
    for s in sw {
        s.join().expect("switch").expect("switch ran");
    }
}

#[test]
fn vrs_split_by_destination_prefix() {
    let mut lab = Lab(NetLab::new(
        "vp",
        &["a", "b", "c", "r"],
        "this test",
        &["ip", "ping", "ethtool"],
    ));
    lab.no_ipv6(&["a", "b", "c", "r"]);
    lab.link("a", "a0", "r", "r0");
    lab.link("r", "r1", "b", "b0");
    lab.link("c", "c0", "r", "r2");
    for (n, cmd) in [
        ("a", "ip addr add 198.18.1.2/24 dev a0"),
        ("b", "ip addr add 198.18.2.2/24 dev b0"),
        ("c", "ip addr add 198.18.3.2/24 dev c0"),
        ("b", "ip addr add 198.19.113.1/32 dev lo"),
        ("b", "ip addr add 198.19.113.129/32 dev lo"),
        ("r", "sysctl -qw net.ipv4.ip_forward=0"),
    ] {
        lab.must_cmd(n, cmd);
    }
    for (n, i) in [
        ("a", "a0"),
        ("b", "b0"),
        ("c", "c0"),
        ("r", "r0"),
        ("r", "r1"),
        ("r", "r2"),
    ] {
        lab.up(n, i);
    }
    for (n, gw) in [
        ("a", "198.18.1.1"),
        ("b", "198.18.2.1"),
        ("c", "198.18.3.1"),
    ] {
        lab.must(n, &["ip", "route", "add", "default", "via", gw]);
    }
    let cfg = lab.write_config(
        &[
            ("r0", "\"198.18.1.1/24\""),
            ("r1", "\"198.18.2.1/24\""),
            ("r2", "\"198.18.3.1/24\""),
        ],
        &[
            "name = \"red\"\nprefix = [\"198.19.113.0/25\", \"198.18.1.0/24\"]\n",
            "name = \"blue\"\nprefix = [\"198.19.113.128/25\", \"198.18.3.0/24\"]\n",
        ],
        "",
    );
    lab.start(&cfg);

    // A resolves R's r0 address through red (whose prefix holds it), B
    // resolves r1's through the first VR (red: r1's address is in no
    // prefix), C r2's through blue; pings cross.
    lab.wait_ping("a", "198.19.113.1");
    lab.wait_ping("c", "198.19.113.129");

    // To .1: red both ways; blue sees no packet of it.
    let before = lab.show();
    assert!(
        lab.ping_ok("a", "198.19.113.1", 5),
        "A to .1: pings lost\n{}",
        lab.diag()
    );
    let v = lab.wait_show("red forwards A's pings to .1 and their answers", |v| {
        num(v, "red", "tx") >= num(&before, "red", "tx") + 10
    });
    assert!(
        num(&v, "blue", "rx") < num(&before, "blue", "rx") + 5
            && num(&v, "blue", "tx") < num(&before, "blue", "tx") + 5,
        "blue got pings to .1: {before} {v}"
    );

    // To .129: blue there, red back (the answers are to A's subnet).
    let before = lab.show();
    assert!(
        lab.ping_ok("a", "198.19.113.129", 5),
        "A to .129: pings lost\n{}",
        lab.diag()
    );
    let v = lab.wait_show("blue forwards A's pings to .129, red the answers", |v| {
        num(v, "blue", "tx") >= num(&before, "blue", "tx") + 5
            && num(v, "red", "tx") >= num(&before, "red", "tx") + 5
    });
    assert!(
        num(&v, "blue", "tx") < num(&before, "blue", "tx") + 10,
        "blue forwarded the answers too: {before} {v}"
    );

    // A destination in no prefix belongs to no VR.
    let before = lab.show();
    let _ = lab.ping("a", "-c 3 -i 0.2 -W 1 198.19.114.1");
    lab.wait_show("no_vr counts the pings to 198.19.114.1", |v| {
        no_vr(v) >= no_vr(&before) + 3
    });
}

/// IPv6 under prefix rules, Neighbor Discovery included: A's Neighbor
/// Solicitations for R's r0 address (in red's prefix) reach red, B's for
/// r1's (in no prefix) the first VR (red again), the Neighbor
/// Advertisements every VR; A's pings to 2001:db8:113::1 and their
/// answers run through red, none through blue (whose prefix is elsewhere).
#[test]
fn vrs_split_by_ipv6_prefix_with_nd() {
    let mut lab = Lab(NetLab::new(
        "v6",
        &["a", "b", "r"],
        "this test",
        &["ip", "ping", "ethtool"],
    ));
    lab.link("a", "a0", "r", "r0");
    lab.link("r", "r1", "b", "b0");
    for (n, cmd) in [
        ("a", "ip addr add 2001:db8:1::2/64 dev a0 nodad"),
        ("b", "ip addr add 2001:db8:2::2/64 dev b0 nodad"),
        ("b", "ip addr add 2001:db8:113::1/128 dev lo"),
        ("r", "sysctl -qw net.ipv6.conf.all.forwarding=0"),
    ] {
        lab.must_cmd(n, cmd);
    }
    for (n, i) in [("a", "a0"), ("b", "b0"), ("r", "r0"), ("r", "r1")] {
        lab.up(n, i);
    }
    lab.must_cmd("a", "ip -6 route add default via 2001:db8:1::1");
    lab.must_cmd("b", "ip -6 route add default via 2001:db8:2::1");
    let cfg = lab.write_config(
        &[
            ("r0", "\"198.18.1.1/24\", \"2001:db8:1::1/64\""),
            ("r1", "\"198.18.2.1/24\", \"2001:db8:2::1/64\""),
        ],
        &[
            "name = \"red\"\nprefix = [\"2001:db8:113::/64\", \"2001:db8:1::/64\"]\n",
            "name = \"blue\"\nprefix = [\"2001:db8:114::/64\"]\n",
        ],
        "\n[[static]]\nprefix = \"2001:db8:113::/64\"\nnext_hop = \"2001:db8:2::2\"\n",
    );
    lab.start(&cfg);
    lab.wait_ping("a", "2001:db8:113::1");
    let before = lab.show();
    assert!(
        lab.ping_ok("a", "2001:db8:113::1", 5),
        "A: pings lost\n{}",
        lab.diag()
    );
    let v = lab.wait_show("red forwards A's pings and their answers", |v| {
        num(v, "red", "tx") >= num(&before, "red", "tx") + 10
    });
    assert!(
        num(&v, "blue", "tx") <= num(&before, "blue", "tx") + 1,
        "blue forwarded: {before} {v}"
    );
    assert!(num(&v, "blue", "rx") >= 1, "no NA reached blue: {v}");
}
