//! Per-connection reader and writer tasks. The reader frames messages and
//! hands them to the session task; the writer sends urgent messages (OPEN,
//! KEEPALIVE, NOTIFICATION, ROUTE-REFRESH) ahead of UPDATE backlog, which it
//! writes in chunks cut at message boundaries, so a large export never
//! delays a keepalive by more than one chunk.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use bgp_wire::{frame, ParseCtx, WireError, HEADER_LEN};
use std::io::IoSlice;

use tokio::io::AsyncWriteExt;
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::sync::mpsc;

use super::pack::{self, Origin, Plan};
use crate::msg::PeerStatus;
use crate::stages::{self, Stage};
use bgp_core::QUEUE_PARTS;

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
    /// The session is Established with this largest message (4096, or
    /// 65535 with RFC 8654 extended messages). Its queued UPDATEs are
    /// packed from then on ([`super::pack`]).
    Pack {
        max: usize,
    },
    /// Write what is queued as urgent, then close the connection.
    Close,
}

/// Most bytes of queued UPDATEs taken into one packing window: twice what
/// the RIB may queue for a session ([`bgp_core::OUT_QUEUE_LIMIT`]), as two
/// parts may each fill it, each flush in one piece; packing needs both in
/// one window.
const WINDOW: usize = 2 << 20;

/// Most slices handed to one `writev` (below Linux's IOV_MAX of 1024).
const MAX_SLICES: usize = 512;

/// What the writer holds of the bulk queue: a window of buffers, its plan
/// (see [`super::pack`]), how far it is written, and how many of its
/// input bytes are still counted in [`PeerStatus::out_queued_bytes`].
#[derive(Default)]
struct Window {
    bufs: Vec<bytes::Bytes>,
    origins: Vec<Origin>,
    /// Per RIB part (index modulo `QUEUE_PARTS`): its input bytes in the
    /// window still counted in [`PeerStatus::part_queued_bytes`].
    part_left: [u64; QUEUE_PARTS],
    plan: Plan,
    pos: usize,
    counted: u64,
}

/// Writes until the connection fails, `Close` arrives or the session goes
/// away. Every byte handed over in `bulk` leaves
/// [`PeerStatus::out_queued_bytes`] exactly once: when written (or joined
/// into another message, [`super::pack`]), or when the writer ends with it
/// unsent.
/// `drained` is notified when the queue falls below
/// [`bgp_core::OUT_QUEUE_LOW`] (the RIB then encodes more for it).
pub async fn writer(
    mut wr: OwnedWriteHalf,
    mut urgent: mpsc::UnboundedReceiver<WriteMsg>,
    mut bulk: mpsc::UnboundedReceiver<(bytes::Bytes, Origin)>,
    status: Arc<PeerStatus>,
    drained: Arc<tokio::sync::Notify>,
) {
    let mut win = Window::default();
    write_loop(&mut wr, &mut urgent, &mut bulk, &status, &drained, &mut win).await;
    let mut unsent = win.counted;
    for (p, n) in win.part_left.iter().enumerate() {
        status.unqueue_part(p, *n);
    }
    // Refuse further sends, then count what is still queued.
    bulk.close();
    while let Ok((b, o)) = bulk.try_recv() {
        unsent += b.len() as u64;
        if o != Origin::NONE {
            status.unqueue_part(o.part as usize, b.len() as u64);
        }
    }
    status.unqueue(unsent);
}

/// Writes all of `slices`, however the kernel splits it.
async fn write_all_vectored(
    wr: &mut OwnedWriteHalf,
    mut slices: &mut [IoSlice<'_>],
) -> std::io::Result<()> {
    while !slices.is_empty() {
        let n = wr.write_vectored(slices).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        IoSlice::advance_slices(&mut slices, n);
    }
    Ok(())
}

/// Writes the next chunk of the window: whole output messages, at least
/// [`CHUNK`] bytes unless the window ends first. None when the connection
/// failed; else whether the queue crossed [`bgp_core::OUT_QUEUE_LOW`]
/// downwards.
async fn write_chunk(
    wr: &mut OwnedWriteHalf,
    win: &mut Window,
    status: &PeerStatus,
) -> Option<bool> {
    let Window {
        bufs,
        origins,
        part_left,
        plan,
        pos,
        counted,
    } = win;
    let mut part_written = [0u64; QUEUE_PARTS];
    let segs = plan.segs();
    let heads = plan.heads();
    let (mut bytes, mut updates, mut refreshes) = (0usize, 0u64, 0u64);
    let mut slices: Vec<IoSlice<'_>> = Vec::with_capacity(64);
    let t0 = std::time::Instant::now();
    while *pos < segs.len() {
        let s = segs[*pos];
        *pos += 1;
        let src: &[u8] = if s.buf == pack::HEADS {
            heads
        } else {
            bufs.get(s.buf as usize).map_or(&[][..], |b| &b[..])
        };
        let piece = src.get(s.start as usize..s.end as usize).unwrap_or(&[]);
        if !piece.is_empty() {
            slices.push(IoSlice::new(piece));
        }
        bytes += piece.len();
        if let Some(o) = origins.get(s.buf as usize).filter(|o| **o != Origin::NONE) {
            part_written[o.part as usize % QUEUE_PARTS] += piece.len() as u64;
        }
        updates += u64::from(s.updates);
        refreshes += u64::from(s.refreshes);
        let done = s.ends_msg && bytes >= CHUNK;
        if slices.len() >= MAX_SLICES || done || *pos == segs.len() {
            if write_all_vectored(wr, &mut slices).await.is_err() {
                return None;
            }
            slices.clear();
        }
        if done {
            break;
        }
    }
    stages::record(Stage::Write, t0);
    // Buffers read for the last time are freed now, not with the window.
    let first = *pos;
    for (i, b) in bufs.iter_mut().enumerate() {
        if plan.last_use(i).is_some_and(|u| (u as usize) < first) && !b.is_empty() {
            *b = bytes::Bytes::new();
        }
    }
    // Joined messages leave fewer bytes than came in: the rest of the
    // input is uncounted once the window is written.
    let all = *pos >= segs.len();
    let n = if all {
        *counted
    } else {
        (bytes as u64).min(*counted)
    };
    *counted -= n;
    // Each part's count, too: a part below the mark gets its refill.
    let mut part_low = false;
    for (p, left) in part_left.iter_mut().enumerate() {
        let m = if all {
            *left
        } else {
            part_written[p].min(*left)
        };
        if m > 0 {
            *left -= m;
            part_low |= status.unqueue_part(p, m);
        }
    }
    status.updates_out.fetch_add(updates, Ordering::Relaxed);
    status.refreshes_out.fetch_add(refreshes, Ordering::Relaxed);
    status
        .msgs_out
        .fetch_add(updates + refreshes, Ordering::Relaxed);
    let low = status.unqueue(n);
    Some(low || part_low)
}

async fn write_loop(
    wr: &mut OwnedWriteHalf,
    urgent: &mut mpsc::UnboundedReceiver<WriteMsg>,
    bulk: &mut mpsc::UnboundedReceiver<(bytes::Bytes, Origin)>,
    status: &PeerStatus,
    drained: &tokio::sync::Notify,
    win: &mut Window,
) {
    loop {
        while let Ok(m) = urgent.try_recv() {
            match m {
                WriteMsg::Urgent(b) => {
                    if wr.write_all(&b).await.is_err() {
                        return;
                    }
                }
                WriteMsg::Pack { max } => win.plan.set_session(max),
                WriteMsg::Close => {
                    let _ = wr.flush().await;
                    let _ = wr.shutdown().await;
                    return;
                }
            }
        }
        if win.pos < win.plan.segs().len() {
            match write_chunk(wr, win, status).await {
                None => return,
                Some(true) => drained.notify_one(),
                Some(false) => {}
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
                Some(WriteMsg::Pack { max }) => win.plan.set_session(max),
                Some(WriteMsg::Close) | None => {
                    let _ = wr.flush().await;
                    let _ = wr.shutdown().await;
                    return;
                }
            },
            b = bulk.recv() => match b {
                Some(b) => take_window(win, b, bulk),
                None => return,
            },
        }
    }
}

/// Starts a window with `first` and whatever else is queued (up to
/// [`WINDOW`] bytes; nothing is waited for), and plans it.
fn take_window(
    win: &mut Window,
    first: (bytes::Bytes, Origin),
    bulk: &mut mpsc::UnboundedReceiver<(bytes::Bytes, Origin)>,
) {
    win.bufs.clear();
    win.origins.clear();
    win.pos = 0;
    let mut size = 0;
    let mut next = Some(first);
    while let Some((b, o)) = next.take() {
        size += b.len();
        if o != Origin::NONE {
            win.part_left[o.part as usize % QUEUE_PARTS] += b.len() as u64;
        }
        win.bufs.push(b);
        win.origins.push(o);
        if size < WINDOW {
            next = bulk.try_recv().ok();
        }
    }
    win.counted = size as u64;
    win.plan.plan(&win.bufs, &win.origins);
}
