//! Scenarios: timed events on top of the initial announcement of every
//! prefix at time 0. Written as TOML (`[[event]]` tables) or built in code.
//!
//! ```toml
//! [[event]]
//! at = 100.0            # seconds of simulated time
//! kind = "link-down"    # link-down, link-up, session-reset: a, b (ASNs)
//! a = 64500
//! b = 64501
//!
//! [[event]]
//! at = 200.0
//! kind = "flap"         # withdraw/announce/flap/hijack: asn, prefix
//! asn = 64510
//! prefix = "10.0.5.0/24"
//! period = 10.0         # flap: seconds between withdraw and re-announce
//! count = 5             # flap: withdraw/announce cycles
//!
//! [[event]]
//! at = 300.0
//! kind = "leak"         # the AS exports everything to everyone
//! asn = 64520
//!
//! [[event]]
//! at = 400.0
//! kind = "surge"        # worm surge: random stub prefixes flap
//! duration = 60.0
//! rate = 50.0           # flaps per second over the whole network
//! hold = 60.0           # seconds from a flap's withdrawal to its re-announcement
//! ```

use std::time::Duration;

use base::Prefix;
use serde::Deserialize;

/// One thing that happens.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// The link between the two ASes fails: both sessions go down at once
    /// (failure detection time is not modelled) and messages in flight
    /// on it are lost.
    LinkDown(u32, u32),
    /// The link comes back: both sessions come up and exchange full tables.
    LinkUp(u32, u32),
    /// The session is reset (down and up at once): a full-table exchange.
    SessionReset(u32, u32),
    /// The AS stops originating the prefix.
    Withdraw(u32, Prefix),
    /// The AS originates the prefix (again).
    Announce(u32, Prefix),
    /// `count` cycles of withdraw, then announce `period` later.
    Flap {
        /// The origin.
        asn: u32,
        /// The prefix.
        prefix: Prefix,
        /// Time between a withdrawal and the re-announcement, and between cycles.
        period: Duration,
        /// Cycles.
        count: u32,
    },
    /// The AS originates someone else's prefix (a prefix hijack).
    Hijack(u32, Prefix),
    /// The AS exports every route to every neighbour (a route leak,
    /// RFC 7908 type 1/4).
    Leak(u32),
    /// The worm surge of the PBTS study (seed 000 §2.3; Slammer's 24x
    /// update increase): for `duration`, prefixes of random stub ASes flap
    /// (withdraw, re-announce `hold` later) at `rate` flaps per second.
    /// A hold shorter than MRAI is mostly absorbed by it (the withdrawal
    /// and the re-announcement cancel in the Adj-RIB-Out).
    Surge {
        /// How long the surge lasts.
        duration: Duration,
        /// Flaps started per second.
        rate: f64,
        /// Time between a flap's withdrawal and its re-announcement.
        hold: Duration,
    },
}

impl Action {
    /// A short name for reports.
    pub fn name(&self) -> String {
        match self {
            Action::LinkDown(a, b) => format!("link-down {a}-{b}"),
            Action::LinkUp(a, b) => format!("link-up {a}-{b}"),
            Action::SessionReset(a, b) => format!("session-reset {a}-{b}"),
            Action::Withdraw(a, p) => format!("withdraw {p} at AS{a}"),
            Action::Announce(a, p) => format!("announce {p} at AS{a}"),
            Action::Flap {
                asn, prefix, count, ..
            } => format!("flap {prefix} at AS{asn} x{count}"),
            Action::Hijack(a, p) => format!("hijack {p} by AS{a}"),
            Action::Leak(a) => format!("leak by AS{a}"),
            Action::Surge { duration, rate, .. } => {
                format!("surge {rate}/s for {}s", duration.as_secs_f64())
            }
        }
    }
}

/// A timed event.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    /// When, from the start of the simulation.
    pub at: Duration,
    /// What.
    pub action: Action,
}

/// A list of timed events.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scenario {
    /// The events, in any order.
    pub events: Vec<Event>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    #[serde(default)]
    event: Vec<EventDef>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct EventDef {
    at: f64,
    kind: String,
    a: Option<u32>,
    b: Option<u32>,
    asn: Option<u32>,
    prefix: Option<String>,
    period: Option<f64>,
    count: Option<u32>,
    duration: Option<f64>,
    rate: Option<f64>,
    hold: Option<f64>,
}

fn secs(s: f64, what: &str) -> Result<Duration, String> {
    Duration::try_from_secs_f64(s).map_err(|_| format!("{what}: {s} is not a time in seconds"))
}

impl Scenario {
    /// Parses the TOML form (see the module docs).
    pub fn from_toml(text: &str) -> Result<Scenario, String> {
        let f: File = toml::from_str(text).map_err(|e| e.to_string())?;
        let mut events = Vec::new();
        for (i, e) in f.event.into_iter().enumerate() {
            let ctx = |m: &str| format!("event {i} ({}): {m}", e.kind);
            let pair = || match (e.a, e.b) {
                (Some(a), Some(b)) => Ok((a, b)),
                _ => Err(ctx("needs a and b")),
            };
            let asn = || e.asn.ok_or_else(|| ctx("needs asn"));
            let prefix = || -> Result<Prefix, String> {
                let p = e.prefix.as_deref().ok_or_else(|| ctx("needs prefix"))?;
                p.parse().map_err(|_| ctx(&format!("bad prefix {p:?}")))
            };
            let action = match e.kind.as_str() {
                "link-down" => pair().map(|(a, b)| Action::LinkDown(a, b))?,
                "link-up" => pair().map(|(a, b)| Action::LinkUp(a, b))?,
                "session-reset" => pair().map(|(a, b)| Action::SessionReset(a, b))?,
                "withdraw" => Action::Withdraw(asn()?, prefix()?),
                "announce" => Action::Announce(asn()?, prefix()?),
                "hijack" => Action::Hijack(asn()?, prefix()?),
                "leak" => Action::Leak(asn()?),
                "flap" => Action::Flap {
                    asn: asn()?,
                    prefix: prefix()?,
                    period: secs(e.period.unwrap_or(10.0), &ctx("period"))?,
                    count: e.count.unwrap_or(1),
                },
                "surge" => Action::Surge {
                    duration: secs(e.duration.unwrap_or(60.0), &ctx("duration"))?,
                    rate: e.rate.unwrap_or(10.0),
                    hold: secs(e.hold.unwrap_or(60.0), &ctx("hold"))?,
                },
                k => return Err(format!("event {i}: unknown kind {k:?}")),
            };
            events.push(Event {
                at: secs(e.at, &ctx("at"))?,
                action,
            });
        }
        Ok(Scenario { events })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_events_parse_and_bad_ones_are_named() {
        let s = Scenario::from_toml(
            "[[event]]\nat = 5\nkind = \"link-down\"\na = 1\nb = 2\n\
             [[event]]\nat = 7.5\nkind = \"flap\"\nasn = 3\nprefix = \"10.0.0.0/24\"\ncount = 2\n",
        )
        .unwrap();
        assert_eq!(s.events.len(), 2);
        assert_eq!(s.events[0].action, Action::LinkDown(1, 2));
        assert_eq!(s.events[1].at, Duration::from_millis(7500));
        match &s.events[1].action {
            Action::Flap { count, period, .. } => {
                assert_eq!(*count, 2);
                assert_eq!(*period, Duration::from_secs(10));
            }
            a => panic!("{a:?}"),
        }
        let e = Scenario::from_toml("[[event]]\nat = 1\nkind = \"leak\"\n").unwrap_err();
        assert!(e.contains("needs asn"), "{e}");
        assert!(Scenario::from_toml("[[event]]\nat = 1\nkind = \"nope\"\n").is_err());
    }
}
