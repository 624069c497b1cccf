//! tesserad's configuration: a TOML file (documented in `docs/config.md`),
//! parsed into the typed [`Config`], validated as a whole, with every error
//! reported as `FILE:LINE:COL: FIELD: message`. Reloads compare two
//! configurations with [`diff`], which says which neighbours must be reset
//! and which only need their policies re-applied.
//!
//! Nothing here opens a socket or starts a thread: the daemon applies the
//! result.

mod diff;
mod locate;
mod raw;
mod validate;

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};

use base::{AfiSafi, Asn, Prefix};
use bgp_policy::ast::PolicyDef;

pub use diff::{diff, ReloadPlan};
pub use locate::Location;

/// A configuration error: where, which field, what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    /// 1-based; 0 when the error has no position (an unreadable file).
    pub line: usize,
    pub col: usize,
    /// Dotted path of the field (`neighbor[1].remote_as`), or empty.
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: ", self.file)?;
        } else {
            write!(f, "{}:{}:{}: ", self.file, self.line, self.col)?;
        }
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConfigError {}

/// How UPDATE processing is parallelised (issue 5); only `sequential`
/// runs today, the daemon refuses the others with "not supported yet".
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Pipeline {
    Sequential,
    PerPeer,
    WorkerPool,
    Sharded,
}

/// A policy attachment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyName {
    Accept,
    Reject,
    Named(String),
}

impl PolicyName {
    pub fn as_str(&self) -> &str {
        match self {
            PolicyName::Accept => "accept",
            PolicyName::Reject => "reject",
            PolicyName::Named(n) => n,
        }
    }
}

/// `[router]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Router {
    pub id: Ipv4Addr,
    pub asn: Asn,
    pub listen: Vec<SocketAddr>,
    pub hold_time: u16,
    pub keepalive: Option<u16>,
    pub connect_retry: u32,
    pub cluster_id: Ipv4Addr,
    pub pipeline: Pipeline,
    pub threads: Option<u16>,
    /// When a neighbour names no policy; `None`: RFC 8212 (reject for
    /// eBGP, accept for iBGP).
    pub default_import: Option<PolicyName>,
    pub default_export: Option<PolicyName>,
}

/// `[control]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Control {
    pub socket: PathBuf,
    pub metrics: Option<SocketAddr>,
}

/// `[mrt]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mrt {
    pub updates: Option<String>,
    pub updates_interval: u32,
    pub rib: Option<String>,
    pub rib_interval: u32,
}

/// TCP connection mode of a neighbour.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Connection {
    Both,
    Passive,
    Active,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct AddPath {
    pub receive: bool,
    pub send: bool,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum NextHop {
    Auto,
    SelfAlways,
    Unchanged,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MaxPrefixAction {
    Warn,
    /// Seconds.
    Restart(u32),
    Shutdown,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MaxPrefix {
    pub limit: u64,
    pub action: MaxPrefixAction,
    /// Percent of the limit at which a warning is logged (0: none).
    pub warn_threshold: u8,
}

/// RFC 9234 roles, as we see the neighbour's role... written from our side
/// as in the RFC: `role = "provider"` means *we* are the provider.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    Provider,
    Rs,
    RsClient,
    Customer,
    Peer,
}

impl Role {
    /// The RFC 9234 §4.1 code of this role.
    pub fn code(self) -> u8 {
        match self {
            Role::Provider => 0,
            Role::Rs => 1,
            Role::RsClient => 2,
            Role::Customer => 3,
            Role::Peer => 4,
        }
    }
    /// The role the neighbour must have when we have this one.
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

/// `[[neighbor]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Neighbor {
    pub name: String,
    pub description: String,
    pub address: IpAddr,
    pub remote_as: Asn,
    pub ebgp: bool,
    pub local_address: Option<IpAddr>,
    pub port: u16,
    pub connection: Connection,
    pub hold_time: u16,
    pub keepalive: Option<u16>,
    pub connect_retry: u32,
    pub delay_open: Option<u32>,
    pub families: Vec<AfiSafi>,
    pub add_path: AddPath,
    pub route_reflector_client: bool,
    pub route_server_client: bool,
    pub next_hop: NextHop,
    pub max_prefix: Option<MaxPrefix>,
    pub password: Option<String>,
    pub import: PolicyName,
    pub export: PolicyName,
    pub role: Option<Role>,
    pub role_strict: bool,
    pub graceful_restart: bool,
    pub restart_time: u16,
    pub route_refresh: bool,
    pub enhanced_route_refresh: bool,
    pub extended_message: bool,
    pub four_octet_asn: bool,
    pub enabled: bool,
    pub ttl: Option<u8>,
    pub soft_reconfiguration_inbound: bool,
    /// MinRouteAdvertisementInterval, seconds (RFC 4271 §9.2.1.1).
    pub mrai: u32,
}

/// `[[static]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Static {
    pub prefix: Prefix,
    /// `None`: "self" (our address on each session).
    pub next_hop: Option<IpAddr>,
    pub communities: Vec<u32>,
    pub large_communities: Vec<(u32, u32, u32)>,
    pub local_pref: Option<u32>,
    pub med: Option<u32>,
    /// 0 IGP, 1 EGP, 2 incomplete.
    pub origin: u8,
}

/// A whole, validated configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    pub file: String,
    pub router: Router,
    pub control: Control,
    pub log_level: String,
    pub mrt: Option<Mrt>,
    pub neighbors: Vec<Neighbor>,
    pub statics: Vec<Static>,
    pub policies: BTreeMap<String, PolicyDef>,
    locations: BTreeMap<String, Location>,
}

impl Config {
    /// Where a dotted path (`policy.NAME`, `neighbor[2]`, `router`) is
    /// defined, for errors found after loading.
    pub fn locate(&self, path: &str) -> Option<Location> {
        self.locations.get(path).cloned()
    }

    pub fn neighbor(&self, name: &str) -> Option<&Neighbor> {
        self.neighbors.iter().find(|n| n.name == name)
    }
}

/// Reads and validates a file.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: file.clone(),
        line: 0,
        col: 0,
        field: String::new(),
        message: format!("cannot read: {e}"),
    })?;
    parse(&text, &file)
}

/// Parses and validates configuration text; `file_name` is used in errors.
pub fn parse(text: &str, file_name: &str) -> Result<Config, ConfigError> {
    validate::parse(text, file_name)
}
