//! The BGP listener: accepts connections on the configured addresses and
//! hands each to the session of its remote address. Connections from
//! unknown addresses are closed (BIRD and FRR do the same unless dynamic
//! neighbours are configured).

use std::collections::HashMap;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::{Arc, Mutex};

use tokio::net::{TcpListener, TcpSocket, TcpStream};
use tokio::sync::mpsc::UnboundedSender;
use tracing::{debug, info, warn};

use super::md5;

#[derive(Debug)]
struct Entry {
    tx: UnboundedSender<TcpStream>,
    md5: Option<String>,
}

#[derive(Debug, Default)]
struct Inner {
    peers: HashMap<IpAddr, Entry>,
    /// Raw fds of the listening sockets, to install MD5 keys of peers
    /// added later.
    listeners: Vec<(std::os::fd::RawFd, bool)>,
}

/// Remote address -> the session that owns it. Cheap to clone. Also
/// carries the daemon's "a writer drained" signal ([`Registry::drained`]).
#[derive(Clone, Debug, Default)]
pub struct Registry(Arc<Mutex<Inner>>, Arc<tokio::sync::Notify>);

fn same_family(listener_v6: bool, peer: IpAddr) -> bool {
    listener_v6 == peer.is_ipv6()
}

impl Registry {
    /// Notified by a session's writer when its queue of encoded UPDATEs
    /// fell below [`bgp_core::OUT_QUEUE_LOW`]: the RIB holds the rest of
    /// that session's changes back until then, so the daemon wakes the
    /// RIB threads at once instead of at their next periodic tick.
    pub fn drained(&self) -> Arc<tokio::sync::Notify> {
        self.1.clone()
    }

    /// Registers a session; replaces an older one for the same address.
    pub fn register(&self, addr: IpAddr, tx: UnboundedSender<TcpStream>, md5: Option<String>) {
        let Ok(mut g) = self.0.lock() else {
            return;
        };
        if let Some(key) = md5.as_deref() {
            for (fd, v6) in &g.listeners {
                if same_family(*v6, addr) {
                    if let Err(e) = md5::set_md5(*fd, addr, key.as_bytes()) {
                        warn!(%addr, "cannot set the TCP-MD5 key on a listener: {e}");
                    }
                }
            }
        }
        g.peers.insert(addr, Entry { tx, md5 });
    }

    /// Forgets a session (neighbour removed).
    pub fn unregister(&self, addr: IpAddr) {
        self.remove(addr, None);
    }

    /// Forgets `addr` only while it still belongs to the session that owns
    /// `tx`: a session ending after the daemon replaced it (reload) must
    /// not unregister its successor.
    pub(crate) fn unregister_if(&self, addr: IpAddr, tx: &UnboundedSender<TcpStream>) {
        self.remove(addr, Some(tx));
    }

    fn remove(&self, addr: IpAddr, only: Option<&UnboundedSender<TcpStream>>) {
        let Ok(mut g) = self.0.lock() else {
            return;
        };
        if let Some(tx) = only {
            if !g.peers.get(&addr).is_some_and(|e| e.tx.same_channel(tx)) {
                return;
            }
        }
        if let Some(e) = g.peers.remove(&addr) {
            if e.md5.is_some() {
                for (fd, v6) in &g.listeners {
                    if same_family(*v6, addr) {
                        let _ = md5::set_md5(*fd, addr, b"");
                    }
                }
            }
        }
    }

    fn dispatch(&self, stream: TcpStream, remote: SocketAddr) {
        let ip = canonical(remote.ip());
        let tx = self
            .0
            .lock()
            .ok()
            .and_then(|g| g.peers.get(&ip).map(|e| e.tx.clone()));
        match tx {
            Some(tx) => {
                debug!(%remote, "incoming connection");
                let _ = tx.send(stream);
            }
            None => info!(%remote, "connection from an unknown address closed"),
        }
    }

    fn add_listener(&self, fd: std::os::fd::RawFd, v6: bool) {
        let Ok(mut g) = self.0.lock() else {
            return;
        };
        for (addr, e) in &g.peers {
            if let Some(key) = e.md5.as_deref() {
                if same_family(v6, *addr) {
                    if let Err(err) = md5::set_md5(fd, *addr, key.as_bytes()) {
                        warn!(%addr, "cannot set the TCP-MD5 key on a listener: {err}");
                    }
                }
            }
        }
        g.listeners.push((fd, v6));
    }
}

/// IPv4-mapped IPv6 addresses (from a dual-stack socket) as IPv4.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let s = match addr {
        SocketAddr::V4(_) => TcpSocket::new_v4()?,
        SocketAddr::V6(_) => {
            let s = TcpSocket::new_v6()?;
            // So that "0.0.0.0:179" and "[::]:179" can both be bound.
            socket2::SockRef::from(&s).set_only_v6(true)?;
            s
        }
    };
    s.set_reuseaddr(true)?;
    // SYN-ACKs leave with the listener's TTL: 255, so that they reach a
    // neighbour that checks GTSM (RFC 5082) on its connecting socket. Each
    // accepted connection then gets its neighbour's own TTL settings.
    super::ttl::HopLimits {
        ttl: Some(255),
        gtsm_hops: None,
    }
    .apply(&s, addr.is_ipv6())?;
    s.bind(addr)?;
    s.listen(128)
}

/// Binds every address (failing if one cannot be bound), then accepts in
/// background tasks of the current runtime.
pub async fn listen(addrs: Vec<SocketAddr>, registry: Registry) -> io::Result<()> {
    let mut bound = Vec::new();
    for a in addrs {
        let l = bind(a).map_err(|e| io::Error::new(e.kind(), format!("{a}: {e}")))?;
        registry.add_listener(l.as_raw_fd(), a.is_ipv6());
        info!(addr = %a, "listening for BGP");
        bound.push(l);
    }
    for l in bound {
        let reg = registry.clone();
        tokio::spawn(async move {
            loop {
                match l.accept().await {
                    Ok((s, remote)) => reg.dispatch(s, remote),
                    Err(e) => {
                        warn!("accept failed: {e}");
                        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    }
                }
            }
        });
    }
    Ok(())
}
