//! Ip4Forward: the IPv4 forwarding path fused into one element (ADR 0003):
//! header check, the router's own and local destinations, TTL, lookup
//! and, for resolved neighbours, the MAC rewrite, over one batch.

use std::rc::Rc;

use graph::{Arg, BuildError, DropReason, Output, Verdict};
use pkt::hdr::ether::{parse_l2, ETH_IPV4};
use pkt::hdr::ip4::{Ipv4, Ipv4Mut};
use pkt::Batch;

use crate::args::{ip, keyword};
use crate::lookup::Ip4Lookup;
use crate::neigh::{rewrite, Resolved4};

/// Ip4Forward's own drop reasons (see `graph::Element::drop_names`). The
/// first two are the lookup's own, in the lookup's slots: the fused
/// lookup counts them here.
pub(crate) const FORWARD_DROPS: &[&str] = &[
    "bad_ip_header",
    "no_route",
    "bad_ether",
    "bad_ip_checksum",
    "bad_ip_source",
];
const BAD_IP_HEADER: DropReason = DropReason::own(0);
const BAD_ETHER: DropReason = DropReason::own(2);
const BAD_IP_CHECKSUM: DropReason = DropReason::own(3);
const BAD_IP_SOURCE: DropReason = DropReason::own(4);

/// `Ip4Forward(ADDR a, ..., <Ip4Lookup arguments>)`: in one element and
/// one batch, what the chain `CheckIpHeader -> IcmpEcho(ADDR ...) ->
/// Classifier(own, local, -) -> DecIpTtl -> Ip4Lookup` does to a packet
/// that is simply forwarded: the RFC 1812 §5.2.2 header check and
/// checksum, the §5.3.7 source check (drops as `CheckIpHeader`), the TTL
/// decrement with an incremental checksum update (RFC 1624), and the
/// longest-prefix match (as `Ip4Lookup`: the same `ROUTE`, `TABLE`,
/// `PORTS`, `NOROUTE` arguments, `anno.nh` and `anno.gw` set, drops
/// `no_route`). The MAC rewrite stays with the port's `EtherRewrite`,
/// which owns the neighbour table and ARP.
///
/// A packet whose header a check upstream already passed (`anno.l3` set,
/// by `CheckIpHeader` or a Classifier's `ip checked` pattern) is not
/// checked again: only its version, TTL and destination are read, so
/// `Classifier(..., ip checked, ...) -> Ip4Forward` parses each header
/// once.
///
/// Packets it does not handle leave on output `slow` (after the lookup's
/// outputs), with the header checked (`anno.l3` set) and untouched, for
/// the ordinary chain: a destination that is one of the `ADDR` addresses,
/// 224.0.0.0/24 or the limited broadcast (RFC 1812 §5.3.5; echo or
/// discard), or a TTL <= 1 (time exceeded, RFC 1812 §5.3.1).
///
/// With `REWRITE name` arguments (the `k`-th for lookup port `k`; each an
/// `EtherRewrite` declared earlier in the graph), the MAC rewrite joins
/// the same pass: a packet routed to port `k` whose gateway that
/// EtherRewrite has resolved gets its Ethernet header written here,
/// exactly as the EtherRewrite would write it (the neighbour table is
/// shared, see [`Resolved4`]), and leaves on output `slow + 1 + k`, meant
/// for the port's ToDevice; the rest leave on port `k` for the
/// EtherRewrite as before (ARP, hold queue). One element then does the
/// whole fast path: the header check upstream (`ip checked`), own and
/// local destinations, TTL, lookup and rewrite, in one pass and one
/// dispatch.
///
/// * Ports: input 0 (IPv4 Ethernet frames); outputs: the lookup's, then
///   `slow`, then one per `REWRITE` (rewritten frames).
/// * Counters: drops `bad_ether`, `bad_ip_header`, `bad_ip_checksum`,
///   `bad_ip_source`, `no_route`.
///
/// ```text
/// fwd :: Ip4Forward(ADDR 10.0.1.1, ADDR 10.0.2.1, TABLE fib4, PORTS 2,
///                   REWRITE rw0, REWRITE rw1);
/// c [0] -> fwd; fwd [0] -> rw0; fwd [1] -> rw1; fwd [2] -> CheckIpHeader -> echo;
/// fwd [3] -> out0; fwd [4] -> out1; rw0 -> out0; rw1 -> out1;
/// ```
pub struct Ip4Forward {
    own: Vec<[u8; 4]>,
    pub(crate) lookup: Ip4Lookup,
    slow: u16,
    /// Per lookup port (the first ones): its EtherRewrite's resolved
    /// neighbours.
    rewrites: Vec<Rc<Resolved4>>,
}

impl std::fmt::Debug for Ip4Forward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ip4Forward")
            .field("own", &self.own)
            .field("lookup", &self.lookup)
            .field("slow", &self.slow)
            .field("rewrites", &self.rewrites.len())
            .finish()
    }
}

impl Ip4Forward {
    pub(crate) fn new(args: &[Arg], env: &mut crate::Env) -> Result<Self, BuildError> {
        let mut own = Vec::new();
        let mut rest = Vec::new();
        let mut rewrites = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            match keyword(&arg.text) {
                ("REWRITE", v) => rewrites.push(env.rewrite(v).ok_or_else(|| {
                    BuildError::arg(
                        i,
                        format!("no EtherRewrite '{v}' declared before this element"),
                    )
                })?),
                ("ADDR", v) => match ip(i, v)? {
                    std::net::IpAddr::V4(x) => own.push(x.octets()),
                    std::net::IpAddr::V6(_) => {
                        return Err(BuildError::arg(i, "Ip4Forward takes IPv4 addresses"))
                    }
                },
                _ => rest.push(arg.clone()),
            }
        }
        let lookup = Ip4Lookup::new4(&rest, env)?;
        let slow = lookup.outputs;
        if rewrites.len() > usize::from(slow) {
            return Err(BuildError::elem(format!(
                "{} REWRITE arguments for {slow} lookup ports",
                rewrites.len()
            )));
        }
        Ok(Ip4Forward {
            own,
            lookup,
            slow,
            rewrites,
        })
    }

    /// Output ports: the lookup's, `slow`, and one per `REWRITE`.
    pub(crate) fn outputs(&self) -> u16 {
        self.slow + 1 + self.rewrites.len() as u16
    }

    #[inline]
    fn check(d: &[u8], l3: u16) -> Result<(u16, [u8; 4], u8), DropReason> {
        if l3 != 0 {
            // Checked upstream (CheckIpHeader or a `checked` Classifier
            // pattern set `anno.l3`): read the TTL and destination only,
            // as Ip4Lookup does; the version is still checked.
            let h = d
                .get(usize::from(l3)..)
                .and_then(|b| b.first_chunk::<20>())
                .ok_or(BAD_IP_HEADER)?;
            if h[0] >> 4 != 4 {
                return Err(BAD_IP_HEADER);
            }
            let dst = [h[16], h[17], h[18], h[19]];
            return Ok((l3, dst, h[8]));
        }
        let l2 = parse_l2(d).map_err(|_| BAD_ETHER)?;
        if l2.ethertype != ETH_IPV4 {
            return Err(BAD_ETHER);
        }
        let ip = Ipv4::parse(d.get(l2.l3..).unwrap_or(&[])).map_err(|_| BAD_IP_HEADER)?;
        if !ip.checksum_ok() {
            return Err(BAD_IP_CHECKSUM);
        }
        let s = ip.src();
        if s[0] == 0 || s[0] == 127 || s[0] >= 224 {
            return Err(BAD_IP_SOURCE);
        }
        Ok((l2.l3 as u16, ip.dst(), ip.ttl()))
    }

    #[inline]
    pub(crate) fn process(&mut self, batch: &mut Batch, out: &mut Output<'_>) {
        let (own, slow, rewrites) = (&self.own, self.slow, &self.rewrites);
        // Check, local, TTL and the destination in one pass, one batched
        // LPM, and one dispatch: what is forwarded has its TTL decremented;
        // what is not leaves on `slow` (or is dropped) in the same
        // dispatch.
        self.lookup.run4(
            batch,
            out,
            |p| match Self::check(p.data(), p.anno.l3) {
                Ok((l3, dst, ttl)) => {
                    p.anno.l3 = l3;
                    let local = (dst[0] == 224 && dst[1] == 0 && dst[2] == 0)
                        || dst == [255; 4]
                        || own.contains(&dst);
                    if local || ttl <= 1 {
                        return Err(Verdict::port(slow));
                    }
                    match p
                        .data_mut()
                        .get_mut(usize::from(l3)..)
                        .and_then(|b| Ipv4Mut::parse(b).ok())
                    {
                        Some(mut h) => {
                            h.dec_ttl();
                            Ok(u32::from_be_bytes(dst))
                        }
                        None => Err(Verdict::drop(BAD_IP_HEADER)),
                    }
                }
                Err(r) => Err(Verdict::drop(r)),
            },
            |p, v| {
                // A resolved gateway on a port with a REWRITE: the
                // Ethernet header is written here, and the packet goes
                // straight to the port's device.
                let Some(k) = v.out_port() else { return v };
                let Some(r) = rewrites.get(usize::from(k)) else {
                    return v;
                };
                let g = p.anno.gw;
                match r.get([g[0], g[1], g[2], g[3]]) {
                    Some(m) => match rewrite(p, m, r.mac()) {
                        Ok(()) => Verdict::port(slow + 1 + k),
                        // The rewrite's only failure, a frame it cannot
                        // parse, counted under this element's name for it.
                        Err(_) => Verdict::drop(BAD_ETHER),
                    },
                    None => v,
                }
            },
        );
    }
}
