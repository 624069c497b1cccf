//! Link latencies, in microseconds.
//!
//! On BRITE's plane one unit is taken as 10 km (the default 1000 x 1000
//! plane spans a continent), and light in fibre covers about 200 km per
//! millisecond, so a link's one-way latency is 50 µs per plane unit
//! (at least 1 µs). Relationship graphs have no geometry: their latency is
//! 1 ms plus an exponential with a 15 ms mean, capped at 250 ms, which puts
//! most links at metro-to-continental distances and a few across oceans.

use crate::util::unit;
use crate::{Graph, Point};
use sim::Rng;

/// Microseconds of one-way latency per plane unit.
pub const US_PER_UNIT: f64 = 50.0;

/// The latency of a link between two points on the plane.
pub fn from_distance(a: Point, b: Point) -> u32 {
    let us = (a.dist(b) * US_PER_UNIT).round();
    if us.is_finite() {
        (us as u32).max(1)
    } else {
        1
    }
}

/// Great-circle latency between two (latitude, longitude) points in degrees,
/// at 200 km per millisecond.
pub fn from_lat_lon(a: (f64, f64), b: (f64, f64)) -> u32 {
    let r = 6371.0_f64;
    let (la1, lo1) = (a.0.to_radians(), a.1.to_radians());
    let (la2, lo2) = (b.0.to_radians(), b.1.to_radians());
    let h = ((la2 - la1) / 2.0).sin().powi(2)
        + la1.cos() * la2.cos() * ((lo2 - lo1) / 2.0).sin().powi(2);
    let km = 2.0 * r * h.sqrt().min(1.0).asin();
    let us = (km * 5.0).round();
    if us.is_finite() {
        (us as u32).max(1)
    } else {
        1
    }
}

/// One draw of the relationship-graph latency distribution.
pub fn draw(rng: &mut Rng) -> u32 {
    let u = unit(rng);
    let ms = 1.0 + (-(1.0 - u).ln()) * 15.0;
    (ms.min(250.0) * 1000.0).round() as u32
}

/// Give every link with latency 0 (formats that carry none) a draw from
/// [`draw`], in link order.
pub fn fill_missing(g: &mut Graph, seed: u64) {
    let mut rng = Rng::new(seed ^ 0x1a7e_0c75);
    for l in &mut g.links {
        if l.latency_us == 0 {
            l.latency_us = draw(&mut rng);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plane_and_globe_latencies() {
        let a = Point { x: 0.0, y: 0.0 };
        let b = Point { x: 30.0, y: 40.0 };
        assert_eq!(from_distance(a, b), 2500);
        assert_eq!(from_distance(a, a), 1);
        // London to New York is about 5570 km: about 27.9 ms.
        let us = from_lat_lon((51.5, -0.13), (40.71, -74.0));
        assert!((27_000..29_000).contains(&us), "{us}");
        let mut rng = Rng::new(3);
        let v: Vec<u32> = (0..10_000).map(|_| draw(&mut rng)).collect();
        assert!(v.iter().all(|&x| (1000..=250_000).contains(&x)));
        let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
        assert!((14_000.0..18_000.0).contains(&mean), "{mean}");
    }
}
