//! A peer whose export policy changes (a `tessera configure` reload runs
//! `RibCore::export_full` after setting the new policy) moves to the
//! update group of its new policy at once (issue 17, docs/adr/0005):
//!
//! * it is sent only what differs between what it had and what the new
//!   policy gives (the delta, as a route refresh out would), and then
//!   holds what a fresh session under the new policy gets;
//! * no other member of the old or the new group is sent anything;
//! * the group counts change, and the next announcement is encoded once
//!   for the moved peer and the members it joined.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use base::{Instant, Prefix};
use bgp_core::{Output, Part, PolicyRef};
use bgp_rib::PeerId;
use bgp_wire::{Message, MpNlri, ParseCtx};
use common::*;

/// Feeder 1; route-server clients 2, 3, 4 (accept all) and 5 (the named
/// policy below), each in an AS of its own; 6 comes up later.
const FEEDER: u16 = 1;

/// Rejects 198.18.128.0/17 and longer, accepts the rest.
fn named() -> PolicyRef {
    let def = bgp_policy::ast::PolicyDef {
        term: vec![bgp_policy::ast::TermDef {
            name: None,
            matches: bgp_policy::ast::MatchDef {
                prefix: vec!["198.18.128.0/17 le 24".into()],
                ..Default::default()
            },
            then: bgp_policy::ast::ActionDef {
                action: Some("reject".into()),
                ..Default::default()
            },
        }],
        default: Some("accept".into()),
    };
    PolicyRef::Named(
        "upper-half".into(),
        Arc::new(bgp_policy::compile(&def).expect("policy")),
    )
}

/// `n` /24s in 198.18.0.0/16 from the `first`th on, alternately in the
/// lower and the upper /17 (which the named policy rejects).
fn table(first: u32, n: u32) -> Vec<Prefix> {
    (first..first + n)
        .map(|i| {
            let third = (i / 2) + if i % 2 == 1 { 128 } else { 0 };
            prefix(&format!("198.18.{third}.0/24"))
        })
        .collect()
}

fn upper(p: &Prefix) -> bool {
    matches!(p, Prefix::V4(x) if x.addr().octets()[2] >= 128)
}

/// What one peer was sent: its decoded routes and how many prefixes its
/// UPDATEs announced and withdrew.
#[derive(Default, Clone, Debug, PartialEq)]
struct Rx {
    routes: BTreeMap<Prefix, String>,
    announced: Vec<Prefix>,
    withdrawn: Vec<Prefix>,
}

struct Side {
    h: Harness,
    rx: BTreeMap<u16, Rx>,
}

impl Side {
    fn new() -> Side {
        // Two RIB shards: a group per shard.
        let mut h = Harness::new(Part::WHOLE);
        h.core = bgp_core::RibCore::new(
            settings(),
            2,
            Part::WHOLE,
            std::time::SystemTime::UNIX_EPOCH,
        );
        for n in 1..=6u16 {
            h.add_peer(n, &[]);
            if n > FEEDER {
                if let Some(e) = h.core.peer_mut(PeerId(n)) {
                    e.meta.rs_client = true;
                    if n == 5 {
                        e.meta.export = named();
                    }
                }
            }
        }
        Side {
            h,
            rx: BTreeMap::new(),
        }
    }

    /// Hands every Send to its session and decodes it into `rx`.
    fn deliver(&mut self) {
        let ctx = ParseCtx::legacy().with_four_octet_asn(true);
        for o in std::mem::take(&mut self.h.out.out) {
            let p = o.peer().0;
            let Output::Send { bytes, markers, .. } = o else {
                continue;
            };
            let st = self.h.status(p).clone();
            let mut got = Vec::new();
            st.hand_over(bytes, markers, |b| got.extend_from_slice(&b));
            st.out_queued_bytes.store(0, Ordering::Relaxed);
            let rx = self.rx.entry(p).or_default();
            let mut rest = &got[..];
            while !rest.is_empty() {
                let (m, len) = Message::parse(rest, ctx).expect("whole messages");
                rest = &rest[len..];
                let Message::Update(u) = m else { continue };
                let o = u.to_owned().expect("owned");
                let attrs = format!("{:?}", o.attributes);
                let mut gone: Vec<Prefix> = o.withdrawn.iter().map(|x| x.prefix).collect();
                let mut new: Vec<Prefix> = o.nlri.iter().map(|x| x.prefix).collect();
                for a in &o.attributes {
                    match &a.value {
                        bgp_wire::AttrValue::MpReach(r) => {
                            if let MpNlri::Prefixes(x) = &r.nlri {
                                new.extend(x.iter().map(|x| x.prefix));
                            }
                        }
                        bgp_wire::AttrValue::MpUnreach(r) => {
                            if let MpNlri::Prefixes(x) = &r.withdrawn {
                                gone.extend(x.iter().map(|x| x.prefix));
                            }
                        }
                        _ => {}
                    }
                }
                for x in gone {
                    rx.routes.remove(&x);
                    rx.withdrawn.push(x);
                }
                for x in new {
                    rx.routes.insert(x, attrs.clone());
                    rx.announced.push(x);
                }
            }
        }
        self.h.out.clear();
    }

    fn propagate(&mut self, now: Instant) {
        self.h.core.propagate(now, &mut self.h.out);
        self.deliver();
    }

    /// The update groups of every RIB shard, members sorted.
    fn groups(&self) -> Vec<Vec<u16>> {
        let mut all = Vec::new();
        for s in self.h.core.rib.shards() {
            for g in s.update_groups() {
                let mut g: Vec<u16> = g.iter().map(|p| p.0).collect();
                g.sort_unstable();
                all.push(g);
            }
        }
        all.sort();
        all
    }

    fn take(&mut self, n: u16) -> Rx {
        let rx = self.rx.entry(n).or_default();
        let out = rx.clone();
        rx.announced.clear();
        rx.withdrawn.clear();
        out
    }

    fn reload(&mut self, n: u16, export: PolicyRef) {
        if let Some(e) = self.h.core.peer_mut(PeerId(n)) {
            e.meta.export = export;
        }
        self.h.core.export_full(PeerId(n));
    }
}

#[test]
fn a_peer_whose_policy_changes_moves_to_its_new_group() {
    let mut s = Side::new();
    let mut now = Instant::from_secs(1);
    for n in 1..=5 {
        s.h.up(now, n, &[]);
    }
    s.propagate(now);
    let pfx = table(0, 64);
    s.h.announce(now, FEEDER, &pfx, &["path=65001,64600"]);
    now = now + std::time::Duration::from_millis(10);
    s.propagate(now);
    // 2, 3, 4 share a group in each shard; 5 (a policy of its own) is
    // in none.
    let before = s.groups();
    assert!(
        before.iter().all(|g| !g.contains(&5)),
        "5 is alone with its policy: {before:?}"
    );
    assert!(before.iter().any(|g| g == &[2, 3, 4]), "{before:?}");
    for n in 2..=5 {
        let rx = s.take(n);
        let want = if n == 5 { 32 } else { 64 };
        assert_eq!(rx.routes.len(), want, "p{n} before the reload");
    }
    assert!(s.take(5).routes.keys().all(|p| !upper(p)));

    // Reload: 5's policy becomes the others' (accept all).
    let c0 = s.h.core.counters.clone();
    s.reload(5, PolicyRef::AcceptAll);
    now = now + std::time::Duration::from_millis(10);
    s.propagate(now);
    let after = s.groups();
    assert!(after.iter().any(|g| g == &[2, 3, 4, 5]), "{after:?}");
    assert_eq!(after.len(), before.len(), "one group per shard, as before");
    // The delta only: the 32 prefixes it lacked, nothing withdrawn,
    // nothing it had re-sent.
    let rx5 = s.take(5);
    let mut got = rx5.announced.clone();
    got.sort();
    let mut lacked: Vec<Prefix> = pfx.iter().copied().filter(upper).collect();
    lacked.sort();
    assert_eq!(got, lacked, "p5 is sent what it lacked, once");
    assert!(rx5.withdrawn.is_empty());
    // The others: nothing at all.
    for n in 1..=4 {
        let rx = s.take(n);
        assert!(
            rx.announced.is_empty() && rx.withdrawn.is_empty(),
            "p{n} was sent {} announcements, {} withdrawals",
            rx.announced.len(),
            rx.withdrawn.len()
        );
    }
    let c1 = s.h.core.counters.clone();
    assert_eq!(
        c1.encoding_sends - c0.encoding_sends,
        c1.encodings - c0.encodings,
        "only p5's own batches"
    );

    // What a fresh session under the new policy gets: peer 6, accept all.
    s.h.up(now, 6, &[]);
    now = now + std::time::Duration::from_millis(10);
    s.propagate(now);
    let rx6 = s.take(6);
    assert_eq!(rx5.routes, rx6.routes, "p5 holds what a new session gets");
    assert_eq!(rx5.routes, s.rx[&2].routes);
    assert!(s.groups().iter().any(|g| g == &[2, 3, 4, 5, 6]));

    // A new announcement: one encoding per shard batch for 2..6 (1 is
    // its source: its batches lack it).
    let c2 = s.h.core.counters.clone();
    let more = table(64, 8);
    s.h.announce(now, FEEDER, &more, &["path=65001,64601"]);
    now = now + std::time::Duration::from_millis(10);
    s.propagate(now);
    let c3 = s.h.core.counters.clone();
    let (enc, sends) = (
        c3.encodings - c2.encodings,
        c3.encoding_sends - c2.encoding_sends,
    );
    assert!(enc >= 1, "{enc}");
    assert_eq!(sends, 5 * enc, "{enc} encodings, {sends} sends");
    for n in 2..=6 {
        let rx = s.take(n);
        assert_eq!(rx.announced.len(), 8, "p{n}");
        assert!(rx.withdrawn.is_empty());
        assert_eq!(rx.routes.len(), 72, "p{n}");
    }

    // And back: 2 takes the named policy. It leaves for a group of its own
    // (alone with the key: a private table) and is sent the withdrawals of
    // the upper half only; the others nothing.
    let upper_now: Vec<Prefix> = pfx.iter().chain(&more).copied().filter(upper).collect();
    s.reload(2, named());
    now = now + std::time::Duration::from_millis(10);
    s.propagate(now);
    let rx2 = s.take(2);
    assert!(rx2.announced.is_empty());
    let mut w = rx2.withdrawn.clone();
    w.sort();
    let mut u = upper_now.clone();
    u.sort();
    assert_eq!(w, u);
    for n in [1, 3, 4, 5, 6] {
        let rx = s.take(n);
        assert!(rx.announced.is_empty() && rx.withdrawn.is_empty(), "p{n}");
    }
    let g = s.groups();
    assert!(g.iter().any(|g| g == &[3, 4, 5, 6]), "{g:?}");
    assert!(g.iter().all(|g| !g.contains(&2)), "{g:?}");
}
