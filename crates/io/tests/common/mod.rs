//! Network-namespace topology for the I/O tests:
//!
//! ```text
//! hostA [a0 198.18.1.2/24] -- [r0] router [r1] -- [b0 198.18.2.2/24] hostB
//! ```
//!
//! The router's interfaces have no IP address and kernel forwarding is off
//! in its namespace, so any packet that crosses it was moved by our code.
//! Hosts reach each other through a static default route and a permanent
//! neighbour entry for the gateway pointing at the router's MAC. Namespace
//! names carry the test's pid and a counter; dropping the topology deletes
//! them (and their veths), also when the test panics.
#![allow(dead_code)]

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub const A_IP: &str = "198.18.1.2";
pub const B_IP: &str = "198.18.2.2";
pub const MAC_A0: [u8; 6] = [0x02, 0, 0, 0, 0x0a, 0];
pub const MAC_R0: [u8; 6] = [0x02, 0, 0, 0, 0x01, 0];
pub const MAC_R1: [u8; 6] = [0x02, 0, 0, 0, 0x01, 1];
pub const MAC_B0: [u8; 6] = [0x02, 0, 0, 0, 0x0b, 0];

static SEQ: AtomicU32 = AtomicU32::new(0);

pub fn mac_str(m: [u8; 6]) -> String {
    m.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

/// Fails the test with a clear message when we cannot create namespaces.
pub fn require_root() {
    // SAFETY: geteuid has no preconditions.
    let euid = unsafe { libc::geteuid() };
    assert_eq!(
        euid, 0,
        "io netns tests need root (CAP_NET_ADMIN, CAP_SYS_ADMIN); run as root"
    );
    assert!(
        Command::new("ip").arg("-V").output().is_ok(),
        "io netns tests need iproute2's `ip`"
    );
}

/// Runs a command, bounded by `timeout`, and returns (success, stdout+stderr).
pub fn run(argv: &[&str], timeout: Duration) -> (bool, String) {
    let mut cmd = Command::new("timeout");
    cmd.arg("-k")
        .arg("2")
        .arg(format!("{}", timeout.as_secs().max(1)))
        .args(argv);
    match cmd.output() {
        Ok(o) => {
            let mut s = String::from_utf8_lossy(&o.stdout).into_owned();
            s.push_str(&String::from_utf8_lossy(&o.stderr));
            (o.status.success(), s)
        }
        Err(e) => (false, format!("spawn {argv:?}: {e}")),
    }
}

fn must(argv: &[&str]) {
    let (ok, out) = run(argv, Duration::from_secs(10));
    assert!(ok, "command {argv:?} failed: {out}");
}

pub struct Topo {
    pub a: String,
    pub r: String,
    pub b: String,
}

impl Topo {
    /// Builds the topology; `queues` RX/TX queues on the router's veths.
    pub fn new(queues: u32) -> Topo {
        require_root();
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let pid = std::process::id();
        let t = Topo {
            a: format!("tio{pid}-{n}-a"),
            r: format!("tio{pid}-{n}-r"),
            b: format!("tio{pid}-{n}-b"),
        };
        for ns in [&t.a, &t.r, &t.b] {
            must(&["ip", "netns", "add", ns]);
        }
        let q = queues.to_string();
        // Created inside the namespaces, so the short names never clash.
        for (rif, hif, hns, rmac, hmac) in [
            ("r0", "a0", &t.a, MAC_R0, MAC_A0),
            ("r1", "b0", &t.b, MAC_R1, MAC_B0),
        ] {
            must(&[
                "ip",
                "-n",
                &t.r,
                "link",
                "add",
                rif,
                "numtxqueues",
                &q,
                "numrxqueues",
                &q,
                "address",
                &mac_str(rmac),
                "type",
                "veth",
                "peer",
                "name",
                hif,
                "netns",
                hns,
                "numtxqueues",
                &q,
                "numrxqueues",
                &q,
                "address",
                &mac_str(hmac),
            ]);
        }
        must(&[
            "ip",
            "netns",
            "exec",
            &t.r,
            "sysctl",
            "-qw",
            "net.ipv4.ip_forward=0",
        ]);
        must(&[
            "ip",
            "netns",
            "exec",
            &t.r,
            "sysctl",
            "-qw",
            "net.ipv6.conf.all.disable_ipv6=1",
        ]);
        for (ns, ifc, ip, gw, gwmac) in [
            (&t.a, "a0", A_IP, "198.18.1.1", MAC_R0),
            (&t.b, "b0", B_IP, "198.18.2.1", MAC_R1),
        ] {
            must(&[
                "ip",
                "netns",
                "exec",
                ns,
                "sysctl",
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=1",
            ]);
            must(&[
                "ip",
                "-n",
                ns,
                "addr",
                "add",
                &format!("{ip}/24"),
                "dev",
                ifc,
            ]);
            must(&["ip", "-n", ns, "link", "set", ifc, "up"]);
            must(&["ip", "-n", ns, "link", "set", "lo", "up"]);
            must(&["ip", "-n", ns, "route", "add", "default", "via", gw]);
            must(&[
                "ip",
                "-n",
                ns,
                "neigh",
                "replace",
                gw,
                "lladdr",
                &mac_str(gwmac),
                "dev",
                ifc,
                "nud",
                "permanent",
            ]);
            // Frames must leave the host complete: no partial L4 checksums,
            // no 64 KiB TSO/GSO super-frames (see the crate's limits).
            must(&[
                "ip", "netns", "exec", ns, "ethtool", "-K", ifc, "tx", "off", "tso", "off", "gso",
                "off",
            ]);
        }
        for ifc in ["r0", "r1"] {
            must(&["ip", "-n", &t.r, "link", "set", ifc, "up"]);
            must(&[
                "ip", "netns", "exec", &t.r, "ethtool", "-K", ifc, "gro", "off", "tx", "off",
                "tso", "off", "gso", "off",
            ]);
        }
        t
    }

    pub fn ns_path(ns: &str) -> String {
        format!("/var/run/netns/{ns}")
    }

    /// Runs `argv` inside namespace `ns`.
    pub fn exec(&self, ns: &str, argv: &[&str], timeout: Duration) -> (bool, String) {
        let mut full = vec!["ip", "netns", "exec", ns];
        full.extend_from_slice(argv);
        run(&full, timeout)
    }
}

impl Drop for Topo {
    fn drop(&mut self) {
        for ns in [&self.a, &self.r, &self.b] {
            let _ = run(&["ip", "netns", "del", ns], Duration::from_secs(5));
        }
    }
}

/// Spawns a thread that first moves itself into namespace `ns`.
pub fn in_ns<T: Send + 'static>(
    ns: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> std::thread::JoinHandle<T> {
    let path = Topo::ns_path(ns);
    std::thread::spawn(move || {
        io::sys::enter_netns(&path).unwrap_or_else(|e| panic!("setns {path}: {e}"));
        f()
    })
}

/// Joins `h`, failing the test if it does not finish within `timeout`.
pub fn join_within<T>(h: std::thread::JoinHandle<T>, timeout: Duration, what: &str) -> T {
    let end = Instant::now() + timeout;
    while !h.is_finished() {
        assert!(
            Instant::now() < end,
            "{what} did not finish within {timeout:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    match h.join() {
        Ok(v) => v,
        Err(p) => std::panic::resume_unwind(p),
    }
}

/// An Ethernet frame carrying a UDP/IPv4 datagram from hostA to hostB with
/// `seq` in its payload (checksums zero: the receivers here do not check).
pub fn test_frame(dst_mac: [u8; 6], src_mac: [u8; 6], seq: u32, payload_len: usize) -> Vec<u8> {
    let mut f = Vec::with_capacity(42 + payload_len);
    f.extend_from_slice(&dst_mac);
    f.extend_from_slice(&src_mac);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + 8 + payload_len) as u16;
    f.extend_from_slice(&[
        0x45, 0, 0, 0, 0, 0, 0, 0, 64, 17, 0, 0, 198, 18, 1, 2, 198, 18, 2, 2,
    ]);
    f[16..18].copy_from_slice(&total.to_be_bytes());
    f.extend_from_slice(&4000u16.to_be_bytes());
    f.extend_from_slice(&4001u16.to_be_bytes());
    f.extend_from_slice(&((8 + payload_len) as u16).to_be_bytes());
    f.extend_from_slice(&[0, 0]);
    let mut p = vec![0xa5u8; payload_len];
    if let Some(s) = p.get_mut(0..4) {
        s.copy_from_slice(&seq.to_be_bytes());
    }
    f.extend_from_slice(&p);
    f
}

/// The marker in a frame built by [`test_frame`], if it is one.
pub fn frame_seq(f: &[u8]) -> Option<u32> {
    if f.len() >= 46 && f.get(12..14) == Some(&[0x08, 0x00][..]) && f.get(23) == Some(&17) {
        let s = f.get(42..46)?;
        Some(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
    } else {
        None
    }
}
