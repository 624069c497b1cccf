//! `[bmp]`: BGP Monitoring Protocol export (RFC 7854, RFC 9069 Loc-RIB,
//! RFC 8671 Adj-RIB-Out)
//! to one or more collectors (`bgp_speaker::bmp`; `docs/bmp.md`).
//!
//! ```toml
//! [bmp]
//! sys_name = "edge-1"           # Initiation sysName (default: "tesserad ROUTER-ID")
//! sys_descr = "lab router"      # Initiation sysDescr (default: "tesserad VERSION")
//!
//! [[bmp.collector]]
//! address = "192.0.2.50"
//! port = 1790
//! route_monitoring = ["pre-policy", "post-policy", "loc-rib", "adj-rib-out-pre", "adj-rib-out-post"]
//! stats_interval = 60           # seconds between Statistics Reports, 0 = none
//! queue = 100000                # messages held for a slow collector
//! reconnect_max = 60            # back-off cap, seconds (from 1 s, doubling)
//! ```

use std::net::SocketAddr;

use serde::Deserialize;

use crate::validate::{Ctx, R};

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBmp {
    pub sys_name: Option<String>,
    pub sys_descr: Option<String>,
    #[serde(default)]
    pub collector: Vec<RawCollector>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCollector {
    pub address: Option<String>,
    pub port: Option<i64>,
    pub route_monitoring: Option<Vec<String>>,
    pub stats_interval: Option<i64>,
    pub queue: Option<i64>,
    pub reconnect_max: Option<i64>,
}

/// Which RIB views Route Monitoring carries.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Monitoring {
    /// `"pre-policy"`: every UPDATE as received (Adj-RIB-In pre-policy,
    /// RFC 7854 §2).
    pub pre_policy: bool,
    /// `"post-policy"`: what import policy accepted, the L flag.
    pub post_policy: bool,
    /// `"loc-rib"`: the best routes, peer type 3 (RFC 9069).
    pub loc_rib: bool,
    /// `"adj-rib-out-pre"`: per peer, the routes offered to export policy
    /// (RFC 8671, the O flag without L).
    pub adj_rib_out_pre: bool,
    /// `"adj-rib-out-post"`: per peer, what we send it (RFC 8671, O and L).
    pub adj_rib_out_post: bool,
}

/// One `[[bmp.collector]]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BmpCollector {
    /// `address` and `port` (default 1790, pmacct's).
    pub addr: SocketAddr,
    /// `route_monitoring` (default `["pre-policy"]`).
    pub monitoring: Monitoring,
    /// `stats_interval`, seconds, 0 = no Statistics Reports (default 60).
    pub stats_interval: u32,
    /// `queue`: messages buffered for this collector, 16..=10,000,000
    /// (default 100,000). A full queue disconnects the collector (counted);
    /// it reconnects and gets a fresh table dump.
    pub queue: usize,
    /// `reconnect_max`, seconds, 1..=3600 (default 60): the back-off
    /// between connection attempts starts at 1 s and doubles up to this.
    pub reconnect_max: u32,
}

/// `[bmp]`, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Bmp {
    /// `sys_name` for the Initiation message; `None`: "tesserad ROUTER-ID".
    pub sys_name: Option<String>,
    /// `sys_descr`; `None`: "tesserad VERSION".
    pub sys_descr: Option<String>,
    /// `[[bmp.collector]]`, in file order; addresses are unique.
    pub collectors: Vec<BmpCollector>,
}

/// BMP has no IANA port; 1790 is what pmacct and most collectors use.
pub const DEFAULT_PORT: u16 = 1790;

fn int(c: &Ctx<'_>, path: &str, v: Option<i64>, lo: i64, hi: i64, def: i64) -> R<i64> {
    match v {
        None => Ok(def),
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        Some(n) => Err(c.err(path, format!("{n}: expected {lo}..={hi}"))),
    }
}

fn monitoring(c: &Ctx<'_>, path: &str, v: Option<&[String]>) -> R<Monitoring> {
    let Some(list) = v else {
        return Ok(Monitoring {
            pre_policy: true,
            ..Monitoring::default()
        });
    };
    let mut m = Monitoring::default();
    for (i, s) in list.iter().enumerate() {
        let p = format!("{path}[{i}]");
        match s.as_str() {
            "pre-policy" => m.pre_policy = true,
            "post-policy" => m.post_policy = true,
            "loc-rib" => m.loc_rib = true,
            "adj-rib-out-pre" => m.adj_rib_out_pre = true,
            "adj-rib-out-post" => m.adj_rib_out_post = true,
            o => {
                return Err(c.err(
                    &p,
                    format!(
                        "{o:?}: expected \"pre-policy\", \"post-policy\", \"loc-rib\", \
                         \"adj-rib-out-pre\" or \"adj-rib-out-post\""
                    ),
                ))
            }
        }
    }
    Ok(m)
}

pub(crate) fn validate(c: &Ctx<'_>, r: &RawBmp) -> R<Bmp> {
    let mut collectors: Vec<BmpCollector> = Vec::new();
    for (i, k) in r.collector.iter().enumerate() {
        let path = format!("bmp.collector[{i}]");
        let Some(a) = k.address.as_deref() else {
            return Err(c.err(&path, "address is required"));
        };
        let ip = crate::validate::ip(c, &format!("{path}.address"), a)?;
        let port = int(
            c,
            &format!("{path}.port"),
            k.port,
            1,
            65535,
            i64::from(DEFAULT_PORT),
        )?;
        let addr = SocketAddr::new(ip, port as u16);
        if collectors.iter().any(|o| o.addr == addr) {
            return Err(c.err(
                &format!("{path}.address"),
                format!("{addr} is already a collector"),
            ));
        }
        let monitoring = monitoring(
            c,
            &format!("{path}.route_monitoring"),
            k.route_monitoring.as_deref(),
        )?;
        let stats_interval = int(
            c,
            &format!("{path}.stats_interval"),
            k.stats_interval,
            0,
            86_400,
            60,
        )? as u32;
        let queue = int(
            c,
            &format!("{path}.queue"),
            k.queue,
            16,
            10_000_000,
            100_000,
        )? as usize;
        let reconnect_max = int(
            c,
            &format!("{path}.reconnect_max"),
            k.reconnect_max,
            1,
            3600,
            60,
        )? as u32;
        collectors.push(BmpCollector {
            addr,
            monitoring,
            stats_interval,
            queue,
            reconnect_max,
        });
    }
    let text = |key: &str, v: &Option<String>| -> R<Option<String>> {
        match v {
            Some(s) if s.is_empty() || s.len() > 255 => {
                Err(c.err(&format!("bmp.{key}"), "expected 1..=255 characters"))
            }
            v => Ok(v.clone()),
        }
    };
    Ok(Bmp {
        sys_name: text("sys_name", &r.sys_name)?,
        sys_descr: text("sys_descr", &r.sys_descr)?,
        collectors,
    })
}

#[cfg(test)]
mod tests {
    const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n";

    fn parse(extra: &str) -> Result<crate::Config, crate::ConfigError> {
        crate::parse(&format!("{HEAD}{extra}"), "t.toml")
    }

    #[test]
    fn defaults_and_lists() {
        let c = parse(
            "[[bmp.collector]]\naddress = \"127.0.0.1\"\n\n[[bmp.collector]]\naddress = \"::1\"\nport = 11019\nroute_monitoring = [\"post-policy\", \"loc-rib\"]\nstats_interval = 0\nqueue = 50\nreconnect_max = 5\n",
        )
        .unwrap();
        let b = c.bmp.unwrap();
        assert_eq!(b.collectors.len(), 2);
        let (a, z) = (&b.collectors[0], &b.collectors[1]);
        assert_eq!(a.addr, "127.0.0.1:1790".parse().unwrap());
        assert!(a.monitoring.pre_policy && !a.monitoring.post_policy && !a.monitoring.loc_rib);
        assert_eq!(
            (a.stats_interval, a.queue, a.reconnect_max),
            (60, 100_000, 60)
        );
        assert_eq!(z.addr, "[::1]:11019".parse().unwrap());
        assert!(!z.monitoring.pre_policy && z.monitoring.post_policy && z.monitoring.loc_rib);
        assert_eq!((z.stats_interval, z.queue, z.reconnect_max), (0, 50, 5));
    }

    #[test]
    fn errors_name_line_and_field() {
        let cases: [(&str, &str, usize); 6] = [
            ("[[bmp.collector]]\nport = 1\n", "bmp.collector[0]", 4),
            (
                "[[bmp.collector]]\naddress = \"x\"\n",
                "bmp.collector[0].address",
                5,
            ),
            (
                "[[bmp.collector]]\naddress = \"127.0.0.1\"\nroute_monitoring = [\"adj-rib-in\"]\n",
                "bmp.collector[0].route_monitoring[0]",
                6,
            ),
            (
                "[[bmp.collector]]\naddress = \"127.0.0.1\"\nqueue = 1\n",
                "bmp.collector[0].queue",
                6,
            ),
            (
                "[[bmp.collector]]\naddress = \"127.0.0.1\"\n[[bmp.collector]]\naddress = \"127.0.0.1\"\n",
                "bmp.collector[1].address",
                7,
            ),
            (
                "[[bmp.collector]]\naddress = \"127.0.0.1\"\nstats = 5\n",
                "bmp.collector[0].stats",
                6,
            ),
        ];
        for (text, field, line) in cases {
            let e = parse(text).unwrap_err();
            assert_eq!((e.field.as_str(), e.line), (field, line), "{e}");
        }
        let b = parse(
            "[[bmp.collector]]\naddress = \"127.0.0.1\"\nroute_monitoring = [\"adj-rib-out-pre\", \"adj-rib-out-post\"]\n",
        )
        .unwrap();
        let m = b.bmp.unwrap().collectors[0].monitoring;
        assert!(m.adj_rib_out_pre && m.adj_rib_out_post && !m.pre_policy && !m.loc_rib);
    }
}
