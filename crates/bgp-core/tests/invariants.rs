//! Property test: arbitrary sequences of session inputs, time and export
//! rounds, applied to one core owning the whole RIB and to two cores each
//! owning half of it (fed through `fan_out`, as the sharded pipeline does),
//! keep these invariants:
//!
//! * every byte handed to a session decodes as whole BGP messages;
//! * each session that comes up gets exactly one End-of-RIB per family,
//!   after every route of its initial table, in both layouts (the split one
//!   orders them with a `FlushBarrier`);
//! * the routes each peer ends up with (its Adj-RIB-Out rebuilt from the
//!   UPDATE stream) and the Loc-RIB's best paths are the same whole or
//!   split.

mod common;

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base::{AfiSafi, Instant, Prefix};
use bgp_core::{
    fan_out, DecodedUpdate, Outbox, Output, Part, PeerEntry, PeerStatus, RibCore, RibInput,
    SessionUp,
};
use bgp_fsm::DownReason;
use bgp_rib::PeerId;
use bgp_wire::{Message, MpNlri, ParseCtx};
use common::*;
use proptest::prelude::*;

const PEERS: u16 = 3;

#[derive(Clone, Debug)]
enum Step {
    Up { peer: u16, gr: bool, err: bool },
    Announce { peer: u16, set: u8, path: u8 },
    Withdraw { peer: u16, set: u8 },
    Down { peer: u16, graceful: bool },
    Refresh { peer: u16, subtype: u8 },
    Advance(u16),
    Propagate,
}

fn step() -> impl Strategy<Value = Step> {
    let peer = 1..=PEERS;
    prop_oneof![
        (peer.clone(), any::<bool>(), any::<bool>()).prop_map(|(peer, gr, err)| Step::Up {
            peer,
            gr,
            err
        }),
        (peer.clone(), any::<u8>(), 0u8..4).prop_map(|(peer, set, path)| Step::Announce {
            peer,
            set,
            path
        }),
        (peer.clone(), any::<u8>()).prop_map(|(peer, set)| Step::Withdraw { peer, set }),
        (peer.clone(), any::<bool>()).prop_map(|(peer, graceful)| Step::Down { peer, graceful }),
        (peer, 0u8..3).prop_map(|(peer, subtype)| Step::Refresh { peer, subtype }),
        (0u16..400).prop_map(Step::Advance),
        Just(Step::Propagate),
    ]
}

/// Eight prefixes in distinct /20 blocks, so that the two halves of a
/// split RIB both get some; `set` picks a subset.
fn prefixes(set: u8) -> Vec<Prefix> {
    (0..8u32)
        .filter(|i| set & (1 << i) != 0)
        .map(|i| {
            let a = Ipv4Addr::from(0xc612_0000u32 + (i << 12) * 3);
            prefix(&format!("{a}/24"))
        })
        .collect()
}

/// One layout: a list of cores (1 whole, or 2 halves), the peers'
/// statuses, what each session has received, and whether it is up.
struct Layout {
    cores: Vec<RibCore>,
    out: Outbox,
    statuses: Vec<Arc<PeerStatus>>,
    /// Per peer: prefix -> AS path text, rebuilt from the UPDATE stream.
    adj_out: Vec<BTreeMap<Prefix, String>>,
    /// Per peer: End-of-RIBs seen since the last Up (one family here).
    eor: Vec<usize>,
    up: Vec<bool>,
}

impl Layout {
    fn new(parts: usize) -> Layout {
        let statuses: Vec<Arc<PeerStatus>> = (0..=PEERS)
            .map(|_| Arc::new(PeerStatus::default()))
            .collect();
        let cores = (0..parts)
            .map(|index| {
                let part = Part {
                    index,
                    count: parts,
                };
                let mut c = RibCore::new(settings(), 1, part, SystemTime::UNIX_EPOCH);
                for n in 1..=PEERS {
                    let meta = peer_meta(n, &[]);
                    c.insert_peer(
                        PeerId(n),
                        PeerEntry::new(meta, statuses[n as usize].clone()),
                    );
                }
                c
            })
            .collect();
        Layout {
            cores,
            out: Outbox::default(),
            statuses,
            adj_out: vec![BTreeMap::new(); PEERS as usize + 1],
            eor: vec![0; PEERS as usize + 1],
            up: vec![false; PEERS as usize + 1],
        }
    }

    fn input(&mut self, now: Instant, input: RibInput) -> Result<(), TestCaseError> {
        let n = self.cores.len();
        for (i, m) in fan_out(input, n) {
            self.cores[i].handle(now, m, &mut self.out);
            self.deliver()?;
        }
        Ok(())
    }

    fn each(
        &mut self,
        now: Instant,
        f: fn(&mut RibCore, Instant, &mut Outbox),
    ) -> Result<(), TestCaseError> {
        for i in 0..self.cores.len() {
            f(&mut self.cores[i], now, &mut self.out);
            self.deliver()?;
        }
        Ok(())
    }

    /// Hands every output over as the runtime does and checks it.
    fn deliver(&mut self) -> Result<(), TestCaseError> {
        for o in std::mem::take(&mut self.out.out) {
            let p = usize::from(o.peer().0);
            let Output::Send { bytes, markers, .. } = o else {
                continue;
            };
            let mut sent = Vec::new();
            self.statuses[p].hand_over(bytes, markers, |b| sent.extend_from_slice(&b));
            self.statuses[p]
                .out_queued_bytes
                .store(0, Ordering::Relaxed);
            self.read(p, &sent)?;
        }
        self.out.clear();
        Ok(())
    }

    fn read(&mut self, p: usize, mut bytes: &[u8]) -> Result<(), TestCaseError> {
        let ctx = ParseCtx::legacy().with_four_octet_asn(true);
        let mut eor_here = false;
        while !bytes.is_empty() {
            let (m, len) = Message::parse(bytes, ctx)
                .map_err(|e| TestCaseError::fail(format!("p{p}: undecodable output: {e}")))?;
            bytes = &bytes[len..];
            let Message::Update(u) = m else { continue };
            if u.end_of_rib().is_some() {
                self.eor[p] += 1;
                prop_assert_eq!(self.eor[p], 1, "p{}: a second End-of-RIB", p);
                eor_here = true;
                continue;
            }
            prop_assert!(
                !eor_here,
                "p{}: an UPDATE after End-of-RIB in one hand-over",
                p
            );
            let o = u
                .to_owned()
                .map_err(|e| TestCaseError::fail(format!("{e}")))?;
            let path = o
                .attr(bgp_wire::consts::attr_type::AS_PATH)
                .map(|a| format!("{:?}", a.value))
                .unwrap_or_default();
            let mut gone = o.withdrawn.clone();
            let mut new = o.nlri.clone();
            for a in &o.attributes {
                match &a.value {
                    bgp_wire::AttrValue::MpReach(r) => {
                        if let MpNlri::Prefixes(x) = &r.nlri {
                            new.extend(x.iter().copied());
                        }
                    }
                    bgp_wire::AttrValue::MpUnreach(r) => {
                        if let MpNlri::Prefixes(x) = &r.withdrawn {
                            gone.extend(x.iter().copied());
                        }
                    }
                    _ => {}
                }
            }
            for x in gone {
                self.adj_out[p].remove(&x.prefix);
            }
            for x in new {
                self.adj_out[p].insert(x.prefix, path.clone());
            }
        }
        Ok(())
    }

    fn loc_rib(&self) -> BTreeMap<Prefix, u16> {
        let mut m = BTreeMap::new();
        for c in &self.cores {
            for r in c.rib.iter() {
                if let Some((p, _)) = r.best() {
                    m.insert(r.prefix, p.peer.0);
                }
            }
        }
        m
    }
}

fn run(steps: &[Step], layout: &mut Layout) -> Result<(), TestCaseError> {
    let mut now = Instant::from_secs(1);
    for s in steps {
        match *s {
            Step::Up { peer, gr, err } => {
                let p = usize::from(peer);
                if layout.up[p] {
                    continue;
                }
                let mut words = Vec::new();
                let gr_word;
                if gr {
                    gr_word = "gr=60".to_string();
                    words.push(gr_word.as_str());
                }
                if err {
                    words.push("err");
                }
                let meta = peer_meta(peer, &[]);
                let local = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 254)), 179);
                let up = SessionUp {
                    negotiated: negotiated(&meta, peer, &words),
                    local_addr: local,
                    remote_addr: SocketAddr::new(addr(peer), 179),
                    eor_barrier: None,
                    since: SystemTime::UNIX_EPOCH,
                    session: 1,
                    link: bgp_core::LinkAddrs::of(local.ip()),
                };
                layout.up[p] = true;
                layout.eor[p] = 0;
                layout.adj_out[p].clear();
                layout.input(
                    now,
                    RibInput::Up {
                        peer: PeerId(peer),
                        up: Box::new(up),
                    },
                )?;
            }
            Step::Announce { peer, set, path } => {
                if !layout.up[usize::from(peer)] {
                    continue;
                }
                let meta = peer_meta(peer, &[]);
                let path = format!("path={},{}", meta.remote_asn.0, 64600 + u32::from(path));
                let a = attrs(peer, &meta, &[path.as_str()]);
                let u = DecodedUpdate {
                    attrs: Some(Arc::new(a)),
                    announce: prefixes(set).into_iter().map(bgp_wire::Nlri::new).collect(),
                    withdraw: Vec::new(),
                    end_of_rib: None,
                    multicast: Default::default(),
                };
                layout.input(
                    now,
                    RibInput::Updates {
                        peer: PeerId(peer),
                        updates: vec![u],
                    },
                )?;
            }
            Step::Withdraw { peer, set } => {
                if !layout.up[usize::from(peer)] {
                    continue;
                }
                let u = DecodedUpdate {
                    attrs: None,
                    announce: Vec::new(),
                    withdraw: prefixes(set).into_iter().map(bgp_wire::Nlri::new).collect(),
                    end_of_rib: None,
                    multicast: Default::default(),
                };
                layout.input(
                    now,
                    RibInput::Updates {
                        peer: PeerId(peer),
                        updates: vec![u],
                    },
                )?;
            }
            Step::Down { peer, graceful } => {
                let p = usize::from(peer);
                if !layout.up[p] {
                    continue;
                }
                layout.up[p] = false;
                layout.input(
                    now,
                    RibInput::Down {
                        peer: PeerId(peer),
                        reason: DownReason::TcpConnectionFails,
                        graceful,
                        at: SystemTime::UNIX_EPOCH,
                    },
                )?;
            }
            Step::Refresh { peer, subtype } => {
                if !layout.up[usize::from(peer)] {
                    continue;
                }
                // A refresh re-sends the table inside its own markers.
                layout.input(
                    now,
                    RibInput::RouteRefresh {
                        peer: PeerId(peer),
                        family: AfiSafi::IPV4_UNICAST,
                        subtype,
                        barrier: None,
                    },
                )?;
            }
            Step::Advance(s) => {
                now = now + Duration::from_secs(u64::from(s));
                layout.each(now, RibCore::tick)?;
            }
            Step::Propagate => layout.each(now, RibCore::propagate)?,
        }
    }
    layout.each(now, RibCore::propagate)?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn whole_and_split_agree(steps in proptest::collection::vec(step(), 1..40)) {
        let mut whole = Layout::new(1);
        let mut split = Layout::new(2);
        run(&steps, &mut whole)?;
        run(&steps, &mut split)?;
        prop_assert_eq!(whole.loc_rib(), split.loc_rib());
        for p in 1..=PEERS as usize {
            prop_assert_eq!(&whole.adj_out[p], &split.adj_out[p], "p{} Adj-RIB-Out", p);
            prop_assert_eq!(whole.up[p], split.up[p]);
        }
    }
}
