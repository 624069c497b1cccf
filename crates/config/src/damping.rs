//! `[damping]`: route-flap damping parameters (RFC 2439; defaults from RFC
//! 7196), and which neighbours are damped (`router.damping`, a
//! neighbour's `damping`). The daemon hands them to each RIB.

use std::time::Duration;

use serde::Deserialize;

use crate::validate::{Ctx, R};

/// `[damping]` as written.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawDamping {
    pub half_life: Option<i64>,
    pub reuse: Option<i64>,
    pub suppress: Option<i64>,
    pub max_suppress: Option<i64>,
    pub withdraw_penalty: Option<i64>,
    pub readvertise_penalty: Option<i64>,
    pub attr_change_penalty: Option<i64>,
}

/// Route-flap damping parameters (`[damping]`). [`Default`]: RFC 7196's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Damping {
    /// `half_life` in seconds, default 900 (15 min), 1..=3600.
    pub half_life: Duration,
    /// `reuse`, default 750: a suppressed route is released once its
    /// penalty has decayed to this. 1..=20000.
    pub reuse: u32,
    /// `suppress`, default 6000 (RFC 7196 §4): a route is suppressed once
    /// its penalty exceeds this. Greater than `reuse`, at most 20000.
    pub suppress: u32,
    /// `max_suppress` in seconds, default 3600 (60 min): the longest a
    /// route stays suppressed after its last flap. At least `half_life`,
    /// at most 43200.
    pub max_suppress: Duration,
    /// `withdraw_penalty`, default 1000, 0..=20000.
    pub withdraw_penalty: u32,
    /// `readvertise_penalty`, default 1000, 0..=20000.
    pub readvertise_penalty: u32,
    /// `attr_change_penalty`, default 500, 0..=20000.
    pub attr_change_penalty: u32,
}

impl Default for Damping {
    fn default() -> Self {
        Damping {
            half_life: Duration::from_secs(900),
            reuse: 750,
            suppress: 6000,
            max_suppress: Duration::from_secs(3600),
            withdraw_penalty: 1000,
            readvertise_penalty: 1000,
            attr_change_penalty: 500,
        }
    }
}

impl Damping {
    /// The highest penalty, `reuse * 2^(max_suppress / half_life)`: from it
    /// a route decays to `reuse` in `max_suppress`.
    pub fn ceiling(&self) -> f64 {
        f64::from(self.reuse)
            * (self.max_suppress.as_secs_f64() / self.half_life.as_secs_f64().max(1e-9)).exp2()
    }
}

fn int(c: &Ctx<'_>, key: &str, v: Option<i64>, lo: i64, hi: i64, def: u32) -> R<u32> {
    let Some(v) = v else {
        return Ok(def);
    };
    if !(lo..=hi).contains(&v) {
        return Err(c.err(&format!("damping.{key}"), format!("{v}: {lo} to {hi}")));
    }
    Ok(v as u32)
}

/// Validates `[damping]`. `used`: some neighbour is damped; parameters
/// nobody uses are an error (they would do nothing).
pub(crate) fn validate(c: &Ctx<'_>, raw: Option<&RawDamping>, used: bool) -> R<Damping> {
    let d = Damping::default();
    let Some(r) = raw else {
        return Ok(d);
    };
    if !used {
        return Err(c.err(
            "damping",
            "no neighbour is damped: set router.damping = true or damping = true on a neighbour",
        ));
    }
    let secs = |s: u32| Duration::from_secs(u64::from(s));
    let out = Damping {
        half_life: secs(int(
            c,
            "half_life",
            r.half_life,
            1,
            3600,
            d.half_life.as_secs() as u32,
        )?),
        reuse: int(c, "reuse", r.reuse, 1, 20_000, d.reuse)?,
        suppress: int(c, "suppress", r.suppress, 1, 20_000, d.suppress)?,
        max_suppress: secs(int(
            c,
            "max_suppress",
            r.max_suppress,
            1,
            43_200,
            d.max_suppress.as_secs() as u32,
        )?),
        withdraw_penalty: int(
            c,
            "withdraw_penalty",
            r.withdraw_penalty,
            0,
            20_000,
            d.withdraw_penalty,
        )?,
        readvertise_penalty: int(
            c,
            "readvertise_penalty",
            r.readvertise_penalty,
            0,
            20_000,
            d.readvertise_penalty,
        )?,
        attr_change_penalty: int(
            c,
            "attr_change_penalty",
            r.attr_change_penalty,
            0,
            20_000,
            d.attr_change_penalty,
        )?,
    };
    if out.suppress <= out.reuse {
        let at = if r.suppress.is_some() {
            "damping.suppress"
        } else {
            "damping.reuse"
        };
        return Err(c.err(
            at,
            format!(
                "suppress ({}) must be greater than reuse ({})",
                out.suppress, out.reuse
            ),
        ));
    }
    if out.max_suppress < out.half_life {
        return Err(c.err(
            if r.max_suppress.is_some() {
                "damping.max_suppress"
            } else {
                "damping.half_life"
            },
            format!(
                "max_suppress ({} s) must be at least half_life ({} s)",
                out.max_suppress.as_secs(),
                out.half_life.as_secs()
            ),
        ));
    }
    if out.ceiling() <= f64::from(out.suppress) {
        return Err(c.err(
            "damping",
            format!(
                "the penalty can never exceed suppress ({}): its ceiling reuse * 2^(max_suppress / half_life) is {:.0}; raise max_suppress or reuse",
                out.suppress,
                out.ceiling()
            ),
        ));
    }
    Ok(out)
}
