//! The TOML document as written: serde structs with spans on the values
//! that semantic checks may have to point at. [`crate::validate`] turns it
//! into the typed [`crate::Config`].

use std::collections::BTreeMap;

use bgp_policy::ast::PolicyDef;
use serde::Deserialize;
use toml::Spanned;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub router: Option<Spanned<RawRouter>>,
    #[serde(default)]
    pub control: RawControl,
    #[serde(default)]
    pub log: RawLog,
    #[serde(default)]
    pub mrt: Option<Spanned<RawMrt>>,
    #[serde(default)]
    pub neighbor: Vec<Spanned<RawNeighbor>>,
    #[serde(default, rename = "static")]
    pub statics: Vec<Spanned<RawStatic>>,
    #[serde(default)]
    pub policy: BTreeMap<String, Spanned<PolicyDef>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRouter {
    pub id: Spanned<String>,
    pub asn: Spanned<AsnValue>,
    pub listen: Option<Vec<Spanned<String>>>,
    pub hold_time: Option<Spanned<u16>>,
    pub keepalive: Option<Spanned<u16>>,
    pub connect_retry: Option<Spanned<u32>>,
    pub cluster_id: Option<Spanned<String>>,
    pub pipeline: Option<Spanned<String>>,
    pub threads: Option<Spanned<u16>>,
    pub default_import: Option<Spanned<String>>,
    pub default_export: Option<Spanned<String>>,
}

/// An AS number as an integer or in asdot ("1.10").
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum AsnValue {
    Int(i64),
    Text(String),
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawControl {
    pub socket: Option<String>,
    pub metrics: Option<Spanned<String>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    pub level: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMrt {
    pub updates: Option<String>,
    pub updates_interval: Option<u32>,
    pub rib: Option<String>,
    pub rib_interval: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMaxPrefix {
    pub limit: u64,
    pub action: Option<Spanned<String>>,
    pub restart_after: Option<u32>,
    pub warn_threshold: Option<u8>,
}

/// `max_prefix = 1000` or `max_prefix = { limit = 1000, action = "restart" }`.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum MaxPrefixValue {
    Limit(u64),
    Table(RawMaxPrefix),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNeighbor {
    pub address: Spanned<String>,
    pub remote_as: Spanned<AsnValue>,
    pub name: Option<Spanned<String>>,
    pub description: Option<String>,
    pub local_address: Option<Spanned<String>>,
    pub port: Option<u16>,
    pub passive: Option<bool>,
    pub connection: Option<Spanned<String>>,
    pub hold_time: Option<Spanned<u16>>,
    pub keepalive: Option<u16>,
    pub connect_retry: Option<u32>,
    pub delay_open: Option<u32>,
    pub families: Option<Vec<Spanned<String>>>,
    pub add_path: Option<Spanned<String>>,
    pub route_reflector_client: Option<Spanned<bool>>,
    pub route_server_client: Option<Spanned<bool>>,
    pub next_hop: Option<Spanned<String>>,
    pub max_prefix: Option<Spanned<MaxPrefixValue>>,
    pub password: Option<Spanned<String>>,
    pub import: Option<Spanned<String>>,
    pub export: Option<Spanned<String>>,
    pub role: Option<Spanned<String>>,
    pub role_strict: Option<bool>,
    pub graceful_restart: Option<bool>,
    pub restart_time: Option<u16>,
    pub route_refresh: Option<bool>,
    pub enhanced_route_refresh: Option<bool>,
    pub extended_message: Option<bool>,
    pub four_octet_asn: Option<bool>,
    pub enabled: Option<bool>,
    pub ttl: Option<u8>,
    pub soft_reconfiguration_inbound: Option<bool>,
    pub mrai: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStatic {
    pub prefix: Spanned<String>,
    pub next_hop: Option<Spanned<String>>,
    #[serde(default)]
    pub communities: Vec<Spanned<String>>,
    #[serde(default)]
    pub large_communities: Vec<Spanned<String>>,
    pub local_pref: Option<u32>,
    pub med: Option<u32>,
    pub origin: Option<Spanned<String>>,
}
