//! IPsec ESP tunnel mode (RFC 4303, AES-GCM-128 per RFC 4106) in
//! tesserad's dataplane against other implementations, over veth in
//! network namespaces:
//!
//! ```text
//! A [a0 198.18.1.2] -- [r0 198.18.1.1] R (tesserad) [r1 198.18.2.1] == ESP == [p0 198.18.2.2] P
//!                                                                 protected: 198.18.3.0/24 behind P
//! ```
//!
//! R's dataplane ports have no kernel addresses and kernel forwarding is
//! off: every packet crossing R was moved, sealed or opened by Tessera.
//! R has `[[dataplane.ipsec.sa]]` SPI 0x1001 out (198.18.3.0/24 is
//! encrypted toward 198.18.2.2) and SPI 0x2001 in (from 198.18.2.2, inner
//! sources 198.18.3.0/24).
//!
//! * `ipsec_scapy_peer_both_directions`: P is Scapy's ESP
//!   (`tests/ipsec/peer.py`). A sends UDP to 198.18.3.1; R seals it; Scapy
//!   opens it, answers with a datagram it seals; R opens that and
//!   forwards it to A. Every answer reaching A proves both directions;
//!   Scapy also reports that nothing for 198.18.3.0/24 crossed the link
//!   in the clear. tshark, a third implementation, captures the tunnel
//!   link and decrypts both SAs with their keys: our packets (SPI 0x1001)
//!   must show A's datagrams inside, Scapy's (SPI 0x2001) the answers.
//!   Needs root, `ip`, `ethtool`, `tshark`, `/usr/bin/python3` with
//!   Scapy (Debian python3-scapy).
//! * `ipsec_kernel_xfrm_both_directions`: P is the Linux kernel's XFRM
//!   (`ip xfrm state/policy`, `aead 'rfc4106(gcm(aes))' ... 128`). The
//!   test VM's own kernel (6.18, checked 2026-11-26 in /proc/config.gz)
//!   has no ESP, no GCM and no module support, so the kernel is a
//!   User-mode Linux guest (Debian's `user-mode-linux`, Linux 6.1, its
//!   ESP and GCM modules loaded on demand; `e2e::uml`), whose interface
//!   is a tap bridged with `p0` in P: the guest is 198.18.2.2, with
//!   198.18.3.1 on its loopback. The guest pings A from 198.18.3.1 (its
//!   kernel seals, we open; we seal, it opens), then A pings 198.18.3.1;
//!   both kernel states' packet counters and ours must move, with no
//!   drop. Needs root, `ip`, `ethtool`, `ping`, `linux.uml` and kmod's
//!   `modprobe`.
//!
//! Every step is bounded (a pass takes seconds, a failure under a minute)
//! and the namespaces and processes go away on drop, also on failure.

use e2e as common;

use std::net::UdpSocket;
use std::process::Command;
use std::time::{Duration, Instant};

use common::cluster::sh;
use common::netlab::{counter, in_ns, NetLab};

/// Our outbound SA (the peer's inbound): key, salt.
const OUT_KEY: &str = "00112233445566778899aabbccddeeff";
const OUT_SALT: &str = "01020304";
/// Our inbound SA (the peer's outbound).
const IN_KEY: &str = "ffeeddccbbaa99887766554433221100";
const IN_SALT: &str = "05060708";
/// tesserad's `/metrics`, inside R's namespace.
const METRICS: &str = "127.0.0.1:9324";

e2e::netlab_newtype!(
    /// A, R and P; dropping it tears everything down.
    Lab
);

impl Lab {
    /// A, R and P with their links and addresses (P's IPsec is the
    /// caller's); fails without root or one of `tools`.
    fn new(tools: &[&str]) -> Lab {
        let lab = NetLab::new("ips", &["a", "r", "p"], "IPsec interop tests", tools);
        lab.link("a", "a0", "r", "r0");
        lab.link("r", "r1", "p", "p0");
        lab.must_cmd("a", "ip addr add 198.18.1.2/24 dev a0");
        lab.must_cmd("p", "ip addr add 198.18.2.2/24 dev p0");
        lab.must_cmd("r", "sysctl -qw net.ipv4.ip_forward=0");
        for (n, i) in [("a", "a0"), ("r", "r0"), ("r", "r1"), ("p", "p0")] {
            lab.up(n, i);
        }
        lab.must_cmd("a", "ip route add default via 198.18.1.1");
        Lab(lab)
    }

    /// Starts tesserad in R with the dataplane, our two SAs and
    /// `/metrics` on [`METRICS`].
    fn tesserad(&mut self) {
        let text = format!(
            "[router]\nid = \"198.18.2.1\"\nasn = 65000\npipeline = \"sequential\"\n\
             listen = [\"127.0.0.1:1179\"]\n\n[control]\nsocket = \"{}\"\nmetrics = \"{METRICS}\"\n\n\
             [dataplane]\nio = \"af_packet\"\nkp = 32\nkn = 32\n\n\
             [[dataplane.interface]]\nname = \"r0\"\naddresses = [\"198.18.1.1/24\"]\n\n\
             [[dataplane.interface]]\nname = \"r1\"\naddresses = [\"198.18.2.1/24\"]\n\n\
             [[dataplane.ipsec.sa]]\nspi = 0x1001\ndirection = \"out\"\nkey = \"{OUT_KEY}\"\n\
             salt = \"{OUT_SALT}\"\ntunnel_src = \"198.18.2.1\"\ntunnel_dst = \"198.18.2.2\"\n\
             selectors = [\"198.18.3.0/24\"]\n\n\
             [[dataplane.ipsec.sa]]\nspi = 0x2001\ndirection = \"in\"\nkey = \"{IN_KEY}\"\n\
             salt = \"{IN_SALT}\"\ntunnel_src = \"198.18.2.2\"\ntunnel_dst = \"198.18.2.1\"\n\
             selectors = [\"198.18.3.0/24\"]\nreplay_window = 128\n",
            self.path("tesserad.sock").display()
        );
        let conf = self.write("tesserad.toml", &text);
        self.spawn(
            "r",
            &[env!("CARGO_BIN_EXE_tesserad"), "-c", &conf],
            "tesserad.log",
        );
        self.wait_log("tesserad.log", "dataplane: started", 20);
        assert!(
            self.log("tesserad.log")
                .contains("ipsec ESP tunnel mode, 1 outbound and 1 inbound SAs"),
            "{}",
            self.log("tesserad.log")
        );
    }

    /// Stops tesserad (SIGTERM) and returns its `ipsec:` counters line.
    fn stop_tesserad(&mut self) -> String {
        self.signal("tesserad.log", "TERM");
        self.wait_log("tesserad.log", "ipsec: encrypted=", 10);
        let log = self.log("tesserad.log");
        log.lines()
            .find(|l| l.starts_with("ipsec: "))
            .map(str::to_string)
            .unwrap_or_else(|| panic!("no ipsec counters from tesserad:\n{log}"))
    }
}

/// The drop reasons of EspEncap (out) and EspDecap (in).
const OUT_DROPS: [&str; 4] = ["not_ip", "too_big", "seq_exhausted", "no_room"];
const IN_DROPS: [&str; 7] = [
    "too_short",
    "malformed",
    "no_sa",
    "replay",
    "auth_failed",
    "policy",
    "dummy",
];

/// The drop counters on the `ipsec:` line are `want` (others zero).
fn drops_are(line: &str, want: &[(&str, u64)]) {
    for k in OUT_DROPS.iter().chain(&IN_DROPS) {
        let n = want.iter().find(|w| w.0 == *k).map_or(0, |w| w.1);
        assert_eq!(counter(line, k), n, "{k}: {line}");
    }
}

/// Every drop counter on the `ipsec:` line is zero.
fn no_drops(line: &str) {
    drops_are(line, &[]);
}

/// The row of SA `spi` (`None`: packets that named no SA) in direction
/// `dir` of `show dataplane --json`'s `ipsec` list.
fn sa_row<'a>(v: &'a serde_json::Value, spi: Option<u64>, dir: &str) -> &'a serde_json::Value {
    v["ipsec"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|r| r["spi"].as_u64() == spi && r["dir"] == dir)
        })
        .unwrap_or(&serde_json::Value::Null)
}

/// The value of the sample `name{labels}` in a `/metrics` text.
fn sample(m: &str, name_labels: &str) -> Option<u64> {
    m.lines()
        .find_map(|l| l.strip_prefix(name_labels)?.trim().parse().ok())
}

/// Per-SA counters after the Scapy exchange and its three bad packets,
/// in `show dataplane --json`, its text, and `/metrics`: SPI 0x1001 out
/// and 0x2001 in carried every datagram, 0x2001 dropped the replay and
/// the forged packet, and the unknown SPI is a `no_sa` drop of no SA.
fn check_sa_counters(lab: &Lab) {
    let (replay, forged, unknown) = (("replay", 1), ("auth_failed", 1), ("no_sa", 1));
    // The workers publish their counters when they go idle.
    let v = lab.wait_show("per-SA counters in show dataplane", |v| {
        sa_row(v, Some(0x2001), "in")["drops"][forged.0] == forged.1
            && sa_row(v, None, "in")["drops"][unknown.0] == 1
    });
    let (out, inb, none) = (
        sa_row(&v, Some(0x1001), "out"),
        sa_row(&v, Some(0x2001), "in"),
        sa_row(&v, None, "in"),
    );
    for (row, names, want) in [
        (out, &OUT_DROPS[..], &[][..]),
        (inb, &IN_DROPS[..], &[replay, forged][..]),
        (none, &IN_DROPS[..], &[unknown][..]),
    ] {
        for k in names {
            let n = want.iter().find(|w| w.0 == *k).map_or(0, |w| w.1);
            assert_eq!(row["drops"][k], n, "{k} of {row} in {v}");
        }
    }
    // Each request is `msg i` in UDP in IPv4 (20 + 8 + 5 bytes), each
    // answer `echo:msg i` (20 + 8 + 10); A resends a request whose answer
    // is late, and Scapy answers each one it opens.
    let (po, pi) = (out["packets"].as_u64(), inb["packets"].as_u64());
    assert!(po.is_some_and(|n| n >= 5), "{v}");
    assert!(pi.is_some_and(|n| n >= 5), "{v}");
    assert_eq!(out["bytes"].as_u64(), po.map(|n| n * 33), "{v}");
    assert_eq!(inb["bytes"].as_u64(), pi.map(|n| n * 38), "{v}");
    assert_eq!(out["element"], "enc0", "{v}");
    assert_eq!(inb["element"], "dec", "{v}");

    let text = lab
        .tessera("r", &["show", "dataplane"])
        .expect("show dataplane");
    let row = |spi: &str| {
        text.lines()
            .find(|l| l.starts_with(spi))
            .unwrap_or_else(|| panic!("no {spi} row: {text}"))
            .split_whitespace()
            .collect::<Vec<_>>()
    };
    let (pi, bi) = (
        pi.unwrap_or(0).to_string(),
        (pi.unwrap_or(0) * 38).to_string(),
    );
    assert_eq!(
        row("0x2001 "),
        ["0x2001", "in", "dec", &pi, &bi, "auth_failed=1", "replay=1"],
        "{text}"
    );
    assert_eq!(
        row("none "),
        ["none", "in", "dec", "0", "0", "no_sa=1"],
        "{text}"
    );

    let m = common::netlab::metrics(&lab.ns("r"), METRICS);
    for (labels, want) in [
        (
            r#"tessera_ipsec_sa_packets_total{spi="0x1001",dir="out"}"#,
            po,
        ),
        (
            r#"tessera_ipsec_sa_packets_total{spi="0x2001",dir="in"}"#,
            inb["packets"].as_u64(),
        ),
        (
            r#"tessera_ipsec_sa_bytes_total{spi="0x2001",dir="in"}"#,
            inb["bytes"].as_u64(),
        ),
        (
            r#"tessera_ipsec_sa_drops_total{spi="0x2001",dir="in",reason="replay"}"#,
            Some(1),
        ),
        (
            r#"tessera_ipsec_sa_drops_total{spi="0x2001",dir="in",reason="auth_failed"}"#,
            Some(1),
        ),
        (
            r#"tessera_ipsec_sa_drops_total{spi="0x2001",dir="in",reason="policy"}"#,
            Some(0),
        ),
        (
            r#"tessera_ipsec_sa_drops_total{spi="none",dir="in",reason="no_sa"}"#,
            Some(1),
        ),
        (
            r#"tessera_ipsec_sa_drops_total{spi="0x1001",dir="out",reason="too_big"}"#,
            Some(0),
        ),
    ] {
        assert_eq!(sample(&m, labels), want, "{labels} in /metrics:\n{m}");
    }
}

/// From A: `n` datagrams "msg i" to 198.18.3.1:5001, each resent (5
/// tries, 1 s then 2 s ... apart) until its own answer "echo:msg i"
/// comes; the answers received, in order. A late answer to an earlier
/// datagram (its resend was answered too) is read and passed over, so a
/// slow peer on a loaded machine does not shift the answers.
fn udp_round_trips(lab: &Lab, n: usize) -> Vec<String> {
    in_ns(lab.ns("a"), move || {
        let s = UdpSocket::bind(("198.18.1.2", 0)).expect("bind");
        let mut got = Vec::new();
        let mut b = [0u8; 1500];
        for i in 0..n {
            let msg = format!("msg {i}");
            let want = format!("echo:{msg}");
            'tries: for t in 1..=5u64 {
                s.send_to(msg.as_bytes(), ("198.18.3.1", 5001))
                    .expect("send");
                let end = Instant::now() + Duration::from_secs(t);
                while let Some(left) = end.checked_duration_since(Instant::now()) {
                    if left.is_zero() {
                        break;
                    }
                    s.set_read_timeout(Some(left)).expect("timeout");
                    match s.recv_from(&mut b) {
                        Ok((len, from)) if from.ip().to_string() == "198.18.3.1" => {
                            let text = String::from_utf8_lossy(&b[..len]).into_owned();
                            if text == want {
                                got.push(text);
                                break 'tries;
                            }
                        }
                        Ok(_) => {}
                        Err(_) => break,
                    }
                }
            }
        }
        got
    })
    .join()
    .expect("thread in namespace")
}

#[test]
fn ipsec_scapy_peer_both_directions() {
    let tools = ["ip", "ethtool", "tshark"];
    let scapy = Command::new("/usr/bin/python3")
        .args(["-c", "import scapy.layers.ipsec"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    assert!(
        scapy,
        "needs /usr/bin/python3 with Scapy (Debian package python3-scapy)"
    );
    let mut lab = Lab::new(&tools);
    let peer = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/ipsec/peer.py");
    let (kin, kout) = (format!("{OUT_KEY}{OUT_SALT}"), format!("{IN_KEY}{IN_SALT}"));
    lab.spawn(
        "p",
        &["/usr/bin/python3", peer, "p0", "5", "40", &kin, &kout],
        "peer.log",
    );
    lab.wait_log("peer.log", "ready", 30);
    let pcap = lab.path("link.pcap").display().to_string();
    lab.spawn(
        "p",
        &["tshark", "-n", "-i", "p0", "-F", "pcap", "-w", &pcap],
        "tshark.log",
    );
    lab.wait_log("tshark.log", "Capturing on", 30);
    lab.tesserad();

    let got = udp_round_trips(&lab, 5);
    let want: Vec<String> = (0..5).map(|i| format!("echo:msg {i}")).collect();
    assert_eq!(
        got,
        want,
        "answers through the tunnel\n--- peer.log\n{}\n--- tesserad.log\n{}",
        lab.log("peer.log"),
        lab.log("tesserad.log")
    );
    lab.wait_log("peer.log", "peer esp=", 45);
    let plog = lab.log("peer.log");
    let pline = plog
        .lines()
        .find(|l| l.starts_with("peer "))
        .unwrap_or_default();
    assert!(counter(pline, "opened") >= 5, "{plog}");
    assert_eq!(
        counter(pline, "bad"),
        3,
        "Scapy sent the bad packets: {plog}"
    );
    assert_eq!(
        counter(pline, "failed"),
        0,
        "Scapy opened every packet: {plog}"
    );
    assert_eq!(
        counter(pline, "clear"),
        0,
        "nothing for 198.18.3.0/24 in the clear: {plog}"
    );
    // R decremented the TTL (64 -> 63) before sealing, RFC 4301 §5.1.2.
    assert!(
        plog.contains("198.18.1.2->198.18.3.1 ttl=63 b'msg 0'"),
        "{plog}"
    );
    check_sa_counters(&lab);
    let line = lab.stop_tesserad();
    eprintln!("{pline}\n{line}");
    assert!(counter(&line, "encrypted") >= 5, "{line}");
    assert!(counter(&line, "decrypted") >= 5, "{line}");
    drops_are(&line, &[("replay", 1), ("auth_failed", 1), ("no_sa", 1)]);

    // tshark's ESP dissector opens what crossed the link, both ways.
    lab.signal("tshark.log", "INT");
    let end = Instant::now() + Duration::from_secs(10);
    while Instant::now() < end && !lab.log("tshark.log").contains("captured") {
        std::thread::sleep(Duration::from_millis(100));
    }
    let sa = |src: &str, dst: &str, spi: &str, k: &str| {
        format!(
            "uat:esp_sa:\"IPv4\",\"{src}\",\"{dst}\",\"{spi}\",\
             \"AES-GCM with 16 octet ICV [RFC4106]\",\"0x{k}\",\"NULL\",\"\""
        )
    };
    let (ours, theirs) = (
        sa("198.18.2.1", "198.18.2.2", "0x00001001", &kin),
        sa("198.18.2.2", "198.18.2.1", "0x00002001", &kout),
    );
    let fields = sh(&[
        "tshark",
        "-n",
        "-r",
        &pcap,
        "-o",
        "esp.enable_encryption_decode:TRUE",
        "-o",
        &ours,
        "-o",
        &theirs,
        "-Y",
        "esp",
        "-T",
        "fields",
        "-e",
        "esp.spi",
        "-e",
        "ip.src",
        "-e",
        "ip.dst",
        "-e",
        "udp.payload",
    ])
    .unwrap_or_else(|e| panic!("tshark: {e}"));
    let hex = |t: &str| t.bytes().map(|b| format!("{b:02x}")).collect::<String>();
    for i in 0..5 {
        let req = format!(
            "198.18.2.1,198.18.1.2\t198.18.2.2,198.18.3.1\t{}",
            hex(&format!("msg {i}"))
        );
        let ans = format!(
            "198.18.2.2,198.18.3.1\t198.18.2.1,198.18.1.2\t{}",
            hex(&format!("echo:msg {i}"))
        );
        assert!(
            fields
                .lines()
                .any(|l| l.starts_with("0x00001001") && l.ends_with(&req)),
            "tshark opened our datagram {i}:\n{fields}"
        );
        assert!(
            fields
                .lines()
                .any(|l| l.starts_with("0x00002001") && l.ends_with(&ans)),
            "tshark opened Scapy's answer {i}:\n{fields}"
        );
    }
}

/// The guest's side of the kernel test: its interface, 198.18.3.1 behind
/// it, the two states and policies (our outbound SA is the kernel's
/// inbound one, and the reverse), then pings to A from 198.18.3.1, then
/// one line of both states' packet counters every half second (bounded)
/// while A pings it, until the test stops the guest.
fn kernel_peer_script() -> String {
    let (kin, kout) = (
        format!("0x{OUT_KEY}{OUT_SALT}"),
        format!("0x{IN_KEY}{IN_SALT}"),
    );
    format!(
        "ip addr add 198.18.2.2/24 dev vec0\n\
         ip link set vec0 up\n\
         ip addr add 198.18.3.1/32 dev lo\n\
         ip route add 198.18.1.0/24 via 198.18.2.1 src 198.18.3.1\n\
         ok=1\n\
         ip xfrm state add src 198.18.2.1 dst 198.18.2.2 proto esp spi 0x1001 reqid 1 \
         mode tunnel replay-window 64 aead 'rfc4106(gcm(aes))' {kin} 128 || ok=0\n\
         ip xfrm state add src 198.18.2.2 dst 198.18.2.1 proto esp spi 0x2001 reqid 2 \
         mode tunnel aead 'rfc4106(gcm(aes))' {kout} 128 || ok=0\n\
         ip xfrm policy add src 198.18.1.0/24 dst 198.18.3.0/24 dir in \
         tmpl src 198.18.2.1 dst 198.18.2.2 proto esp reqid 1 mode tunnel || ok=0\n\
         ip xfrm policy add src 198.18.3.0/24 dst 198.18.1.0/24 dir out \
         tmpl src 198.18.2.2 dst 198.18.2.1 proto esp reqid 2 mode tunnel || ok=0\n\
         if [ $ok = 1 ]; then\n\
         echo \"guest: ready, Linux $(uname -r), $(ip xfrm state | grep -c '^src') states\"\n\
         i=0\n\
         while [ $i -lt 60 ] && ! ping -n -c 1 -W 1 -I 198.18.3.1 198.18.1.2 >/dev/null 2>&1; do \
         i=$((i+1)); done\n\
         ping -n -c 5 -i 0.2 -W 2 -I 198.18.3.1 198.18.1.2 | sed 's/^/guest: /'\n\
         i=0\n\
         while [ $i -lt 240 ]; do \
         ip -s xfrm state | awk '/proto esp spi/ {{ spi = $4 }} /[(]packets[)]/ \
         {{ sub(/[(]packets[)]/, \"\", $2); c = c \" \" substr(spi, 1, 10) \"=\" $2 }} \
         END {{ print \"guest: packets\" c }}'; sleep 0.5; i=$((i+1)); done\n\
         else echo 'guest: xfrm setup failed'; fi\n"
    )
}

/// The last `guest: packets 0x00001001=N 0x00002001=M` line: (N, M).
fn guest_packets(console: &str) -> Option<(u64, u64)> {
    let line = console
        .lines()
        .rev()
        .find(|l| l.starts_with("guest: packets "))?;
    let n = |spi: &str| {
        line.split_whitespace()
            .find_map(|w| w.strip_prefix(spi)?.strip_prefix('=')?.parse().ok())
    };
    Some((n("0x00001001")?, n("0x00002001")?))
}

#[test]
fn ipsec_kernel_xfrm_both_directions() {
    let mut lab = Lab::new(&[
        "ip",
        "ethtool",
        "ping",
        common::uml::KERNEL,
        "/usr/sbin/modprobe",
    ]);
    // P bridges the link to R with the guest's tap: the guest's kernel is
    // 198.18.2.2, and P itself has no address.
    lab.must_cmd("p", "ip addr flush dev p0");
    common::uml::ensure_tun();
    lab.must_cmd("p", "ip tuntap add tapk mode tap");
    lab.must_cmd("p", "ip link add br0 type bridge");
    lab.must_cmd("p", "ip link set p0 master br0");
    lab.must_cmd("p", "ip link set tapk master br0");
    for i in ["tapk", "br0"] {
        lab.up("p", i);
    }
    lab.tesserad();
    let guest = common::uml::Guest::boot(
        &lab.ns("p"),
        "tapk",
        &lab.dir,
        &kernel_peer_script(),
        "guest.log",
    );
    guest.wait_log("guest: ready", 90);
    // The guest's own pings (its kernel seals, we open; we seal, it
    // opens), then A's.
    guest.wait_log("guest: packets", 90);
    assert!(
        guest
            .log()
            .contains("guest: 5 packets transmitted, 5 received"),
        "198.18.3.1 (the guest's kernel) -> A through the tunnel:\n{}\n--- tesserad.log\n{}",
        guest.log(),
        lab.log("tesserad.log")
    );
    let _ = lab.ping("a", "-c 2 -i 0.3 -W 2 198.18.3.1");
    let out = lab.ping("a", "-c 5 -i 0.2 -W 2 198.18.3.1");
    assert!(
        out.contains("5 received"),
        "A -> 198.18.3.1 (the guest's kernel) through the tunnel: {out}\n{}\n--- tesserad.log\n{}",
        guest.log(),
        lab.log("tesserad.log")
    );
    // Both kernel states carried both pings' packets: at least 5 + 5
    // each way (the first tries may add some).
    let mut last = None;
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        last = guest_packets(&guest.log());
        if last.is_some_and(|(i, o)| i >= 10 && o >= 10) {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        last.is_some_and(|(i, o)| i >= 10 && o >= 10),
        "both kernel SAs carried traffic (in 0x1001, out 0x2001): {last:?}\n{}",
        guest.log()
    );
    drop(guest);
    let line = lab.stop_tesserad();
    eprintln!("{line}");
    assert!(counter(&line, "encrypted") >= 10, "{line}");
    assert!(counter(&line, "decrypted") >= 10, "{line}");
    no_drops(&line);
}
