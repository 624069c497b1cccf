//! `show rpki`: the RTR caches (RFC 8210) and the VRP set in use. BIRD
//! shows each `rpki` protocol in `show protocols all`; here one table
//! lists every cache with its state, serial and VRP count.

use std::fmt::Write as _;

use crate::proto::RpkiInfo;

/// One line per cache, then the VRP set in use.
pub fn render_rpki(out: &mut String, r: &RpkiInfo) {
    let _ = writeln!(
        out,
        "{:<40} {:>4} {:<10} {:>6} {:>10} {:>8} {:>8}",
        "Cache", "Pref", "State", "Active", "Serial", "Session", "VRPs"
    );
    for c in &r.caches {
        let _ = writeln!(
            out,
            "{:<40} {:>4} {:<10} {:>6} {:>10} {:>8} {:>8}",
            c.address,
            c.preference,
            c.state,
            if c.active { "*" } else { "" },
            c.serial.map_or("-".to_string(), |s| s.to_string()),
            c.session.map_or("-".to_string(), |s| s.to_string()),
            c.vrps
        );
        if let Some(e) = &c.last_error {
            let _ = writeln!(out, "  last error: {e}");
        }
    }
    let _ = writeln!(
        out,
        "VRPs in use: {} IPv4, {} IPv6; prefixes re-evaluated: {}",
        r.vrps_v4, r.vrps_v6, r.reevaluated
    );
    let _ = writeln!(
        out,
        "ASPAs in use: {}; routes re-evaluated: {}",
        r.aspas, r.aspa_reevaluated
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::RpkiCacheInfo;

    #[test]
    fn table() {
        let r = RpkiInfo {
            caches: vec![
                RpkiCacheInfo {
                    address: "127.0.0.1:3323".into(),
                    preference: 1,
                    state: "synced".into(),
                    active: true,
                    serial: Some(7),
                    session: Some(4242),
                    vrps: 3,
                    last_error: None,
                },
                RpkiCacheInfo {
                    address: "[::1]:323".into(),
                    preference: 2,
                    state: "idle".into(),
                    active: false,
                    serial: None,
                    session: None,
                    vrps: 0,
                    last_error: Some("connect: Connection refused".into()),
                },
            ],
            vrps_v4: 2,
            vrps_v6: 1,
            reevaluated: 5,
            aspas: 4,
            aspa_reevaluated: 9,
        };
        let mut s = String::new();
        render_rpki(&mut s, &r);
        assert_eq!(
            s,
            "Cache                                    Pref State      Active     Serial  Session     VRPs\n\
             127.0.0.1:3323                              1 synced          *          7     4242        3\n\
             [::1]:323                                   2 idle                       -        -        0\n\
             \x20 last error: connect: Connection refused\n\
             VRPs in use: 2 IPv4, 1 IPv6; prefixes re-evaluated: 5\n\
             ASPAs in use: 4; routes re-evaluated: 9\n"
        );
    }
}
