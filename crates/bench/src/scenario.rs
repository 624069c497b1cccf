//! The benchmark's scenarios (issue 5) and the workloads they replay.
//!
//! | name | what |
//! |---|---|
//! | `a` | 1 peer x 1M unique prefixes |
//! | `b` | 10 peers x 100k prefixes shared by all, each peer with its own AS paths, MEDs, communities |
//! | `c30` | 30 peers x 10k unique |
//! | `c10` | 10 peers x 100k unique |
//! | `c` | both of the above |
//! | `d` | every IPv4 RIB dump of the shared MRT data, every peer in each |
//! | `e` | the five traffic mixes of seed 000 Table 4.3 on a real update trace |
//! | `g` | a route server (RFC 7947): 10 feeders x 100k shared prefixes, 100 clients that send nothing, half with an export policy of their own (issue 17) |
//! | `g:FxNxC` | the same with F feeders, N prefixes, C clients |
//! | `f` | 20 full feeds: the jinx full table (497k IPv4 prefixes) from 20 peers, each with its own path per prefix (about 10M paths; issue 17) |
//! | `f:N` | the same with N peers |
//! | `h` | steady churn: a full table, then the RIS update trace looped at `--rate` UPDATEs/s for `--duration`, 10 monitor peers (issue 17; see [`crate::churn`]) |
//! | `synthetic:PxN:shared` / `:unique` | any synthetic size |
//!
//! `--scale F` multiplies every prefix count (synthetic sizes, the RIB
//! dumps' prefix cap, the trace's message cap) so a quick run keeps the
//! shape of the full one. Each scenario expands into cases: one workload
//! replayed with one traffic mix.

use crate::daemons::generator_as;
use crate::netns::{peer_addr, PEERS_ADDR6};
use base::Asn;
use replay::error::ReplayError;
use replay::mrt_rib::{full_feeds_workload, rib_workload, RibOptions};
use replay::mrt_updates::{update_workload, UpdateOptions};
use replay::schedule::Mix;
use replay::workload::{FeedParams, Sharing, SyntheticSpec, Workload};
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;
use std::sync::Arc;

/// The IPv4 RIB dumps of the shared data set (README there); the IPv6
/// ones (`rib.bz2`, `rib6.*`) need IPv6 generator sessions, not yet.
pub const RIB_DUMPS: &[&str] = &[
    "routeviews.route-views.jinx.ribs.1401487200.bz2",
    "bview.20020722.2337.gz",
    "rib.20140523.0600_firstMB.bz2",
];
/// The full table of scenarios (f) and (h): Route Views jinx, 2014,
/// about 497k IPv4 prefixes.
pub const FULL_TABLE: &str = "routeviews.route-views.jinx.ribs.1401487200.bz2";
/// The update trace of scenario (e): 76 RIPE RIS peers, 5 minutes.
pub const UPDATE_TRACE: &str = "updates.20190101.0000.gz";
/// Full-scale caps of (d) and (e) that `--scale` shrinks.
pub(crate) const RIB_FULL_PREFIXES: f64 = 500_000.0;
pub(crate) const TRACE_FULL_MESSAGES: f64 = 60_000.0;

/// One scenario as named on the command line.
#[derive(Clone, Debug, PartialEq)]
pub enum Scenario {
    Synthetic {
        name: String,
        peers: usize,
        prefixes: usize,
        sharing: Sharing,
    },
    RibDumps,
    TraceMixes,
    /// A route server: `feeders` peers announce `prefixes` shared
    /// prefixes; `clients` more peers announce nothing and receive the
    /// table as route-server clients (odd ones through an export policy
    /// of their own).
    RouteServer {
        feeders: usize,
        prefixes: usize,
        clients: usize,
    },
    /// Scenario (f): `peers` sessions, each announcing the whole jinx
    /// table with a path of its own per prefix
    /// ([`replay::full_feeds_workload`]).
    FullFeeds {
        peers: usize,
    },
    /// Scenario (h): steady churn with `monitors` monitor peers
    /// ([`crate::churn`]).
    Churn {
        monitors: usize,
    },
}

impl Scenario {
    /// Parses one name; `c` gives two scenarios.
    pub fn parse(s: &str) -> Result<Vec<Scenario>, String> {
        let syn = |name: &str, peers, prefixes, sharing| Scenario::Synthetic {
            name: name.into(),
            peers,
            prefixes,
            sharing,
        };
        Ok(match s {
            "a" => vec![syn("a-1x1M-unique", 1, 1_000_000, Sharing::Unique)],
            "b" => vec![syn("b-10x100k-shared", 10, 100_000, Sharing::Shared)],
            "c30" => vec![syn("c-30x10k-unique", 30, 10_000, Sharing::Unique)],
            "c10" => vec![syn("c-10x100k-unique", 10, 100_000, Sharing::Unique)],
            "c" => vec![
                syn("c-30x10k-unique", 30, 10_000, Sharing::Unique),
                syn("c-10x100k-unique", 10, 100_000, Sharing::Unique),
            ],
            "d" => vec![Scenario::RibDumps],
            "f" => vec![Scenario::FullFeeds { peers: 20 }],
            "h" => vec![Scenario::Churn { monitors: 10 }],
            _ if s.starts_with("f:") => match s[2..].parse::<usize>() {
                Ok(n) if (1..=250).contains(&n) => vec![Scenario::FullFeeds { peers: n }],
                _ => return Err(format!("{s}: expected f:PEERS, 1 to 250")),
            },
            "g" => vec![Scenario::RouteServer {
                feeders: 10,
                prefixes: 100_000,
                clients: 100,
            }],
            _ if s.starts_with("g:") => {
                let n: Vec<usize> = s[2..]
                    .split('x')
                    .map(|x| x.parse::<usize>().map_err(|e| format!("{s}: {e}")))
                    .collect::<Result<_, _>>()?;
                match n.as_slice() {
                    [f, p, c] if *f > 0 && *p > 0 && *c > 0 => vec![Scenario::RouteServer {
                        feeders: *f,
                        prefixes: *p,
                        clients: *c,
                    }],
                    _ => {
                        return Err(format!(
                            "{s}: expected g:FEEDERSxPREFIXESxCLIENTS, each at least 1"
                        ))
                    }
                }
            }
            "e" => vec![Scenario::TraceMixes],
            _ => {
                let rest = s
                    .strip_prefix("synthetic:")
                    .ok_or_else(|| format!("unknown scenario {s:?}: expected a, b, c, c30, c10, d, e, f, f:N, g, g:FxNxC, h or synthetic:PxN:shared|unique"))?;
                let (size, mode) = rest.split_once(':').unwrap_or((rest, "shared"));
                let (peers, prefixes) =
                    replay::parse_synthetic(size).map_err(|e| format!("{s}: {e}"))?;
                let sharing = match mode {
                    "shared" => Sharing::Shared,
                    "unique" => Sharing::Unique,
                    _ => return Err(format!("{s}: expected :shared or :unique")),
                };
                vec![syn(
                    &format!("{peers}x{prefixes}-{mode}"),
                    peers,
                    prefixes,
                    sharing,
                )]
            }
        })
    }
}

/// One measured case: a workload and how it is sent.
#[derive(Clone, Debug)]
pub struct Case {
    /// File-name safe: letters, digits, `-`, `.`.
    pub name: String,
    pub workload: Arc<Workload>,
    pub mix: Mix,
    /// Next hops not on the link: DUTs must resolve them recursively. No
    /// built-in scenario sets it any more (trace next hops are rewritten
    /// to the sending peer's own, see `trace_next_hops`).
    pub foreign_next_hops: bool,
    /// What the case is, for the report.
    pub about: String,
    /// Scenario (g): the first this many peers feed, the others are
    /// route-server clients (see [`Scenario::RouteServer`]).
    pub route_server: Option<usize>,
    /// Paths the DUT stores once everything is in (every announced
    /// prefix of every peer; no withdrawals): the report divides the
    /// peak RSS above the DUT's idle RSS by it (bytes per path). Set for
    /// workloads without withdrawals.
    pub paths: Option<u64>,
}

impl Case {
    pub fn peers(&self) -> usize {
        self.workload.feeds.len()
    }
}

/// Generator peer `i`'s parameters: its AS ([`generator_as`]; one for
/// all, or with `distinct_as` its own, which synthetic paths and RIB
/// dump paths then start with) and next hops.
fn params(i: usize, distinct_as: bool) -> FeedParams {
    let (nh, nh6) = trace_next_hops(i);
    FeedParams {
        next_hop6: Some(nh6),
        ..FeedParams::ebgp(Asn(generator_as(i, distinct_as)), nh)
    }
}

/// The next hops generator peer `i` announces: its own IPv4 address, and
/// for IPv6 routes (carried over the IPv4 session) the peers' namespace's
/// IPv6 address on the link. Both are on the DUT's link, so every DUT
/// resolves them the same way; recorded next hops are not (a DUT that
/// checks reachability would drop those routes, one that does not would
/// keep them, and the tables would differ).
fn trace_next_hops(i: usize) -> (Ipv4Addr, Ipv6Addr) {
    (peer_addr(i).unwrap_or(Ipv4Addr::UNSPECIFIED), PEERS_ADDR6)
}

pub(crate) fn scaled(n: f64, scale: f64) -> u64 {
    (n * scale).round().max(1.0) as u64
}

/// Builds the cases of `s`. `mrt_dir` holds the shared MRT files.
/// `distinct_as`: every generator peer in its own AS (`--export all`),
/// encoded into the paths it sends.
pub fn cases(
    s: &Scenario,
    scale: f64,
    seed: u64,
    mrt_dir: &Path,
    distinct_as: bool,
) -> Result<Vec<Case>, String> {
    match s {
        Scenario::Synthetic {
            name,
            peers,
            prefixes,
            sharing,
        } => {
            let n = scaled(*prefixes as f64, scale) as usize;
            let spec = SyntheticSpec {
                peers: *peers,
                prefixes: n,
                sharing: *sharing,
                seed,
            };
            let p: Vec<FeedParams> = (0..*peers).map(|i| params(i, distinct_as)).collect();
            let w = Workload::synthetic(&spec, &p).map_err(|e| format!("{name}: {e}"))?;
            let w_paths = w.total_prefixes();
            let about = format!(
                "{peers} peers x {n} prefixes, {}",
                if *sharing == Sharing::Shared {
                    "shared"
                } else {
                    "unique"
                }
            );
            let name = if scale == 1.0 {
                name.clone()
            } else {
                format!("{name}-scale{scale}")
            };
            Ok(vec![Case {
                name,
                workload: Arc::new(w),
                mix: Mix::Normal,
                foreign_next_hops: false,
                about,
                route_server: None,
                paths: Some(w_paths),
            }])
        }
        Scenario::RouteServer {
            feeders,
            prefixes,
            clients,
        } => Ok(vec![route_server_case(
            *feeders, *prefixes, *clients, scale, seed,
        )?]),
        Scenario::FullFeeds { peers } => {
            Ok(vec![full_feeds_case(*peers, scale, mrt_dir, distinct_as)?])
        }
        Scenario::Churn { .. } => {
            Err("scenario h runs through bench::churn, not as a replay case".into())
        }
        Scenario::RibDumps => {
            let mut out = Vec::new();
            for f in RIB_DUMPS {
                let path = mrt_dir.join(f);
                if !path.exists() {
                    return Err(format!(
                        "{} is missing (scenario d needs the shared MRT data)",
                        path.display()
                    ));
                }
                let opts = RibOptions {
                    peers: None,
                    max_prefixes: (scale < 1.0).then(|| scaled(RIB_FULL_PREFIXES, scale)),
                    no_ipv4: false,
                    no_ipv6: true,
                };
                let p = |i| params(i, distinct_as);
                let (w, sum) = rib_workload(&path, &opts, &p).map_err(|e| rib_err(f, e))?;
                let short = f.split('.').take(3).collect::<Vec<_>>().join("-");
                out.push(Case {
                    name: format!("d-{short}"),
                    about: format!(
                        "RIB dump {f}: {} peers, {} routes, {} prefixes",
                        sum.peers.len(),
                        w.total_prefixes(),
                        w.expected_prefixes.unwrap_or(0)
                    ),
                    workload: Arc::new(w),
                    mix: Mix::Normal,
                    foreign_next_hops: false,
                    route_server: None,
                    paths: None,
                });
            }
            Ok(out)
        }
        Scenario::TraceMixes => {
            let path = mrt_dir.join(UPDATE_TRACE);
            if !path.exists() {
                return Err(format!(
                    "{} is missing (scenario e needs the shared MRT data)",
                    path.display()
                ));
            }
            let opts = UpdateOptions {
                peers: None,
                max_messages: (scale < 1.0).then(|| scaled(TRACE_FULL_MESSAGES, scale)),
                // Session resets in a 5-minute trace would make every DUT's
                // end state depend on timing; keep sessions up.
                ignore_state_changes: true,
                // Every DUT must see reachable next hops (see trace_next_hops).
                next_hops: Some(Arc::new(trace_next_hops)),
            };
            let (w, sum) = update_workload(&path, &opts).map_err(|e| rib_err(UPDATE_TRACE, e))?;
            let w = Arc::new(w);
            Ok(Mix::ALL
                .iter()
                .map(|m| Case {
                    name: format!("e-{}", m.name()),
                    about: format!(
                        "update trace {UPDATE_TRACE}: {} peers, {} UPDATEs, mix {}",
                        sum.peers.len(),
                        w.total_messages(),
                        m.name()
                    ),
                    workload: w.clone(),
                    mix: *m,
                    foreign_next_hops: false,
                    route_server: None,
                    paths: None,
                })
                .collect())
        }
    }
}

/// Scenario (g): the feeders' shared table, then one empty feed per
/// client (a client's session only receives). Every peer has its own AS.
fn route_server_case(
    feeders: usize,
    prefixes: usize,
    clients: usize,
    scale: f64,
    seed: u64,
) -> Result<Case, String> {
    let n = scaled(prefixes as f64, scale) as usize;
    let spec = SyntheticSpec {
        peers: feeders,
        prefixes: n,
        sharing: Sharing::Shared,
        seed,
    };
    let p: Vec<FeedParams> = (0..feeders).map(|i| params(i, true)).collect();
    let mut w = Workload::synthetic(&spec, &p).map_err(|e| format!("g: {e}"))?;
    w.feeds
        .extend(std::iter::repeat_with(Default::default).take(clients));
    let mut name = format!("g-rs-{feeders}x{prefixes}-{clients}c");
    if scale != 1.0 {
        name.push_str(&format!("-scale{scale}"));
    }
    Ok(Case {
        name,
        about: format!(
            "route server: {feeders} feeders x {n} shared prefixes, {clients} route-server \
             clients (odd ones with an export policy of their own)"
        ),
        workload: Arc::new(w),
        mix: Mix::Normal,
        foreign_next_hops: false,
        route_server: Some(feeders),
        paths: None,
    })
}

/// Scenario (f): the jinx full table from `peers` sessions, each with
/// its own path per prefix. `--scale` below 1 keeps the dump's first
/// 500k x scale prefixes.
fn full_feeds_case(
    peers: usize,
    scale: f64,
    mrt_dir: &Path,
    distinct_as: bool,
) -> Result<Case, String> {
    let f = FULL_TABLE;
    let path = mrt_dir.join(f);
    if !path.exists() {
        return Err(format!(
            "{} is missing (scenario f needs the shared MRT data)",
            path.display()
        ));
    }
    let cap = (scale < 1.0).then(|| scaled(RIB_FULL_PREFIXES, scale));
    let p = |i| params(i, distinct_as);
    let (w, sum) = full_feeds_workload(&path, cap, peers, &p).map_err(|e| rib_err(f, e))?;
    let mut name = format!("f-{peers}-full-feeds");
    if scale != 1.0 {
        name.push_str(&format!("-scale{scale}"));
    }
    Ok(Case {
        name,
        about: format!(
            "{peers} full feeds of {f}: {} prefixes each, {} paths (drawn from {} dump peers, \
             a per-peer upstream AS and 0-2 extra copies of its own AS), {} UPDATEs",
            sum.prefixes,
            sum.paths,
            sum.dump_peers,
            w.total_messages()
        ),
        workload: Arc::new(w),
        mix: Mix::Normal,
        foreign_next_hops: false,
        route_server: None,
        paths: Some(sum.paths),
    })
}

fn rib_err(f: &str, e: ReplayError) -> String {
    format!("{f}: {e}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scenario_names_parse() {
        assert_eq!(Scenario::parse("c").map(|v| v.len()), Ok(2));
        let b = Scenario::parse("synthetic:2x2000:shared").unwrap_or_default();
        assert_eq!(
            b,
            vec![Scenario::Synthetic {
                name: "2x2000-shared".into(),
                peers: 2,
                prefixes: 2000,
                sharing: Sharing::Shared
            }]
        );
        assert!(Scenario::parse("synthetic:2x2000:both").is_err());
        assert_eq!(
            Scenario::parse("f"),
            Ok(vec![Scenario::FullFeeds { peers: 20 }])
        );
        assert_eq!(
            Scenario::parse("f:3"),
            Ok(vec![Scenario::FullFeeds { peers: 3 }])
        );
        assert!(Scenario::parse("f:0").is_err());
        assert_eq!(
            Scenario::parse("h"),
            Ok(vec![Scenario::Churn { monitors: 10 }])
        );
        assert_eq!(
            Scenario::parse("g:2x100x3"),
            Ok(vec![Scenario::RouteServer {
                feeders: 2,
                prefixes: 100,
                clients: 3
            }])
        );
        assert!(Scenario::parse("g:2x100").is_err());
        assert!(Scenario::parse("g:0x100x3").is_err());
    }

    #[test]
    fn route_server_case_has_silent_clients() {
        let s = Scenario::parse("g").unwrap_or_default();
        let c = cases(&s[0], 0.001, 1, Path::new("/nonexistent"), false).unwrap_or_default();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].peers(), 110);
        assert_eq!(c[0].route_server, Some(10));
        assert_eq!(c[0].workload.expected_prefixes, Some(100));
        assert!(c[0].workload.feeds[10..].iter().all(|f| f.messages == 0));
    }

    #[test]
    fn scale_shrinks_synthetic_cases() {
        let s = Scenario::parse("b").unwrap_or_default();
        let c = cases(&s[0], 0.001, 1, Path::new("/nonexistent"), false).unwrap_or_default();
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].peers(), 10);
        assert_eq!(c[0].workload.expected_prefixes, Some(100));
        assert_eq!(c[0].workload.total_prefixes(), 1000);
    }
}
