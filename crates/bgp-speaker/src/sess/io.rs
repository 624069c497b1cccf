//! Per-connection reader and writer tasks. The reader frames messages and
//! hands them to the session task; the writer sends urgent messages (OPEN,
//! KEEPALIVE, NOTIFICATION, ROUTE-REFRESH) ahead of UPDATE backlog, which it
//! writes in chunks cut at message boundaries, so a large export never
//! delays a keepalive by more than one chunk.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bgp_wire::{frame, ParseCtx, WireError, HEADER_LEN};
use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;

use crate::msg::PeerStatus;
use crate::stages::{self, Stage};

/// Largest piece of UPDATE backlog written before urgent messages get a
/// turn.
const CHUNK: usize = 64 * 1024;

/// What the reader reports.
#[derive(Debug)]
pub enum ReadEvent {
    /// One whole message, header included (MRT dumps record it as it
    /// came); the body starts at [`HEADER_LEN`].
    Msg {
        ty: u8,
        raw: Vec<u8>,
    },
    /// The byte stream cannot be framed (RFC 4271 §6.1); the data is what
    /// the error's offsets refer to.
    HeaderErr(WireError, Vec<u8>),
    Closed(String),
}

/// Frames messages until the connection closes or the session goes away.
pub async fn reader(rd: OwnedReadHalf, tx: mpsc::Sender<ReadEvent>) {
    // Frame with the extended limit; the session enforces 4096 when
    // extended messages were not negotiated (RFC 8654 §4).
    let ctx = ParseCtx {
        extended_message: true,
        ..ParseCtx::legacy()
    };
    let mut buf: Vec<u8> = Vec::with_capacity(2 * 65536);
    let mut start = 0usize;
    loop {
        loop {
            let t0 = std::time::Instant::now();
            let rest = buf.get(start..).unwrap_or(&[]);
            match frame(rest, ctx) {
                Ok(Some(f)) => {
                    let ev = ReadEvent::Msg {
                        ty: f.header.msg_type,
                        raw: rest.get(..f.len).unwrap_or(&[]).to_vec(),
                    };
                    start += f.len;
                    stages::record(Stage::Framing, t0);
                    if tx.send(ev).await.is_err() {
                        return;
                    }
                }
                Ok(None) => break,
                Err(e) => {
                    let data = rest
                        .get(..HEADER_LEN.min(rest.len()))
                        .unwrap_or(&[])
                        .to_vec();
                    let _ = tx.send(ReadEvent::HeaderErr(e, data)).await;
                    return;
                }
            }
        }
        if start > 0 {
            buf.drain(..start);
            start = 0;
        }
        if buf.capacity() - buf.len() < 4096 {
            buf.reserve(65536);
        }
        // Readiness first, then a non-blocking read: the socket_read stage
        // times the system call, not the wait for data.
        let got = loop {
            let t0 = std::time::Instant::now();
            match rd.try_read_buf(&mut buf) {
                Ok(n) => {
                    stages::record(Stage::SocketRead, t0);
                    break Ok(n);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if let Err(e) = rd.readable().await {
                        break Err(e);
                    }
                }
                Err(e) => break Err(e),
            }
        };
        match got {
            Ok(0) => {
                let _ = tx
                    .send(ReadEvent::Closed("connection closed by peer".into()))
                    .await;
                return;
            }
            Ok(_) => {}
            Err(e) => {
                let _ = tx.send(ReadEvent::Closed(format!("read error: {e}"))).await;
                return;
            }
        }
    }
}

/// A message for the writer.
#[derive(Debug)]
pub enum WriteMsg {
    Urgent(Vec<u8>),
    /// Write what is queued as urgent, then close the connection.
    Close,
}

/// Where the chunk that starts at `off` should end: whole messages, at
/// least [`CHUNK`] bytes unless the buffer ends first; with the number of
/// UPDATEs and of ROUTE-REFRESHes (BoRR/EoRR markers) in it.
fn chunk_end(buf: &[u8], off: usize) -> (usize, u64, u64) {
    let mut end = off;
    let (mut updates, mut refreshes) = (0u64, 0u64);
    while end < buf.len() && end - off < CHUNK {
        let len = buf
            .get(end + 16..end + 18)
            .map_or(0, |b| u16::from_be_bytes([b[0], b[1]]) as usize);
        if len < HEADER_LEN {
            // Not a message boundary (cannot happen with our encoder):
            // write the rest as it is.
            return (buf.len(), updates, refreshes);
        }
        match buf.get(end + 18).copied() {
            Some(bgp_wire::consts::msg_type::UPDATE) => updates += 1,
            Some(bgp_wire::consts::msg_type::ROUTE_REFRESH) => refreshes += 1,
            _ => {}
        }
        end = (end + len).min(buf.len());
    }
    (end, updates, refreshes)
}

/// Writes until the connection fails, `Close` arrives or the session goes
/// away. Every byte handed over in `bulk` leaves
/// [`PeerStatus::out_queued_bytes`] exactly once: when written, or when
/// the writer ends with it unsent.
/// `drained` is notified when the queue falls below
/// [`bgp_core::OUT_QUEUE_LOW`] (the RIB then encodes more for it).
pub async fn writer(
    mut wr: OwnedWriteHalf,
    mut urgent: mpsc::UnboundedReceiver<WriteMsg>,
    mut bulk: mpsc::UnboundedReceiver<bytes::Bytes>,
    status: Arc<PeerStatus>,
    drained: Arc<tokio::sync::Notify>,
) {
    let mut cur: Option<(bytes::Bytes, usize)> = None;
    write_loop(&mut wr, &mut urgent, &mut bulk, &status, &drained, &mut cur).await;
    let mut unsent = cur.map_or(0, |(b, off)| b.len().saturating_sub(off)) as u64;
    // Refuse further sends, then count what is still queued.
    bulk.close();
    while let Ok(b) = bulk.try_recv() {
        unsent += b.len() as u64;
    }
    status.unqueue(unsent);
}

async fn write_loop(
    wr: &mut OwnedWriteHalf,
    urgent: &mut mpsc::UnboundedReceiver<WriteMsg>,
    bulk: &mut mpsc::UnboundedReceiver<bytes::Bytes>,
    status: &PeerStatus,
    drained: &tokio::sync::Notify,
    cur: &mut Option<(bytes::Bytes, usize)>,
) {
    loop {
        while let Ok(m) = urgent.try_recv() {
            match m {
                WriteMsg::Urgent(b) => {
                    if wr.write_all(&b).await.is_err() {
                        return;
                    }
                }
                WriteMsg::Close => {
                    let _ = wr.flush().await;
                    let _ = wr.shutdown().await;
                    return;
                }
            }
        }
        if let Some((buf, off)) = cur.as_mut() {
            let (end, updates, refreshes) = chunk_end(buf, *off);
            let Some(piece) = buf.get(*off..end) else {
                *cur = None;
                continue;
            };
            let t0 = std::time::Instant::now();
            if wr.write_all(piece).await.is_err() {
                return;
            }
            stages::record(Stage::Write, t0);
            if status.unqueue((end - *off) as u64) {
                drained.notify_one();
            }
            status.updates_out.fetch_add(updates, Ordering::Relaxed);
            status.refreshes_out.fetch_add(refreshes, Ordering::Relaxed);
            status
                .msgs_out
                .fetch_add(updates + refreshes, Ordering::Relaxed);
            *off = end;
            if *off >= buf.len() {
                *cur = None;
            }
            continue;
        }
        tokio::select! {
            biased;
            m = urgent.recv() => match m {
                Some(WriteMsg::Urgent(b)) => {
                    if wr.write_all(&b).await.is_err() {
                        return;
                    }
                }
                Some(WriteMsg::Close) | None => {
                    let _ = wr.flush().await;
                    let _ = wr.shutdown().await;
                    return;
                }
            },
            b = bulk.recv() => match b {
                Some(b) => *cur = Some((b, 0)),
                None => return,
            },
        }
    }
}
