//! `[rpki]`: RPKI origin validation (RFC 6811) with VRPs from RTR caches
//! (RFC 8210), several with preference and failover (RFC 8210 §10).
//!
//! ```toml
//! [[rpki.cache]]
//! address = "192.0.2.10"   # IP address of the cache
//! port = 323               # TCP port, default 323 (rpki-rtr)
//! preference = 1           # 0..=255, lower is preferred (RFC 8210 §10), default 1
//! retry = 600              # s before reconnecting after a failure, 1..=7200 (RFC 8210 §6), default 600
//! expire = 7200            # s a lost cache's data stays in use, 600..=172800 (RFC 8210 §6), default 7200
//! aspa_pdu = "current"     # ASPA PDU layout: "current" (RFC 8210bis) or "8210bis-10" (stayrtr 0.5.1)
//! ```
//!
//! The Refresh Interval is the cache's own (its End of Data, RFC 8210 §6,
//! which the `rpki` crate's client follows); there is no `refresh` key.
//! `expire` is always the configured one (as BIRD's `expire keep`).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use serde::Deserialize;

use crate::validate::{Ctx, R};

/// The IANA port of rpki-rtr over TCP (RFC 6810 §7 / RFC 8210 §7).
pub const RTR_PORT: u16 = 323;

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRpki {
    #[serde(default)]
    pub cache: Vec<RawCache>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCache {
    pub address: Option<String>,
    pub port: Option<i64>,
    pub preference: Option<i64>,
    pub retry: Option<i64>,
    pub expire: Option<i64>,
    pub aspa_pdu: Option<String>,
}

/// `[rpki]`: the RTR caches, in file order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rpki {
    /// `[[rpki.cache]]`, at least one; addresses are unique.
    pub caches: Vec<RpkiCache>,
}

/// One `[[rpki.cache]]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RpkiCache {
    /// `address` and `port` (default [`RTR_PORT`]).
    pub addr: SocketAddr,
    /// `preference`, default 1: lower is preferred (RFC 8210 §10).
    pub preference: u8,
    /// `retry`, default 600 s: wait before reconnecting after a failure.
    pub retry: Duration,
    /// `expire`, default 7200 s: how long the cache's data stays in use
    /// after its connection is lost.
    pub expire: Duration,
    /// `aspa_pdu = "8210bis-10"`: the cache sends ASPA PDUs in the layout
    /// of draft-ietf-sidrops-8210bis-10 (flags, AFI flags and provider
    /// count ahead of the customer AS; stayrtr 0.5.1 does). Default
    /// `"current"`: the later drafts' layout, which the `rpki` crate reads.
    pub aspa_draft10: bool,
}

fn int(c: &Ctx<'_>, path: &str, v: Option<i64>, lo: i64, hi: i64, def: i64) -> R<i64> {
    match v {
        None => Ok(def),
        Some(n) if (lo..=hi).contains(&n) => Ok(n),
        Some(n) => Err(c.err(path, format!("{n}: must be {lo}..={hi}"))),
    }
}

pub(crate) fn validate(c: &Ctx<'_>, r: &RawRpki) -> R<Rpki> {
    if r.cache.is_empty() {
        return Err(c.err(
            "rpki",
            "[rpki] needs at least one [[rpki.cache]] (address of an RTR cache)",
        ));
    }
    let mut caches: Vec<RpkiCache> = Vec::new();
    for (i, rc) in r.cache.iter().enumerate() {
        let path = format!("rpki.cache[{i}]");
        let addr = match rc.address.as_deref() {
            None => return Err(c.err(&path, "missing: address (the cache's IP address)")),
            Some(a) => a.parse::<IpAddr>().map_err(|_| {
                c.err(
                    &format!("{path}.address"),
                    format!("{a:?}: expected an IP address"),
                )
            })?,
        };
        if addr.is_unspecified() || addr.is_multicast() {
            return Err(c.err(
                &format!("{path}.address"),
                format!("{addr}: not a unicast address"),
            ));
        }
        let port = int(
            c,
            &format!("{path}.port"),
            rc.port,
            1,
            65535,
            i64::from(RTR_PORT),
        )?;
        let preference = int(c, &format!("{path}.preference"), rc.preference, 0, 255, 1)?;
        // RFC 8210 §6: Retry 1..=7200, Expire 600..=172800, default 600
        // and 7200; Expire larger than Retry.
        let retry = int(c, &format!("{path}.retry"), rc.retry, 1, 7200, 600)?;
        let expire = int(c, &format!("{path}.expire"), rc.expire, 600, 172_800, 7200)?;
        let aspa_draft10 = match rc.aspa_pdu.as_deref() {
            None | Some("current") => false,
            Some("8210bis-10") => true,
            Some(o) => {
                return Err(c.err(
                    &format!("{path}.aspa_pdu"),
                    format!("{o:?}: expected \"current\" or \"8210bis-10\""),
                ))
            }
        };
        let addr = SocketAddr::new(addr, port as u16);
        if caches.iter().any(|k| k.addr == addr) {
            return Err(c.err(
                &format!("{path}.address"),
                format!("{addr}: a second cache at the same address and port"),
            ));
        }
        caches.push(RpkiCache {
            addr,
            preference: preference as u8,
            retry: Duration::from_secs(retry as u64),
            expire: Duration::from_secs(expire as u64),
            aspa_draft10,
        });
    }
    Ok(Rpki { caches })
}
