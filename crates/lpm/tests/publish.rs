//! Publication under load: reader threads look up continuously while the
//! writer publishes batches of deltas through `lpm::publish`. A batch is
//! visible all at once or not at all, so every lookup inside one read
//! section must answer the same generation, generations never go back, and
//! no covered address ever misses.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use base::Prefix4;
use lpm::publish::{left_right, Delta};
use lpm::{Lpm, LpmMut, NextHop, Poptrie4};

/// Routes of several shapes, so that a batch touches direct slots (/8, /16),
/// first-level nodes (/20, /24) and deep nodes (/28, /32).
fn routes() -> Vec<Prefix4> {
    let mut v = Vec::new();
    for i in 0..32u32 {
        let base = (10 << 24) | (i << 16);
        v.push(Prefix4::new(base, 16).expect("valid"));
        v.push(Prefix4::new(base | (5 << 8), 24).expect("valid"));
        v.push(Prefix4::new(base | (5 << 8) | 16, 28).expect("valid"));
        v.push(Prefix4::new(base | (5 << 8) | 17, 32).expect("valid"));
        v.push(Prefix4::new(base | (9 << 12), 20).expect("valid"));
    }
    v.push(Prefix4::new(11 << 24, 8).expect("valid"));
    v
}

/// One address inside each route's own part (not covered by a longer one).
fn probes() -> Vec<u32> {
    let mut v = Vec::new();
    for i in 0..32u32 {
        let base = (10 << 24) | (i << 16);
        v.extend([
            base | 0x0101,
            base | (5 << 8) | 1,
            base | (5 << 8) | 18,
            base | (5 << 8) | 17,
            base | (9 << 12) | 0x0203,
        ]);
    }
    v.push((11 << 24) | 0x0001_0203);
    v
}

/// A batch that moves every route to generation `g`. Half the routes are
/// first removed, so a reader that saw a half-applied batch would see a
/// shorter route's (older) value, or a miss.
fn batch(rs: &[Prefix4], g: u32) -> Vec<Delta<Prefix4>> {
    let mut d = Vec::with_capacity(rs.len() * 2);
    for (i, &p) in rs.iter().enumerate() {
        if i % 2 == 0 {
            d.push(Delta::Remove(p));
        }
    }
    for &p in rs {
        d.push(Delta::Insert(p, NextHop(g)));
    }
    d
}

#[test]
fn readers_never_see_a_torn_batch() {
    let rs = routes();
    let mut t = Poptrie4::new();
    for &p in &rs {
        t.insert(p, NextHop(0)).expect("insert");
    }
    let mut w = left_right(t);
    let stop = Arc::new(AtomicBool::new(false));
    let addrs = Arc::new(probes());
    let mut readers = Vec::new();
    for r in 0..2 {
        let mut h = w.reader();
        let stop = stop.clone();
        let addrs = addrs.clone();
        readers.push(thread::spawn(move || {
            let mut out = vec![None; addrs.len()];
            let (mut sections, mut last) = (0u64, 0u32);
            while !stop.load(Ordering::Relaxed) {
                let g = h.read();
                // Alternate between the batched and the single lookup paths.
                if (sections + r) % 2 == 0 {
                    g.lookup_batch(&addrs, &mut out);
                } else {
                    for (o, &a) in out.iter_mut().zip(addrs.iter()) {
                        *o = g.lookup(a);
                    }
                }
                drop(g);
                let Some(Some(NextHop(first))) = out.first().copied() else {
                    panic!("reader {r}: miss on a covered address");
                };
                for (i, o) in out.iter().enumerate() {
                    assert_eq!(
                        *o,
                        Some(NextHop(first)),
                        "reader {r}: torn batch at probe {i} ({:#x})",
                        addrs[i]
                    );
                }
                assert!(first >= last, "reader {r}: went back {last} -> {first}");
                last = first;
                sections += 1;
            }
            (sections, last)
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(3);
    let mut g = 0;
    while Instant::now() < deadline && g < 20_000 {
        g += 1;
        w.publish(&batch(&rs, g)).expect("publish");
        // The writer's copy is complete when publish returns.
        assert_eq!(w.table().lookup(addrs[0]), Some(NextHop(g)));
    }
    stop.store(true, Ordering::Relaxed);
    let mut total = 0;
    for r in readers {
        let (sections, last) = r.join().expect("reader panicked");
        assert!(last <= g);
        total += sections;
    }
    assert!(g >= 20, "writer published only {g} batches");
    assert!(total >= 20, "readers completed only {total} sections");
    // After the last publish a fresh read sees the final generation.
    let mut h = w.reader();
    let r = h.read();
    assert!(addrs.iter().all(|&a| r.lookup(a) == Some(NextHop(g))));
}

#[test]
fn writer_waits_for_an_open_read_section() {
    let p = Prefix4::new(0x0a00_0000, 8).expect("valid");
    let mut t = Poptrie4::new();
    t.insert(p, NextHop(1)).expect("insert");
    let mut w = left_right(t);
    let mut h = w.reader();
    let (tx, rx) = std::sync::mpsc::channel();
    // Set by the reader just before it leaves its section. The writer's
    // wait is checked by this order, not by a duration: a writer thread
    // preempted between `recv` and `publish` (a loaded CI machine) would
    // have seen a short wait with the code right.
    let left = Arc::new(AtomicBool::new(false));
    let leaving = Arc::clone(&left);
    let reader = thread::spawn(move || {
        let g = h.read();
        tx.send(()).expect("send");
        thread::sleep(Duration::from_millis(200));
        // The section began before the publish: it keeps the old table.
        let seen = g.lookup(0x0a01_0101);
        leaving.store(true, Ordering::SeqCst);
        drop(g);
        let after = h.read().lookup(0x0a01_0101);
        (seen, after)
    });
    rx.recv().expect("reader started");
    // The first half of publish (standby copy + swap) does not wait; the
    // replay on the old copy must wait for the reader to leave.
    w.publish(&[Delta::Insert(p, NextHop(2))]).expect("publish");
    let waited = left.load(Ordering::SeqCst);
    let (seen, after) = reader.join().expect("reader");
    assert!(
        waited,
        "publish returned while a section that began before it was open"
    );
    assert_eq!(seen, Some(NextHop(1)));
    assert_eq!(after, Some(NextHop(2)));
}

#[test]
fn dropped_readers_do_not_block_and_refusals_are_reported() {
    let mut w = left_right(Poptrie4::new());
    let h = w.reader();
    drop(h);
    let p = Prefix4::new(0xc000_0200, 24).expect("valid");
    let t0 = Instant::now();
    let r = w.publish(&[
        Delta::Insert(p, NextHop(NextHop::MAX_VALID + 1)),
        Delta::Insert(p, NextHop(7)),
    ]);
    assert_eq!(r, Err(lpm::LpmError::NextHopTooLarge));
    // A writer that waited for the dropped reader would wait forever; the
    // bound leaves a preempted thread its margin (it was 1 s).
    assert!(t0.elapsed() < Duration::from_secs(10), "{:?}", t0.elapsed());
    // The valid delta of the batch was applied to both copies.
    assert_eq!(w.table().lookup(0xc000_0201), Some(NextHop(7)));
    let mut h = w.reader();
    assert_eq!(h.read().lookup(0xc000_0201), Some(NextHop(7)));
    w.publish(&[Delta::Remove(p)]).expect("publish");
    assert_eq!(h.read().lookup(0xc000_0201), None);
    assert_eq!(w.table().len(), 0);
}
