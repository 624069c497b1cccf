//! What every daemon launcher offers the scenarios: one BGP session to the
//! other end of its link, a fixed route pair (IPv4 + IPv6, with every
//! attribute the scenarios check) from its template, a replaceable set of
//! extra prefixes (withdrawals, max-prefix), and queries.

use super::lab::{Lab, Leaf};

/// Where a speaker sits and whom it talks to.
#[derive(Clone, Debug)]
pub struct Session {
    pub ns: String,
    pub local_as: u32,
    pub peer_as: u32,
    pub local_v4: String,
    pub local_v6: String,
    pub peer_v4: String,
    pub peer_v6: String,
    /// Hold time in seconds (3 is the smallest every daemon accepts).
    pub hold: u16,
    /// Distinguishes the fixed routes of different speakers (1..=250).
    pub id: u8,
}

impl Session {
    /// The leaf end of link `leaf`.
    pub fn leaf(leaf: &Leaf, local_as: u32, peer_as: u32) -> Session {
        Session {
            ns: leaf.ns.clone(),
            local_as,
            peer_as,
            local_v4: leaf.v4.clone(),
            local_v6: leaf.v6.clone(),
            peer_v4: leaf.center_v4.clone(),
            peer_v6: leaf.center_v6.clone(),
            hold: 9,
            id: leaf.k,
        }
    }

    /// The center end of link `leaf` (harness self-tests put a second real
    /// daemon there).
    pub fn center(lab: &Lab, leaf: &Leaf, local_as: u32, peer_as: u32) -> Session {
        Session {
            ns: lab.center_ns.clone(),
            local_as,
            peer_as,
            local_v4: leaf.center_v4.clone(),
            local_v6: leaf.center_v6.clone(),
            peer_v4: leaf.v4.clone(),
            peer_v6: leaf.v6.clone(),
            hold: 9,
            id: 200,
        }
    }

    pub fn with_hold(mut self, hold: u16) -> Session {
        self.hold = hold;
        self
    }

    /// The fixed routes this speaker announces (from its template).
    pub fn routes(&self) -> [RouteSpec; 2] {
        [RouteSpec::new(self, false), RouteSpec::new(self, true)]
    }

    /// Template variables shared by every daemon's `peer.conf.tmpl`.
    pub fn vars(&self, dir: &std::path::Path) -> Vec<(&'static str, String)> {
        let [r4, r6] = self.routes();
        vec![
            ("LOCAL_AS", self.local_as.to_string()),
            ("PEER_AS", self.peer_as.to_string()),
            ("LOCAL_V4", self.local_v4.clone()),
            ("LOCAL_V6", self.local_v6.clone()),
            ("PEER_V4", self.peer_v4.clone()),
            ("PEER_V6", self.peer_v6.clone()),
            ("ROUTER_ID", self.local_v4.clone()),
            ("HOLD", self.hold.to_string()),
            ("PFX4", r4.prefix.clone()),
            ("PFX6", r6.prefix.clone()),
            ("COMM_A", r4.community.0.to_string()),
            ("COMM_B", r4.community.1.to_string()),
            ("LARGE_A", r4.large.0.to_string()),
            ("LARGE_B", r4.large.1.to_string()),
            ("LARGE_C", r4.large.2.to_string()),
            ("EXT_A", r4.ext_rt.0.to_string()),
            ("EXT_B", r4.ext_rt.1.to_string()),
            ("MED", r4.med.to_string()),
            ("DIR", dir.display().to_string()),
        ]
    }
}

/// A route with the attributes the scenarios check end to end. Both routes
/// of a speaker carry the same attributes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RouteSpec {
    pub prefix: String,
    pub v6: bool,
    pub community: (u32, u32),
    pub large: (u32, u32, u32),
    pub ext_rt: (u32, u32),
    pub med: u32,
    /// Next hop as announced by the originating speaker.
    pub next_hop: String,
}

impl RouteSpec {
    fn new(s: &Session, v6: bool) -> RouteSpec {
        let id = u32::from(s.id);
        RouteSpec {
            prefix: if v6 {
                format!("2001:db8:{:x}::/48", 0x100 + id)
            } else {
                format!("198.51.{id}.0/24")
            },
            v6,
            community: (s.local_as, 100 + id),
            large: (s.local_as, id, 7),
            ext_rt: (s.local_as, 1000 + id),
            med: 10 + id,
            next_hop: if v6 {
                s.local_v6.clone()
            } else {
                s.local_v4.clone()
            },
        }
    }
}

/// Attribute expectations, written the way each daemon prints them.
#[derive(Clone, Debug)]
pub struct Expect<'a> {
    pub route: &'a RouteSpec,
    /// AS path as received, e.g. `[65001]`.
    pub as_path: Vec<u32>,
    pub next_hop: String,
    /// Whether the MED must be there (it is not propagated to eBGP peers
    /// beyond the neighbor AS, RFC 4271 §5.1.4).
    pub med: bool,
}

pub trait Peer {
    /// `bird`, `frr`, ...
    fn kind(&self) -> &'static str;
    fn pid(&self) -> u32;
    /// Whether the session is Established.
    fn established(&self) -> Result<bool, String>;
    /// The daemon's description of `prefix` in its RIB (received or
    /// local), `None` when it has none.
    fn route(&self, prefix: &str) -> Result<Option<String>, String>;
    /// Replaces the set of extra prefixes announced (no attributes beyond
    /// the mandatory ones); an empty slice withdraws them all.
    fn set_extra(&self, prefixes: &[String]) -> Result<(), String>;
    /// Asks the peer for a ROUTE-REFRESH (RFC 2918) of IPv4 unicast.
    fn request_refresh(&self) -> Result<(), String>;
    /// Number of UPDATE messages received on the session so far.
    fn updates_received(&self) -> Result<u64, String>;
    /// Closes the session with a Cease/Administrative Shutdown carrying
    /// `msg` (RFC 9003).
    fn shutdown(&self, msg: &str) -> Result<(), String>;
    /// Re-enables the session after `shutdown`.
    fn enable(&self) -> Result<(), String>;
    /// Everything the daemon logged (to find received NOTIFICATIONs).
    fn log(&self) -> String;
    /// Checks the route text against the expectations; returns what is
    /// missing.
    fn check(&self, text: &str, e: &Expect<'_>) -> Result<(), String>;
}

/// Helper for `check` implementations: every needle must be in `text`.
pub fn require_all(kind: &str, text: &str, needles: &[String]) -> Result<(), String> {
    let missing: Vec<&String> = needles
        .iter()
        .filter(|n| !text.contains(n.as_str()))
        .collect();
    if missing.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{kind}: route lacks {missing:?}; it reads:\n{text}"
        ))
    }
}

/// Waits for the session of `p` to be Established.
pub fn wait_established(lab: &Lab, p: &dyn Peer, secs: u64) {
    lab.wait(secs, &format!("{} session Established", p.kind()), || {
        p.established().map(|up| up.then_some(()))
    });
}

/// Waits until `p` has `prefix` and it matches `e`; returns the text.
pub fn wait_route(lab: &Lab, p: &dyn Peer, e: &Expect<'_>, secs: u64) -> String {
    lab.wait(
        secs,
        &format!("{} has {} with its attributes", p.kind(), e.route.prefix),
        || match p.route(&e.route.prefix)? {
            None => Err(format!("{} not in the RIB", e.route.prefix)),
            Some(t) => p.check(&t, e).map(|()| Some(t)),
        },
    )
}

/// Waits until `p` no longer has `prefix`.
pub fn wait_gone(lab: &Lab, p: &dyn Peer, prefix: &str, secs: u64) {
    lab.wait(secs, &format!("{} drops {prefix}", p.kind()), || {
        Ok(p.route(prefix)?.is_none().then_some(()))
    });
}

/// Waits until `p` has `prefix` at all.
pub fn wait_present(lab: &Lab, p: &dyn Peer, prefix: &str, secs: u64) -> String {
    lab.wait(secs, &format!("{} has {prefix}", p.kind()), || {
        p.route(prefix)
    })
}
