//! What the RIB core keeps per configured neighbour: its configuration as
//! the RIB needs it, its shared status, and the state of the current
//! Established session. How commands reach the session is the runtime's
//! business: the core names the peer in its [`crate::Outbox`].

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base::{AfiSafi, Asn, Instant};
use bgp_fsm::Negotiated;
use bgp_policy::Policy;
use bgp_rib::{NextHopMode, UpdateEncoder};

use crate::msg::{FlushBarrier, LinkAddrs, PeerStatus};

/// A policy attachment: a literal verdict or a compiled policy.
#[derive(Clone, Debug)]
pub enum PolicyRef {
    /// Accept every route unchanged.
    AcceptAll,
    /// Reject every route.
    RejectAll,
    /// A named, compiled policy (`[policy.NAME]`).
    Named(String, Arc<Policy>),
}

impl PolicyRef {
    /// The name shown by the CLI (`accept`, `reject` or the policy's).
    pub fn name(&self) -> &str {
        match self {
            PolicyRef::AcceptAll => "accept",
            PolicyRef::RejectAll => "reject",
            PolicyRef::Named(n, _) => n,
        }
    }
}

/// What to do when a peer sends more prefixes than allowed (RFC 4486 §4
/// Cease subcode 1 when tearing down).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MaxPrefixAction {
    /// Only log.
    Warn,
    /// Tear down, start again after this delay.
    Restart(Duration),
    /// Tear down and stay down until `neighbor ADDR enable`.
    Shutdown,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
/// A max-prefix limit (RFC 4486).
pub struct MaxPrefix {
    /// Most prefixes accepted from the peer.
    pub limit: u64,
    /// What to do past it.
    pub action: MaxPrefixAction,
    /// Log a warning when this percentage of the limit is reached.
    pub warn_percent: u8,
}

/// A neighbour as the RIB thread knows it.
#[derive(Clone, Debug)]
pub struct PeerMeta {
    /// The neighbour's name in the configuration.
    pub name: String,
    /// Free text from the configuration.
    pub description: String,
    /// The neighbour's address.
    pub addr: IpAddr,
    /// The neighbour's AS.
    pub remote_asn: Asn,
    /// Our AS towards it: in a confederation, our member AS towards
    /// internal peers and other members, the confederation identifier
    /// towards true external peers (RFC 5065 §4).
    pub local_asn: Asn,
    /// External session (the ASes differ), confederation members included.
    pub ebgp: bool,
    /// RFC 5065: the neighbour is in another member AS of our
    /// confederation (`ebgp` is true too): internal for selection and
    /// decoding, external for propagation; see `bgp_rib::PeerRole::confed`.
    pub confed: bool,
    /// RFC 5065: our confederation's identifier, when we are in one (loop
    /// detection, and which received paths may carry confederation
    /// segments).
    pub confed_id: Option<Asn>,
    /// A route-reflector client (RFC 4456).
    pub rr_client: bool,
    /// A route-server client (RFC 7947).
    pub rs_client: bool,
    /// RFC 9234 role of the peer as we see it (the code it should send).
    pub role: Option<u8>,
    /// How NEXT_HOP is set towards it.
    pub next_hop: NextHopMode,
    /// Its max-prefix limit, if any.
    pub max_prefix: Option<MaxPrefix>,
    /// Import policy.
    pub import: PolicyRef,
    /// Export policy.
    pub export: PolicyRef,
    /// Keep the pre-policy Adj-RIB-In (soft reconfiguration inbound).
    pub keep_pre_policy: bool,
    /// Families configured (the negotiated ones are a subset).
    pub families: Vec<AfiSafi>,
    /// Minimum interval between UPDATE flushes (MRAI, RFC 4271 §9.2.1.1).
    pub mrai: Duration,
    /// Which paths go out on families with ADD-PATH send (RFC 7911).
    pub add_path_send: bgp_rib::PathSelection,
    /// Route-flap damping of its routes (RFC 2439), when the RIB damps
    /// (see `RibCore::set_damping`).
    pub damping: bool,
}

impl PeerMeta {
    /// Whether the peer is a true external peer (outside our AS and our
    /// confederation): the eBGP-over-iBGP step of selection and the
    /// eBGP ingress rules treat only these as external.
    pub fn external(&self) -> bool {
        self.ebgp && !self.confed
    }

    /// Where the peer stands for the RFC 5065 §5 AS_PATH checks of
    /// received UPDATEs.
    pub fn confed_sender(&self) -> bgp_wire::ConfedSender {
        use bgp_wire::ConfedSender;
        match (self.confed_id, self.ebgp, self.confed) {
            (None, _, _) | (Some(_), true, false) => ConfedSender::Outside,
            (Some(_), _, true) => ConfedSender::OtherMemberAs,
            (Some(_), false, false) => ConfedSender::SameMemberAs,
        }
    }
}

/// The live part of an Established session.
pub struct UpState {
    /// What the OPEN exchange settled.
    pub negotiated: Negotiated,
    /// Our end of the connection.
    pub local_addr: SocketAddr,
    /// The peer's end of the connection.
    pub remote_addr: SocketAddr,
    /// Our addresses on the session's link.
    pub link: LinkAddrs,
    /// The runtime's number for this session ([`crate::SessionUp::session`]).
    pub session: u64,
    /// Encodes this session's UPDATEs (its wire options and rewriting).
    pub encoder: UpdateEncoder,
    /// Sessions of this core with the same class have encoders that
    /// encode alike ([`UpdateEncoder::encodes_like`]); set when the
    /// session comes up.
    pub enc_class: u64,
    /// When the session reached Established.
    pub since: SystemTime,
    /// Families whose End-of-RIB we still owe after the initial export.
    pub eor_owed: Vec<AfiSafi>,
    /// With a split RIB: the End-of-RIB goes out after every shard's
    /// initial export (see `crate::msg::FlushBarrier`).
    pub eor_barrier: Option<Arc<FlushBarrier>>,
    /// Families the peer has sent End-of-RIB for.
    pub eor_received: Vec<AfiSafi>,
    /// Families whose ROUTE-REFRESH we are answering: with enhanced route
    /// refresh (RFC 7313 §4) the re-sent routes go out between a BoRR and
    /// an EoRR for each.
    pub refresh_owed: Vec<(AfiSafi, Option<Arc<FlushBarrier>>)>,
    /// How many entries of `refresh_owed`, from the front, have had their
    /// BoRR written: a flush that does not drain everything writes the
    /// BoRR with its first part of the routes and the EoRR with the last.
    pub refresh_heads_sent: usize,
    /// The last flush left changes queued for want of room in the
    /// session's queue: the next one continues without waiting for MRAI
    /// (those changes were due already).
    pub backlog: bool,
    /// Families the peer is re-advertising after its BoRR, with the time
    /// after which stale routes are purged if no EoRR came (RFC 7313 §4).
    pub refreshing: Vec<(AfiSafi, Instant)>,
    /// When UPDATEs were last handed to the session (MRAI).
    pub last_flush: Instant,
}

/// One family of a restarting peer's routes kept as stale.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaleFamily {
    /// The family (unicast).
    pub afi: base::Afi,
    /// When the current phase ends: the peer's Restart Time while the
    /// session is down, the stale-path time once it is back, or the
    /// Long-lived Stale Time in the long-lived phase.
    pub until: Instant,
    /// The peer's Long-lived Stale Time for the family (RFC 9494),
    /// when it listed it: a restart timer running out with the session
    /// still down starts the long-lived phase instead of flushing.
    pub long_lived: Option<Duration>,
    /// In the long-lived phase: the routes carry LLGR_STALE.
    pub llgr: bool,
}

/// One entry of the RIB core's peer table. Every shard of a split RIB has
/// its own copy ([`PeerEntry::copy_idle`] before the session is up).
pub struct PeerEntry {
    /// Configuration as the RIB needs it.
    pub meta: PeerMeta,
    /// Shared with the session and the other shards: counters, the
    /// max-prefix total and the session's queued bytes (back-pressure,
    /// read through [`crate::OutQueue`]).
    pub status: Arc<PeerStatus>,
    /// The Established session, if any.
    pub up: Option<UpState>,
    /// The neighbour is administratively disabled.
    pub disabled: bool,
    /// Graceful restart helper (RFC 4724 §4.2, RFC 9494): the
    /// families whose routes are kept as stale, each until its End-of-RIB,
    /// a session that does not preserve it, or its deadline.
    pub gr_stale: Vec<StaleFamily>,
    /// When and why the last Established session ended.
    pub last_down: Option<(SystemTime, String)>,
}

impl PeerEntry {
    /// A neighbour whose session is not up.
    pub fn new(meta: PeerMeta, status: Arc<PeerStatus>) -> PeerEntry {
        PeerEntry {
            meta,
            status,
            up: None,
            disabled: false,
            gr_stale: Vec::new(),
            last_down: None,
        }
    }

    /// A copy for another shard thread. Only for entries whose session is
    /// not up yet (a new neighbour): the live session state is per shard.
    pub fn copy_idle(&self) -> PeerEntry {
        PeerEntry {
            meta: self.meta.clone(),
            status: self.status.clone(),
            up: None,
            disabled: self.disabled,
            gr_stale: self.gr_stale.clone(),
            last_down: self.last_down.clone(),
        }
    }
}
