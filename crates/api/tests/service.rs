//! The GobgpApi service over the in-process pipeline (fake sessions, no
//! sockets): ListPath walks more than one RIB batch in prefix order over
//! every RIB part, adj-in keeps one neighbour's paths, GetTable counts,
//! AddPath/DeletePath originate and withdraw (and reach a neighbour's
//! Adj-RIB-Out), ListPeer lists the neighbours; sequential and sharded
//! pipelines give the same answers.

use std::net::Ipv4Addr;
use std::sync::Arc;

use api::apipb::{self, gobgp_api_server::GobgpApi};
use api::convert::{any, api_family};
use api::{Service, BATCH};
use base::{Asn, Prefix, Prefix4};
use bgp_rib::AttrsBuilder;
use bgp_speaker::daemon::control::{Control, ReloadFn};
use bgp_speaker::msg::DecodedUpdate;
use bgp_speaker::pipeline::Mode;
use bgp_wire::{AsPath, AttrValue, NextHop, Nlri, Origin, PathAttr};
use testkit::inproc::{FakePeer, InProc};
use tokio_stream::StreamExt;
use tonic::Request;

fn update(peer: usize, asn: u32, from: u32, n: u32) -> DecodedUpdate {
    let mut b = AttrsBuilder::new();
    b.set(PathAttr::new(AttrValue::Origin(Origin::Igp)));
    b.set(PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
        vec![Asn(asn), Asn(64900)],
    ))));
    b.set_next_hop(NextHop::V4(Ipv4Addr::new(10, 255, 0, peer as u8 + 1)));
    b.set_med(5);
    b.mark_clean();
    DecodedUpdate {
        attrs: Some(Arc::new(b)),
        announce: (from..from + n)
            .map(|i| {
                Nlri::new(Prefix::V4(
                    Prefix4::new(0x0a00_0000 | (i << 8), 24).unwrap(),
                ))
            })
            .collect(),
        withdraw: Vec::new(),
        end_of_rib: None,
        multicast: Default::default(),
    }
}

fn ipv4() -> Option<apipb::Family> {
    Some(api_family(false, false))
}

fn lookup(prefix: &str, kind: i32) -> Vec<apipb::TableLookupPrefix> {
    vec![apipb::TableLookupPrefix {
        prefix: prefix.into(),
        r#type: kind,
    }]
}

async fn list(
    svc: &Service,
    table: apipb::TableType,
    name: &str,
    prefixes: Vec<apipb::TableLookupPrefix>,
) -> Vec<apipb::Destination> {
    let s = svc
        .list_path(Request::new(apipb::ListPathRequest {
            table_type: table as i32,
            name: name.into(),
            family: ipv4(),
            prefixes,
            ..Default::default()
        }))
        .await
        .expect("ListPath")
        .into_inner();
    s.map(|r| r.expect("stream item").destination.expect("destination"))
        .collect()
        .await
}

async fn table(svc: &Service, name: &str, t: apipb::TableType) -> (u64, u64) {
    let r = svc
        .get_table(Request::new(apipb::GetTableRequest {
            table_type: t as i32,
            family: ipv4(),
            name: name.into(),
        }))
        .await
        .expect("GetTable")
        .into_inner();
    (r.num_destination, r.num_path)
}

fn added(prefix: &str) -> apipb::Path {
    let (a, l) = prefix.split_once('/').unwrap();
    apipb::Path {
        nlri: Some(any(
            "IPAddressPrefix",
            &apipb::IpAddressPrefix {
                prefix_len: l.parse().unwrap(),
                prefix: a.into(),
            },
        )),
        pattrs: vec![
            any("OriginAttribute", &apipb::OriginAttribute { origin: 0 }),
            any(
                "NextHopAttribute",
                &apipb::NextHopAttribute {
                    next_hop: "0.0.0.0".into(),
                },
            ),
        ],
        family: ipv4(),
        ..Default::default()
    }
}

/// The in-process pipeline blocks; the service is async.
fn bp<R>(f: impl FnOnce() -> R) -> R {
    tokio::task::block_in_place(f)
}

/// What the checks saw, to compare pipelines.
type Seen = (Vec<String>, Vec<String>, (u64, u64), (u64, u64));

async fn run(mode: Mode) -> Seen {
    let peers: Vec<FakePeer> = (0..2).map(FakePeer::nth).collect();
    let ip = bp(|| InProc::start(mode, &peers).expect("start"));
    bp(|| {
        ip.up(0);
        ip.up(1);
    });
    // Peer 0: more than two RIB batches; peer 1: 100 of the same and 50
    // of its own.
    let n0 = 2 * BATCH as u32 + 88;
    bp(|| ip.updates(0, vec![update(0, peers[0].asn, 0, n0)]));
    bp(|| {
        ip.updates(
            1,
            vec![
                update(1, peers[1].asn, 0, 100),
                update(1, peers[1].asn, 5000, 50),
            ],
        )
    });
    bp(|| ip.settle().expect("settle"));
    let reload: Arc<ReloadFn> = Arc::new(|_| Err("no reload here".into()));
    let ctl = Arc::new(Control::new(
        ip.senders().to_vec(),
        reload,
        Default::default(),
    ));
    let svc = Service::new(ctl);

    // Global: every prefix once, in order, each with one best path.
    let all = list(&svc, apipb::TableType::Global, "", vec![]).await;
    assert_eq!(all.len(), n0 as usize + 50);
    let prefixes: Vec<Prefix> = all.iter().map(|d| d.prefix.parse().unwrap()).collect();
    assert!(
        prefixes.windows(2).all(|w| w[0] < w[1]),
        "not in prefix order"
    );
    assert!(all
        .iter()
        .all(|d| d.paths.iter().filter(|p| p.best).count() == 1));
    assert_eq!(all.iter().filter(|d| d.paths.len() == 2).count(), 100);
    let p = &all[0].paths[0];
    assert_eq!(p.family, ipv4());
    assert!(p
        .pattrs
        .iter()
        .any(|a| a.type_url == "type.googleapis.com/apipb.MultiExitDiscAttribute"));
    assert!(p
        .pattrs
        .iter()
        .any(|a| a.type_url == "type.googleapis.com/apipb.AsPathAttribute"));

    // Adj-in of peer 1: only its 150 paths, each from it.
    let addr1 = peers[1].addr.to_string();
    let adj = list(&svc, apipb::TableType::AdjIn, &addr1, vec![]).await;
    assert_eq!(adj.len(), 150);
    assert!(adj
        .iter()
        .all(|d| d.paths.len() == 1 && d.paths[0].neighbor_ip == addr1));

    // Filters: exact, longer, an address alone (its longest match).
    let one = list(&svc, apipb::TableType::Global, "", lookup("10.0.3.0/24", 0)).await;
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].prefix, "10.0.3.0/24");
    let longer = list(&svc, apipb::TableType::Global, "", lookup("10.0.0.0/20", 1)).await;
    assert_eq!(longer.len(), 16);
    let lm = list(&svc, apipb::TableType::Global, "", lookup("10.0.7.9", 0)).await;
    assert_eq!(lm.len(), 1);
    assert_eq!(lm[0].prefix, "10.0.7.0/24");

    // GetTable, global and adj-in.
    let global = table(&svc, "", apipb::TableType::Global).await;
    assert_eq!(global, (u64::from(n0) + 50, u64::from(n0) + 150));
    let adj_count = table(&svc, &addr1, apipb::TableType::AdjIn).await;
    assert_eq!(adj_count, (150, 150));

    // AddPath: in the Loc-RIB as a local route, announced to a peer.
    let _ = bp(|| ip.take_output(0));
    svc.add_path(Request::new(apipb::AddPathRequest {
        table_type: 0,
        vrf_id: String::new(),
        path: Some(added("198.18.77.0/24")),
    }))
    .await
    .expect("AddPath");
    bp(|| ip.settle().expect("settle"));
    let got = list(
        &svc,
        apipb::TableType::Global,
        "",
        lookup("198.18.77.0/24", 0),
    )
    .await;
    assert_eq!(got.len(), 1);
    assert!(got[0].paths[0].best);
    assert_eq!(got[0].paths[0].neighbor_ip, "0.0.0.0");
    let out = bp(|| ip.take_output(0)).concat();
    let nlri = [24u8, 198, 18, 77];
    assert!(
        out.windows(4).any(|w| w == nlri),
        "peer 0 was not sent 198.18.77.0/24"
    );

    // DeletePath: gone again.
    svc.delete_path(Request::new(apipb::DeletePathRequest {
        table_type: 0,
        family: ipv4(),
        path: Some(added("198.18.77.0/24")),
        ..Default::default()
    }))
    .await
    .expect("DeletePath");
    bp(|| ip.settle().expect("settle"));
    assert_eq!(table(&svc, "", apipb::TableType::Global).await, global);

    // Bad requests are errors.
    let e = svc
        .list_path(Request::new(apipb::ListPathRequest {
            table_type: apipb::TableType::AdjOut as i32,
            name: addr1.clone(),
            family: ipv4(),
            ..Default::default()
        }))
        .await
        .expect_err("adj-out is not supported");
    assert_eq!(e.code(), tonic::Code::Unimplemented);
    let e = svc
        .list_path(Request::new(apipb::ListPathRequest {
            table_type: apipb::TableType::AdjIn as i32,
            name: "10.9.9.9".into(),
            family: ipv4(),
            ..Default::default()
        }))
        .await
        .expect_err("unknown neighbour");
    assert_eq!(e.code(), tonic::Code::NotFound);
    let mut bad = added("198.18.0.0/16");
    bad.pattrs.push(prost_types::Any {
        type_url: "type.googleapis.com/apipb.OriginAttribute".into(),
        value: vec![0xff],
    });
    let e = svc
        .add_path(Request::new(apipb::AddPathRequest {
            table_type: 0,
            vrf_id: String::new(),
            path: Some(bad),
        }))
        .await
        .expect_err("bad attribute");
    assert_eq!(e.code(), tonic::Code::InvalidArgument);

    // ListPeer: both neighbours with their AS, Established.
    let peers_seen: Vec<String> = svc
        .list_peer(Request::new(apipb::ListPeerRequest::default()))
        .await
        .expect("ListPeer")
        .into_inner()
        .map(|r| {
            let s = r.unwrap().peer.unwrap().state.unwrap();
            format!("{} {} {}", s.neighbor_address, s.peer_asn, s.session_state)
        })
        .collect()
        .await;
    assert_eq!(peers_seen.len(), 2, "{peers_seen:?}");

    bp(|| ip.shutdown());
    let names = all.iter().map(|d| d.prefix.clone()).collect();
    (names, peers_seen, global, adj_count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_and_sharded_answer_alike() {
    let seq = run(Mode::Sequential).await;
    let sharded = run(Mode::Sharded(3)).await;
    assert_eq!(seq, sharded);
}
