//! The CLI protocol spoken between `tessera` and `tesserad`.
//!
//! Wire format: over a Unix stream socket the client writes one
//! [`RequestEnvelope`] as a single line of JSON terminated by `\n`; the
//! server answers with one [`ResponseEnvelope`] line. A connection may carry
//! several request/response pairs in sequence; the client in
//! [`crate::client`] sends one and closes.
//!
//! Forward compatibility: every envelope carries [`PROTOCOL_VERSION`]. New
//! optional fields are added with `#[serde(default)]` so that an older peer
//! still parses a newer message (unknown fields are ignored); a change that
//! alters the meaning of an existing field bumps the version, and the server
//! answers a request with a version newer than its own with
//! [`ErrorCode::VersionMismatch`]. Enumerations that may grow (protocol kind,
//! states) have an `Unknown` catch-all so an old client renders "?" rather
//! than failing.

use serde::{Deserialize, Serialize};
use std::net::{IpAddr, Ipv4Addr};

/// Version of this protocol. Bumped on incompatible changes only.
pub const PROTOCOL_VERSION: u32 = 1;

/// Largest request line the server accepts, newline included. Requests are
/// small (a command and a few words); anything larger is garbage or abuse.
pub const MAX_REQUEST_BYTES: usize = 64 * 1024;

/// Largest response line the client accepts. `show route all` over a full
/// Internet table is a few hundred MiB of JSON; beyond this the daemon
/// should be asked for a narrower query.
pub const MAX_RESPONSE_BYTES: usize = 1 << 30;

/// One request line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestEnvelope {
    /// [`PROTOCOL_VERSION`] of the sender.
    pub version: u32,
    pub request: Request,
}

/// One response line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseEnvelope {
    /// [`PROTOCOL_VERSION`] of the sender.
    pub version: u32,
    pub response: Response,
}

/// A command, in BIRD's vocabulary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "command", rename_all = "snake_case")]
pub enum Request {
    /// `show protocols [all] [NAME]`. Answered with [`Data::Protocols`].
    ShowProtocols {
        #[serde(default)]
        all: bool,
        /// Only this protocol (exact name).
        #[serde(default)]
        name: Option<String>,
    },
    /// `show route [PREFIX] [all] [protocol NAME] [multicast]`, `show route
    /// count [multicast]`.
    /// Answered with [`Data::Routes`], or [`Data::RouteCount`] when
    /// `count_only`.
    ShowRoute {
        /// Exact prefix ("10.0.0.0/24", "2001:db8::/32"); `None` for all.
        /// With `longest_match`, an address or a prefix whose longest
        /// covering route is wanted.
        #[serde(default)]
        prefix: Option<String>,
        /// `show route for ADDR|PREFIX`: the route of the longest prefix
        /// that covers `prefix` (BIRD's `for`), not the exact prefix.
        #[serde(default)]
        longest_match: bool,
        /// All attributes of every path (`show route all`).
        #[serde(default)]
        all: bool,
        /// Only paths learned from this protocol.
        #[serde(default)]
        protocol: Option<String>,
        #[serde(default)]
        count_only: bool,
        /// The multicast (SAFI 2, RFC 4760 §6) table instead of the
        /// unicast one (`show route ... multicast`).
        #[serde(default)]
        multicast: bool,
    },
    /// `show route filtered protocol NAME [all]`: the routes neighbour
    /// NAME sent that its import policy rejected, as received (BIRD's
    /// `show route filtered`). Needs the neighbour's pre-policy
    /// Adj-RIB-In (`soft_reconfiguration_inbound = true`); without it the
    /// answer is an `Unsupported` error, not an empty list. Unicast only.
    /// Answered with [`Data::Routes`].
    ShowRouteFiltered {
        protocol: String,
        #[serde(default)]
        all: bool,
    },
    /// `show route export NAME [all]`: what tesserad sends neighbour NAME,
    /// from its Adj-RIB-Out (after export policy; each path's protocol is
    /// the Loc-RIB best path's source). Unicast only. Answered with
    /// [`Data::Routes`].
    ShowRouteExport {
        protocol: String,
        #[serde(default)]
        all: bool,
    },
    /// `show route noexport NAME [all]`: the Loc-RIB best paths that are
    /// not sent to neighbour `NAME` because the export decision holds them
    /// back (its export policy, NO_EXPORT / NO_ADVERTISE and the other
    /// propagation rules, iBGP to iBGP); best paths learned from `NAME`
    /// itself are not listed. Unicast only. Answered with
    /// [`Data::Routes`] (the best path of each prefix).
    ShowRouteNoexport {
        protocol: String,
        #[serde(default)]
        all: bool,
    },
    /// `show neighbor ADDR|NAME`: the detail block of one BGP protocol.
    /// Answered with [`Data::Protocols`] holding one entry.
    ShowNeighbor { addr: String },
    /// `show status`. Answered with [`Data::Status`].
    ShowStatus,
    /// `show nexthop`: the BGP next hops tracked with
    /// `router.next_hop_tracking`. Answered with [`Data::Nexthops`].
    ShowNexthop,
    /// `show bfd`: the BFD sessions (RFC 5880). Answered with
    /// [`Data::Bfd`].
    ShowBfd,
    /// `show bmp`: the BMP collectors (RFC 7854). Answered with
    /// [`Data::Bmp`].
    ShowBmp,
    /// `show rpki`: the RTR caches and the VRPs in use (RFC 8210, RFC
    /// 6811). Answered with [`Data::Rpki`].
    ShowRpki,
    /// `show dataplane`: the forwarding plane's element graph (which one
    /// runs) and each element's counters and drops by reason, summed over
    /// the cores. Answered with [`Data::Dataplane`].
    ShowDataplane,
    /// `show route damped`: the paths route-flap damping (RFC 2439)
    /// suppresses, each with [`PathInfo::damping`]. Answered with
    /// [`Data::Routes`] (only the suppressed paths of each prefix).
    ShowRouteDamped,
    /// `neighbor ADDR|NAME enable|disable|restart|refresh`. Answered with
    /// [`Data::Action`].
    Neighbor {
        addr_or_name: String,
        action: NeighborAction,
    },
    /// `configure [check]`: re-read the configuration file; with `check`,
    /// only validate it. Answered with [`Data::Configure`].
    Configure {
        #[serde(default)]
        check: bool,
    },
}

/// What `neighbor ADDR ...` does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum NeighborAction {
    Enable,
    /// Administrative shutdown; `message` goes into the Cease NOTIFICATION
    /// (RFC 8203 shutdown communication, at most 255 octets of UTF-8).
    Disable {
        #[serde(default)]
        message: Option<String>,
    },
    /// Drop the session and start it again.
    Restart,
    /// Ask the peer to resend its routes (ROUTE-REFRESH, RFC 2918/7313) and
    /// re-run import policy on what is kept.
    Refresh,
}

/// The answer to a [`Request`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Response {
    Ok(Data),
    Error { code: ErrorCode, message: String },
}

impl Response {
    /// An error response.
    pub fn error(code: ErrorCode, message: impl Into<String>) -> Self {
        Response::Error {
            code,
            message: message.into(),
        }
    }
}

/// Why a request failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The request line was not valid JSON or not a known request.
    BadRequest,
    /// The request line exceeded [`MAX_REQUEST_BYTES`].
    TooLarge,
    /// The named protocol, neighbor or prefix does not exist.
    NotFound,
    /// The daemon does not implement this (yet).
    Unsupported,
    /// `configure`: the new configuration is invalid.
    Config,
    /// The request came with a newer protocol version.
    VersionMismatch,
    /// The daemon is busy (too many CLI connections).
    Busy,
    /// Anything else, including a failure inside the daemon.
    Internal,
    #[serde(other)]
    Unknown,
}

/// Successful answers, one variant per kind of request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Data {
    Protocols(Vec<ProtocolInfo>),
    Routes(Vec<RouteInfo>),
    RouteCount(RouteCount),
    Status(StatusInfo),
    Action(Vec<ActionResult>),
    Configure(ConfigureResult),
    Nexthops(Vec<NexthopInfo>),
    Bfd(Vec<BfdSessionInfo>),
    Bmp(Vec<BmpCollectorInfo>),
    Rpki(RpkiInfo),
    Dataplane(Box<DataplaneInfo>),
}

/// Answer to `show dataplane`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataplaneInfo {
    /// The graph that runs: the operator's file (`[dataplane] graph`), or
    /// "built-in".
    pub graph: String,
    /// Worker cores (each runs a copy of the graph).
    pub cores: u32,
    /// Every element, in the graph's order.
    pub elements: Vec<ElementInfo>,
    /// IPsec (`[[dataplane.ipsec.sa]]`): each SA's counters, outbound
    /// SAs first, in configuration order.
    #[serde(default)]
    pub ipsec: Vec<IpsecSaInfo>,
    /// Each worker core's packets in and out and drops by reason, core 0
    /// first (totals since start; rates are the reader's).
    #[serde(default)]
    pub per_core: Vec<CoreInfo>,
    /// The cluster this node is part of (`[cluster]`), when it runs
    /// (boxed: every control answer is as large as its largest variant).
    #[serde(default)]
    pub cluster: Option<Box<ClusterInfo>>,
    /// The XDP fast path (`[dataplane] xdp_fastpath`), when it is on
    /// (boxed, as `cluster`).
    #[serde(default)]
    pub xdp_fastpath: Option<Box<XdpFastInfo>>,
    /// Virtual routers (`[[dataplane.vr]]`), in configuration order;
    /// empty without VRs (boxed: every control answer is as large as its
    /// largest variant).
    #[serde(default)]
    pub vrs: Box<VrList>,
}

/// The XDP fast path's counters (`show dataplane`): packets by where the
/// XDP program sent them (summed over the CPUs), and the FIB thread's
/// writes to its LPM map.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct XdpFastInfo {
    /// Forwarded in the XDP hook (IPv4 and IPv6).
    pub forwarded: u64,
    /// Of those, IPv6.
    #[serde(default)]
    pub forwarded_ipv6: u64,
    /// Handed to the element graph, by reason (`ttl`, `no_route`,
    /// `not_ip`, `options`, `fragment`, `local`, `other_mac`, `short`,
    /// `bad_header`, `hop_limit`, `ext_header`, `scope`, `nd`,
    /// `unresolved`).
    pub to_graph: std::collections::BTreeMap<String, u64>,
    /// LPM map entries written, removed and refused, and the bpf(2)
    /// calls that did it.
    pub map_set: u64,
    pub map_removed: u64,
    pub map_failed: u64,
    pub map_calls: u64,
}

/// The virtual routers of `show dataplane` (a JSON list).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct VrList(pub Vec<VrInfo>);

impl std::ops::Deref for VrList {
    type Target = [VrInfo];
    fn deref(&self) -> &[VrInfo] {
        &self.0
    }
}

/// One virtual router's counters, summed over the cores (`show
/// dataplane`, `tessera_dataplane_vr_*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VrInfo {
    pub name: String,
    /// Its CPU share, relative to the other VRs' tickets.
    pub tickets: u32,
    /// Packets its graphs received and sent.
    pub rx: u64,
    pub tx: u64,
    /// Drops by reason (its graphs' reasons, and `queue_full`: frames
    /// for it while its queue was full), zeros included.
    #[serde(default)]
    pub drops: std::collections::BTreeMap<String, u64>,
    /// CPU time the schedulers charged to it (ns of thread CPU time): the
    /// share it used.
    pub cpu_ns: u64,
    /// Times a scheduler ran it.
    pub runs: u64,
    /// Routes in its FIB: known, and installed (next hop resolved).
    pub routes: u64,
    pub installed: u64,
}

/// `[cluster]` as it runs (`show dataplane`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterInfo {
    /// This node's id and fabric address.
    pub node: u16,
    pub fabric_address: String,
    /// Balancing: "Direct", "Vlb", "DirectVlb".
    pub mode: String,
    /// The other nodes, by id.
    pub peers: Vec<ClusterPeerInfo>,
}

/// Another node of the cluster, as this node sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClusterPeerInfo {
    pub node: u16,
    pub fabric_address: String,
    /// In the live set (its BFD session is Up).
    pub live: bool,
    /// Fabric datagrams and bytes sent to it over this link, all cores.
    pub datagrams: u64,
    pub bytes: u64,
}

/// One dataplane core's counters (`show dataplane`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoreInfo {
    pub core: u32,
    /// Packets received from, and sent to, the core's devices.
    pub rx: u64,
    pub tx: u64,
    /// Drops summed over the core's graph by reason name (zeros included).
    #[serde(default)]
    pub drops: std::collections::BTreeMap<String, u64>,
    /// Each (interface, RX queue) the core reads (AF_XDP: one socket per
    /// queue, `[[dataplane.interface]] queues`), by interface then queue;
    /// empty with AF_PACKET (not bound to queues).
    #[serde(default)]
    pub queues: Vec<QueueInfo>,
}

/// One (interface, RX queue)'s counters on the core that reads it
/// (`show dataplane`, `tessera_dataplane_queue_*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueInfo {
    /// The interface's name.
    pub port: String,
    /// Its queue index.
    pub queue: u32,
    /// Frames received on this queue and handed to the graph.
    pub rx: u64,
    /// Frames sent on this queue (a core sends on the first queue it
    /// reads of each interface).
    pub tx: u64,
    /// Frames the kernel dropped on this queue for want of room in our
    /// receive ring (left on the wire), when the device tells.
    #[serde(default)]
    pub ring_drops: Option<u64>,
}

/// One IPsec SA's counters (`show dataplane`, `tessera_ipsec_sa_*`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IpsecSaInfo {
    /// The SPI; `None` for the row of inbound ESP packets that named no
    /// configured SA (unknown SPI, or too short or malformed to name one).
    pub spi: Option<u32>,
    /// "out" (EspEncap: sealed) or "in" (EspDecap: opened).
    pub dir: String,
    /// The graph element that holds the SA.
    pub element: String,
    /// Packets sealed or opened, and their inner bytes.
    pub packets: u64,
    pub bytes: u64,
    /// Drops by reason (zeros included): `not_ip`, `too_big`,
    /// `seq_exhausted`, `no_room` out; `too_short`, `malformed`,
    /// `no_sa`, `replay`, `auth_failed`, `policy`, `dummy` in.
    #[serde(default)]
    pub drops: std::collections::BTreeMap<String, u64>,
}

impl IpsecSaInfo {
    /// The SPI as `/metrics` and `show dataplane` write it (`0x1001`,
    /// `none`).
    pub fn spi_label(&self) -> String {
        self.spi
            .map_or_else(|| "none".into(), |s| format!("{s:#x}"))
    }
}

/// One element of the dataplane's graph (`show dataplane`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementInfo {
    /// Its name in the graph (`Class@N` for an anonymous one).
    pub name: String,
    pub class: String,
    /// Packets handed to it, and packets it emitted.
    pub rx: u64,
    pub tx: u64,
    /// Drops by reason: the element's own reasons (zeros included) and
    /// the graph's generic ones (unconnected, overflow, ...) that happened.
    #[serde(default)]
    pub drops: std::collections::BTreeMap<String, u64>,
    /// The element's own counters (Counter: packets, bytes; ...).
    #[serde(default)]
    pub counters: std::collections::BTreeMap<String, u64>,
}

/// Answer to `show rpki`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpkiInfo {
    /// The configured caches, in file order.
    pub caches: Vec<RpkiCacheInfo>,
    /// VRPs in use (those of the active cache), by family.
    pub vrps_v4: u64,
    pub vrps_v6: u64,
    /// Prefixes re-evaluated after VRP changes since the start.
    #[serde(default)]
    pub reevaluated: u64,
    /// ASPAs (customer ASes) in use, from the active cache (RTR v2).
    #[serde(default)]
    pub aspas: u64,
    /// Routes re-evaluated after ASPA changes since the start.
    #[serde(default)]
    pub aspa_reevaluated: u64,
}

/// One RTR cache (`show rpki`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RpkiCacheInfo {
    /// "127.0.0.1:323".
    pub address: String,
    /// Lower is preferred (RFC 8210 §10).
    pub preference: u8,
    /// "idle", "connecting", "synced" (connected, current data) or
    /// "stale" (connection lost, data kept until it expires).
    pub state: String,
    /// Its data is the VRP set in use.
    pub active: bool,
    /// Serial and session id of its last End of Data.
    #[serde(default)]
    pub serial: Option<u32>,
    #[serde(default)]
    pub session: Option<u16>,
    /// VRPs it delivered.
    pub vrps: u64,
    /// Why the last connection failed or ended.
    #[serde(default)]
    pub last_error: Option<String>,
}

/// Kind of protocol, as in BIRD's `Proto` column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProtocolKind {
    #[serde(rename = "BGP")]
    Bgp,
    #[serde(rename = "Static")]
    Static,
    #[serde(rename = "Device")]
    Device,
    #[serde(other)]
    Unknown,
}

impl ProtocolKind {
    /// BIRD's name for the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            ProtocolKind::Bgp => "BGP",
            ProtocolKind::Static => "Static",
            ProtocolKind::Device => "Device",
            ProtocolKind::Unknown => "?",
        }
    }
}

/// Protocol state, BIRD's words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProtoState {
    /// Not running: disabled, or failed and waiting to restart.
    Down,
    /// Starting: the BGP session is being established.
    Start,
    Up,
    /// Shutting down, routes being withdrawn.
    Flush,
    #[serde(other)]
    Unknown,
}

impl ProtoState {
    pub fn as_str(self) -> &'static str {
        match self {
            ProtoState::Down => "down",
            ProtoState::Start => "start",
            ProtoState::Up => "up",
            ProtoState::Flush => "flush",
            ProtoState::Unknown => "?",
        }
    }
}

/// RFC 4271 §8.2.2 session states, plus `Close` (BIRD's word for a
/// session being torn down).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum BgpState {
    Idle,
    Connect,
    Active,
    OpenSent,
    OpenConfirm,
    Established,
    Close,
    #[serde(other)]
    Unknown,
}

impl BgpState {
    pub fn as_str(self) -> &'static str {
        match self {
            BgpState::Idle => "Idle",
            BgpState::Connect => "Connect",
            BgpState::Active => "Active",
            BgpState::OpenSent => "OpenSent",
            BgpState::OpenConfirm => "OpenConfirm",
            BgpState::Established => "Established",
            BgpState::Close => "Close",
            BgpState::Unknown => "?",
        }
    }
}

/// Route counters of a protocol or channel. BIRD: "imported" is
/// `accepted`, "exported" is `sent`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RouteCounts {
    /// Paths currently in Adj-RIB-In (before import policy).
    #[serde(default)]
    pub received: u64,
    /// Paths accepted by import policy (in Loc-RIB).
    #[serde(default)]
    pub accepted: u64,
    /// Paths rejected by import policy and kept (soft reconfiguration).
    #[serde(default)]
    pub filtered: u64,
    /// Paths currently advertised to this peer (Adj-RIB-Out).
    #[serde(default)]
    pub sent: u64,
    /// Accepted paths that are the best path for their prefix.
    #[serde(default)]
    pub preferred: u64,
}

/// BGP messages by type (RFC 4271 §4.1 types 1-4, RFC 2918 type 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MessageCounts {
    #[serde(default)]
    pub open: u64,
    #[serde(default)]
    pub update: u64,
    #[serde(default)]
    pub notification: u64,
    #[serde(default)]
    pub keepalive: u64,
    #[serde(default)]
    pub route_refresh: u64,
}

impl MessageCounts {
    pub fn total(&self) -> u64 {
        self.open
            .saturating_add(self.update)
            .saturating_add(self.notification)
            .saturating_add(self.keepalive)
            .saturating_add(self.route_refresh)
    }
}

/// One address family of a protocol (BIRD's "Channel ipv4").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelInfo {
    /// "ipv4", "ipv6".
    pub name: String,
    /// Negotiated and running.
    #[serde(default)]
    pub up: bool,
    /// "master4", "master6".
    pub table: String,
    /// Import/export policy names; `None` shows as ACCEPT.
    #[serde(default)]
    pub import_filter: Option<String>,
    #[serde(default)]
    pub export_filter: Option<String>,
    #[serde(default)]
    pub routes: RouteCounts,
}

/// BGP-specific state of a protocol.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BgpInfo {
    pub bgp_state: BgpState,
    pub neighbor_addr: IpAddr,
    #[serde(default)]
    pub neighbor_port: Option<u16>,
    pub remote_as: u32,
    pub local_as: u32,
    /// BGP identifier of the peer, once OPEN was received.
    #[serde(default)]
    pub neighbor_id: Option<Ipv4Addr>,
    /// Local address of the TCP connection.
    #[serde(default)]
    pub source_addr: Option<IpAddr>,
    /// Negotiated hold time and keepalive interval in seconds (RFC 4271
    /// §4.2: the smaller of both hold times; keepalive a third of it).
    #[serde(default)]
    pub hold_time: Option<u16>,
    #[serde(default)]
    pub keepalive_time: Option<u16>,
    /// Milliseconds until the hold / keepalive timers fire.
    #[serde(default)]
    pub hold_timer_left_ms: Option<u64>,
    #[serde(default)]
    pub keepalive_timer_left_ms: Option<u64>,
    /// Capabilities we advertised and the peer advertised, one line each
    /// in BIRD's words ("Multiprotocol", "Route refresh",
    /// "4-octet AS numbers", "ADD-PATH", "Graceful restart", ...).
    #[serde(default)]
    pub local_capabilities: Vec<String>,
    #[serde(default)]
    pub neighbor_capabilities: Vec<String>,
    /// "external", "internal"; with "multihop", "route-reflector", "AS4"
    /// and the like appended, as BIRD's "Session:" line.
    #[serde(default)]
    pub session: Option<String>,
    #[serde(default)]
    pub messages_received: MessageCounts,
    #[serde(default)]
    pub messages_sent: MessageCounts,
}

/// One protocol instance (`show protocols`, `show neighbor`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtocolInfo {
    pub name: String,
    pub kind: ProtocolKind,
    /// Table for single-table protocols (Static); `None` shows as "---".
    #[serde(default)]
    pub table: Option<String>,
    pub state: ProtoState,
    /// Unix time in milliseconds of the last state change.
    pub since_ms: u64,
    /// Extra text for the Info column; by default it shows the BGP state,
    /// or the last error when the protocol is down.
    #[serde(default)]
    pub info: Option<String>,
    /// Last error: "Received: Administrative shutdown", "Hold timer
    /// expired", "Connection refused", ...
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    /// Totals over all channels.
    #[serde(default)]
    pub routes: RouteCounts,
    #[serde(default)]
    pub channels: Vec<ChannelInfo>,
    /// Present for BGP protocols.
    #[serde(default)]
    pub bgp: Option<BgpInfo>,
}

/// How a route forwards (BIRD's word after the prefix).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RouteDest {
    #[default]
    Unicast,
    Blackhole,
    Unreachable,
    Prohibited,
    #[serde(other)]
    Unknown,
}

impl RouteDest {
    pub fn as_str(self) -> &'static str {
        match self {
            RouteDest::Unicast => "unicast",
            RouteDest::Blackhole => "blackhole",
            RouteDest::Unreachable => "unreachable",
            RouteDest::Prohibited => "prohibited",
            RouteDest::Unknown => "?",
        }
    }
}

/// ORIGIN attribute (RFC 4271 §5.1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Origin {
    #[serde(rename = "IGP")]
    Igp,
    #[serde(rename = "EGP")]
    Egp,
    #[serde(rename = "Incomplete")]
    Incomplete,
}

/// One prefix and its paths (`show route`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouteInfo {
    /// "10.0.0.0/24", "2001:db8::/32".
    pub prefix: String,
    /// Best path first.
    pub paths: Vec<PathInfo>,
}

/// A path: one route to a prefix from one protocol (and ADD-PATH id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PathInfo {
    /// Protocol name the path came from ("peer1", "static1").
    pub from: String,
    /// Kind of that protocol ("Type: BGP univ").
    #[serde(default = "default_kind")]
    pub source: ProtocolKind,
    /// Neighbor address, shown as "from ADDR" when it differs from the
    /// next hop (route reflection, multihop, third-party next hop).
    #[serde(default)]
    pub from_addr: Option<IpAddr>,
    /// Selected as best path (BIRD's `*`).
    #[serde(default)]
    pub best: bool,
    /// A member of the prefix's multipath (ECMP) set, `router.multipath`:
    /// forwarded over together with the other members (the best
    /// included); only set when the set has more than one path.
    #[serde(default)]
    pub multipath: bool,
    /// Kept after the session went down, pending graceful restart
    /// (RFC 4724 §4.2); BIRD marks these with `s`.
    #[serde(default)]
    pub stale: bool,
    #[serde(default)]
    pub dest: RouteDest,
    /// BIRD's route preference, shown as "(100)".
    #[serde(default = "default_preference")]
    pub preference: u32,
    /// Unix time in milliseconds when this path was last changed.
    pub since_ms: u64,
    /// Received ADD-PATH path identifier (RFC 7911).
    #[serde(default)]
    pub path_id: Option<u32>,
    /// Resolved forwarding next hop and interface ("via ADDR on IFACE").
    #[serde(default)]
    pub via: Option<IpAddr>,
    #[serde(default)]
    pub iface: Option<String>,
    /// AS_PATH as text, sets in braces: "65001 65002 {65003 65004}".
    #[serde(default)]
    pub as_path: String,
    #[serde(default)]
    pub origin: Option<Origin>,
    /// NEXT_HOP / MP_REACH next hop, and the IPv6 link-local one
    /// (RFC 2545 §3).
    #[serde(default)]
    pub next_hop: Option<IpAddr>,
    #[serde(default)]
    pub next_hop_link_local: Option<IpAddr>,
    #[serde(default)]
    pub med: Option<u32>,
    #[serde(default)]
    pub local_pref: Option<u32>,
    #[serde(default)]
    pub atomic_aggregate: bool,
    /// AGGREGATOR: (AS, BGP identifier).
    #[serde(default)]
    pub aggregator: Option<(u32, Ipv4Addr)>,
    /// RFC 1997 communities as (high, low) halves.
    #[serde(default)]
    pub communities: Vec<(u16, u16)>,
    /// RFC 4360 extended communities, the 8 octets big-endian.
    #[serde(default)]
    pub ext_communities: Vec<u64>,
    /// RFC 8092 large communities.
    #[serde(default)]
    pub large_communities: Vec<(u32, u32, u32)>,
    /// RFC 4456 route reflection attributes.
    #[serde(default)]
    pub originator_id: Option<Ipv4Addr>,
    #[serde(default)]
    pub cluster_list: Vec<Ipv4Addr>,
    /// RFC 9234 Only-to-Customer.
    #[serde(default)]
    pub otc: Option<u32>,
    /// Any other attribute, already formatted: ("BGP.aigp", "...").
    #[serde(default)]
    pub other: Vec<(String, String)>,
    /// RPKI origin validation state (RFC 6811) with `[rpki]` configured:
    /// "valid", "invalid" or "not-found".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rpki: Option<String>,
    /// ASPA AS_PATH verification state with `[rpki]` configured, for a
    /// route from an eBGP neighbour with a `role`: "valid", "invalid" or
    /// "unknown" (absent: not verified).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aspa: Option<String>,
    /// Route-flap damping state (RFC 2439), under `show route ... all`
    /// and `show route damped`, for a path with a damping history.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub damping: Option<DampingInfo>,
}

/// A path's route-flap damping state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DampingInfo {
    /// The figure of merit now, rounded.
    pub penalty: u32,
    /// Not eligible for selection until released.
    pub suppressed: bool,
    /// Milliseconds until release, when suppressed.
    #[serde(default)]
    pub reuse_in_ms: Option<u64>,
}

fn default_kind() -> ProtocolKind {
    ProtocolKind::Bgp
}

fn default_preference() -> u32 {
    100
}

impl PathInfo {
    /// A path with every optional attribute absent.
    pub fn new(from: impl Into<String>, since_ms: u64) -> Self {
        PathInfo {
            from: from.into(),
            source: ProtocolKind::Bgp,
            from_addr: None,
            best: false,
            multipath: false,
            stale: false,
            dest: RouteDest::Unicast,
            preference: default_preference(),
            since_ms,
            path_id: None,
            via: None,
            iface: None,
            as_path: String::new(),
            origin: None,
            next_hop: None,
            next_hop_link_local: None,
            med: None,
            local_pref: None,
            atomic_aggregate: false,
            aggregator: None,
            communities: Vec::new(),
            ext_communities: Vec::new(),
            large_communities: Vec::new(),
            originator_id: None,
            cluster_list: Vec::new(),
            otc: None,
            other: Vec::new(),
            rpki: None,
            aspa: None,
            damping: None,
        }
    }
}

/// Route counts for one table (`show route count`).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct TableCount {
    /// "master4", "master6".
    pub table: String,
    /// Paths matching the query (all paths when there is no filter).
    pub matched: u64,
    /// All paths in the table.
    pub paths: u64,
    /// Prefixes with at least one matching path.
    pub prefixes: u64,
}

/// Paths per protocol.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProtocolCount {
    pub protocol: String,
    pub paths: u64,
    /// Paths from this protocol that are best.
    pub best: u64,
}

/// Answer to `show route count`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RouteCount {
    pub tables: Vec<TableCount>,
    #[serde(default)]
    pub per_protocol: Vec<ProtocolCount>,
}

impl RouteCount {
    /// Prefixes over all tables.
    pub fn prefixes(&self) -> u64 {
        self.tables.iter().map(|t| t.prefixes).sum()
    }
    /// Paths over all tables.
    pub fn paths(&self) -> u64 {
        self.tables.iter().map(|t| t.paths).sum()
    }
}

/// One tracked BGP next hop (`show nexthop`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct NexthopInfo {
    pub nexthop: IpAddr,
    /// False until the first resolution arrived.
    pub resolved: bool,
    /// Resolvable through a kernel route that is not a BGP route (RFC 4271
    /// §9.1.2.1); routes through an unreachable next hop are not eligible.
    pub reachable: bool,
    /// The resolving route's metric, 0 when directly connected (RFC 4271
    /// §9.1.2.2 e).
    pub igp_cost: u32,
    /// Prefixes with a path through it.
    pub prefixes: u64,
}

/// One BMP collector (`show bmp`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BmpCollectorInfo {
    /// ADDRESS:PORT.
    pub address: String,
    /// "Idle" (waiting to reconnect), "Connect", "Dump" (initial table
    /// dump), "Up".
    pub state: String,
    /// Unix seconds of the last state change.
    pub since: u64,
    /// The Route Monitoring views: "pre-policy", "post-policy", "loc-rib".
    pub monitoring: Vec<String>,
    /// BMP messages written to the collector, over every connection.
    pub messages_sent: u64,
    pub bytes_sent: u64,
    /// Messages waiting in the queue now, and its limit.
    pub queued: u64,
    pub queue_limit: u64,
    /// Messages dropped by queue overflows, and the overflows (each one
    /// disconnects the collector, which then reconnects and resyncs).
    pub dropped: u64,
    pub overflows: u64,
    /// Connections made.
    pub connects: u64,
    /// Why the last connection ended or failed ("" when none did).
    pub last_error: String,
}

/// One BFD session (`show bfd`). Intervals in microseconds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BfdSessionInfo {
    pub peer: IpAddr,
    #[serde(default)]
    pub local: Option<IpAddr>,
    /// The BGP neighbour it belongs to, if any.
    #[serde(default)]
    pub neighbor: Option<String>,
    /// "AdminDown", "Down", "Init", "Up".
    pub state: String,
    pub remote_state: String,
    /// Our diagnostic (why we last left Up), "none" when none.
    pub diag: String,
    pub remote_diag: String,
    pub local_disc: u32,
    pub remote_disc: u32,
    /// Configured Desired Min TX / Required Min RX, and multiplier.
    pub desired_min_tx_us: u64,
    pub required_min_rx_us: u64,
    pub multiplier: u8,
    /// The negotiated transmit interval (before jitter); 0 when the peer
    /// asked for no packets.
    pub tx_interval_us: u64,
    /// The Detection Time; 0 before the first packet.
    pub detection_time_us: u64,
    /// Unix milliseconds of the last state change.
    #[serde(default)]
    pub last_change_ms: Option<u64>,
    pub packets_sent: u64,
    pub packets_received: u64,
    pub transitions_up: u64,
    pub transitions_down: u64,
}

/// Answer to `show status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StatusInfo {
    /// "tesserad 0.1.0".
    pub version: String,
    pub router_id: Ipv4Addr,
    /// Unix milliseconds: now on the daemon, daemon start, last reconfigure.
    pub server_time_ms: u64,
    pub started_ms: u64,
    #[serde(default)]
    pub last_reconfig_ms: Option<u64>,
}

/// Outcome of `neighbor X enable|...` for one protocol: ("peer1",
/// "disabled"), ("peer1", "already disabled").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionResult {
    pub protocol: String,
    pub result: String,
}

/// Outcome of `configure [check]`. A configuration that does not load is
/// answered with [`ErrorCode::Config`] instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfigureResult {
    /// File read.
    pub path: String,
    /// Only checked, nothing applied.
    pub check: bool,
    /// Something changed (false: "Reconfiguration not needed").
    #[serde(default)]
    pub changed: bool,
    /// One line per change or warning: "peer2: added", "peer1: restarted
    /// (remote AS changed)".
    #[serde(default)]
    pub messages: Vec<String>,
}
