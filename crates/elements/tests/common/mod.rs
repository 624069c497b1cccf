//! Shared by the integration tests and the benchmark: the two-interface
//! router config and packet helpers.
#![allow(dead_code)]

pub mod bus;

use elements::{AnyElement, Env};
use graph::{Graph, Runner};
use pkt::{Mac, MemDevice, Pool};

pub const R0: Mac = Mac([2, 0, 0, 0, 0, 1]);
pub const R1: Mac = Mac([2, 0, 0, 0, 0, 2]);
pub const A: Mac = Mac([2, 0, 0, 0, 1, 2]);
pub const B: Mac = Mac([2, 0, 0, 0, 2, 2]);
pub const A4: [u8; 4] = [10, 0, 1, 2];
pub const B4: [u8; 4] = [10, 0, 2, 2];
pub const R04: [u8; 4] = [10, 0, 1, 1];
pub const R14: [u8; 4] = [10, 0, 2, 1];

pub fn v6(net: u16, host: u16) -> [u8; 16] {
    let mut a = [0u8; 16];
    a[..4].copy_from_slice(&[0x20, 0x01, 0x0d, 0xb8]);
    a[4..6].copy_from_slice(&net.to_be_bytes());
    a[14..].copy_from_slice(&host.to_be_bytes());
    a
}

/// The router: eth0 10.0.1.1/24 2001:db8:1::1/64, eth1 10.0.2.1/24
/// 2001:db8:2::1/64, 192.168.0.0/16 and 2001:db8:99::/48 via host B.
/// `extra_rw0`/`extra_rw1` are appended to the EtherRewrite arguments
/// (static neighbours); `rt4` replaces the IPv4 routes when given.
pub fn router_config(extra_rw0: &str, extra_rw1: &str, rt4: Option<&str>) -> String {
    let rt4 = rt4.unwrap_or(
        "ROUTE 10.0.1.1/32 2, ROUTE 10.0.2.1/32 2, ROUTE 10.0.1.0/24 0, ROUTE 10.0.2.0/24 1, \
         ROUTE 192.168.0.0/16 10.0.2.2 1, NOROUTE 3",
    );
    format!(
        r#"
// Two-interface IPv4/IPv6 router.
in0 :: FromDevice(eth0);  in1 :: FromDevice(eth1);
out0 :: ToDevice(eth0);   out1 :: ToDevice(eth1);
c0 :: Classifier(arp, ip6 20/3a 54/87, ip6 20/3a 54/88, ip, ip6, -);
c1 :: Classifier(arp, ip6 20/3a 54/87, ip6 20/3a 54/88, ip, ip6, -);
rw0 :: EtherRewrite(MAC 02:00:00:00:00:01, IP 10.0.1.1, IP6 2001:db8:1::1{extra_rw0});
rw1 :: EtherRewrite(MAC 02:00:00:00:00:02, IP 10.0.2.1, IP6 2001:db8:2::1{extra_rw1});
rt :: Ip4Lookup({rt4});
rt6 :: Ip6Lookup(ROUTE 2001:db8:1::1/128 2, ROUTE 2001:db8:2::1/128 2,
                 ROUTE 2001:db8:1::/64 0, ROUTE 2001:db8:2::/64 1,
                 ROUTE 2001:db8:99::/48 2001:db8:2::2 1, NOROUTE 3);
in0 -> c0; in1 -> c1;
c0 [0] -> [1] rw0; c0 [1] -> [1] rw0; c0 [2] -> [1] rw0;
c1 [0] -> [1] rw1; c1 [1] -> [1] rw1; c1 [2] -> [1] rw1;
c0 [3] -> CheckIpHeader -> rt;   c1 [3] -> CheckIpHeader -> rt;
c0 [4] -> CheckIp6Header -> rt6; c1 [4] -> CheckIp6Header -> rt6;
c0 [5] -> Discard; c1 [5] -> Discard;
rt [0] -> ttl0 :: DecIpTtl(SRC 10.0.1.1 10.0.2.1) -> rw0 -> out0;
rt [1] -> ttl1 :: DecIpTtl(SRC 10.0.1.1 10.0.2.1) -> rw1 -> out1;
ttl0 [1] -> rt; ttl1 [1] -> rt;
rt [2] -> IcmpEcho(ADDR 10.0.1.1, ADDR 10.0.2.1) -> rt;
rt [3] -> IcmpError(SRC 10.0.1.1 10.0.2.1, TYPE 3, CODE 0) -> rt;
rt6 [0] -> hl0 :: DecIp6HopLimit(SRC 2001:db8:1::1 2001:db8:2::1) -> rw0;
rt6 [1] -> hl1 :: DecIp6HopLimit(SRC 2001:db8:1::1 2001:db8:2::1) -> rw1;
hl0 [1] -> rt6; hl1 [1] -> rt6;
rt6 [2] -> IcmpEcho(ADDR 2001:db8:1::1, ADDR 2001:db8:2::1) -> rt6;
rt6 [3] -> IcmpError(SRC 2001:db8:1::1 2001:db8:2::1, TYPE 1, CODE 0) -> rt6;
"#
    )
}

/// Builds a runner over two in-memory devices `eth0`, `eth1`.
pub fn runner(
    cfg: &str,
    env: &mut Env,
    pool: Pool,
    d0: MemDevice,
    d1: MemDevice,
    burst: usize,
) -> Runner<AnyElement, MemDevice> {
    let g = Graph::from_str(cfg, "router.click", env, pool).unwrap_or_else(|e| panic!("{e}"));
    Runner::new(g, vec![d0, d1], burst).unwrap_or_else(|e| panic!("{e}"))
}

/// Where a test writes its pcaps: the integration-test scratch directory
/// cargo provides (under the target directory, never in the repository).
pub fn out_path(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join(name)
}

/// Writes `frames` as a pcap to [`out_path`]`(name)` and returns the path.
pub fn write_pcap(name: &str, frames: &[Vec<u8>]) -> std::path::PathBuf {
    let path = out_path(name);
    std::fs::write(&path, pkt::pcap::to_bytes(frames))
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    path
}

/// The golden check: `got` (what the graph sent) must equal `want` (built
/// independently by the test from packet builders) frame for frame and
/// byte for byte. Both are written as pcaps (`NAME.got.pcap`,
/// `NAME.want.pcap`) for inspection; the returned path is the output pcap.
pub fn golden(name: &str, got: &[Vec<u8>], want: &[Vec<u8>]) -> std::path::PathBuf {
    let gp = write_pcap(&format!("{name}.got.pcap"), got);
    let wp = write_pcap(&format!("{name}.want.pcap"), want);
    let gb = std::fs::read(&gp).unwrap();
    let wb = std::fs::read(&wp).unwrap();
    if gb != wb {
        let mut msg = format!(
            "{name}: output differs from the golden frames ({} vs {} frames); see {} and {}\n",
            got.len(),
            want.len(),
            gp.display(),
            wp.display()
        );
        for (i, (g, w)) in got.iter().zip(want).enumerate() {
            if g != w {
                msg += &format!("frame {i}:\n got  {}\n want {}\n", hex(g), hex(w));
            }
        }
        panic!("{msg}");
    }
    gp
}

/// Lower-case hex of `b`.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Runs tshark over a pcap with checksum validation on, returning the
/// verbose dissection; fails the test if tshark is missing (unless
/// TESSERA_REQUIRE_TOOLS is unset, in which case it returns None).
pub fn tshark(path: &std::path::Path) -> Option<String> {
    let out = std::process::Command::new("tshark")
        .args(["-n", "-r"])
        .arg(path)
        .args([
            "-V",
            "-o",
            "ip.check_checksum:TRUE",
            "-o",
            "udp.check_checksum:TRUE",
            "-o",
            "tcp.check_checksum:TRUE",
        ])
        .output();
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => panic!("tshark failed: {}", String::from_utf8_lossy(&o.stderr)),
        Err(e) => {
            if std::env::var_os("TESSERA_REQUIRE_TOOLS").is_some() {
                panic!("tshark not runnable: {e}");
            }
            eprintln!("skipping tshark validation: {e}");
            None
        }
    }
}

/// Asserts tshark finds no bad checksum or malformed packet in `path`, and
/// at least `min_good` verified-good checksums.
pub fn tshark_clean(path: &std::path::Path, min_good: usize) {
    let Some(text) = tshark(path) else { return };
    for bad in [
        "Bad]",
        "[Malformed",
        "incorrect, should be",
        "Checksum: 0x0000 [missing]",
    ] {
        assert!(
            !text.contains(bad),
            "{}: tshark reports '{bad}':\n{text}",
            path.display()
        );
    }
    let good = text.to_ascii_lowercase().matches("status: good]").count();
    assert!(
        good >= min_good,
        "{}: only {good} verified checksums (want {min_good}):\n{text}",
        path.display()
    );
}
