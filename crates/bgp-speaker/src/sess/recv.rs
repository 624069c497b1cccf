//! The receive side of a session: framed messages from the reader task
//! -> MRT record, FSM events, decoded UPDATEs into the batch for the RIB.

use std::sync::atomic::Ordering;

use base::AfiSafi;
use bgp_fsm::{Event, State};
use bgp_wire::consts::msg_type;
use bgp_wire::{Header, NotificationView, OpenView, RouteRefresh, WireError, HEADER_LEN};
use tracing::{debug, warn};

use super::{describe_notification, io, Session};
use crate::msg::RibInput;
use bgp_core::decode::{decode_update_for, Decoded};

impl Session {
    pub(super) async fn on_frame(&mut self, f: Option<io::ReadEvent>) {
        let Some(f) = f else {
            self.drive(Event::TcpConnectionFails).await;
            return;
        };
        match f {
            io::ReadEvent::Closed(why) => {
                debug!(peer = %self.p.name, "{why}");
                if self.fsm.state() == State::Established {
                    self.status.set_last_error(why);
                }
                self.drive(Event::TcpConnectionFails).await;
            }
            io::ReadEvent::HeaderErr(e, data) => {
                self.drive(Event::header_err(e, &data)).await;
            }
            io::ReadEvent::Msg { ty, raw } => {
                self.status.msgs_in.fetch_add(1, Ordering::Relaxed);
                if let Some(m) = self.mrt.as_ref() {
                    m.message(&self.mrt_peer(), &raw);
                }
                if let Some(t) = self.bmp.as_mut() {
                    match ty {
                        msg_type::UPDATE => t.hub.received_update(self.p.remote.ip(), &raw),
                        msg_type::OPEN => t.received_open.clone_from(&raw),
                        msg_type::NOTIFICATION => t.notification_received = Some(raw.clone()),
                        _ => {}
                    }
                }
                let body = raw.get(HEADER_LEN..).unwrap_or(&[]);
                self.count_in(ty);
                // RFC 4271 §6.1 lengths per type, and RFC 8654 §4: without
                // the Extended Message capability nothing over 4096 octets.
                let h = Header {
                    length: raw.len().min(usize::from(u16::MAX)) as u16,
                    msg_type: ty,
                };
                if let Err(e) = h.check_length(self.ctx) {
                    warn!(peer = %self.p.name, error = ?e, "message of a bad length");
                    let ev = match e {
                        // RFC 7313 §5: 7/1, the whole message as data.
                        WireError::RouteRefreshLength { .. } if self.enhanced_refresh() => {
                            Event::update_msg_err(e, body)
                        }
                        e => Event::header_err(e.without_enhanced_refresh(), body),
                    };
                    self.drive(ev).await;
                    return;
                }
                self.on_message(ty, body).await;
            }
        }
    }

    /// Counts one received message by type (`show protocols all`,
    /// `tessera_bgp_messages_received_total`), malformed ones included.
    fn count_in(&self, ty: u8) {
        let c = match ty {
            msg_type::OPEN => &self.status.opens_in,
            msg_type::UPDATE => &self.status.updates_in,
            msg_type::NOTIFICATION => &self.status.notifications_in,
            msg_type::KEEPALIVE => &self.status.keepalives_in,
            msg_type::ROUTE_REFRESH => &self.status.refreshes_in,
            _ => return,
        };
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether enhanced route refresh (RFC 7313) was negotiated.
    fn enhanced_refresh(&self) -> bool {
        self.negotiated
            .as_ref()
            .is_some_and(|n| n.enhanced_route_refresh)
    }

    async fn on_message(&mut self, ty: u8, body: &[u8]) {
        match ty {
            msg_type::OPEN => {
                let ev = match OpenView::parse(body).and_then(|o| {
                    o.validate()?;
                    o.to_owned()
                }) {
                    Ok(o) => Event::BgpOpen(o),
                    Err(e) => Event::open_msg_err(e, body),
                };
                self.drive(ev).await;
                if self.fsm.state() == State::OpenConfirm && self.pending.is_some() {
                    self.resolve_collision().await;
                }
            }
            msg_type::KEEPALIVE => {
                self.drive(Event::KeepAliveMsg).await;
            }
            msg_type::NOTIFICATION => match NotificationView::parse(body) {
                Ok(n) => {
                    let text = format!("Received: {}", describe_notification(&n));
                    warn!(peer = %self.p.name, "{text}");
                    self.status.set_last_error(text);
                    let ev = Event::notification_received(n);
                    self.drive(ev).await;
                }
                Err(_) => self.drive(Event::TcpConnectionFails).await,
            },
            msg_type::UPDATE => {
                if self.fsm.state() != State::Established {
                    // The FSM answers with an FSM error (§8.2.2).
                    self.drive(Event::UpdateMsg).await;
                    return;
                }
                if self.stream.is_some() {
                    // Per-worker streams: the worker that takes the batch
                    // parses it; a resetting UPDATE comes back as
                    // `on_worker_reset`. The hold timer restarts now, as
                    // for any UPDATE received (RFC 4271 §8.2.2).
                    self.drive(Event::UpdateMsg).await;
                    self.raw.push(bytes::Bytes::copy_from_slice(body));
                    return;
                }
                let t0 = std::time::Instant::now();
                let decoded = decode_update_for(body, self.ctx, &self.rx);
                let ns = crate::stages::elapsed_ns(t0);
                self.status.decode_ns.fetch_add(ns, Ordering::Relaxed);
                crate::stages::STAGES.record_ns(crate::stages::Stage::Parse, ns);
                match decoded {
                    Decoded::Ok(d, note) => {
                        if let Some((e, disp)) = note {
                            warn!(peer = %self.p.name, error = ?e, ?disp, "RFC 7606: malformed UPDATE handled without reset");
                        }
                        self.drive(Event::UpdateMsg).await;
                        self.batch.push(d);
                    }
                    Decoded::Reset(ev) => {
                        self.flush_batch().await;
                        self.drive(ev).await;
                    }
                }
            }
            msg_type::ROUTE_REFRESH => match RouteRefresh::parse(body) {
                Ok(rr) => {
                    if self.fsm.state() == State::Established {
                        self.flush_batch().await;
                        self.rib
                            .send(RibInput::RouteRefresh {
                                peer: self.p.peer,
                                family: AfiSafi::new(rr.afi, rr.safi),
                                subtype: rr.subtype,
                                barrier: None,
                            })
                            .await;
                    }
                }
                Err(e) => {
                    // Not reached: `on_frame` checked the length, the only
                    // thing that can be wrong.
                    warn!(peer = %self.p.name, error = ?e, "malformed ROUTE-REFRESH");
                    self.drive(Event::update_msg_err(e, body)).await;
                }
            },
            _ => {
                let e = WireError::BadMessageType { msg_type: ty };
                self.drive(Event::header_err(e, body)).await;
            }
        }
    }
}
