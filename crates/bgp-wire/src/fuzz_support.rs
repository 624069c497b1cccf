//! Entry points for fuzz targets. Each runs the full lazy decode (touching
//! every field and iterator) and checks the codec's round-trip promise:
//! whatever converts to the owned form re-encodes to the very same bytes.
//! They panic only when that promise is broken, which is a bug to report.

use base::Afi;

use crate::attr::{AttrIter, PathAttribute};
use crate::capability::CapabilityView;
use crate::ctx::ParseCtx;
use crate::message::Message;
use crate::nlri::NlriIter;

const CTXS: [ParseCtx; 3] = [
    ParseCtx::legacy(),
    ParseCtx::modern(),
    ParseCtx::modern().with_add_path_all(),
];

/// Decodes `data` as one BGP message under several session contexts.
pub fn decode_message(data: &[u8]) {
    for ctx in CTXS {
        let Ok((m, len)) = Message::parse(data, ctx) else {
            continue;
        };
        touch_message(&m, ctx);
        if let Ok(owned) = m.to_owned() {
            let mut out = Vec::new();
            if owned.encode(ctx, &mut out).is_ok() {
                assert_eq!(
                    out.as_slice(),
                    data.get(..len).unwrap_or(&[]),
                    "re-encode differs"
                );
            }
        }
    }
}

fn touch_message(m: &Message<'_>, ctx: ParseCtx) {
    match m {
        Message::Open(o) => {
            let _ = o.validate();
            let _ = o.asn();
            for c in o.capabilities().flatten() {
                let v = CapabilityView::parse(c.code, c.value);
                let n = v.gr_families().count() + v.add_path_families().count();
                let n = n + v.llgr_families().count();
                std::hint::black_box(n);
            }
        }
        Message::Update(u) => {
            let _ = std::hint::black_box(u.validate());
            let _ = u.end_of_rib();
            u.withdrawn().for_each(|r| {
                std::hint::black_box(r.ok());
            });
            u.nlri().for_each(|r| {
                std::hint::black_box(r.ok());
            });
            touch_attrs(u.attributes(), ctx);
        }
        Message::Notification(n) => {
            std::hint::black_box(n.shutdown_communication());
        }
        Message::Keepalive | Message::RouteRefresh(_) => {}
    }
}

fn touch_attrs(it: AttrIter<'_>, ctx: ParseCtx) {
    for a in it.flatten() {
        let Ok(t) = a.typed(ctx) else { continue };
        let n: usize = match t {
            PathAttribute::AsPath(p) | PathAttribute::As4Path(p) => {
                p.path_len() + p.segments().map(|s| s.asns().count()).sum::<usize>()
            }
            PathAttribute::Communities(c) => c.iter().count(),
            PathAttribute::ExtendedCommunities(c) => c.iter().count(),
            PathAttribute::Ipv6ExtendedCommunities(c) => c.iter().count(),
            PathAttribute::LargeCommunities(c) => c.iter().count(),
            PathAttribute::ClusterList(c) => c.iter().count(),
            PathAttribute::MpReach(m) => m.nlri().count() + usize::from(m.next_hop().is_some()),
            PathAttribute::MpUnreach(m) => m.withdrawn().count(),
            _ => 0,
        };
        std::hint::black_box(n);
    }
}

/// Decodes `data` as a path attribute block and re-encodes each attribute.
pub fn decode_attributes(data: &[u8], ctx: ParseCtx) {
    touch_attrs(AttrIter::new(data), ctx);
    for a in AttrIter::new(data).map_while(Result::ok) {
        let mut out = Vec::new();
        a.to_owned(ctx).encode(ctx, &mut out);
        let s = a.offset as usize;
        let tlv = data.get(s..s + a.tlv_len as usize).unwrap_or(&[]);
        assert_eq!(out.as_slice(), tlv, "attribute re-encode differs");
    }
}

/// Decodes `data` as an NLRI field and re-encodes what parsed.
pub fn decode_nlri(data: &[u8], addpath: bool, afi: Afi) {
    let mut out = Vec::new();
    let mut it = NlriIter::new(data, afi, addpath);
    while let Some(Ok(n)) = it.next() {
        n.encode(&mut out);
        let consumed = data.len() - it.remaining().len();
        assert_eq!(
            out.as_slice(),
            data.get(..consumed).unwrap_or(&[]),
            "NLRI re-encode differs"
        );
    }
}
