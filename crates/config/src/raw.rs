//! The TOML document as written: serde structs with every key optional
//! where the schema has a default, and `deny_unknown_fields` everywhere so
//! that a misspelt key is an error, not a silently ignored line.
//! [`crate::validate`] turns this into the typed [`crate::Config`]; field
//! positions come from [`crate::locate::Index`], not from here.

use std::collections::BTreeMap;
use std::fmt;

use bgp_policy::ast::PolicyDef;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::Deserialize;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub router: Option<RawRouter>,
    #[serde(default)]
    pub control: RawControl,
    #[serde(default)]
    pub log: RawLog,
    pub mrt: Option<RawMrt>,
    pub dataplane: Option<crate::dataplane::RawDataplane>,
    pub cluster: Option<crate::cluster::RawCluster>,
    pub bmp: Option<crate::bmp::RawBmp>,
    pub rpki: Option<crate::rpki::RawRpki>,
    pub api: Option<crate::api::RawApi>,
    #[serde(default)]
    pub bfd: RawBfd,
    pub damping: Option<crate::damping::RawDamping>,
    #[serde(default)]
    pub neighbor: Vec<RawNeighbor>,
    #[serde(default)]
    pub aggregate: Vec<crate::aggregate::RawAggregate>,
    #[serde(default, rename = "static")]
    pub statics: Vec<RawStatic>,
    #[serde(default)]
    pub policy: BTreeMap<String, PolicyDef>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRouter {
    pub id: String,
    pub asn: AsnValue,
    pub listen: Option<Vec<String>>,
    pub hold_time: Option<u16>,
    pub keepalive: Option<u16>,
    pub connect_retry: Option<u32>,
    pub cluster_id: Option<String>,
    pub pipeline: Option<String>,
    pub locks: Option<String>,
    pub streams: Option<String>,
    pub threads: Option<u16>,
    pub next_hop_tracking: Option<bool>,
    pub default_import: Option<String>,
    pub default_export: Option<String>,
    pub deterministic_med: Option<bool>,
    pub always_compare_med: Option<bool>,
    pub med_missing_as_worst: Option<bool>,
    pub compare_router_id: Option<bool>,
    pub multipath: Option<RawMultipath>,
    pub select_defer_time: Option<u32>,
    pub damping: Option<bool>,
    pub confederation: Option<crate::confed::RawConfederation>,
}

/// `router.multipath`: a path count for eBGP and iBGP alike, or a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RawMultipath {
    Both(i64),
    Table(RawMultipathTable),
}

/// `router.multipath = { ebgp = N, ibgp = N, relax_as_path = BOOL }`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMultipathTable {
    pub ebgp: Option<i64>,
    pub ibgp: Option<i64>,
    pub relax_as_path: Option<bool>,
}

impl<'de> Deserialize<'de> for RawMultipath {
    // Hand-written for the same reason as `AsnValue`: real type errors.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RawMultipath;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a path count, or a table { ebgp, ibgp, relax_as_path }")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<RawMultipath, E> {
                Ok(RawMultipath::Both(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<RawMultipath, E> {
                Ok(RawMultipath::Both(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<RawMultipath, A::Error> {
                RawMultipathTable::deserialize(de::value::MapAccessDeserializer::new(m))
                    .map(RawMultipath::Table)
            }
        }
        d.deserialize_any(V)
    }
}

/// An AS number as an integer (asplain) or a string: asdot `"1.10"`
/// (RFC 5396) or asplain digits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AsnValue {
    Int(i64),
    Text(String),
}

impl<'de> Deserialize<'de> for AsnValue {
    // Hand-written rather than `#[serde(untagged)]`: an untagged enum
    // replaces the real type error with "did not match any variant".
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = AsnValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an AS number (integer, or asdot \"X.Y\")")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<AsnValue, E> {
                Ok(AsnValue::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<AsnValue, E> {
                Ok(AsnValue::Int(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<AsnValue, E> {
                Ok(AsnValue::Text(v.to_string()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawControl {
    pub socket: Option<String>,
    pub metrics: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLog {
    pub level: Option<String>,
    pub file: Option<String>,
    pub format: Option<String>,
    pub syslog: Option<bool>,
    pub syslog_socket: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMrt {
    pub updates: Option<String>,
    pub updates_interval: Option<u32>,
    pub rib: Option<String>,
    pub rib_interval: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMaxPrefix {
    pub limit: u64,
    pub action: Option<String>,
    pub restart_after: Option<u32>,
    pub warn_threshold: Option<u8>,
}

/// `max_prefix = 1000` or `max_prefix = { limit = 1000, action = "restart" }`
/// (or a `[neighbor.max_prefix]` sub-table).
#[derive(Debug)]
pub enum MaxPrefixValue {
    Limit(i64),
    Table(RawMaxPrefix),
}

impl<'de> Deserialize<'de> for MaxPrefixValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = MaxPrefixValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a prefix count or a table { limit, action, ... }")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<MaxPrefixValue, E> {
                Ok(MaxPrefixValue::Limit(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<MaxPrefixValue, E> {
                Ok(MaxPrefixValue::Limit(i64::try_from(v).unwrap_or(i64::MAX)))
            }
            fn visit_map<A: MapAccess<'de>>(self, m: A) -> Result<MaxPrefixValue, A::Error> {
                // Errors inside the table keep their own position.
                RawMaxPrefix::deserialize(de::value::MapAccessDeserializer::new(m))
                    .map(MaxPrefixValue::Table)
            }
        }
        d.deserialize_any(V)
    }
}

/// `ttl_security = true` (GTSM for a directly connected peer) or
/// `ttl_security = HOPS`.
#[derive(Debug, Clone, Copy)]
pub enum TtlSecurityValue {
    Switch(bool),
    Hops(i64),
}

impl<'de> Deserialize<'de> for TtlSecurityValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = TtlSecurityValue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("true, false or a hop count")
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<TtlSecurityValue, E> {
                Ok(TtlSecurityValue::Switch(v))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<TtlSecurityValue, E> {
                Ok(TtlSecurityValue::Hops(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<TtlSecurityValue, E> {
                Ok(TtlSecurityValue::Hops(i64::try_from(v).unwrap_or(i64::MAX)))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNeighbor {
    pub address: String,
    pub remote_as: AsnValue,
    pub name: Option<String>,
    pub description: Option<String>,
    pub local_address: Option<String>,
    pub port: Option<u16>,
    pub passive: Option<bool>,
    pub connection: Option<String>,
    pub hold_time: Option<u16>,
    pub keepalive: Option<u16>,
    pub connect_retry: Option<u32>,
    pub delay_open: Option<u32>,
    pub families: Option<Vec<String>>,
    pub add_path: Option<String>,
    pub add_path_send: Option<String>,
    pub route_reflector_client: Option<bool>,
    pub route_server_client: Option<bool>,
    pub next_hop: Option<String>,
    pub max_prefix: Option<MaxPrefixValue>,
    pub password: Option<String>,
    pub import: Option<String>,
    pub export: Option<String>,
    pub role: Option<String>,
    pub role_strict: Option<bool>,
    pub graceful_restart: Option<bool>,
    pub restart_time: Option<u16>,
    pub long_lived_stale_time: Option<u32>,
    pub route_refresh: Option<bool>,
    pub enhanced_route_refresh: Option<bool>,
    pub extended_message: Option<bool>,
    pub extended_nexthop: Option<bool>,
    pub four_octet_asn: Option<bool>,
    pub enabled: Option<bool>,
    pub ttl: Option<u8>,
    pub ttl_security: Option<TtlSecurityValue>,
    pub soft_reconfiguration_inbound: Option<bool>,
    pub mrai: Option<u32>,
    pub bfd: Option<bool>,
    pub bfd_min_tx: Option<i64>,
    pub bfd_min_rx: Option<i64>,
    pub bfd_multiplier: Option<i64>,
    pub damping: Option<bool>,
}

/// `[bfd]`: defaults of the neighbours' BFD sessions.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawBfd {
    pub min_tx: Option<i64>,
    pub min_rx: Option<i64>,
    pub multiplier: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawStatic {
    pub prefix: String,
    pub next_hop: Option<String>,
    #[serde(default)]
    pub communities: Vec<String>,
    #[serde(default)]
    pub large_communities: Vec<String>,
    pub local_pref: Option<u32>,
    pub med: Option<u32>,
    pub origin: Option<String>,
}
