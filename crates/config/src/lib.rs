//! tesserad's configuration: a TOML file (documented in `docs/config.md`),
//! parsed into the typed [`Config`], validated as a whole, with every error
//! reported as `FILE:LINE:COL: FIELD: message`. Reloads compare two
//! configurations with [`diff`], which says which neighbours must be reset
//! and which only need their policies re-applied.
//!
//! Nothing here opens a socket or starts a thread: the daemon applies the
//! result, and keeps its running configuration when [`load`] fails.
//!
//! ```
//! let c = config::parse(
//!     "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n\
//!      [[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 65001\n",
//!     "tesserad.toml",
//! )
//! .unwrap();
//! assert_eq!(c.neighbors[0].name, "n192_0_2_2");
//! let e = config::parse("[router]\nid = \"192.0.2.1\"\nasn = 0\n", "t.toml").unwrap_err();
//! assert_eq!(
//!     e.to_string(),
//!     "t.toml:3:7: router.asn: 0 is not an AS number (1..4294967295, or asdot \"X.Y\")"
//! );
//! ```

#![warn(missing_docs)]

mod aggregate;
mod api;
mod bmp;
mod cluster;
mod confed;
mod damping;
mod dataplane;
mod diff;
mod ipsec;
mod locate;
mod model;
mod neighbor;
mod port_group;
mod raw;
mod rpki;
mod validate;
mod vr;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bgp_policy::ast::PolicyDef;

pub use aggregate::Aggregate;
pub use api::{Api, ApiListen, ApiTls, DEFAULT_API_SOCKET};
pub use bmp::{Bmp, BmpCollector, Monitoring as BmpMonitoring, DEFAULT_PORT as BMP_DEFAULT_PORT};
pub use cluster::{
    CcScheme, Cluster, ClusterCc, ClusterMode, ClusterPeer, FABRIC_PORT, MAX_NODES, MAX_PACKING,
};
pub use confed::Confederation;
pub use damping::Damping;
pub use dataplane::{
    Dataplane, DataplaneEngine, DataplaneInterface, DataplaneIo, InterfaceQueues, KernelExport,
};
pub use diff::{diff, ReloadPlan};
pub use ipsec::{Ipsec, IpsecDirection, IpsecSa};
pub use locate::Location;
pub use model::{
    AddPath, BestPath, Bfd, Connection, Control, Locks, MaxPrefix, MaxPrefixAction, Mrt, Multipath,
    Neighbor, NextHop, Pipeline, PolicyName, Role, Router, Static, Streams, MAX_MULTIPATH,
};
pub use neighbor::{runtime_neighbor, NeighborKeys};
pub use port_group::{NicBalanceParams, PortGroup};
pub use rpki::{Rpki, RpkiCache, RTR_PORT};
pub use vr::{Vr, VrMatch, VrTable};

/// A configuration error: where, which field, what. Further errors found
/// in the same pass are in [`ConfigError::more`], in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigError {
    /// The file the error is in.
    pub file: String,
    /// 1-based; 0 when the error has no position (an unreadable file).
    pub line: usize,
    /// 1-based, in characters; 0 when the error has no position.
    pub col: usize,
    /// Dotted path of the field (`neighbor[1].remote_as`), or empty.
    pub field: String,
    /// What is wrong, for a person to read.
    pub message: String,
    /// The other errors, each without `more` of its own.
    pub more: Vec<ConfigError>,
}

impl ConfigError {
    /// This error alone, without [`ConfigError::more`]: one line.
    pub fn first(&self) -> String {
        let mut s = if self.line == 0 {
            format!("{}: ", self.file)
        } else {
            format!("{}:{}:{}: ", self.file, self.line, self.col)
        };
        if !self.field.is_empty() {
            s.push_str(&self.field);
            s.push_str(": ");
        }
        s.push_str(&self.message);
        s
    }

    /// Every error, first one included, one line each.
    pub fn lines(&self) -> Vec<String> {
        std::iter::once(self.first())
            .chain(self.more.iter().map(ConfigError::first))
            .collect()
    }
}

impl fmt::Display for ConfigError {
    /// One line per error, like a compiler.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.lines().join("\n"))
    }
}

impl std::error::Error for ConfigError {}

/// `log.format`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogFormat {
    /// Human-readable lines (tracing's default format).
    #[default]
    Text,
    /// One JSON object per line: timestamp, level, fields, spans.
    Json,
}

/// A whole, validated configuration. Compare two with [`diff`].
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// The file name given to [`load`] or [`parse`], used in messages.
    pub file: String,
    /// `[router]`.
    pub router: Router,
    /// `[control]`.
    pub control: Control,
    /// `log.level`, default `"info"`: a level (`error`, `warn`, `info`,
    /// `debug`, `trace`) or a tracing filter (`info,bgp_speaker=debug`).
    /// `RUST_LOG` overrides it.
    pub log_level: String,
    /// `log.file`: append logs there instead of standard error; tesserad
    /// opens it again on SIGHUP (after logrotate moved it).
    pub log_file: Option<PathBuf>,
    /// `log.format`: `"text"` (default) or `"json"` (one JSON object per
    /// line), for the file and standard error.
    pub log_format: LogFormat,
    /// `log.syslog` (default false) with `log.syslog_socket` (default
    /// `/dev/log`): also send every line to syslog (facility daemon,
    /// RFC 3164 over the local datagram socket).
    pub log_syslog: Option<PathBuf>,
    /// `[mrt]`, when present.
    pub mrt: Option<Mrt>,
    /// `[dataplane]`, when present (see [`Dataplane`]).
    pub dataplane: Option<Dataplane>,
    /// `[cluster]`, when present (see [`Cluster`]); always with a
    /// `[dataplane]` the fabric can run in.
    pub cluster: Option<Cluster>,
    /// `[bmp]`, when present (see [`Bmp`]).
    pub bmp: Option<Bmp>,
    /// `[rpki]`, when present (see [`Rpki`]): origin validation is on.
    pub rpki: Option<Rpki>,
    /// `[api]`, when present: the gRPC API (see [`Api`]).
    pub api: Option<Api>,
    /// `[bfd]`: the BFD timers of neighbours with `bfd = true` that set
    /// none of their own (already applied to [`Neighbor::bfd`]).
    pub bfd: Bfd,
    /// `[damping]`: route-flap damping parameters for the neighbours with
    /// [`Neighbor::damping`] (RFC 7196's defaults when absent).
    pub damping: Damping,
    /// `[[neighbor]]`, in file order; names and addresses are unique.
    pub neighbors: Vec<Neighbor>,
    /// `[[static]]`, in file order; prefixes are unique.
    pub statics: Vec<Static>,
    /// `[[aggregate]]`, in file order; prefixes are unique and none is a
    /// static route's.
    pub aggregates: Vec<Aggregate>,
    /// `[policy.NAME]`, each known to compile with `bgp_policy::compile`.
    pub policies: BTreeMap<String, PolicyDef>,
    index: Arc<locate::Index>,
}

impl Config {
    /// Where a dotted path is written: `router`, `router.asn`,
    /// `neighbor[2]`, `neighbor[2].import`, `policy.NAME`,
    /// `policy.NAME.term[0].match.prefix[1]`, `static[0].prefix`. Falls
    /// back to the closest enclosing field that is in the file (a defaulted
    /// `neighbor[2].port` gives the `[[neighbor]]` header), so that errors
    /// found by later layers still get a line. `None` for a path outside
    /// the file altogether.
    pub fn locate(&self, path: &str) -> Option<Location> {
        let (line, col) = self.index.nearest(path)?;
        Some(Location {
            file: self.file.clone(),
            line,
            col,
        })
    }

    /// The `[[neighbor]]` header of the neighbour called `name`.
    pub fn locate_neighbor(&self, name: &str) -> Option<Location> {
        let i = self.neighbors.iter().position(|n| n.name == name)?;
        self.locate(&format!("neighbor[{i}]"))
    }

    /// The neighbour called `name`.
    pub fn neighbor(&self, name: &str) -> Option<&Neighbor> {
        self.neighbors.iter().find(|n| n.name == name)
    }

    /// The neighbour with this address.
    pub fn neighbor_by_address(&self, addr: std::net::IpAddr) -> Option<&Neighbor> {
        self.neighbors.iter().find(|n| n.address == addr)
    }
}

/// Reads and validates a file. Errors name `path` as given.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: file.clone(),
        line: 0,
        col: 0,
        field: String::new(),
        message: format!("cannot read: {e}"),
        more: Vec::new(),
    })?;
    parse(&text, &file)
}

/// Parses and validates configuration text; `file_name` is used in errors
/// and [`Location`]s.
pub fn parse(text: &str, file_name: &str) -> Result<Config, ConfigError> {
    validate::parse(text, file_name)
}
