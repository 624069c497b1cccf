//! The cluster fabric's socket as a `pkt::Device`: one UDP socket bound to
//! this node's fabric address (GENEVE's port 6081 by default), sending each
//! packet to the fabric address of node `anno.nh`.
//!
//! The device is deliberately dumb: it moves datagrams. What goes in them
//! (GENEVE, the cluster option, packing) and where they go (direct or an
//! intermediate) is decided by the `FabricEncap` and `FabricDecap`
//! elements (crate `elements`, over the pure crate `cluster`).
//!
//! Non-blocking: `rx_burst` reads until the socket is empty or `max`
//! datagrams, `tx_burst` writes until the socket buffer is full and leaves
//! the rest in the batch for the next round. [`FabricDevice::poll_fd`] lets
//! the worker sleep in `poll(2)` when every device is idle, so N nodes on
//! two cores do not spin.
//!
//! With several dataplane cores, [`FabricDevice::bind_group`] gives each
//! core its own socket on the same address (`SO_REUSEPORT`).
//!
//! Limits: one system call per datagram (no `sendmmsg`/`recvmmsg` yet); a
//! datagram longer than a pool buffer's room is truncated by the kernel and
//! then refused by the decoder.

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;

use pkt::{Batch, DevStats, Device, Pool};

use crate::{IoError, Op};

/// A UDP fabric socket with the fabric addresses of the other nodes.
#[derive(Debug)]
pub struct FabricDevice {
    name: String,
    sock: UdpSocket,
    /// Fabric address by node id.
    peers: Vec<Option<SocketAddr>>,
    stats: DevStats,
    last: Option<IoError>,
}

fn sys(op: Op, e: &std::io::Error) -> IoError {
    IoError::Sys {
        op,
        errno: e.raw_os_error().unwrap_or(0),
    }
}

impl FabricDevice {
    /// Binds `local` (port 0: any free port, for tests) and records the
    /// peers' fabric addresses by node id (at most 64 nodes).
    pub fn bind(
        name: &str,
        local: SocketAddr,
        peers: &[(u16, SocketAddr)],
    ) -> Result<Self, IoError> {
        let sock = UdpSocket::bind(local).map_err(|e| sys(Op::Bind, &e))?;
        Self::with_socket(name, sock, peers)
    }

    fn with_socket(
        name: &str,
        sock: UdpSocket,
        peers: &[(u16, SocketAddr)],
    ) -> Result<Self, IoError> {
        sock.set_nonblocking(true)
            .map_err(|e| sys(Op::SetSockOpt, &e))?;
        let n = peers
            .iter()
            .map(|(id, _)| usize::from(*id) + 1)
            .max()
            .unwrap_or(0);
        if n > 64 {
            return Err(IoError::Config("a fabric node id is 0..=63"));
        }
        let mut table = vec![None; n];
        for (id, a) in peers {
            if let Some(slot) = table.get_mut(usize::from(*id)) {
                *slot = Some(*a);
            }
        }
        Ok(FabricDevice {
            name: name.to_string(),
            sock,
            peers: table,
            stats: DevStats::default(),
            last: None,
        })
    }

    /// `n` devices on one fabric address, one per dataplane core: UDP
    /// sockets in one `SO_REUSEPORT` group (the first binds `local`, port
    /// 0 picking a free port; the others bind the address it got), so
    /// each core sends from its own socket and the kernel spreads the
    /// datagrams received over the group by their 4-tuple (all those of
    /// one peer socket reach one core).
    pub fn bind_group(
        name: &str,
        local: SocketAddr,
        peers: &[(u16, SocketAddr)],
        n: usize,
    ) -> Result<Vec<Self>, IoError> {
        let mut at = local;
        let mut v = Vec::new();
        for _ in 0..n.max(1) {
            let s = socket2::Socket::new(
                socket2::Domain::for_address(at),
                socket2::Type::DGRAM,
                Some(socket2::Protocol::UDP),
            )
            .map_err(|e| sys(Op::Socket, &e))?;
            let one: libc::c_int = 1;
            // SAFETY: `one` lives across the call and its size is passed.
            let rc = unsafe {
                libc::setsockopt(
                    s.as_raw_fd(),
                    libc::SOL_SOCKET,
                    libc::SO_REUSEPORT,
                    (&one as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                )
            };
            if rc != 0 {
                return Err(sys(Op::SetSockOpt, &std::io::Error::last_os_error()));
            }
            s.bind(&at.into()).map_err(|e| sys(Op::Bind, &e))?;
            let d = Self::with_socket(name, s.into(), peers)?;
            at = d.local_addr()?;
            v.push(d);
        }
        Ok(v)
    }

    /// Asks for socket buffers of `bytes` each way (a fabric under load
    /// receives bursts of datagrams between two polls): `SO_RCVBUFFORCE`
    /// / `SO_SNDBUFFORCE` (root), else the plain options, which the kernel
    /// caps at `net.core.rmem_max` / `wmem_max`. Returns the receive
    /// buffer the kernel granted.
    pub fn set_buffers(&mut self, bytes: usize) -> usize {
        let fd = self.sock.as_raw_fd();
        let v = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
        let set = |opt: libc::c_int| -> bool {
            // SAFETY: `v` lives across the call and its size is passed.
            unsafe {
                libc::setsockopt(
                    fd,
                    libc::SOL_SOCKET,
                    opt,
                    (&v as *const libc::c_int).cast(),
                    std::mem::size_of::<libc::c_int>() as libc::socklen_t,
                ) == 0
            }
        };
        if !set(libc::SO_RCVBUFFORCE) {
            set(libc::SO_RCVBUF);
        }
        if !set(libc::SO_SNDBUFFORCE) {
            set(libc::SO_SNDBUF);
        }
        let mut got: libc::c_int = 0;
        let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        // SAFETY: `got` and `len` live across the call; `len` is its size.
        let rc = unsafe {
            libc::getsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&mut got as *mut libc::c_int).cast(),
                &mut len,
            )
        };
        if rc == 0 {
            usize::try_from(got).unwrap_or(0)
        } else {
            0
        }
    }

    /// The bound address (the real port when bound to port 0).
    pub fn local_addr(&self) -> Result<SocketAddr, IoError> {
        self.sock.local_addr().map_err(|e| sys(Op::Bind, &e))
    }

    /// Sets or replaces the fabric address of node `id`.
    pub fn set_peer(&mut self, id: u16, addr: SocketAddr) -> Result<(), IoError> {
        let i = usize::from(id);
        if i >= 64 {
            return Err(IoError::Config("a fabric node id is 0..=63"));
        }
        if self.peers.len() <= i {
            self.peers.resize(i + 1, None);
        }
        if let Some(s) = self.peers.get_mut(i) {
            *s = Some(addr);
        }
        Ok(())
    }
}

impl Device for FabricDevice {
    type Error = IoError;

    fn name(&self) -> &str {
        &self.name
    }

    fn rx_burst(&mut self, pool: &Pool, batch: &mut Batch, max: usize) -> usize {
        let mut got = 0;
        let room = pool.buf_size().saturating_sub(pool.headroom());
        while got < max && !batch.is_full() {
            let Some(mut p) = pool.alloc() else {
                self.stats.rx_nobuf += 1;
                break;
            };
            if p.set_len(room).is_err() {
                self.stats.rx_nobuf += 1;
                break;
            }
            match self.sock.recv_from(p.data_mut()) {
                Ok((n, _from)) => {
                    p.truncate(n);
                    self.stats.rx += 1;
                    self.stats.rx_bytes += n as u64;
                    if batch.push(p).is_err() {
                        break;
                    }
                    got += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                Err(e) => {
                    self.stats.errors += 1;
                    self.last = Some(sys(Op::Recv, &e));
                    break;
                }
            }
        }
        if got == 0 {
            self.stats.rx_empty_polls += 1;
        }
        got
    }

    fn tx_burst(&mut self, batch: &mut Batch) -> usize {
        let mut sent = 0;
        let mut done = 0;
        for p in batch.iter() {
            let to = self.peers.get(p.anno.nh as usize).copied().flatten();
            let Some(to) = to else {
                // Unknown node: nothing to retry, drop it.
                self.stats.tx_dropped += 1;
                done += 1;
                continue;
            };
            match self.sock.send_to(p.data(), to) {
                Ok(_) => {
                    self.stats.tx += 1;
                    self.stats.tx_bytes += p.len() as u64;
                    sent += 1;
                    done += 1;
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    // Socket buffer full: the rest waits for the next round.
                    self.stats.tx_ring_full += 1;
                    break;
                }
                Err(e) => {
                    // ECONNREFUSED from an earlier datagram to a dead peer,
                    // or a route error: this one is lost.
                    self.stats.errors += 1;
                    self.stats.tx_dropped += 1;
                    self.last = Some(sys(Op::Send, &e));
                    done += 1;
                }
            }
        }
        batch.drain_front(done).for_each(drop);
        sent
    }

    fn stats(&self) -> DevStats {
        self.stats
    }

    fn poll_fd(&self) -> Option<i32> {
        Some(self.sock.as_raw_fd())
    }

    fn last_error(&self) -> Option<IoError> {
        // A send error to one peer (a node that died) must not stop the
        // worker: it is counted, not reported as fatal.
        match self.last {
            Some(IoError::Sys { op: Op::Send, .. }) => None,
            e => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_datagrams_between_nodes_by_anno_nh() {
        let lo: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let mut a = FabricDevice::bind("fabric", lo, &[]).expect("bind a");
        let mut b = FabricDevice::bind("fabric", lo, &[]).expect("bind b");
        assert!(b.set_buffers(1 << 20) >= 100_000, "some buffer granted");
        a.set_peer(1, b.local_addr().expect("b")).expect("peer");
        let pool = Pool::new(16);
        let mut out = Batch::new();
        for (nh, byte) in [(1u32, 7u8), (9, 8), (1, 9)] {
            let mut p = pool.alloc_from(&[byte; 100]).expect("buffer");
            p.anno.nh = nh;
            out.push(p).expect("room");
        }
        assert_eq!(a.tx_burst(&mut out), 2);
        assert!(out.is_empty());
        assert_eq!(a.stats().tx_dropped, 1, "node 9 is unknown");
        let mut got = Batch::new();
        // Loopback delivery is immediate but not synchronous: wait on the fd.
        for _ in 0..100 {
            b.rx_burst(&pool, &mut got, 32);
            if got.len() == 2 {
                break;
            }
            crate::sys::poll_many(&[b.poll_fd().expect("fd")], 10).expect("poll");
        }
        let bytes: Vec<Vec<u8>> = got.iter().map(|p| p.data().to_vec()).collect();
        assert_eq!(bytes, vec![vec![7u8; 100], vec![9u8; 100]]);
        assert_eq!(b.rx_burst(&pool, &mut got, 32), 0, "empty socket");
        assert_eq!(b.stats().rx, 2);
    }

    /// Two devices of one group share the address; datagrams from several
    /// sender sockets reach the group (each on one member), and each
    /// member sends.
    #[test]
    fn a_reuseport_group_shares_one_address() {
        let lo: SocketAddr = "127.0.0.1:0".parse().expect("addr");
        let mut g = FabricDevice::bind_group("fabric", lo, &[], 2).expect("group");
        assert_eq!(g.len(), 2);
        let at = g[0].local_addr().expect("addr");
        assert_eq!(g[1].local_addr().expect("addr"), at);
        assert!(
            FabricDevice::bind("fabric", at, &[]).is_err(),
            "a socket outside the group cannot take the address"
        );
        let pool = Pool::new(64);
        let mut senders = Vec::new();
        for _ in 0..16 {
            let mut s = FabricDevice::bind("fabric", lo, &[]).expect("sender");
            s.set_peer(0, at).expect("peer");
            let mut b = Batch::new();
            let mut p = pool.alloc_from(&[1u8; 40]).expect("buffer");
            p.anno.nh = 0;
            b.push(p).expect("room");
            assert_eq!(s.tx_burst(&mut b), 1);
            senders.push(s);
        }
        let mut got = 0;
        for _ in 0..100 {
            for d in g.iter_mut() {
                let mut b = Batch::new();
                got += d.rx_burst(&pool, &mut b, 32);
            }
            if got == 16 {
                break;
            }
            let fds: Vec<i32> = g.iter().filter_map(|d| d.poll_fd()).collect();
            crate::sys::poll_many(&fds, 10).expect("poll");
        }
        assert_eq!(got, 16, "every datagram reached one member");
        // Each member sends from the shared address.
        let back = senders[0].local_addr().expect("addr");
        for d in g.iter_mut() {
            d.set_peer(1, back).expect("peer");
            let mut b = Batch::new();
            let mut p = pool.alloc_from(&[2u8; 40]).expect("buffer");
            p.anno.nh = 1;
            b.push(p).expect("room");
            assert_eq!(d.tx_burst(&mut b), 1);
        }
    }
}
