//! The validated configuration: every value parsed, every default filled.
//! Each field names its TOML key and default; `docs/config.md` has the
//! operator's version of the same text.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;

use base::{AfiSafi, Asn, Prefix};

/// How UPDATE processing is parallelised (`router.pipeline`): `Sharded`
/// (the default), `Sequential`, `PerPeer` (the seeds' PBTS, one thread per
/// peer over a locked RIB) and `WorkerPool` (DTS, `threads` workers).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Pipeline {
    /// `"sequential"`: one RIB thread.
    Sequential,
    /// `"per-peer"`: each session's thread applies its own input to a locked, striped RIB.
    PerPeer,
    /// `"worker-pool"`: `threads` workers apply the sessions' input to a locked, striped RIB.
    WorkerPool,
    /// `"sharded"` (default): `threads` RIB threads, each owning its shard of the prefixes.
    Sharded,
}

/// How the shared RIB of `per-peer` and `worker-pool` is locked
/// (`router.locks`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Locks {
    /// `"stripes"` (default): 8 coarse stripes, one mutex each.
    Stripes,
    /// `"fine"`: 64 nodes under the seeds' traversal and modify locks.
    Fine,
}

/// Where `worker-pool` parses UPDATEs (`router.streams`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Streams {
    /// `"per-session"` (default): each session parses its own UPDATEs.
    PerSession,
    /// `"per-worker"`: sessions hand over raw UPDATEs and the workers parse
    /// them (the seeds' per-thread streams).
    PerWorker,
}

/// A policy attachment: `import`/`export` of a neighbour, or the router's
/// `default_import`/`default_export`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyName {
    /// The literal `"accept"`: everything passes unchanged.
    Accept,
    /// The literal `"reject"`: nothing passes.
    Reject,
    /// A `[policy.NAME]` table (checked to exist).
    Named(String),
}

impl PolicyName {
    /// The name as written in the file.
    pub fn as_str(&self) -> &str {
        match self {
            PolicyName::Accept => "accept",
            PolicyName::Reject => "reject",
            PolicyName::Named(n) => n,
        }
    }
}

/// `[router]`: the speaker itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Router {
    /// `damping`, default false: route-flap damping for every neighbour
    /// that does not set its own `damping`.
    pub damping: bool,
    /// `id`, required: the BGP Identifier (RFC 4271 §4.2), a non-zero IPv4
    /// address.
    pub id: Ipv4Addr,
    /// `asn`, required: the local AS, `65000` or asdot `"1.10"`.
    pub asn: Asn,
    /// `listen`, default `["0.0.0.0:179", "[::]:179"]`; `[]`: accept no
    /// connections (every neighbour must then connect actively).
    pub listen: Vec<SocketAddr>,
    /// `hold_time`, seconds, default 90; 0 (no keepalives) or >= 3
    /// (RFC 4271 §4.2). Neighbours inherit it.
    pub hold_time: u16,
    /// `keepalive`, seconds; `None` (default): a third of the negotiated
    /// hold time (RFC 4271 §10). Neighbours inherit it.
    pub keepalive: Option<u16>,
    /// `connect_retry`, seconds, default 120 (RFC 4271 §10, BIRD's default
    /// too). Neighbours inherit it.
    pub connect_retry: u32,
    /// `cluster_id` (RFC 4456 §7), default the router id.
    pub cluster_id: Ipv4Addr,
    /// `pipeline`, default `"sharded"`.
    pub pipeline: Pipeline,
    /// `locks`, default `"stripes"`: how `per-peer` and `worker-pool`
    /// lock their shared RIB; an error with the other pipelines.
    pub locks: Locks,
    /// `streams`, default `"per-session"`: where `worker-pool` parses
    /// UPDATEs; an error with the other pipelines.
    pub streams: Streams,
    /// `threads`, default `None`: one per CPU core. Shards of `sharded`,
    /// workers of `worker-pool`; not used by `sequential` and `per-peer`.
    pub threads: Option<u16>,
    /// `next_hop_tracking`, default false: resolve BGP next hops against
    /// the kernel's routing table (routes that are not our own BGP routes);
    /// routes with unresolvable next hops are not eligible (RFC 4271
    /// §9.1.2.1) and the resolving route's metric is the interior cost of
    /// §9.1.2.2 e. Off: every next hop is reachable at cost 0.
    pub next_hop_tracking: bool,
    /// `default_import`: the policy of neighbours that name none. `None`
    /// (default): RFC 8212, reject for eBGP and accept for iBGP. Already
    /// applied to [`Neighbor::import`]; kept for display.
    pub default_import: Option<PolicyName>,
    /// `default_export`, as `default_import`.
    pub default_export: Option<PolicyName>,
    /// Route selection options (`deterministic_med`, `always_compare_med`,
    /// `med_missing_as_worst`, `compare_router_id`).
    pub bestpath: BestPath,
    /// `confederation` (RFC 5065), default none: `{ identifier = N,
    /// members = [..] }`; `asn` is then our member AS.
    pub confederation: Option<crate::Confederation>,
    /// `select_defer_time`, seconds, default 360, 1..=3600: after a
    /// graceful restart of tesserad (`tesserad -R`), how long selection
    /// results are held back waiting for End-of-RIB from the peers.
    pub select_defer_time: u32,
}

/// The route selection options of `[router]` (RFC 4271 §9.1.2.2, RFC 5004).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BestPath {
    /// `deterministic_med`, default false: compare MEDs within each
    /// neighbouring AS first, so the result does not depend on the order
    /// the paths arrived in.
    pub deterministic_med: bool,
    /// `always_compare_med`, default false: compare MEDs between paths
    /// from different neighbouring ASes too.
    pub always_compare_med: bool,
    /// `med_missing_as_worst`, default false: a path without MED has the
    /// worst MED instead of 0.
    pub med_missing_as_worst: bool,
    /// `compare_router_id`, default true: eBGP paths tied up to the router
    /// id step are decided by router id; false keeps the one received
    /// first (RFC 5004).
    pub compare_router_id: bool,
    /// `multipath`: ECMP limits (see [`Multipath`]); off by default.
    pub multipath: Multipath,
}

/// `router.multipath`: how many equal paths (the best included) go to the
/// forwarding plane: `multipath = N` for eBGP and iBGP alike, or
/// `multipath = { ebgp = N, ibgp = N, relax_as_path = BOOL }` (FRR's
/// `maximum-paths N`, `maximum-paths ibgp N`, `bgp bestpath as-path
/// multipath-relax`). 1 is off.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Multipath {
    /// Paths when the best is eBGP-learned, 1..=64.
    pub ebgp: u16,
    /// Paths when the best is iBGP-learned, 1..=64.
    pub ibgp: u16,
    /// Allow paths from different neighbouring ASes with equal AS_PATH
    /// length.
    pub relax_as_path: bool,
}

impl Default for Multipath {
    fn default() -> Self {
        Multipath {
            ebgp: 1,
            ibgp: 1,
            relax_as_path: false,
        }
    }
}

/// Largest `router.multipath` path count (the feed socket carries up to 63
/// next hops besides the best).
pub const MAX_MULTIPATH: u16 = 64;

/// `[control]`: how operators reach the daemon.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Control {
    /// `socket`, default `/run/tessera/tesserad.sock`: the Unix socket of
    /// the `tessera` CLI.
    pub socket: PathBuf,
    /// `metrics`: `ADDR:PORT` of the Prometheus `/metrics` endpoint; none
    /// by default.
    pub metrics: Option<SocketAddr>,
}

/// `[mrt]`: MRT dumps (RFC 6396). File names are templates with `%Y %m %d
/// %H %M %S` (UTC), expanded at each rotation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mrt {
    /// `updates`: BGP4MP messages of every session.
    pub updates: Option<String>,
    /// `updates_interval`, seconds, default 300: rotation of `updates`.
    pub updates_interval: u32,
    /// `rib`: periodic TABLE_DUMP_V2 snapshots of the Loc-RIB.
    pub rib: Option<String>,
    /// `rib_interval`, seconds, default 7200.
    pub rib_interval: u32,
}

/// `connection`: who opens the TCP connection.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Connection {
    /// Connect and accept (default); collisions resolved per RFC 4271 §6.8.
    Both,
    /// Only accept (`passive = true`).
    Passive,
    /// Only connect.
    Active,
}

/// `add_path` (RFC 7911), for every family of the neighbour.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct AddPath {
    /// We accept several paths per prefix from the neighbour.
    pub receive: bool,
    /// We send several paths per prefix to the neighbour.
    pub send: bool,
    /// `add_path_send`: with `send`, at most this many paths per prefix,
    /// the most preferred first (`"best-N"`); `None` sends every path
    /// (`"all"`, the default).
    pub send_max: Option<u16>,
}

/// `next_hop`: the NEXT_HOP we send.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NextHop {
    /// RFC 4271 §5.1.3: ourselves towards eBGP, unchanged towards iBGP and
    /// route server clients (RFC 7947 §2.1).
    Auto,
    /// `"self"`: always our session address.
    SelfAlways,
    /// `"unchanged"`: never rewritten (eBGP multihop to a route server...).
    Unchanged,
}

/// `max_prefix.action`: what to do when a neighbour sends too many.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MaxPrefixAction {
    /// Log, keep the session and the routes.
    Warn,
    /// Cease/1 (RFC 4486), reconnect after this many seconds
    /// (`restart_after`, default 60).
    Restart(u32),
    /// Cease/1 and stay down until `tessera neighbor ADDR enable` (default).
    Shutdown,
}

/// `max_prefix`: a bound on the prefixes received from a neighbour
/// (counted before import policy, as BIRD's `receive limit`, over all
/// families).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MaxPrefix {
    /// `limit`, >= 1.
    pub limit: u64,
    /// `action`, default [`MaxPrefixAction::Shutdown`].
    pub action: MaxPrefixAction,
    /// `warn_threshold`, percent of the limit at which a warning is logged
    /// once, default 75; 0: no early warning.
    pub warn_threshold: u8,
}

/// `role` (RFC 9234), written from our side: `role = "provider"` means
/// *we* are the neighbour's provider.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// `"provider"`: we are the neighbour's provider.
    Provider,
    /// `"rs"`: we are a route server to the neighbour.
    Rs,
    /// `"rs-client"`: we are a client of the neighbour's route server.
    RsClient,
    /// `"customer"`: we are the neighbour's customer.
    Customer,
    /// `"peer"`: lateral peering.
    Peer,
}

impl Role {
    /// The RFC 9234 §4.1 code of this role, sent in our OPEN.
    pub fn code(self) -> u8 {
        match self {
            Role::Provider => 0,
            Role::Rs => 1,
            Role::RsClient => 2,
            Role::Customer => 3,
            Role::Peer => 4,
        }
    }
    /// The role the neighbour must announce when we have this one
    /// (RFC 9234 §4.2, Table 2).
    pub fn peer_code(self) -> u8 {
        match self {
            Role::Provider => 3,
            Role::Rs => 2,
            Role::RsClient => 1,
            Role::Customer => 0,
            Role::Peer => 4,
        }
    }
}

/// `[[neighbor]]`: one BGP session. Times are seconds, as on the wire.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighbor {
    /// `name`, default derived from the address (`192.0.2.2` ->
    /// `n192_0_2_2`); unique, `[A-Za-z0-9_-]`. Reloads match neighbours
    /// by name.
    pub name: String,
    /// `description`, default empty: shown by `show protocols`.
    pub description: String,
    /// `address`, required: the neighbour's IPv4 or IPv6 address.
    pub address: IpAddr,
    /// `remote_as`, required.
    pub remote_as: Asn,
    /// `remote_as != router.asn` (confederation members included).
    pub ebgp: bool,
    /// RFC 5065: `remote_as` is another member AS of
    /// `router.confederation` (a confederation-external peer).
    pub confed: bool,
    /// The AS we present to the neighbour (OPEN My AS, the AS we
    /// prepend): `router.confederation.identifier` for a true eBGP
    /// neighbour of a confederation member, else `router.asn`.
    pub local_as: Asn,
    /// `local_address`: source address of our connection (same family as
    /// `address`); default chosen by the kernel.
    pub local_address: Option<IpAddr>,
    /// `port`, default 179.
    pub port: u16,
    /// `connection` (`"both"`, `"passive"`, `"active"`), or
    /// `passive = true`; default both.
    pub connection: Connection,
    /// `hold_time`, default `router.hold_time`.
    pub hold_time: u16,
    /// `keepalive`, default `router.keepalive` (`None`: hold time / 3).
    pub keepalive: Option<u16>,
    /// `connect_retry`, default `router.connect_retry`.
    pub connect_retry: u32,
    /// `delay_open` (RFC 4271 §8.1.1 DelayOpenTime); none by default.
    pub delay_open: Option<u32>,
    /// `families`: default the family of `address` (`ipv4-unicast` or
    /// `ipv6-unicast`), as BIRD and GoBGP do. Never empty, no duplicates.
    pub families: Vec<AfiSafi>,
    /// `add_path` (`"off"` default, `"receive"`, `"send"`, `"both"`).
    pub add_path: AddPath,
    /// `route_reflector_client` (RFC 4456), default false; iBGP only.
    pub route_reflector_client: bool,
    /// `route_server_client` (RFC 7947), default false; eBGP only. The AS
    /// path and next hop pass unchanged.
    pub route_server_client: bool,
    /// `next_hop` (`"auto"` default, `"self"`, `"unchanged"`).
    pub next_hop: NextHop,
    /// `max_prefix`: a count, or a table; none by default.
    pub max_prefix: Option<MaxPrefix>,
    /// `password`: TCP-MD5 key (RFC 2385), 1 to 80 bytes.
    pub password: Option<String>,
    /// `import`: a policy name, `"accept"` or `"reject"`. Default
    /// `router.default_import`, else RFC 8212: reject for eBGP, accept
    /// for iBGP.
    pub import: PolicyName,
    /// `export`, as `import`.
    pub export: PolicyName,
    /// `role` (RFC 9234); none by default (no capability sent).
    pub role: Option<Role>,
    /// `role_strict`, default false: refuse a neighbour that sends no role.
    pub role_strict: bool,
    /// `graceful_restart` (RFC 4724 helper), default true.
    pub graceful_restart: bool,
    /// `restart_time`, seconds, default 120, at most 4095.
    pub restart_time: u16,
    /// `long_lived_stale_time` (RFC 9494), seconds, default 0: no
    /// long-lived graceful restart capability; at most 16777215.
    pub long_lived_stale_time: u32,
    /// `route_refresh` (RFC 2918), default true.
    pub route_refresh: bool,
    /// `enhanced_route_refresh` (RFC 7313), default true.
    pub enhanced_route_refresh: bool,
    /// `extended_message` (RFC 8654), default true.
    pub extended_message: bool,
    /// `extended_nexthop` (RFC 8950), default false: advertise the
    /// Extended Next Hop Encoding capability for the neighbour's IPv4
    /// families with an IPv6 next hop.
    pub extended_nexthop: bool,
    /// `four_octet_asn` (RFC 6793), default true.
    pub four_octet_asn: bool,
    /// `enabled`, default true; false: configured but administratively
    /// down.
    pub enabled: bool,
    /// `ttl`: IP TTL of our packets on the session (BIRD `multihop N`, FRR
    /// `ebgp-multihop N`); `None` (default): the system default.
    pub ttl: Option<u8>,
    /// `ttl_security`: GTSM (RFC 5082) with the peer at most this many hops
    /// away; `true` is 1 (directly connected), `false` or absent (default)
    /// `None`. We send with TTL 255 and the kernel drops what arrives with
    /// less than 256 - hops. Not together with `ttl`.
    pub ttl_security: Option<u8>,
    /// `soft_reconfiguration_inbound`, default true: keep the pre-policy
    /// Adj-RIB-In so that import policy changes apply without asking the
    /// neighbour for a ROUTE-REFRESH.
    pub soft_reconfiguration_inbound: bool,
    /// `mrai`, seconds, default 0: MinRouteAdvertisementInterval
    /// (RFC 4271 §9.2.1.1).
    pub mrai: u32,
    /// `bfd = true`: a single-hop BFD session (RFC 5880/5881) with the
    /// neighbour's address; its going Down tears the BGP session down.
    /// Intervals from `bfd_min_tx`, `bfd_min_rx`, `bfd_multiplier`, else
    /// `[bfd]`. `None` (default): no BFD.
    pub bfd: Option<Bfd>,
    /// `damping`, default `router.damping` (default false): route-flap
    /// damping (RFC 2439) of the routes this neighbour sends, with the
    /// `[damping]` parameters.
    pub damping: bool,
}

/// The timers of a BFD session (`[bfd]`, or a neighbour's `bfd_min_tx`,
/// `bfd_min_rx`, `bfd_multiplier`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Bfd {
    /// `min_tx`, milliseconds, default 300, 1..=60000: our Desired Min TX
    /// Interval once Up.
    pub min_tx_ms: u32,
    /// `min_rx`, milliseconds, default 300, 1..=60000: our Required Min RX
    /// Interval.
    pub min_rx_ms: u32,
    /// `multiplier`, default 3, 1..=255: the Detect Mult.
    pub multiplier: u8,
}

impl Default for Bfd {
    /// 300 ms x 3, as FRR's bfdd.
    fn default() -> Self {
        Bfd {
            min_tx_ms: 300,
            min_rx_ms: 300,
            multiplier: 3,
        }
    }
}

/// `[[static]]`: a route we originate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Static {
    /// `prefix`, required, without host bits.
    pub prefix: Prefix,
    /// `next_hop`: an address of the prefix's family; `None` for `"self"`
    /// (default): our address on each session.
    pub next_hop: Option<IpAddr>,
    /// `communities`: `"65000:1"` or well-known names (`"no-export"`).
    pub communities: Vec<u32>,
    /// `large_communities`: `"65000:1:2"`, as (global, data1, data2).
    pub large_communities: Vec<(u32, u32, u32)>,
    /// `local_pref`, for iBGP neighbours.
    pub local_pref: Option<u32>,
    /// `med`.
    pub med: Option<u32>,
    /// `origin`: 0 `"igp"` (default), 1 `"egp"`, 2 `"incomplete"`.
    pub origin: u8,
}
