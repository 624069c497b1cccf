//! An operator's element graph (`[dataplane] graph`) on any text: parsed
//! (`graph::parse`), every element built from its arguments by crate
//! `elements`' factory, the connections checked (ports, IPv4/IPv6 port
//! kinds, duplicates) and then `Graph::check_connected`, as tesserad does
//! before it runs a graph. It must build or return a `file:line:col` error,
//! never panic; a built graph's counters must be readable by name.
#![no_main]

use libfuzzer_sys::fuzz_target;

const FILE: &str = "fuzz.click";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut env = elements::Env::new();
    let pool = pkt::Pool::new(64);
    match graph::Graph::<elements::AnyElement>::from_str(&text, FILE, &mut env, pool) {
        Ok(g) => {
            if let Err(e) = g.check_connected() {
                assert!(e.to_string().starts_with(&format!("{FILE}:")), "{e}");
            }
            for i in 0..g.len() {
                assert!(g.name(i).is_some());
                assert!(g.drops_of(i).count() >= graph::DropReason::GENERIC);
            }
        }
        Err(e) => {
            assert_eq!(e.file, FILE);
            assert!(e.to_string().starts_with(&format!("{FILE}:{}:", e.pos.line)));
        }
    }
});
