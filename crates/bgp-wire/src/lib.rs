//! Zero-copy BGP-4 message codec (RFC 4271 and extensions).
//!
//! * Framing ([`header`]) is cheap; [`Message::parse`] returns borrowed
//!   views ([`OpenView`], [`UpdateView`], [`NotificationView`],
//!   [`RouteRefresh`]) read through borrowed iterators. Nothing on the
//!   parse path allocates.
//! * Session state that changes the wire format travels in [`ParseCtx`].
//! * Every view converts to an owned form ([`OpenMessage`],
//!   [`UpdateMessage`], ...) that encodes into a caller-owned `Vec<u8>` and
//!   reproduces parsed messages byte for byte.
//! * Errors ([`WireError`]) are `Copy`, map to their NOTIFICATION
//!   code/subcode/data, and to an RFC 7606 [`Disposition`].

#![warn(missing_docs)]
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]
#![cfg_attr(not(test), deny(clippy::indexing_slicing))]
// `usize::is_multiple_of` is newer than the workspace MSRV (1.85).
#![allow(clippy::manual_is_multiple_of)]

pub mod attr;
pub mod capability;
pub mod consts;
pub mod ctx;
pub mod emit;
pub mod error;
#[cfg(any(test, feature = "test-support"))]
pub mod fuzz_support;
pub mod header;
pub mod message;
pub mod nlri;
pub mod notification;
pub mod open;
pub mod route_refresh;
pub mod update;
mod util;
pub mod validate;

pub use attr::aspath::{merge_as4_path, AsPath, AsPathView, AsSegment, AsSegmentView, SegmentType};
pub use attr::community::{
    ClusterList, Communities, Community, ExtCommunities, ExtCommunity, Ipv6ExtCommunities,
    Ipv6ExtCommunity, LargeCommunities, LargeCommunity, ListView,
};
pub use attr::mp::{
    is_mrt_abbreviated, MpNlri, MpReach, MpReachView, MpUnreach, MpUnreachView, NextHop,
};
pub use attr::simple::{Aggregator, Origin};
pub use attr::{AttrIter, AttrValue, PathAttr, PathAttribute, RawAttr};
pub use capability::{Capability, CapabilityView, ExtNextHop, RawCapability};
pub use ctx::{ParseCtx, SessionFamilies};
pub use error::{AttrRef, Disposition, EncodeError, WireError};
pub use header::{frame, Frame, Header, HEADER_LEN, MARKER};
pub use message::{encode_keepalive, Message, OwnedMessage};
pub use nlri::{Nlri, NlriIter};
pub use notification::{NotificationMessage, NotificationView};
pub use open::{OpenMessage, OpenView, OptParam};
pub use route_refresh::RouteRefresh;
pub use update::{UpdateMessage, UpdateView};
pub use validate::{AttrSet, ConfedSender, UpdateSink, ValidatedUpdate};
