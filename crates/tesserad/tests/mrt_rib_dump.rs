//! `[mrt] rib`: periodic TABLE_DUMP_V2 snapshots written by the daemon,
//! read back by Debian's `bgpdump` (the reference reader) and by our own
//! `mrt` crate. A hand-written peer on loopback feeds two IPv4 routes;
//! static routes add an IPv4 route from the router itself and an IPv6 one
//! whose next hop must come out in the abbreviated MP_REACH_NLRI form of
//! RFC 6396 §4.3.4.

mod loopback;

use loopback::{announce, wait_for, Daemon, Peer};
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Complete snapshots in `dir` (not the `.tmp` being written).
fn snapshots(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|r| r.filter_map(|e| Some(e.ok()?.path())).collect())
        .unwrap_or_default();
    v.retain(|p| {
        p.file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("bview.") && !n.ends_with(".tmp"))
    });
    v.sort();
    v
}

fn bgpdump(path: &Path) -> Result<String, String> {
    let out = Command::new("bgpdump")
        .arg("-m")
        .arg(path)
        .output()
        .map_err(|e| format!("bgpdump not runnable (scripts/test installs it): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "bgpdump failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
fn rib_snapshots_are_written_and_read_by_bgpdump() {
    let (me, peer_ip) = (Ipv4Addr::new(127, 0, 79, 1), Ipv4Addr::new(127, 0, 79, 2));
    let port = 17_979;
    let dumps = std::env::temp_dir().join(format!("tessera-ribdump-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dumps);
    std::fs::create_dir_all(&dumps).expect("dump dir");
    let extra = format!(
        "\n[[static]]\nprefix = \"2001:db8:f00::/48\"\nnext_hop = \"2001:db8::1\"\n\
         \n[mrt]\nrib = \"{}/bview.%H%M%S.gz\"\nrib_interval = 1\n",
        dumps.display()
    );
    let d = Daemon::start_with("ribdump", me, peer_ip, port, true, &extra);
    let mut p = Peer::connect(peer_ip, SocketAddr::new(me.into(), port), true);
    p.send(&announce(peer_ip, &[[198, 51, 100], [203, 0, 113]]));
    wait_for(10, "both routes at tesserad", || {
        Ok((d.has_route("198.51.100.0/24") && d.has_route("203.0.113.0/24")).then_some(()))
    });

    // The first snapshot taken after the routes arrived must hold all four.
    let text = wait_for(15, "a snapshot with every route", || {
        for f in snapshots(&dumps).iter().rev() {
            let t = bgpdump(f)?;
            if t.contains("|198.51.100.0/24|") && t.contains("|203.0.113.0/24|") {
                return Ok(Some(t));
            }
        }
        Ok(None)
    });
    let lines: Vec<&str> = text.lines().collect();
    let find = |pfx: &str| -> Vec<&str> {
        lines
            .iter()
            .find(|l| l.contains(&format!("|{pfx}|")))
            .map(|l| l.split('|').collect())
            .unwrap_or_else(|| panic!("{pfx} missing from the dump:\n{text}"))
    };
    // TABLE_DUMP2|time|B|peer ip|peer as|prefix|as path|origin|next hop|...
    let r = find("198.51.100.0/24");
    assert_eq!(r[0], "TABLE_DUMP2", "{r:?}");
    assert_eq!((r[3], r[4]), ("127.0.79.2", "65001"), "peer: {r:?}");
    assert_eq!((r[6], r[7], r[8]), ("65001", "IGP", "127.0.79.2"), "{r:?}");
    let s = find("192.0.2.0/24");
    assert_eq!(
        (s[3], s[4], s[6]),
        ("0.0.0.0", "65000", ""),
        "static routes come from peer index 0, this router: {s:?}"
    );
    let v6 = find("2001:db8:f00::/48");
    assert_eq!(
        v6[8], "2001:db8::1",
        "IPv6 next hop from the abbreviated MP_REACH_NLRI: {v6:?}"
    );
    assert_eq!(
        lines.len(),
        4,
        "exactly the four routes, one path each:\n{text}"
    );

    // Our own reader agrees (and sees the peer index table first).
    let f = snapshots(&dumps)
        .into_iter()
        .rev()
        .find(|f| bgpdump(f).is_ok_and(|t| t.contains("|203.0.113.0/24|")))
        .expect("snapshot");
    let mut rd = mrt::MrtReader::open(&f).expect("open snapshot");
    let mut kinds = Vec::new();
    while let Some(rec) = rd.next_record() {
        kinds.push(rec.expect("well-formed MRT").header.subtype);
    }
    assert_eq!(kinds.first(), Some(&1), "PEER_INDEX_TABLE first: {kinds:?}");
    assert_eq!(
        kinds.len(),
        5,
        "index table and four RIB records: {kinds:?}"
    );

    drop(p);
    drop(d);
    let _ = std::fs::remove_dir_all(&dumps);
}
