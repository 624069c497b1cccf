//! The UPDATE pipeline run in-process, without sockets: the same RIB
//! threads, [`RibSender`] split and control fan-out the daemon uses, with
//! fake sessions whose command channels the caller reads. For the
//! differential test of the pipeline modes and the throughput benchmark
//! (`benches/pipeline.rs`); not used by the daemon.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base::{AfiSafi, Asn, Prefix, Prefix4};
use bgp_fsm::{DownReason, Negotiated};
use bgp_rib::{AttrsBuilder, BestPathConfig, NextHopMode, PathSelection, PeerId};
use bgp_wire::{AsPath, AttrValue, NextHop, Nlri, Origin, PathAttr};
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

use bgp_speaker::msg::{
    DecodedUpdate, PeerStatus, RibInput, RibTx, SessionCmd, SessionUp, WriterSlot,
};
use bgp_speaker::pipeline::{call_all, CallError, Mode, Pipeline};
use bgp_speaker::rib::{
    PeerEntry, PeerHandle, PeerMeta, PolicyRef, RibSettings, RibState, SessionLink,
};

/// Our AS in the in-process pipeline.
pub const LOCAL_ASN: u32 = 65000;

/// One fake neighbour: eBGP with its own AS, IPv4 and IPv6 unicast.
#[derive(Clone, Debug)]
pub struct FakePeer {
    pub asn: u32,
    pub addr: IpAddr,
}

impl FakePeer {
    /// The `i`-th of a set: AS 64512+i, address 10.255.i/8 style.
    pub fn nth(i: usize) -> FakePeer {
        let i = i as u32;
        FakePeer {
            asn: 64512 + i,
            addr: IpAddr::V4(Ipv4Addr::from(0x0aff_0000 + i + 1)),
        }
    }
}

/// One route as the Loc-RIB holds it: every path (peer id, attributes'
/// wire form) and which one is best.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocRoute {
    pub prefix: Prefix,
    pub paths: Vec<(u16, Vec<u8>)>,
    pub best: Option<(u16, Vec<u8>)>,
}

/// What a fake session receives: commands, and bytes on its writer queue.
type FakeSession = (
    UnboundedReceiver<SessionCmd>,
    UnboundedReceiver<bytes::Bytes>,
);

/// A running pipeline with fake sessions.
pub struct InProc {
    pipeline: Pipeline,
    rib: RibTx,
    /// Per fake peer (index i is `PeerId(i + 1)`): what the RIB sent it,
    /// as commands and on its writer queue.
    outs: Vec<Mutex<FakeSession>>,
    writers: Vec<(Arc<WriterSlot>, UnboundedSender<bytes::Bytes>)>,
    statuses: Vec<Arc<PeerStatus>>,
    peers: Vec<FakePeer>,
}

/// What a fake peer's session negotiated (4-octet ASN, IPv4 and IPv6 unicast,
/// route refresh and enhanced route refresh).
pub fn negotiated(p: &FakePeer) -> Negotiated {
    Negotiated {
        peer_asn: Asn(p.asn),
        peer_bgp_id: match p.addr {
            IpAddr::V4(a) => a,
            IpAddr::V6(_) => Ipv4Addr::new(10, 0, 0, 1),
        },
        hold_time: 90,
        keepalive_interval: 30,
        four_octet_asn: true,
        families: vec![AfiSafi::IPV4_UNICAST, AfiSafi::IPV6_UNICAST],
        add_path: Vec::new(),
        ext_next_hop_rx: Vec::new(),
        ext_next_hop_tx: Vec::new(),
        extended_message: false,
        route_refresh: true,
        enhanced_route_refresh: true,
        graceful_restart: None,
        llgr: None,
        local_role: None,
        peer_role: None,
        fqdn: None,
    }
}

fn meta(p: &FakePeer, i: usize) -> PeerMeta {
    PeerMeta {
        name: format!("peer{i}"),
        description: String::new(),
        addr: p.addr,
        remote_asn: Asn(p.asn),
        local_asn: Asn(LOCAL_ASN),
        ebgp: true,
        confed: false,
        confed_id: None,
        rr_client: false,
        rs_client: false,
        role: None,
        next_hop: NextHopMode::Auto,
        max_prefix: None,
        import: PolicyRef::AcceptAll,
        export: PolicyRef::AcceptAll,
        keep_pre_policy: false,
        families: vec![AfiSafi::IPV4_UNICAST, AfiSafi::IPV6_UNICAST],
        // Flush on every export round, so what a peer receives does not
        // depend on timing.
        mrai: Duration::ZERO,
        add_path_send: PathSelection::All,
        damping: false,
    }
}

impl InProc {
    /// Starts `mode` with `peers` configured (not yet up).
    pub fn start(mode: Mode, peers: &[FakePeer]) -> Result<InProc, String> {
        let settings = RibSettings {
            router_id: Ipv4Addr::new(10, 0, 0, 254),
            cluster_id: Ipv4Addr::new(10, 0, 0, 254),
            local_asn: Asn(LOCAL_ASN),
            bestpath: BestPathConfig::default(),
        };
        let mut pipeline = Pipeline::new(mode);
        let mut entries = Vec::new();
        let mut outs = Vec::new();
        let mut writers = Vec::new();
        let mut statuses = Vec::new();
        for (i, p) in peers.iter().enumerate() {
            let (tx, rx) = unbounded_channel();
            let status = Arc::new(PeerStatus::default());
            let (wtx, wrx) = unbounded_channel();
            let writer = Arc::new(WriterSlot::default());
            entries.push(PeerHandle {
                entry: PeerEntry::new(meta(p, i + 1), status.clone()),
                link: SessionLink {
                    cmd: tx,
                    writer: writer.clone(),
                },
            });
            outs.push(Mutex::new((rx, wrx)));
            writers.push((writer, wtx));
            statuses.push(status);
        }
        pipeline.spawn(|part| {
            let mut st = RibState::with_part(settings.clone(), 1, part);
            for (i, e) in entries.iter().enumerate() {
                st.insert_peer(PeerId(i as u16 + 1), e.copy_idle());
            }
            st
        })?;
        Ok(InProc {
            rib: pipeline.sender(),
            pipeline,
            outs,
            writers,
            statuses,
            peers: peers.to_vec(),
        })
    }

    pub fn id(i: usize) -> PeerId {
        PeerId(i as u16 + 1)
    }

    /// What sessions would send through.
    pub fn sender(&self) -> RibTx {
        self.rib.clone()
    }

    /// Peer `i` reaches Established.
    pub fn up(&self, i: usize) {
        let Some(p) = self.peers.get(i) else {
            return;
        };
        let port = 179;
        let local = IpAddr::V4(Ipv4Addr::new(10, 0, 0, 254));
        // As a session does: a new session number, and its writer queue
        // published before the RIB hears of it.
        let session = self.statuses.get(i).map_or(1, |st| {
            st.established_count
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                + 1
        });
        if let Some((w, tx)) = self.writers.get(i) {
            w.publish(session, tx.clone());
        }
        let up = SessionUp {
            session,
            negotiated: negotiated(p),
            link: bgp_core::LinkAddrs::of(local),
            local_addr: SocketAddr::new(local, port),
            remote_addr: SocketAddr::new(p.addr, 40000),
            eor_barrier: None,
            since: std::time::SystemTime::now(),
        };
        self.rib.blocking_send(RibInput::Up {
            peer: Self::id(i),
            up: Box::new(up),
        });
    }

    /// Peer `i`'s session ends (no graceful restart).
    pub fn down(&self, i: usize) {
        if let Some((w, _)) = self.writers.get(i) {
            w.withdraw();
        }
        self.rib.blocking_send(RibInput::Down {
            peer: Self::id(i),
            reason: DownReason::TcpConnectionFails,
            graceful: false,
            at: std::time::SystemTime::now(),
        });
    }

    /// Peer `i` sends ROUTE-REFRESH (RFC 2918/7313 request).
    pub fn route_refresh(&self, i: usize, family: AfiSafi) {
        self.rib.blocking_send(RibInput::RouteRefresh {
            peer: Self::id(i),
            family,
            subtype: 0,
            barrier: None,
        });
    }

    /// A batch of decoded UPDATEs from peer `i`.
    pub fn updates(&self, i: usize, updates: Vec<DecodedUpdate>) {
        self.rib.blocking_send(RibInput::Updates {
            peer: Self::id(i),
            updates,
        });
    }

    /// One channel per RIB thread (for a [`bgp_speaker::daemon::control::Control`]).
    pub fn senders(&self) -> &[tokio::sync::mpsc::Sender<bgp_speaker::rib::RibMsg>] {
        self.pipeline.senders()
    }

    /// Runs `f` on every RIB thread.
    pub fn call_all<R: Send + 'static>(
        &self,
        f: impl Fn(&mut RibState) -> R + Send + Sync + 'static,
    ) -> Result<Vec<R>, CallError> {
        call_all(self.pipeline.senders(), Duration::from_secs(60), f)
    }

    /// Waits until everything sent so far is applied, exported and handed
    /// to the fake sessions.
    pub fn settle(&self) -> Result<(), CallError> {
        self.call_all(RibState::settle).map(|_| ())
    }

    /// The Loc-RIB, merged over shards, sorted by prefix.
    pub fn loc_rib(&self) -> Result<Vec<LocRoute>, CallError> {
        let parts = self.call_all(|st| {
            st.rib
                .iter()
                .map(|r| LocRoute {
                    prefix: r.prefix,
                    paths: r
                        .iter()
                        .map(|(p, a)| (p.peer.0, a.raw().to_vec()))
                        .collect(),
                    best: r.best().map(|(p, a)| (p.peer.0, a.raw().to_vec())),
                })
                .collect::<Vec<_>>()
        })?;
        let mut all: Vec<LocRoute> = parts.into_iter().flatten().collect();
        all.sort_by_key(|r| r.prefix);
        for r in &mut all {
            r.paths.sort();
        }
        Ok(all)
    }

    /// Takes the encoded messages the RIB handed peer `i` so far (one
    /// buffer per hand-over, each whole BGP messages), counting them off
    /// the peer's queued bytes as the session's writer would. The RIB
    /// hands a session at most `bgp_core::OUT_QUEUE_LIMIT` unwritten bytes
    /// and keeps the rest for when it has drained (docs/adr/0004), so as
    /// long as something came, this runs another export round
    /// ([`Self::settle`], what the writer's wake-up does in the daemon)
    /// and takes again.
    pub fn take_output(&self, i: usize) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        loop {
            let before = out.len();
            self.take_once(i, &mut out);
            if out.len() == before || self.settle().is_err() {
                return out;
            }
        }
    }

    fn take_once(&self, i: usize, out: &mut Vec<Vec<u8>>) {
        let (Some(rx), Some(st)) = (self.outs.get(i), self.statuses.get(i)) else {
            return;
        };
        let Ok(mut rx) = rx.lock() else {
            return;
        };
        let (cmds, bytes) = &mut *rx;
        while let Ok(c) = cmds.try_recv() {
            if let SessionCmd::Send(b) = c {
                st.unqueue(b.len() as u64);
                out.push(b);
            }
        }
        while let Ok(b) = bytes.try_recv() {
            st.unqueue(b.len() as u64);
            out.push(b.to_vec());
        }
    }

    /// Stops the RIB threads.
    pub fn shutdown(self) {
        let _ = call_all(self.pipeline.senders(), Duration::from_secs(60), |st| {
            st.request_shutdown()
        });
        drop(self.rib);
        self.pipeline.join();
    }
}

/// One UPDATE from fake peer `peer` (AS `asn`): the /24s `from..from+n`
/// of 10.0.0.0/8 (the `i`th is 10.x.y.0 with x.y = `i`; `from + n` at
/// most 65,536), origin IGP, an
/// AS path of `asn` and `path_len` more ASNs, next hop 10.255.0.(peer+1).
pub fn announce_24s(peer: usize, asn: u32, from: u32, n: u32, path_len: u32) -> DecodedUpdate {
    let mut b = AttrsBuilder::new();
    b.set(PathAttr::new(AttrValue::Origin(Origin::Igp)));
    let mut path = vec![Asn(asn)];
    path.extend((0..path_len).map(|j| Asn(64900 + j)));
    b.set(PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
        path,
    ))));
    b.set_next_hop(NextHop::V4(Ipv4Addr::new(10, 255, 0, peer as u8 + 1)));
    b.mark_clean();
    DecodedUpdate {
        attrs: Some(Arc::new(b)),
        announce: (from..from + n)
            .filter_map(|i| Prefix4::new(0x0a00_0000 | (i << 8), 24).ok())
            .map(|p| Nlri::new(Prefix::V4(p)))
            .collect(),
        withdraw: Vec::new(),
        end_of_rib: None,
        multicast: Default::default(),
    }
}

/// Benchmark workload: peer `p`'s table of `m` shared /24s (10.0.0.0/8
/// upwards), `per_update` prefixes per UPDATE, one attribute set per
/// UPDATE (AS paths of 2..5 ASNs and MEDs varying with the UPDATE and the
/// peer, so best paths compete), in session batches of up to 256 UPDATEs.
pub fn shared_table(p: usize, asn: u32, m: usize, per_update: usize) -> Vec<Vec<DecodedUpdate>> {
    let mut ups = Vec::new();
    for (k, chunk) in (0..m as u32)
        .collect::<Vec<_>>()
        .chunks(per_update.max(1))
        .enumerate()
    {
        let k = k as u32;
        let mut b = AttrsBuilder::new();
        b.set(PathAttr::new(AttrValue::Origin(Origin::Igp)));
        let len = 1 + (k + p as u32) % 4;
        let mut path = vec![Asn(asn)];
        path.extend((0..len).map(|j| Asn(64900 + (j * 13 + k) % 50)));
        b.set(PathAttr::new(AttrValue::AsPath(AsPath::from_sequence(
            path,
        ))));
        b.set_next_hop(NextHop::V4(Ipv4Addr::new(10, 255, 0, p as u8 + 1)));
        b.set_med((k * 31 + p as u32 * 7) % 100);
        b.mark_clean();
        let announce = chunk
            .iter()
            .map(|&i| {
                let a = 0x0a00_0000 | (i << 8);
                Nlri::new(Prefix::V4(Prefix4::new(a, 24).expect("valid")))
            })
            .collect();
        ups.push(DecodedUpdate {
            attrs: Some(Arc::new(b)),
            announce,
            withdraw: Vec::new(),
            end_of_rib: None,
            multicast: Default::default(),
        });
    }
    // Session batches of up to 256 UPDATEs.
    ups.chunks(256).map(<[DecodedUpdate]>::to_vec).collect()
}

/// One load: start, bring every peer up, push every table from one thread
/// per peer, wait for the export to be handed over. Returns the time from
/// the first push to the last hand-over.
pub fn timed_load(mode: Mode, peers: &[FakePeer], tables: &[Vec<Vec<DecodedUpdate>>]) -> Duration {
    timed_load_cpu(mode, peers, tables).0
}

/// CPU time of this process so far (all threads).
pub fn process_cpu() -> Duration {
    // SAFETY: getrusage only writes the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: as above; RUSAGE_SELF is always valid.
    if unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) } != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec.max(0) as u64) + Duration::from_micros(t.tv_usec.max(0) as u64)
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// CLOCK_MONOTONIC now, in seconds (the clock `perf record -k
/// CLOCK_MONOTONIC` stamps samples with).
fn monotonic_s() -> f64 {
    // SAFETY: clock_gettime only writes the struct it is given.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: as above; CLOCK_MONOTONIC is always valid.
    if unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) } != 0 {
        return 0.0;
    }
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// [`timed_load`] with the CPU time of the process over the same span
/// (the RIB threads, the feeders' split and sends).
pub fn timed_load_cpu(
    mode: Mode,
    peers: &[FakePeer],
    tables: &[Vec<Vec<DecodedUpdate>>],
) -> (Duration, Duration) {
    let s = timed_load_stats(mode, peers, tables);
    (s.wall, s.cpu)
}

/// What one load took and did, summed over the RIB threads: the work
/// counters say where a mode's extra CPU time goes (more best-path
/// changes exported when export rounds coalesce less, more UPDATEs
/// encoded when attribute sets are packed per shard).
#[derive(Clone, Copy, Debug, Default)]
pub struct LoadStats {
    /// From the first push to the last hand-over.
    pub wall: Duration,
    /// CPU time of the process over the same span.
    pub cpu: Duration,
    /// Best-path changes exported (one per prefix per export round).
    pub best_changes: u64,
    /// UPDATE messages encoded.
    pub updates_sent: u64,
    /// Encoded buffers (one per drained batch and encoding).
    pub encodings: u64,
    /// Bytes handed to the sessions.
    pub bytes_sent: u64,
}

/// [`timed_load_cpu`] with the RIB threads' work counters
/// ([`bgp_speaker::rib::RibCounters`]) over the load.
pub fn timed_load_stats(
    mode: Mode,
    peers: &[FakePeer],
    tables: &[Vec<Vec<DecodedUpdate>>],
) -> LoadStats {
    let Ok(ip) = InProc::start(mode, peers) else {
        return LoadStats::default();
    };
    for i in 0..peers.len() {
        ip.up(i);
    }
    let _ = ip.settle();
    let inputs: Vec<Vec<Vec<DecodedUpdate>>> = tables.to_vec();
    let t0 = Instant::now();
    let m0 = monotonic_s();
    let c0 = process_cpu();
    std::thread::scope(|s| {
        for (i, batches) in inputs.into_iter().enumerate() {
            let tx = ip.sender();
            s.spawn(move || {
                for updates in batches {
                    tx.blocking_send(RibInput::Updates {
                        peer: InProc::id(i),
                        updates,
                    });
                }
            });
        }
    });
    let _ = ip.settle();
    let dt = t0.elapsed();
    let cpu = process_cpu().saturating_sub(c0);
    if std::env::var_os("PIPELINE_SPANS").is_some() {
        // The timed span in CLOCK_MONOTONIC seconds, for cutting a
        // `perf record -k CLOCK_MONOTONIC` profile down to it.
        eprintln!("span {:.6} {:.6}", m0, monotonic_s());
    }
    let mut stats = LoadStats {
        wall: dt,
        cpu,
        ..LoadStats::default()
    };
    for c in ip.call_all(|st| st.counters.clone()).unwrap_or_default() {
        stats.best_changes += c.best_changes;
        stats.updates_sent += c.updates_sent;
        stats.encodings += c.encodings;
        stats.bytes_sent += c.bytes_sent;
    }
    // Check the work was done (outside the timed part).
    let routes = ip.loc_rib().map(|r| r.len()).unwrap_or(0);
    assert_eq!(
        routes,
        tables.first().map_or(0, |t| t
            .iter()
            .map(|b| b.iter().map(|u| u.announce.len()).sum::<usize>())
            .sum())
    );
    for i in 0..peers.len() {
        let _ = ip.take_output(i);
    }
    ip.shutdown();
    stats
}
