//! `graph::Runner::replace_graph`: a running driver takes a new graph on
//! the same devices (what tesserad does on a reload of `[dataplane]
//! graph`); a graph naming a device it lacks is refused and the old one
//! goes on.

use elements::{AnyElement, Env};
use graph::{Graph, Runner};
use pkt::{MemDevice, Pool};

fn build(text: &str) -> Graph<AnyElement> {
    Graph::from_str(text, "t.click", &mut Env::new(), Pool::new(64)).expect("graph builds")
}

fn frames(n: usize) -> Vec<Vec<u8>> {
    (0..n).map(|i| vec![i as u8; 60]).collect()
}

#[test]
fn a_runner_swaps_its_graph_on_the_same_devices() {
    let devs = vec![
        MemDevice::new("d0", frames(3)),
        MemDevice::new("d1", vec![]),
    ];
    let a = build("FromDevice(d0) -> cnt :: Counter -> ToDevice(d1);");
    let mut r = Runner::new(a, devs, 32).expect("bound");
    r.poll();
    assert_eq!(r.devices()[1].sent().len(), 3);
    assert_eq!(r.graph.stats_of("cnt").map(|s| s.rx), Some(3));

    // A graph naming a device the runner lacks: refused, nothing changes.
    let bad = build("FromDevice(d0) -> ToDevice(d9);");
    assert!(r.replace_graph(bad).is_err());
    assert!(r.graph.find("cnt").is_some(), "the old graph stays");

    // The new graph drops everything; its counters start at zero, the
    // driver's go on.
    let old = r
        .replace_graph(build("FromDevice(d0) -> deny :: Discard;"))
        .expect("bound");
    assert_eq!(old.stats_of("cnt").map(|s| s.rx), Some(3));
    for f in frames(2) {
        r.devices_mut()[0].inject(f);
    }
    r.poll();
    assert_eq!(r.devices()[1].sent().len(), 3, "nothing more sent");
    assert_eq!(r.graph.dropped_at("deny", "discarded"), Some(2));
    assert_eq!(r.stats().rx, 5);
}
