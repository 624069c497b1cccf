//! One collector's connection: connect with back-off, Initiation, Peer Up
//! of every established peer, the table dump with End-of-RIB, then the
//! live queue and periodic Statistics Reports; on any write error, on an
//! overflowed queue or at shutdown, close and start over.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ::bmp::encode::{self, LocalEnd, Stat};
use ::bmp::route;
use base::{Afi, AfiSafi, Safi};
use bgp_wire::{Capability, OpenMessage, OptParam, ParseCtx};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tracing::{info, warn};

use super::{now_ts, state, BmpHub, Collector, PeerRec, Take};

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Messages written per system call, at most.
const BATCH: usize = 1024;

/// Why a connection ended.
enum End {
    Io(std::io::Error),
    /// The queue overflowed; `clean`: between two messages (a Termination
    /// can still be framed), else in the middle of a write.
    Overflow {
        clean: bool,
    },
    Rib(&'static str),
    RibText(String),
    Shutdown,
}

pub(super) async fn run(hub: BmpHub, c: Arc<Collector>) {
    let max = Duration::from_secs(u64::from(c.cfg.reconnect_max.max(1)));
    let mut backoff = Duration::from_secs(1);
    loop {
        c.set_state(state::CONNECTING);
        let conn = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(c.cfg.addr)).await;
        let why = match conn {
            Ok(Ok(s)) => {
                c.connects.fetch_add(1, Ordering::Relaxed);
                info!(collector = %c.cfg.addr, "BMP collector connected");
                backoff = Duration::from_secs(1);
                let _ = s.set_nodelay(true);
                let end = session(&hub, &c, s).await;
                if let Ok(mut q) = c.q.lock() {
                    q.deactivate();
                }
                match end {
                    End::Shutdown => {
                        c.set_state(state::IDLE);
                        return;
                    }
                    End::Overflow { .. } => "queue overflow: disconnected, will resync".to_string(),
                    End::Io(e) => format!("connection lost: {e}"),
                    End::Rib(e) => e.to_string(),
                    End::RibText(e) => e,
                }
            }
            Ok(Err(e)) => format!("cannot connect: {e}"),
            Err(_) => "cannot connect: timed out".to_string(),
        };
        warn!(collector = %c.cfg.addr, "BMP: {why}; retrying in {backoff:?}");
        if let Ok(mut e) = c.last_error.lock() {
            *e = why;
        }
        c.set_state(state::IDLE);
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(max);
    }
}

/// Writes `m`, giving up as soon as the queue overflows: a collector that
/// stopped reading must not hold the connection (and its queue) forever.
async fn write(c: &Collector, s: &mut TcpStream, m: &[u8]) -> Result<(), End> {
    let mut w = std::pin::pin!(s.write_all(m));
    loop {
        tokio::select! {
            r = &mut w => {
                r.map_err(End::Io)?;
                break;
            }
            () = c.overflow.notified() => {
                // A permit left from an earlier connection is stale.
                if c.q.lock().is_ok_and(|q| q.is_overflowed()) {
                    return Err(End::Overflow { clean: false });
                }
            }
        }
    }
    c.bytes_sent.fetch_add(m.len() as u64, Ordering::Relaxed);
    Ok(())
}

/// Counts BMP messages in a buffer of whole messages.
fn count(mut b: &[u8]) -> u64 {
    let mut n = 0;
    while let Ok(Some(len)) = ::bmp::decode::message_len(b) {
        n += 1;
        b = b.get(len..).unwrap_or_default();
    }
    n
}

async fn send(c: &Collector, s: &mut TcpStream, m: &[u8]) -> Result<(), End> {
    write(c, s, m).await?;
    c.msgs_sent.fetch_add(count(m), Ordering::Relaxed);
    Ok(())
}

/// The Loc-RIB instance's Peer Up (RFC 9069 §5.1): no addresses or ports,
/// the same fabricated OPEN as sent and received, and the table name.
fn loc_rib_peer_up(hub: &BmpHub) -> Vec<u8> {
    let i = &hub.0;
    let open = OpenMessage {
        version: 4,
        my_as: u16::try_from(i.local_asn).unwrap_or(23456),
        hold_time: 0,
        bgp_id: i.router_id,
        params: vec![OptParam::Capabilities(vec![
            Capability::Multiprotocol(AfiSafi::IPV4_UNICAST),
            Capability::Multiprotocol(AfiSafi::IPV6_UNICAST),
            Capability::FourOctetAsn(base::Asn(i.local_asn)),
        ])],
        extended_params: false,
    };
    let mut o = Vec::new();
    let _ = open.encode(ParseCtx::legacy(), &mut o);
    let mut info = Vec::new();
    encode::tlv(encode::INFO_TABLE_NAME, b"global", &mut info);
    let local = LocalEnd {
        address: IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        local_port: 0,
        remote_port: 0,
    };
    let mut b = Vec::new();
    encode::peer_up(&hub.loc_header(now_ts()), &local, &o, &o, &info, &mut b);
    b
}

/// The RIB access the daemon wired, or an error.
fn ribs(hub: &BmpHub) -> Result<Arc<super::RibAccess>, End> {
    hub.0
        .ribs
        .lock()
        .ok()
        .and_then(|g| g.clone())
        .ok_or(End::Rib("no RIB access"))
}

async fn session(hub: &BmpHub, c: &Arc<Collector>, mut s: TcpStream) -> End {
    match serve(hub, c, &mut s).await {
        Ok(()) => End::Shutdown,
        Err(e) => {
            if matches!(e, End::Overflow { clean: true }) {
                // RFC 7854 §4.5: say why before closing.
                let mut t = Vec::new();
                encode::termination(
                    encode::term_reason::OUT_OF_RESOURCES,
                    Some("monitoring queue overflow, reconnect to resync"),
                    &mut t,
                );
                let _ = tokio::time::timeout(Duration::from_secs(1), s.write_all(&t)).await;
            }
            let _ = s.shutdown().await;
            e
        }
    }
}

/// End-of-RIB (RFC 7854 §5 with RFC 4724 §2) of each family, under `h`.
fn end_of_ribs(h: &::bmp::PeerHeader, families: &[AfiSafi], out: &mut Vec<u8>) {
    let mut upd = Vec::new();
    for f in families {
        upd.clear();
        route::end_of_rib(f.afi, f.safi, &mut upd);
        encode::route_monitoring(h, &upd, out);
    }
}

async fn serve(hub: &BmpHub, c: &Arc<Collector>, s: &mut TcpStream) -> Result<(), End> {
    c.set_state(state::DUMPING);
    // Under the peers lock: a Peer Up is in the snapshot or in the queue.
    let peers: Vec<PeerRec> = {
        let g = hub.0.peers.lock().map_err(|_| End::Rib("poisoned"))?;
        if let Ok(mut q) = c.q.lock() {
            q.activate();
        }
        g.values().cloned().collect()
    };
    let mut b = Vec::new();
    encode::initiation(
        &[
            (encode::INIT_SYS_DESCR, hub.0.sys_descr.as_bytes()),
            (encode::INIT_SYS_NAME, hub.0.sys_name.as_bytes()),
        ],
        &mut b,
    );
    for p in &peers {
        b.extend_from_slice(&p.up);
    }
    let m = c.cfg.monitoring;
    if m.loc_rib {
        b.extend_from_slice(&loc_rib_peer_up(hub));
    }
    send(c, s, &b).await?;

    // The table dump: every RIB thread walks its part.
    let views = super::Views {
        pre: m.pre_policy,
        post: m.post_policy,
        loc: m.loc_rib,
        out_pre: m.adj_rib_out_pre,
        out_post: m.adj_rib_out_post,
    };
    if views != super::Views::default() {
        let (h, access) = (hub.clone(), ribs(hub)?);
        let (pre, post, loc) = (views.pre, views.post, views.loc);
        let chunks = tokio::task::spawn_blocking(move || (access.dump)(&h, views))
            .await
            .map_err(|_| End::Rib("RIB call failed"))?
            .map_err(End::RibText)?;
        for chunk in &chunks {
            send(c, s, chunk).await?;
        }
        b.clear();
        for p in &peers {
            let mut h = p.header;
            h.timestamp = now_ts();
            if pre {
                h.flags = 0;
                end_of_ribs(&h, &p.families, &mut b);
            }
            if post {
                h.flags = ::bmp::peer_flags::L;
                end_of_ribs(&h, &p.families, &mut b);
            }
            if views.out_pre {
                h.flags = ::bmp::peer_flags::O;
                end_of_ribs(&h, &p.families, &mut b);
            }
            if views.out_post {
                h.flags = ::bmp::peer_flags::O | ::bmp::peer_flags::L;
                end_of_ribs(&h, &p.families, &mut b);
            }
        }
        if loc {
            let both = [
                AfiSafi {
                    afi: Afi::Ipv4,
                    safi: Safi::Unicast,
                },
                AfiSafi {
                    afi: Afi::Ipv6,
                    safi: Safi::Unicast,
                },
            ];
            end_of_ribs(&hub.loc_header(now_ts()), &both, &mut b);
        }
        send(c, s, &b).await?;
    }
    c.set_state(state::UP);
    info!(collector = %c.cfg.addr, peers = peers.len(), "BMP table dump sent");

    let every = Duration::from_secs(u64::from(c.cfg.stats_interval));
    let mut stats = (c.cfg.stats_interval > 0)
        .then(|| tokio::time::interval_at(tokio::time::Instant::now() + every, every));
    let mut buf = Vec::new();
    loop {
        // Everything queued, in order, then wait.
        loop {
            let t = c.q.lock().map_or(Take::Empty, |mut q| q.take(BATCH));
            match t {
                Take::Overflowed => return Err(End::Overflow { clean: true }),
                Take::Empty => break,
                Take::Msgs(v) => {
                    buf.clear();
                    for m in &v {
                        buf.extend_from_slice(m);
                    }
                    send(c, s, &buf).await?;
                }
            }
        }
        if hub.0.closing.load(Ordering::Relaxed) {
            return Ok(());
        }
        tokio::select! {
            () = c.wake.notified() => {}
            _ = async {
                match stats.as_mut() {
                    Some(i) => i.tick().await,
                    None => std::future::pending().await,
                }
            } => {
                if !hub.0.stopping.load(Ordering::Relaxed) {
                    match statistics(hub).await {
                        Ok(b) => send(c, s, &b).await?,
                        // The RIB threads went away under a call in flight.
                        Err(_) if hub.0.stopping.load(Ordering::Relaxed) => {}
                        Err(e) => return Err(e),
                    }
                }
            }
        }
    }
}

/// Statistics Reports (RFC 7854 §4.8) for every established peer: routes
/// in its (post-policy) Adj-RIB-In (type 7) and best routes from it in the
/// Loc-RIB (type 8), summed over the RIB threads.
async fn statistics(hub: &BmpHub) -> Result<Vec<u8>, End> {
    let access = ribs(hub)?;
    let sum = tokio::task::spawn_blocking(move || (access.counts)())
        .await
        .map_err(|_| End::Rib("RIB call failed"))?
        .map_err(End::RibText)?;
    let peers: Vec<PeerRec> = hub
        .0
        .peers
        .lock()
        .map(|g| g.values().cloned().collect())
        .unwrap_or_default();
    let mut b = Vec::new();
    for p in peers {
        let (adj, loc) = sum.get(&p.header.address).copied().unwrap_or((0, 0));
        let mut h = p.header;
        h.timestamp = now_ts();
        encode::statistics(
            &h,
            &[
                Stat::Gauge(encode::stat::ADJ_RIB_IN, adj),
                Stat::Gauge(encode::stat::LOC_RIB, loc),
            ],
            &mut b,
        );
    }
    Ok(b)
}
