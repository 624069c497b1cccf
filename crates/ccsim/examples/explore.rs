use ccsim::scenario::*;
use ccsim::*;
fn show(name: &str, r: &Report, dest: usize) {
    let s = &r.summary;
    let inj: Vec<String> = s
        .flows
        .iter()
        .map(|f| format!("{:.0}", f.injected_pps / 1e3))
        .collect();
    let tx: Vec<String> = s
        .flows
        .iter()
        .map(|f| format!("{:.0}", f.tx_pps / 1e3))
        .collect();
    println!("{name:12} inj {:?} tx {:?} egress {:.0}k q {:.0}±{:.0} ring {:.0} drops hca {:.0} eg {:.0} in {:.0}", inj, tx,
        s.egress_tx_pps[dest] / 1e3, s.queue_mean[dest], s.queue_std[dest], s.ring_mean[dest],
        s.flows.iter().map(|f| f.hca_drop_pps).sum::<f64>()/1e3,
        s.flows.iter().map(|f| f.egress_drop_pps).sum::<f64>()/1e3,
        s.flows.iter().map(|f| f.ingress_drop_pps).sum::<f64>()/1e3);
}
fn main() {
    let arg = std::env::args().nth(1).unwrap_or_default();
    if arg == "ch7" {
        for off in [
            [299e3, 298e3, 74e3],
            [299e3, 299e3, 149e3],
            [300e3, 299e3, 224e3],
            [299e3, 299e3, 299e3],
        ] {
            for s in [Scheme::QueuePrice, Scheme::Aimd, Scheme::None] {
                let r = Sim::new(ch7(s, &off, C_REAL, Pattern::Poisson, 4_000_000_000))
                    .unwrap()
                    .run(&mut |_| {});
                show(s.name(), &r, 3);
            }
        }
    }
    if arg == "ch5" {
        for per in [200e3, 300e3, 400e3, 573e3] {
            for s in [
                Scheme::None,
                Scheme::a(),
                Scheme::Weights(cc::Notify::All, cc::params::weight_ingress()),
            ] {
                let r = Sim::new(ch5(s, per, 2_000_000_000))
                    .unwrap()
                    .run(&mut |_| {});
                show(s.name(), &r, 3);
            }
        }
    }
    if arg == "fair" {
        let off = [500.0 * MBIT_PPS, 50.0 * MBIT_PPS, 5.0 * MBIT_PPS];
        for s in [Scheme::QueuePrice, Scheme::Aimd] {
            let r = Sim::new(ch7(s, &off, C_SIM, Pattern::Poisson, 4_000_000_000))
                .unwrap()
                .run(&mut |_| {});
            show(s.name(), &r, 3);
        }
    }
    if arg == "delay" {
        aimd_delay();
    }
    if arg == "scale" {
        let t = std::time::Instant::now();
        let r = Sim::new(scale(Scheme::QueuePrice, 64, 10_000_000_000))
            .unwrap()
            .run(&mut |_| {});
        println!("wall {:?}", t.elapsed());
        show("scale", &r, 0);
    }
}
#[allow(dead_code)]
fn _unused() {}
pub fn aimd_delay() {
    for d in [32.0f64, 128.0, 256.0, 512.0, 1000.0] {
        for s in [Scheme::QueuePrice, Scheme::Aimd] {
            let mut c = ch7(
                s,
                &[299e3, 299e3, 299e3],
                C_REAL,
                Pattern::Poisson,
                4_000_000_000,
            );
            c.bucket_burst = d;
            let r = Sim::new(c).unwrap().run(&mut |_| {});
            print!("delay {d} ");
            show(s.name(), &r, 3);
        }
    }
}
