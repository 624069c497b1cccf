//! Propagation rules (RFC 4271 §9.2, RFC 4456, RFC 7947, RFC 1997,
//! RFC 9234 §5) and the ingress checks, one test per rule.

use std::net::{IpAddr, Ipv4Addr};

use base::{Asn, Prefix};
use bgp_rib::{
    import_check, import_check_with_asn, AcceptAll, AttrHandle, AttrsBuilder, BestPathConfig,
    ExportPolicy, ExportVerdict, ImportCheck, ImportReject, PeerConfig, PeerId, PeerRole,
    Propagation, RibShard,
};
use bgp_wire::consts::attr_type as at;
use bgp_wire::{AsPath, AttrValue, Community, NextHop, Nlri, Origin, PathAttr};

const ROUTER_ID: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 100);
const CLUSTER: Ipv4Addr = Ipv4Addr::new(10, 0, 0, 200);
const LOCAL: Asn = Asn(65000);

// Peers: 0 local (statics), 1 iBGP non-client, 2 and 3 iBGP RR clients,
// 4 eBGP customer, 5 eBGP provider, 6 eBGP route-server client, 7 eBGP
// lateral peer.
const STATIC: PeerId = PeerId(0);
const NONCLIENT: PeerId = PeerId(1);
const CLIENT_A: PeerId = PeerId(2);
const CLIENT_B: PeerId = PeerId(3);
const CUSTOMER: PeerId = PeerId(4);
const PROVIDER: PeerId = PeerId(5);
const RS_CLIENT: PeerId = PeerId(6);
const LATERAL: PeerId = PeerId(7);

fn bgp_id(i: u16) -> Ipv4Addr {
    Ipv4Addr::new(10, 0, 0, i as u8 + 1)
}

fn role(i: u16) -> Option<PeerRole> {
    let r = |ebgp, rr_client, rs_client, role| PeerRole {
        ebgp,
        confed: false,
        rr_client,
        rs_client,
        role,
        bgp_id: bgp_id(i),
    };
    Some(match i {
        1 => r(false, false, false, None),
        2 | 3 => r(false, true, false, None),
        4 => r(true, false, false, Some(3)),
        5 => r(true, false, false, Some(0)),
        6 => r(true, false, true, Some(2)),
        7 => r(true, false, false, Some(4)),
        _ => return None,
    })
}

fn prop() -> Propagation<AcceptAll> {
    Propagation {
        router_id: ROUTER_ID,
        cluster_id: CLUSTER,
        roles: (0..8).map(role).collect(),
        inner: AcceptAll,
    }
}

fn shard() -> RibShard {
    let mut s = RibShard::new(BestPathConfig::default());
    for i in 0..8u16 {
        let r = role(i);
        s.add_peer(
            PeerId(i),
            PeerConfig {
                asn: if r.is_some_and(|r| r.ebgp) {
                    Asn(64500 + u32::from(i))
                } else {
                    LOCAL
                },
                bgp_id: bgp_id(i),
                addr: IpAddr::V4(Ipv4Addr::new(192, 0, 2, i as u8 + 1)),
                ebgp: r.is_some_and(|r| r.ebgp),
                keep_pre_policy: false,
                export: i != 0,
            },
        );
    }
    s
}

fn base_attrs() -> AttrsBuilder {
    let mut b = AttrsBuilder::from_attrs([
        PathAttr::new(AttrValue::Origin(Origin::Igp)),
        PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(vec![Asn(64999)]))),
    ]);
    b.set_next_hop(NextHop::V4(Ipv4Addr::new(192, 0, 2, 99)));
    b
}

fn with(mut b: AttrsBuilder, a: AttrValue) -> AttrsBuilder {
    b.set(PathAttr::new(a));
    b
}

fn pfx() -> Prefix {
    "10.0.0.0/8".parse().unwrap()
}

/// The verdict for `to` on a route from `from` with attributes `b`.
fn verdict<E: ExportPolicy>(
    p: &mut Propagation<E>,
    s: &mut RibShard,
    b: &AttrsBuilder,
    from: PeerId,
    to: PeerId,
) -> ExportVerdict {
    let h: AttrHandle = s.intern(b);
    let v = p.export(to, &pfx(), from, s.attrs(h).unwrap());
    s.release(h);
    v
}

fn sent(v: &ExportVerdict) -> bool {
    !matches!(v, ExportVerdict::Reject)
}

#[test]
fn never_back_to_the_source_and_not_to_unknown_peers() {
    let (mut p, mut s) = (prop(), shard());
    let b = base_attrs();
    assert!(!sent(&verdict(&mut p, &mut s, &b, CUSTOMER, CUSTOMER)));
    assert!(sent(&verdict(&mut p, &mut s, &b, CUSTOMER, PROVIDER)));
    assert!(!sent(&verdict(&mut p, &mut s, &b, CUSTOMER, PeerId(42))));
}

#[test]
fn local_routes_go_everywhere_unchanged() {
    let (mut p, mut s) = (prop(), shard());
    let b = base_attrs();
    for to in 1..8 {
        assert_eq!(
            verdict(&mut p, &mut s, &b, STATIC, PeerId(to)),
            ExportVerdict::Accept,
            "to {to}"
        );
    }
}

#[test]
fn ibgp_routes_go_to_ebgp_but_not_between_non_clients() {
    let mut p = prop();
    let mut s = shard();
    let b = base_attrs();
    // A second non-client: only reachable by reflection, which a
    // non-client's route never gets.
    p.roles.push(role(1).map(|r| PeerRole {
        bgp_id: bgp_id(8),
        ..r
    }));
    assert!(!sent(&verdict(&mut p, &mut s, &b, NONCLIENT, PeerId(8))));
    assert_eq!(
        verdict(&mut p, &mut s, &b, NONCLIENT, CUSTOMER),
        ExportVerdict::Accept
    );
    assert_eq!(
        verdict(&mut p, &mut s, &b, CLIENT_A, PROVIDER),
        ExportVerdict::Accept,
        "no reflection attributes towards eBGP"
    );
}

#[test]
fn reflection_from_a_non_client_reaches_clients_with_originator_and_cluster() {
    let (mut p, mut s) = (prop(), shard());
    let b = base_attrs();
    let ExportVerdict::Replace(r) = verdict(&mut p, &mut s, &b, NONCLIENT, CLIENT_A) else {
        panic!("expected reflected attributes");
    };
    assert_eq!(
        r.get(at::ORIGINATOR_ID).map(|a| &a.value),
        Some(&AttrValue::OriginatorId(bgp_id(1)))
    );
    assert_eq!(
        r.get(at::CLUSTER_LIST).map(|a| &a.value),
        Some(&AttrValue::ClusterList(vec![CLUSTER]))
    );
}

#[test]
fn reflection_from_a_client_reaches_all_ibgp_but_the_originator() {
    let (mut p, mut s) = (prop(), shard());
    // Already reflected once elsewhere: ORIGINATOR_ID kept, cluster
    // prepended.
    let other = Ipv4Addr::new(10, 7, 7, 7);
    let b = with(
        with(base_attrs(), AttrValue::OriginatorId(bgp_id(3))),
        AttrValue::ClusterList(vec![other]),
    );
    for to in [NONCLIENT, CLIENT_B] {
        let v = verdict(&mut p, &mut s, &b, CLIENT_A, to);
        if to == CLIENT_B {
            // CLIENT_B's BGP Identifier is the ORIGINATOR_ID.
            assert_eq!(v, ExportVerdict::Reject);
            continue;
        }
        let ExportVerdict::Replace(r) = v else {
            panic!("expected reflection to {to:?}");
        };
        assert_eq!(
            r.get(at::ORIGINATOR_ID).map(|a| &a.value),
            Some(&AttrValue::OriginatorId(bgp_id(3)))
        );
        assert_eq!(
            r.get(at::CLUSTER_LIST).map(|a| &a.value),
            Some(&AttrValue::ClusterList(vec![CLUSTER, other]))
        );
    }
    // Without ORIGINATOR_ID, the source itself is the originator: the
    // other client gets it.
    let b = base_attrs();
    assert!(sent(&verdict(&mut p, &mut s, &b, CLIENT_A, CLIENT_B)));
}

#[test]
fn reflected_sets_are_shared_by_all_clients_in_the_shard() {
    let mut s = shard();
    let mut ch = Vec::new();
    s.apply_update(
        NONCLIENT,
        &[Nlri::new(pfx())],
        Some(&base_attrs()),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    s.export_changes(&ch, &mut prop());
    let a = s.drain_updates(CLIENT_A);
    let b = s.drain_updates(CLIENT_B);
    assert_eq!(a.announce.len(), 1);
    assert_eq!(a, b, "one interned reflected set for both clients");
    let set = s.attrs(a.announce[0].0).unwrap();
    assert_eq!(set.summary().cluster_list_len(), 1);
    // eBGP peers get the Loc-RIB set itself.
    let c = s.drain_updates(CUSTOMER);
    assert_ne!(c.announce[0].0, a.announce[0].0);
    // With the plain policy the shard's own RFC 4271 rule applies: no
    // iBGP-to-iBGP at all.
    let mut s2 = shard();
    s2.apply_update(
        NONCLIENT,
        &[Nlri::new(pfx())],
        Some(&base_attrs()),
        &[],
        &mut AcceptAll,
        &mut ch,
    )
    .unwrap();
    s2.export_changes(&ch, &mut AcceptAll);
    assert!(s2.drain_updates(CLIENT_A).is_empty());
}

#[test]
fn well_known_communities() {
    let (mut p, mut s) = (prop(), shard());
    let c = |x: Community| with(base_attrs(), AttrValue::Communities(vec![Community(7), x]));
    let no_adv = c(Community::NO_ADVERTISE);
    for to in [NONCLIENT, CLIENT_A, PROVIDER] {
        assert!(!sent(&verdict(&mut p, &mut s, &no_adv, CUSTOMER, to)));
    }
    for x in [Community::NO_EXPORT, Community::NO_EXPORT_SUBCONFED] {
        let b = c(x);
        assert!(sent(&verdict(&mut p, &mut s, &b, CUSTOMER, NONCLIENT)));
        assert!(!sent(&verdict(&mut p, &mut s, &b, CUSTOMER, PROVIDER)));
        assert!(!sent(&verdict(&mut p, &mut s, &b, NONCLIENT, RS_CLIENT)));
    }
    // A community the user policy adds counts too.
    struct AddNoExport;
    impl ExportPolicy for AddNoExport {
        fn export(
            &mut self,
            _: PeerId,
            _: &Prefix,
            _: PeerId,
            a: &bgp_rib::AttrSet,
        ) -> ExportVerdict {
            let mut b = a.to_builder();
            b.set(PathAttr::new(AttrValue::Communities(vec![
                Community::NO_EXPORT,
            ])));
            ExportVerdict::Replace(b)
        }
    }
    let mut p2 = Propagation {
        inner: AddNoExport,
        router_id: ROUTER_ID,
        cluster_id: CLUSTER,
        roles: p.roles.clone(),
    };
    let b = base_attrs();
    assert!(!sent(&verdict(&mut p2, &mut s, &b, CUSTOMER, PROVIDER)));
    assert!(sent(&verdict(&mut p2, &mut s, &b, CUSTOMER, NONCLIENT)));
}

#[test]
fn otc_routes_do_not_go_to_providers_peers_or_route_servers() {
    let (mut p, mut s) = (prop(), shard());
    p.roles.push(Some(PeerRole {
        ebgp: true,
        confed: false,
        rr_client: false,
        rs_client: false,
        role: Some(1),
        bgp_id: bgp_id(8),
    }));
    let b = with(base_attrs(), AttrValue::OnlyToCustomer(Asn(64505)));
    assert!(!sent(&verdict(&mut p, &mut s, &b, PROVIDER, LATERAL)));
    assert!(!sent(&verdict(&mut p, &mut s, &b, LATERAL, PROVIDER)));
    assert!(!sent(&verdict(&mut p, &mut s, &b, PROVIDER, PeerId(8))));
    assert!(sent(&verdict(&mut p, &mut s, &b, PROVIDER, CUSTOMER)));
    assert!(sent(&verdict(&mut p, &mut s, &b, PROVIDER, RS_CLIENT)));
    assert!(sent(&verdict(&mut p, &mut s, &b, PROVIDER, NONCLIENT)));
    // Without OTC the provider gets it.
    assert!(sent(&verdict(
        &mut p,
        &mut s,
        &base_attrs(),
        CUSTOMER,
        PROVIDER
    )));
}

#[test]
fn received_med_is_not_passed_to_other_ases() {
    let (mut p, mut s) = (prop(), shard());
    let b = with(base_attrs(), AttrValue::Med(40));
    let ExportVerdict::Replace(r) = verdict(&mut p, &mut s, &b, CUSTOMER, PROVIDER) else {
        panic!("MED must be stripped");
    };
    assert_eq!(r.med(), None);
    assert!(r.get(at::AS_PATH).is_some(), "everything else kept");
    // Also when learned over iBGP.
    let v = verdict(&mut p, &mut s, &b, NONCLIENT, PROVIDER);
    assert!(matches!(v, ExportVerdict::Replace(r) if r.med().is_none()));
    // Route-server clients, iBGP peers and local routes keep it.
    assert_eq!(
        verdict(&mut p, &mut s, &b, CUSTOMER, RS_CLIENT),
        ExportVerdict::Accept
    );
    assert_eq!(
        verdict(&mut p, &mut s, &b, CUSTOMER, NONCLIENT),
        ExportVerdict::Accept
    );
    assert_eq!(
        verdict(&mut p, &mut s, &b, STATIC, PROVIDER),
        ExportVerdict::Accept
    );
    // A MED the user policy sets goes out.
    struct SetMed;
    impl ExportPolicy for SetMed {
        fn export(
            &mut self,
            _: PeerId,
            _: &Prefix,
            _: PeerId,
            a: &bgp_rib::AttrSet,
        ) -> ExportVerdict {
            let mut b = a.to_builder();
            b.set_med(7);
            ExportVerdict::Replace(b)
        }
    }
    let mut p2 = Propagation {
        inner: SetMed,
        router_id: ROUTER_ID,
        cluster_id: CLUSTER,
        roles: p.roles.clone(),
    };
    let v = verdict(&mut p2, &mut s, &b, CUSTOMER, PROVIDER);
    assert!(matches!(v, ExportVerdict::Replace(r) if r.med() == Some(7)));
}

fn r(i: u16) -> PeerRole {
    role(i).unwrap()
}

#[test]
fn import_loops_are_rejected() {
    let own = with(
        base_attrs(),
        AttrValue::AsPath(AsPath::from_sequence(vec![Asn(64504), LOCAL, Asn(1)])),
    );
    let chk = |from: PeerRole, b: &AttrsBuilder| import_check(ROUTER_ID, CLUSTER, LOCAL, &from, b);
    assert_eq!(chk(r(4), &own), ImportCheck::Reject(ImportReject::AsLoop));
    // From iBGP our own AS is not a loop indicator (RFC 4271 §9.1.2 is
    // about eBGP-learned paths; iBGP paths do not carry our AS).
    assert_eq!(chk(r(1), &own), ImportCheck::Accept);
    let orig = with(base_attrs(), AttrValue::OriginatorId(ROUTER_ID));
    assert_eq!(
        chk(r(2), &orig),
        ImportCheck::Reject(ImportReject::OriginatorLoop)
    );
    let cl = with(
        base_attrs(),
        AttrValue::ClusterList(vec![Ipv4Addr::new(1, 1, 1, 1), CLUSTER]),
    );
    assert_eq!(
        chk(r(1), &cl),
        ImportCheck::Reject(ImportReject::ClusterLoop)
    );
    assert_eq!(chk(r(1), &base_attrs()), ImportCheck::Accept);
}

#[test]
fn import_otc_rules() {
    let path = |a: u32| {
        with(
            base_attrs(),
            AttrValue::AsPath(AsPath::from_sequence(vec![Asn(a), Asn(1)])),
        )
    };
    let chk = |from: PeerRole, b: &AttrsBuilder| import_check(ROUTER_ID, CLUSTER, LOCAL, &from, b);
    let otc = |b: AttrsBuilder, v: u32| with(b, AttrValue::OnlyToCustomer(Asn(v)));
    // From a customer or RS-client, OTC means a leak.
    for i in [4, 6] {
        assert_eq!(
            chk(r(i), &otc(path(64504), 64504)),
            ImportCheck::Reject(ImportReject::RouteLeak)
        );
        assert_eq!(chk(r(i), &path(64504)), ImportCheck::Accept);
    }
    // From a lateral peer, only an OTC with its own AS is fine.
    assert_eq!(
        chk(r(7), &otc(path(64507), 64999)),
        ImportCheck::Reject(ImportReject::RouteLeak)
    );
    assert_eq!(chk(r(7), &otc(path(64507), 64507)), ImportCheck::Accept);
    // From a provider or peer without OTC: add it with their AS.
    assert_eq!(chk(r(5), &path(64505)), ImportCheck::AddOtc(Asn(64505)));
    assert_eq!(chk(r(7), &path(64507)), ImportCheck::AddOtc(Asn(64507)));
    // A route server does not prepend: the configured AS is used.
    let rs = PeerRole {
        role: Some(1),
        ..r(5)
    };
    let c = import_check_with_asn(
        ROUTER_ID,
        CLUSTER,
        LOCAL,
        Some(Asn(64666)),
        &rs,
        &path(64001),
    );
    assert_eq!(c, ImportCheck::AddOtc(Asn(64666)));
    let mut b = path(64001);
    assert!(c.apply(&mut b));
    assert_eq!(
        b.get(at::ONLY_TO_CUSTOMER).map(|a| &a.value),
        Some(&AttrValue::OnlyToCustomer(Asn(64666)))
    );
    // Without a role, no OTC processing.
    assert_eq!(chk(r(1), &otc(path(1), 5)), ImportCheck::Accept);
    assert!(!ImportCheck::Reject(ImportReject::RouteLeak).apply(&mut b));
}

/// [`AcceptAll`] without the prefix-independence promise: the shard asks
/// it for every prefix.
struct NoCache;

impl ExportPolicy for NoCache {
    fn export(
        &mut self,
        to: PeerId,
        p: &Prefix,
        from: PeerId,
        a: &bgp_rib::AttrSet,
    ) -> ExportVerdict {
        AcceptAll.export(to, p, from, a)
    }
}

/// The per-call verdict cache (one verdict per (to, from, set) for
/// prefix-independent policies) changes nothing: the Adj-RIB-Out towards
/// every peer is the same as when the policy is asked for every prefix,
/// through a full export and through incremental changes, and it keeps no
/// attribute set alive after the call.
#[test]
fn export_verdict_cache_changes_nothing() {
    let mut cached = shard();
    let mut plain = shard();
    let mut p_cached = prop();
    let mut p_plain = Propagation {
        router_id: ROUTER_ID,
        cluster_id: CLUSTER,
        roles: (0..8).map(role).collect(),
        inner: NoCache,
    };
    let sets = [
        (CUSTOMER, with(base_attrs(), AttrValue::Med(7))),
        (PROVIDER, with(base_attrs(), AttrValue::Med(3))),
        (CLIENT_A, base_attrs()),
        (NONCLIENT, with(base_attrs(), AttrValue::LocalPref(200))),
        (
            LATERAL,
            with(
                base_attrs(),
                AttrValue::Communities(vec![Community(0xFFFF_FF01)]),
            ),
        ),
        (RS_CLIENT, with(base_attrs(), AttrValue::Med(1))),
    ];
    let prefixes: Vec<Prefix> = (0..300u32)
        .map(|i| Prefix::V4(base::Prefix4::new(0x0a00_0000 | (i << 8), 24).unwrap()))
        .collect();
    let announce = |s: &mut RibShard, round: usize| {
        let mut changed = Vec::new();
        for (k, chunk) in prefixes.chunks(50).enumerate() {
            let (from, b) = &sets[(k + round) % sets.len()];
            let nlri: Vec<Nlri> = chunk.iter().map(|p| Nlri::new(*p)).collect();
            s.apply_update(*from, &nlri, Some(b), &[], &mut AcceptAll, &mut changed)
                .unwrap();
        }
        changed
    };
    let compare = |a: &RibShard, b: &RibShard, what: &str| {
        let mut sent = 0;
        for to in 1..8 {
            for p in &prefixes {
                let x = a.adj_out(PeerId(to), p).map(|s| s.raw().to_vec());
                let y = b.adj_out(PeerId(to), p).map(|s| s.raw().to_vec());
                assert_eq!(x, y, "{what}: to {to}, {p}");
                sent += usize::from(x.is_some());
            }
        }
        sent
    };
    announce(&mut cached, 0);
    announce(&mut plain, 0);
    for to in 1..8 {
        cached.export_full(PeerId(to), &mut p_cached).unwrap();
        plain.export_full(PeerId(to), &mut p_plain).unwrap();
    }
    let sent = compare(&cached, &plain, "full export");
    assert!(sent > 600, "only {sent} routes exported");
    assert_eq!(
        cached.interner().len(),
        plain.interner().len(),
        "sets kept alive"
    );
    // Another round moves every block to another peer's set.
    let c1 = announce(&mut cached, 1);
    let c2 = announce(&mut plain, 1);
    cached.export_changes(&c1, &mut p_cached);
    plain.export_changes(&c2, &mut p_plain);
    compare(&cached, &plain, "changes");
    assert_eq!(
        cached.interner().len(),
        plain.interner().len(),
        "sets kept alive"
    );
}

/// Announces blocks of 10 of `prefixes` from the peers of `sets` in turn,
/// exports everything to every peer with `mk`'s policy, and checks that
/// `held_back` names exactly what the Adj-RIB-Outs lack (never a route's
/// own source). The shard, and the (held back, sent) counts.
fn held_back_agrees<E: ExportPolicy>(
    mk: &dyn Fn() -> E,
    prefixes: &[Prefix],
    sets: &[(PeerId, AttrsBuilder)],
    what: &str,
) -> (RibShard, usize, usize) {
    let mut s = shard();
    let mut changed = Vec::new();
    for (k, chunk) in prefixes.chunks(10).enumerate() {
        let (from, b) = &sets[k % sets.len()];
        let nlri: Vec<Nlri> = chunk.iter().map(|p| Nlri::new(*p)).collect();
        s.apply_update(*from, &nlri, Some(b), &[], &mut AcceptAll, &mut changed)
            .unwrap();
    }
    for to in 1..8 {
        s.export_full(PeerId(to), &mut mk()).unwrap();
    }
    let (mut held, mut sent) = (0, 0);
    for to in 1..8u16 {
        for (k, pf) in prefixes.iter().enumerate() {
            let source = sets[k / 10 % sets.len()].0;
            let why = s.held_back(PeerId(to), pf, &mut mk());
            let out = s.adj_out(PeerId(to), pf).is_some();
            if source == PeerId(to) {
                assert_eq!((why, out), (None, false), "{what}: {pf} back to {to}");
                continue;
            }
            assert_eq!(why.is_some(), !out, "{what}: {pf} to {to}: {why:?}");
            held += usize::from(why.is_some());
            sent += usize::from(out);
        }
    }
    (s, held, sent)
}

/// `RibShard::held_back` (what `/routes/noexport` lists) agrees with the
/// export itself: for every peer and prefix, a best path is held back
/// exactly when the Adj-RIB-Out lacks it and it did not come from that
/// peer, with the reason the rules give (NO_EXPORT to eBGP, NO_ADVERTISE
/// to all; iBGP to iBGP under the plain policy).
#[test]
fn held_back_is_what_the_export_leaves_out() {
    use bgp_rib::HeldBack;
    let sets = [
        (CUSTOMER, with(base_attrs(), AttrValue::Med(7))),
        (PROVIDER, base_attrs()),
        (CLIENT_A, base_attrs()),
        (NONCLIENT, with(base_attrs(), AttrValue::LocalPref(200))),
        (
            LATERAL,
            with(
                base_attrs(),
                AttrValue::Communities(vec![Community(0xFFFF_FF01)]),
            ),
        ),
        (
            CUSTOMER,
            with(
                base_attrs(),
                AttrValue::Communities(vec![Community(0xFFFF_FF02)]),
            ),
        ),
    ];
    let prefixes: Vec<Prefix> = (0..60u32)
        .map(|i| Prefix::V4(base::Prefix4::new(0x0a00_0000 | (i << 8), 24).unwrap()))
        .collect();
    let (s, held, sent) = held_back_agrees(&prop, &prefixes, &sets, "propagation rules");
    assert!(held > 0 && sent > 0, "held {held}, sent {sent}");
    // NO_EXPORT from the lateral peer: held back from eBGP peers only.
    let no_export = prefixes[40];
    assert_eq!(
        s.held_back(CUSTOMER, &no_export, &mut prop()),
        Some(HeldBack::Policy)
    );
    assert_eq!(s.held_back(CLIENT_A, &no_export, &mut prop()), None);
    // NO_ADVERTISE: held back from everyone.
    let no_adv = prefixes[50];
    for to in [NONCLIENT, CLIENT_A, PROVIDER] {
        assert_eq!(
            s.held_back(to, &no_adv, &mut prop()),
            Some(HeldBack::Policy)
        );
    }
    // The plain policy: the shard's own iBGP-to-iBGP rule.
    let (s, held, _) = held_back_agrees(&|| AcceptAll, &prefixes, &sets, "plain");
    assert!(held > 0);
    assert_eq!(
        s.held_back(CLIENT_B, &prefixes[20], &mut AcceptAll),
        Some(HeldBack::IbgpToIbgp)
    );
}
