//! The bench topology: two network namespaces joined by one veth pair.
//!
//! ```text
//!   <name>-p (peers)                         <name>-d (DUT)
//!   generator 198.18.1.1 + i  ──veth──  198.18.0.1 DUT (or the ceiling sink)
//!   monitor   198.18.0.2
//! ```
//!
//! Every address is in 198.18.0.0/15 (RFC 2544 §12, benchmarking) and
//! exists only inside the two namespaces: FRR rejects 127.0.0.0/8 next
//! hops as martians and GoBGP treats them as withdrawals, so loopback
//! aliases cannot carry a fair comparison. Both sides hold the whole /15
//! on the link, so every generator's next hop is directly connected for
//! the DUT.
//!
//! Sockets belong to the namespace of the thread that creates them, and a
//! thread inherits its creator's namespace; [`in_netns`] runs a closure on
//! a fresh thread moved into a namespace with `setns(2)`, so everything the
//! closure starts (sender, reader, monitor and sink threads) lives there.
//! Daemons are started with `ip netns exec`.
//!
//! [`Topology`] deletes both namespaces (and kills whatever still runs in
//! them) on drop, so a failed or interrupted run leaves nothing behind.

use crate::error::BenchError;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

/// The DUT's address (also where the ceiling sink listens).
pub const DUT_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 1);
/// The monitor session's source address.
pub const MONITOR_ADDR: Ipv4Addr = Ipv4Addr::new(198, 18, 0, 2);
/// IPv6 on the same link (RFC 5180 §8, 2001:2::/48 for benchmarking):
/// only trace and RIB workloads carry IPv6 routes, over IPv4 sessions; the
/// DUT needs an address of its own to put in MP_REACH_NLRI towards the
/// monitor and a default route to resolve recorded next hops.
pub const DUT_ADDR6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 1);
pub const PEERS_ADDR6: Ipv6Addr = Ipv6Addr::new(0x2001, 2, 0, 0, 0, 0, 0, 2);
/// Generator peer i uses `PEER_BASE + i`.
pub const PEER_BASE: Ipv4Addr = Ipv4Addr::new(198, 18, 1, 1);
/// Prefix length of the link: all of 198.18.0.0/15.
const LINK_LEN: u8 = 15;
/// Generator addresses end before 198.19.255.255.
pub const MAX_PEERS: usize = 100_000;

/// The address of generator peer `i`.
pub fn peer_addr(i: usize) -> Option<Ipv4Addr> {
    if i >= MAX_PEERS {
        return None;
    }
    Some(Ipv4Addr::from(u32::from(PEER_BASE) + i as u32))
}

/// Runs `cmd args...`, returning its stderr (or stdout) as the error.
pub(crate) fn sh(cmd: &str, args: &[&str]) -> Result<String, String> {
    let out = Command::new(cmd)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{cmd}: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let mut msg = String::from_utf8_lossy(&out.stderr).trim().to_string();
        if msg.is_empty() {
            msg = String::from_utf8_lossy(&out.stdout).trim().to_string();
        }
        Err(format!("{cmd} {}: {msg}", args.join(" ")))
    }
}

/// The two namespaces and their link; removed on drop.
#[derive(Debug)]
pub struct Topology {
    pub dut_ns: String,
    pub peers_ns: String,
    /// What went wrong while building, for the report.
    pub detail: String,
}

impl Topology {
    /// Creates `<name>-d` and `<name>-p` with `peers` generator addresses.
    /// Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN); fails with
    /// [`BenchError::Netns`] and a reason in the returned string otherwise.
    pub fn create(name: &str, peers: usize) -> Result<Topology, (BenchError, String)> {
        if peers >= MAX_PEERS {
            return Err((BenchError::Netns, "too many generator peers".into()));
        }
        let t = Topology {
            dut_ns: format!("{name}-d"),
            peers_ns: format!("{name}-p"),
            detail: String::new(),
        };
        // Leftovers of a killed earlier run with the same name.
        t.remove();
        t.build(peers).map_err(|e| (BenchError::Netns, e))?;
        Ok(t)
    }

    fn build(&self, peers: usize) -> Result<(), String> {
        let (d, p) = (self.dut_ns.as_str(), self.peers_ns.as_str());
        sh("ip", &["netns", "add", d])?;
        sh("ip", &["netns", "add", p])?;
        // Interface names are created inside the namespaces, so the short
        // fixed names cannot collide with another run's.
        sh(
            "ip",
            &[
                "-n", d, "link", "add", "dut0", "type", "veth", "peer", "name", "peers0", "netns",
                p,
            ],
        )?;
        let link = |ns: &str, dev: &str, addr: Ipv4Addr, a6: Ipv6Addr| -> Result<(), String> {
            sh(
                "ip",
                &[
                    "-n",
                    ns,
                    "addr",
                    "add",
                    &format!("{addr}/{LINK_LEN}"),
                    "dev",
                    dev,
                ],
            )?;
            // nodad: usable at once, not "tentative" for the first second.
            sh(
                "ip",
                &[
                    "-n",
                    ns,
                    "-6",
                    "addr",
                    "add",
                    &format!("{a6}/64"),
                    "dev",
                    dev,
                    "nodad",
                ],
            )?;
            sh("ip", &["-n", ns, "link", "set", dev, "up"])?;
            sh("ip", &["-n", ns, "link", "set", "lo", "up"])?;
            Ok(())
        };
        link(d, "dut0", DUT_ADDR, DUT_ADDR6)?;
        link(p, "peers0", MONITOR_ADDR, PEERS_ADDR6)?;
        // The generator addresses, in one `ip -batch` call.
        let mut batch = String::new();
        for i in 0..peers {
            if let Some(a) = peer_addr(i) {
                batch.push_str(&format!("addr add {a}/32 dev peers0\n"));
            }
        }
        let path = std::env::temp_dir().join(format!("{p}.ipbatch"));
        std::fs::write(&path, batch).map_err(|e| format!("{}: {e}", path.display()))?;
        let r = sh("ip", &["-n", p, "-batch", &path.display().to_string()]);
        let _ = std::fs::remove_file(&path);
        r?;
        // For cases with next hops off the link (`Case::foreign_next_hops`;
        // no built-in scenario since traces get the peers' own next hops),
        // a default route towards the peers' side makes them resolvable
        // for DUTs that check (OpenBGPD `nexthop qualify via default`, BIRD).
        sh(
            "ip",
            &[
                "-n",
                d,
                "route",
                "add",
                "default",
                "via",
                &MONITOR_ADDR.to_string(),
            ],
        )?;
        sh(
            "ip",
            &[
                "-n",
                d,
                "-6",
                "route",
                "add",
                "default",
                "via",
                &PEERS_ADDR6.to_string(),
            ],
        )?;
        Ok(())
    }

    /// Kills what runs in the namespaces and deletes them. Idempotent.
    pub fn remove(&self) {
        for ns in [&self.dut_ns, &self.peers_ns] {
            if let Ok(pids) = sh("ip", &["netns", "pids", ns]) {
                for pid in pids
                    .split_whitespace()
                    .filter_map(|p| p.parse::<i32>().ok())
                {
                    if pid != std::process::id() as i32 {
                        // SAFETY: kill(2) has no memory preconditions.
                        unsafe {
                            libc::kill(pid, libc::SIGKILL);
                        }
                    }
                }
            }
            let _ = sh("ip", &["netns", "del", ns]);
        }
    }
}

/// Removes the namespaces of the bench run named `name` (and kills what
/// runs in them), whatever state that run is in: the last cleanup when a
/// second signal ends the process before [`Topology`]'s drop could run.
pub fn remove_named(name: &str) {
    let t = Topology {
        dut_ns: format!("{name}-d"),
        peers_ns: format!("{name}-p"),
        detail: String::new(),
    };
    t.remove();
}

impl Drop for Topology {
    fn drop(&mut self) {
        self.remove();
    }
}

/// Whether this process may build namespaces (root); the reason if not.
pub fn check_privileges() -> Result<(), String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("tessera bench needs root (it creates network namespaces)".into());
    }
    sh("ip", &["-V"]).map(|_| ())
}

/// Runs `f` on a new thread inside namespace `ns` (`/run/netns/NS`), and
/// returns what it returns. Threads `f` starts inherit the namespace.
pub fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> Result<T, String> {
    let path = format!("/run/netns/{ns}");
    let file = std::fs::File::open(&path).map_err(|e| format!("{path}: {e}"))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: the fd is open for the duration of the call;
            // setns(2) only changes this thread's network namespace.
            let rc = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
            if rc != 0 {
                return Err(format!("setns {path}: {}", std::io::Error::last_os_error()));
            }
            Ok(f())
        })
        .join()
        .map_err(|_| "thread inside the namespace panicked".to_string())?
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn peer_addresses_stay_in_the_benchmark_range() {
        assert_eq!(peer_addr(0), Some(Ipv4Addr::new(198, 18, 1, 1)));
        assert_eq!(peer_addr(255), Some(Ipv4Addr::new(198, 18, 2, 0)));
        let last = peer_addr(MAX_PEERS - 1).unwrap_or(Ipv4Addr::UNSPECIFIED);
        assert_eq!(last.octets()[0..2], [198, 19]);
        assert_eq!(peer_addr(MAX_PEERS), None);
        assert_ne!(peer_addr(0), Some(DUT_ADDR));
        assert_ne!(peer_addr(0), Some(MONITOR_ADDR));
    }
}
