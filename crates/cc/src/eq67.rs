//! The discrete primal-dual law of Eq 6.7 on its own, for the stability
//! map of Fig 6.1 (no queues, no delays: exactly the printed iteration).
//!
//! ```text
//! x_s(k+1) = [ x_s(k) + K·(W − x_s(k)·p(k)) ]⁺
//! p(k+1)   = [ p(k) + (Σ_s x_s(k) − C) / R ]⁺
//! equilibrium: p* = n·W/C, x* = C/n
//! ```

/// Parameters of Eq 6.7 for `n` equal sources.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Eq67 {
    /// Source gain K (pps per unit of W − x·p).
    pub k: f64,
    /// Price damping R (the price step is 1/R per pps of excess).
    pub r: f64,
    /// Utility weight W (U = W·log x).
    pub w: f64,
    /// Egress capacity C, pps.
    pub c: f64,
    /// Number of sources.
    pub n: usize,
}

/// Outcome of [`Eq67::run`].
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// Rates after the last iteration.
    pub x: Vec<f64>,
    /// Price after the last iteration.
    pub p: f64,
    /// Largest relative error |x_s − x*| / x* after the last iteration.
    pub error: f64,
    /// First iteration from which the error stays within the tolerance
    /// to the end; `None` if it never settles.
    pub settled_at: Option<usize>,
}

impl Eq67 {
    /// The thesis's Fig 6.1 setting: W = 1, C = 764,500 pps, 3 sources.
    pub fn fig61(k: f64, r: f64) -> Eq67 {
        Eq67 {
            k,
            r,
            w: 1.0,
            c: 764_500.0,
            n: 3,
        }
    }

    /// (x*, p*).
    pub fn optimum(&self) -> (f64, f64) {
        let n = self.n.max(1) as f64;
        (self.c / n, n * self.w / self.c)
    }

    /// DERIVED (cluster-spec §4.2): the common mode is stable iff R > C²/(nW).
    pub fn r_min(&self) -> f64 {
        self.c * self.c / (self.n.max(1) as f64 * self.w)
    }

    /// DERIVED: differential modes are stable iff 0 < K < 2C/(nW).
    pub fn k_max(&self) -> f64 {
        2.0 * self.c / (self.n.max(1) as f64 * self.w)
    }

    /// One iteration of Eq 6.7 in place.
    pub fn step(&self, x: &mut [f64], p: &mut f64) {
        let sum: f64 = x.iter().sum();
        let p_old = *p;
        for xs in x.iter_mut() {
            *xs = (*xs + self.k * (self.w - *xs * p_old)).max(0.0);
        }
        *p = (p_old + (sum - self.c) / self.r).max(0.0);
    }

    /// Iterate `iters` times from rates `x0` (one per source) and price
    /// `p0`, judging settlement at relative tolerance `tol` (Fig 6.1:
    /// 0.001). Non-finite values count as not settled.
    pub fn run(&self, x0: &[f64], p0: f64, iters: usize, tol: f64) -> Run {
        let (xs, _) = self.optimum();
        let mut x = x0.to_vec();
        let mut p = p0;
        let err = |x: &[f64]| {
            x.iter()
                .map(|v| ((v - xs) / xs).abs())
                .fold(0.0, |a: f64, e| {
                    if e.is_finite() {
                        a.max(e)
                    } else {
                        f64::INFINITY
                    }
                })
        };
        let mut settled_at = if err(&x) <= tol { Some(0) } else { None };
        for i in 1..=iters {
            self.step(&mut x, &mut p);
            if err(&x) <= tol {
                settled_at.get_or_insert(i);
            } else {
                settled_at = None;
            }
        }
        Run {
            error: err(&x),
            x,
            p,
            settled_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn analytic_bounds_at_fig61() {
        let m = Eq67::fig61(1e5, 5e11);
        assert!((m.r_min() - 1.948e11).abs() < 1e9);
        assert!((m.k_max() - 509_667.0).abs() < 1.0);
        let (x, p) = m.optimum();
        assert!((x * p - 1.0).abs() < 1e-12);
    }
}
