//! A script driver for [`bgp_core::RibCore`], shared by the golden and
//! property tests: peers built from short specs, inputs built from words,
//! and a stable text rendering of everything the core puts in its outbox
//! (UPDATEs decoded back from their bytes).

#![allow(dead_code)]

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use base::{AfiSafi, Asn, Instant, Prefix};
use bgp_core::{
    DecodedUpdate, MaxPrefix, MaxPrefixAction, Note, Outbox, Output, Part, PeerEntry, PeerMeta,
    PeerStatus, PolicyRef, RibCore, RibInput, RibSettings, SessionCmd, SessionUp,
};
use bgp_fsm::{DownReason, Negotiated};
use bgp_rib::{AttrsBuilder, BestPathConfig, NextHopMode, PathSelection, PeerId};
use bgp_wire::{
    AsPath, AttrValue, Message, MpNlri, NextHop, Nlri, Origin, ParseCtx, PathAttr, UpdateView,
};

pub const LOCAL_ASN: u32 = 65000;

pub fn settings() -> RibSettings {
    RibSettings {
        router_id: Ipv4Addr::new(192, 0, 2, 254),
        cluster_id: Ipv4Addr::new(192, 0, 2, 254),
        local_asn: Asn(LOCAL_ASN),
        bestpath: BestPathConfig::default(),
    }
}

/// Peer `n`'s address: 192.0.2.n.
pub fn addr(n: u16) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(192, 0, 2, n as u8))
}

/// A peer from `key=value` words: `as=N` (default 65000+n: eBGP unless it
/// equals ours), `mrai=SECONDS`, `max=LIMIT,ACTION[,WARN%]` with ACTION
/// `warn`, `shutdown` or `restart:SECONDS`, `import=reject`,
/// `export=reject`, `rr-client`, `keep` (soft reconfiguration inbound),
/// `damp` (route-flap damping), `cid=N` (we are in confederation N, RFC
/// 5065: a true eBGP peer sees N as our AS), `member` (the peer is in
/// another member AS of that confederation).
pub fn peer_meta(n: u16, words: &[&str]) -> PeerMeta {
    let mut asn = 65000 + u32::from(n);
    let mut m = PeerMeta {
        name: format!("p{n}"),
        description: String::new(),
        addr: addr(n),
        remote_asn: Asn(asn),
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
        mrai: Duration::ZERO,
        add_path_send: PathSelection::All,
        damping: false,
    };
    for w in words {
        let (k, v) = w.split_once('=').unwrap_or((w, ""));
        match k {
            "as" => asn = v.parse().expect("as=N"),
            "mrai" => m.mrai = Duration::from_secs_f64(v.parse().expect("mrai=S")),
            "max" => {
                let p: Vec<&str> = v.split(',').collect();
                let action = match p.get(1).copied().unwrap_or("warn") {
                    "warn" => MaxPrefixAction::Warn,
                    "shutdown" => MaxPrefixAction::Shutdown,
                    a => MaxPrefixAction::Restart(Duration::from_secs(
                        a.strip_prefix("restart:")
                            .and_then(|s| s.parse().ok())
                            .expect("restart:S"),
                    )),
                };
                m.max_prefix = Some(MaxPrefix {
                    limit: p[0].parse().expect("limit"),
                    action,
                    warn_percent: p.get(2).map_or(0, |s| s.parse().expect("warn %")),
                });
            }
            "import" if v == "reject" => m.import = PolicyRef::RejectAll,
            // Rejects RPKI-invalid routes (RFC 6811), accepts the rest.
            "import" | "export" if v == "no-invalid" => {
                let def = bgp_policy::ast::PolicyDef {
                    term: vec![bgp_policy::ast::TermDef {
                        name: None,
                        matches: bgp_policy::ast::MatchDef {
                            rpki: Some("invalid".into()),
                            ..Default::default()
                        },
                        then: bgp_policy::ast::ActionDef {
                            action: Some("reject".into()),
                            ..Default::default()
                        },
                    }],
                    default: Some("accept".into()),
                };
                let p = PolicyRef::Named(
                    v.into(),
                    Arc::new(bgp_policy::compile(&def).expect("policy")),
                );
                if k == "import" {
                    m.import = p;
                } else {
                    m.export = p;
                }
            }
            "export" if v == "reject" => m.export = PolicyRef::RejectAll,
            "rr-client" => m.rr_client = true,
            "keep" => m.keep_pre_policy = true,
            "damp" => m.damping = true,
            "cid" => m.confed_id = Some(Asn(v.parse().expect("cid=N"))),
            "member" => m.confed = true,
            _ => panic!("unknown peer key {k:?}"),
        }
    }
    m.remote_asn = Asn(asn);
    m.ebgp = asn != LOCAL_ASN;
    if let (Some(id), true) = (m.confed_id, m.external()) {
        m.local_asn = id;
    }
    m
}

/// What peer `n`'s session negotiated: IPv4 unicast (`v6` adds IPv6
/// unicast), 4-octet ASN, route refresh; `gr=SECONDS` graceful restart
/// listing every negotiated family with the Forwarding State bit set, or
/// only those of `grf=ipv4,ipv6` (`grf=` none), of which those in
/// `nof=ipv4,...` without it; `llgr=SECONDS` long-lived graceful restart
/// (RFC 9494) for every negotiated family with the F bit, but those in
/// `llnof=ipv4,...`; `err` enhanced route refresh.
pub fn negotiated(meta: &PeerMeta, n: u16, words: &[&str]) -> Negotiated {
    let mut neg = Negotiated {
        peer_asn: meta.remote_asn,
        peer_bgp_id: Ipv4Addr::new(192, 0, 2, n as u8),
        hold_time: 90,
        keepalive_interval: 30,
        four_octet_asn: true,
        families: vec![AfiSafi::IPV4_UNICAST],
        add_path: Vec::new(),
        ext_next_hop_rx: Vec::new(),
        ext_next_hop_tx: Vec::new(),
        extended_message: false,
        route_refresh: true,
        enhanced_route_refresh: false,
        graceful_restart: None,
        llgr: None,
        local_role: None,
        peer_role: None,
        fqdn: None,
    };
    let families = |v: &str| -> Vec<AfiSafi> {
        v.split(',')
            .filter(|f| !f.is_empty())
            .map(|f| match f {
                "ipv4" => AfiSafi::IPV4_UNICAST,
                "ipv6" => AfiSafi::IPV6_UNICAST,
                _ => panic!("family {f:?}"),
            })
            .collect()
    };
    let mut gr_listed = None;
    let mut llst = None;
    let mut ll_no_f = Vec::new();
    let mut no_f = Vec::new();
    for w in words {
        let (k, v) = w.split_once('=').unwrap_or((w, ""));
        match k {
            "err" => neg.enhanced_route_refresh = true,
            "v6" => neg.families.push(AfiSafi::IPV6_UNICAST),
            "mc" => neg.families.push(AfiSafi::IPV4_MULTICAST),
            "gr" => {
                neg.graceful_restart = Some(bgp_fsm::negotiate::GracefulRestart {
                    restart_time: v.parse().expect("gr=S"),
                    notification: false,
                    families: Vec::new(),
                    restart_state: false,
                });
            }
            "grf" => gr_listed = Some(families(v)),
            "llgr" => llst = Some(v.parse::<u32>().expect("llgr=S")),
            "llnof" => ll_no_f = families(v),
            "nof" => no_f = families(v),
            _ => panic!("unknown up key {k:?}"),
        }
    }
    neg.families.sort();
    if let Some(stale_time) = llst {
        neg.llgr = Some(
            neg.families
                .iter()
                .map(|&afi_safi| bgp_wire::capability::LlgrFamily {
                    afi_safi,
                    flags: if ll_no_f.contains(&afi_safi) { 0 } else { 0x80 },
                    stale_time,
                })
                .collect(),
        );
    }
    if let Some(gr) = neg.graceful_restart.as_mut() {
        let listed = gr_listed.unwrap_or_else(|| neg.families.clone());
        gr.families = listed
            .into_iter()
            .map(|afi_safi| bgp_wire::capability::GrFamily {
                afi_safi,
                flags: if no_f.contains(&afi_safi) { 0 } else { 0x80 },
            })
            .collect();
    }
    neg
}

pub fn prefix(s: &str) -> Prefix {
    s.parse().unwrap_or_else(|_| panic!("bad prefix {s:?}"))
}

/// Attributes of an announcement: `path=A,B,C` (default the peer's AS),
/// `nh=ADDR` (default the peer's address), `med=N`, `lp=N`,
/// `comm=ASN:VALUE,...` (standard communities), `cpath=A,B` (an
/// AS_CONFED_SEQUENCE in front of the path, RFC 5065).
pub fn attrs(n: u16, meta: &PeerMeta, words: &[&str]) -> AttrsBuilder {
    let mut b = AttrsBuilder::new();
    b.set(PathAttr::new(AttrValue::Origin(Origin::Igp)));
    let mut path = vec![meta.remote_asn];
    let mut cpath: Vec<Asn> = Vec::new();
    let mut nh = match addr(n) {
        IpAddr::V4(a) => NextHop::V4(a),
        IpAddr::V6(a) => NextHop::V6(a),
    };
    for w in words {
        let (k, v) = w.split_once('=').unwrap_or((w, ""));
        match k {
            "path" => {
                path = if v.is_empty() {
                    Vec::new()
                } else {
                    v.split(',').map(|a| Asn(a.parse().expect("ASN"))).collect()
                }
            }
            "nh" => {
                nh = match v.parse::<IpAddr>().expect("nh=ADDR") {
                    IpAddr::V4(a) => NextHop::V4(a),
                    IpAddr::V6(a) => NextHop::V6(a),
                }
            }
            "med" => b.set_med(v.parse().expect("med")),
            "lp" => b.set_local_pref(v.parse().expect("lp")),
            "cpath" => cpath = v.split(',').map(|a| Asn(a.parse().expect("ASN"))).collect(),
            "comm" => {
                let list = v
                    .split(',')
                    .map(|c| {
                        let (a, v) = c.split_once(':').expect("comm=ASN:VALUE");
                        let a: u32 = a.parse().expect("community ASN");
                        let v: u32 = v.parse().expect("community value");
                        bgp_wire::Community(a << 16 | v)
                    })
                    .collect();
                b.set(PathAttr::new(AttrValue::Communities(list)));
            }
            _ => panic!("unknown attribute key {k:?}"),
        }
    }
    let mut p = AsPath::from_sequence(path);
    if !cpath.is_empty() {
        p.segments.insert(
            0,
            bgp_wire::AsSegment {
                kind: bgp_wire::SegmentType::ConfedSequence,
                asns: cpath,
            },
        );
        p.segments.retain(|s| !s.asns.is_empty());
    }
    b.set(PathAttr::new(AttrValue::AsPath(p)));
    b.set_next_hop(nh);
    b.mark_clean();
    b
}

/// A RIB core with its peers and their statuses.
pub struct Harness {
    pub core: RibCore,
    pub out: Outbox,
    pub metas: Vec<(u16, PeerMeta)>,
    pub statuses: Vec<(u16, Arc<PeerStatus>)>,
}

impl Harness {
    pub fn new(part: Part) -> Harness {
        let mut core = RibCore::new(settings(), 1, part, SystemTime::UNIX_EPOCH);
        core.want_best = true;
        Harness {
            core,
            out: Outbox::default(),
            metas: Vec::new(),
            statuses: Vec::new(),
        }
    }

    /// A harness of `part` with `peers` configured and up, their first
    /// export round run and its output dropped.
    pub fn with_peers_up(part: Part, now: Instant, peers: &[u16]) -> Harness {
        let mut h = Harness::new(part);
        for &n in peers {
            h.add_peer(n, &[]);
        }
        for &n in peers {
            h.up(now, n, &[]);
        }
        h.core.propagate(now, &mut h.out);
        h.out.out.clear();
        h
    }

    /// Takes every output of the last calls and hands peer `n`'s encoded
    /// bytes over as its session's writer would (they stay counted in its
    /// queued bytes: nothing is written); returns them in order. Other
    /// peers' output is dropped.
    pub fn handed_to(&mut self, n: u16) -> Vec<u8> {
        let mut sent = Vec::new();
        for o in std::mem::take(&mut self.out.out) {
            if let Output::Send {
                peer,
                bytes,
                markers,
            } = o
            {
                if peer.0 == n {
                    self.status(n)
                        .hand_over(bytes, markers, |b| sent.extend_from_slice(&b));
                }
            }
        }
        sent
    }

    pub fn add_peer(&mut self, n: u16, words: &[&str]) {
        let meta = peer_meta(n, words);
        let status = Arc::new(PeerStatus::default());
        self.core
            .insert_peer(PeerId(n), PeerEntry::new(meta.clone(), status.clone()));
        self.metas.push((n, meta));
        self.statuses.push((n, status));
    }

    pub fn meta(&self, n: u16) -> &PeerMeta {
        &self
            .metas
            .iter()
            .find(|(i, _)| *i == n)
            .expect("configured peer")
            .1
    }

    pub fn status(&self, n: u16) -> &Arc<PeerStatus> {
        &self
            .statuses
            .iter()
            .find(|(i, _)| *i == n)
            .expect("configured peer")
            .1
    }

    pub fn up(&mut self, now: Instant, n: u16, words: &[&str]) {
        let neg = negotiated(self.meta(n), n, words);
        let local = SocketAddr::new(IpAddr::V4(Ipv4Addr::new(192, 0, 2, 254)), 179);
        let up = SessionUp {
            negotiated: neg,
            local_addr: local,
            remote_addr: SocketAddr::new(addr(n), 40000 + n),
            eor_barrier: None,
            since: SystemTime::UNIX_EPOCH,
            session: 1,
            link: bgp_core::LinkAddrs::of(local.ip()),
        };
        // A new session gets its own max-prefix verdict (as the runtime's
        // session does before it reports Established).
        let st = self.status(n);
        st.max_prefix_tripped.store(false, Ordering::Relaxed);
        st.max_prefix_warned.store(false, Ordering::Relaxed);
        self.input(
            now,
            RibInput::Up {
                peer: PeerId(n),
                up: Box::new(up),
            },
        );
    }

    pub fn input(&mut self, now: Instant, input: RibInput) {
        self.core.handle(now, input, &mut self.out);
    }

    pub fn announce(&mut self, now: Instant, n: u16, prefixes: &[Prefix], words: &[&str]) {
        let a = attrs(n, self.meta(n), words);
        let u = DecodedUpdate {
            attrs: Some(Arc::new(a)),
            announce: prefixes.iter().map(|p| Nlri::new(*p)).collect(),
            withdraw: Vec::new(),
            end_of_rib: None,
            multicast: Default::default(),
        };
        self.input(
            now,
            RibInput::Updates {
                peer: PeerId(n),
                updates: vec![u],
            },
        );
    }

    /// Peer `n` announces `prefixes` as multicast (SAFI 2) routes.
    pub fn announce_mc(&mut self, now: Instant, n: u16, prefixes: &[Prefix], words: &[&str]) {
        let a = attrs(n, self.meta(n), words);
        let mut u = DecodedUpdate::default();
        u.multicast.attrs = Some(Arc::new(a));
        u.multicast.announce = prefixes.iter().map(|p| Nlri::new(*p)).collect();
        self.updates(now, n, u);
    }

    /// Peer `n` withdraws multicast (SAFI 2) `prefixes`.
    pub fn withdraw_mc(&mut self, now: Instant, n: u16, prefixes: &[Prefix]) {
        let mut u = DecodedUpdate::default();
        u.multicast.withdraw = prefixes.iter().map(|p| Nlri::new(*p)).collect();
        self.updates(now, n, u);
    }

    fn updates(&mut self, now: Instant, n: u16, u: DecodedUpdate) {
        self.input(
            now,
            RibInput::Updates {
                peer: PeerId(n),
                updates: vec![u],
            },
        );
    }

    pub fn withdraw(&mut self, now: Instant, n: u16, prefixes: &[Prefix]) {
        let u = DecodedUpdate {
            attrs: None,
            announce: Vec::new(),
            withdraw: prefixes.iter().map(|p| Nlri::new(*p)).collect(),
            end_of_rib: None,
            multicast: Default::default(),
        };
        self.input(
            now,
            RibInput::Updates {
                peer: PeerId(n),
                updates: vec![u],
            },
        );
    }

    pub fn end_of_rib(&mut self, now: Instant, n: u16, family: AfiSafi) {
        let u = DecodedUpdate {
            end_of_rib: Some(family),
            ..DecodedUpdate::default()
        };
        self.input(
            now,
            RibInput::Updates {
                peer: PeerId(n),
                updates: vec![u],
            },
        );
    }

    pub fn down(&mut self, now: Instant, n: u16, graceful: bool) {
        self.input(
            now,
            RibInput::Down {
                peer: PeerId(n),
                reason: DownReason::TcpConnectionFails,
                graceful,
                at: SystemTime::UNIX_EPOCH,
            },
        );
    }

    /// Renders and empties the outbox; a session "writes" what it was
    /// handed at once (its queued bytes go back to zero) unless `hold`.
    pub fn drain(&mut self, hold: &[u16]) -> String {
        let mut s = String::new();
        for o in self.out.out.drain(..) {
            let peer = o.peer().0;
            match o {
                Output::Cmd { cmd, .. } => {
                    let _ = writeln!(s, "  -> p{peer} {}", render_cmd(&cmd));
                }
                Output::Send { bytes, markers, .. } => {
                    let status = self
                        .statuses
                        .iter()
                        .find(|(i, _)| *i == peer)
                        .map(|(_, st)| st.clone());
                    let mut sent = Vec::new();
                    if let Some(st) = &status {
                        st.hand_over(bytes, markers, |b| sent.extend_from_slice(&b));
                        if !hold.contains(&peer) {
                            st.out_queued_bytes.store(0, Ordering::Relaxed);
                        }
                    }
                    for line in render_messages(&sent) {
                        let _ = writeln!(s, "  -> p{peer} {line}");
                    }
                }
            }
        }
        for (peer, note) in self.out.notes.drain(..) {
            let _ = writeln!(s, "  note p{}: {}", peer.0, note_text(&note));
        }
        for b in self.out.best.drain(..) {
            match b.next_hop {
                Some(nh) => {
                    let _ = writeln!(s, "  best {} via {nh}", b.prefix);
                }
                None => {
                    let _ = writeln!(s, "  best {} gone", b.prefix);
                }
            }
        }
        for w in self.out.nexthops.drain(..) {
            let what = if w.track { "track" } else { "untrack" };
            let _ = writeln!(s, "  {what} next hop {}", w.nexthop);
        }
        self.out.samples.clear();
        s
    }
}

fn note_text(n: &Note) -> String {
    n.to_string()
}

pub fn render_cmd(c: &SessionCmd) -> String {
    match c {
        SessionCmd::Send(b) => format!("Send {} bytes", b.len()),
        SessionCmd::SendRouteRefresh { family } => format!("ROUTE-REFRESH request {family}"),
        SessionCmd::Stop {
            notification,
            restart_after,
        } => format!(
            "Stop NOTIFICATION {}/{} data {} restart {}",
            notification.code,
            notification.subcode,
            hex(&notification.data),
            restart_after.map_or("never".into(), |d| format!("{}s", d.as_secs()))
        ),
        SessionCmd::Start => "Start".into(),
        SessionCmd::Terminate { notification } => format!(
            "Terminate NOTIFICATION {}/{}",
            notification.code, notification.subcode
        ),
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn nlri_list(v: &[Nlri]) -> String {
    v.iter()
        .map(|n| match n.path_id {
            Some(id) => format!("{}#{id}", n.prefix),
            None => n.prefix.to_string(),
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// One line per BGP message in `bytes` (UPDATEs with their prefixes and
/// the attributes that matter here, markers by name).
pub fn render_messages(bytes: &[u8]) -> Vec<String> {
    let ctx = ParseCtx::legacy().with_four_octet_asn(true);
    let mut out = Vec::new();
    let mut rest = bytes;
    while !rest.is_empty() {
        let (m, len) = match Message::parse(rest, ctx) {
            Ok(x) => x,
            Err(e) => {
                out.push(format!("UNDECODABLE {e}"));
                break;
            }
        };
        out.push(match m {
            Message::Update(u) => render_update(&u),
            Message::RouteRefresh(r) => {
                let name = match r.subtype {
                    0 => "ROUTE-REFRESH",
                    1 => "BoRR",
                    2 => "EoRR",
                    _ => "ROUTE-REFRESH(?)",
                };
                format!("{name} {}", AfiSafi::new(r.afi, r.safi))
            }
            other => format!("message type {}", other.msg_type()),
        });
        rest = rest.get(len..).unwrap_or_default();
    }
    out
}

fn render_update(u: &UpdateView<'_>) -> String {
    if let Some(af) = u.end_of_rib() {
        return format!("End-of-RIB {af}");
    }
    let Ok(m) = u.to_owned() else {
        return "UPDATE (undecodable)".into();
    };
    let mut withdrawn = m.withdrawn.clone();
    let mut announced = m.nlri.clone();
    // Multicast (SAFI 2) NLRI are listed apart.
    let (mut withdrawn_mc, mut announced_mc) = (Vec::new(), Vec::new());
    let mut attrs = Vec::new();
    for a in &m.attributes {
        match &a.value {
            AttrValue::Origin(o) => attrs.push(format!("origin {o}")),
            AttrValue::AsPath(p) => {
                // Confederation segments in parentheses (RFC 5065).
                let asns: Vec<String> = p
                    .segments
                    .iter()
                    .map(|s| {
                        let l: Vec<String> = s.asns.iter().map(|a| a.to_string()).collect();
                        if s.kind.is_confed() {
                            format!("({})", l.join(" "))
                        } else {
                            l.join(" ")
                        }
                    })
                    .collect();
                attrs.push(format!("path [{}]", asns.join(" ")));
            }
            AttrValue::NextHop(a) => attrs.push(format!("nh {a}")),
            AttrValue::Med(v) => attrs.push(format!("med {v}")),
            AttrValue::LocalPref(v) => attrs.push(format!("lp {v}")),
            AttrValue::Communities(c) => {
                let list: Vec<String> = c.iter().map(ToString::to_string).collect();
                attrs.push(format!("comm {}", list.join(",")));
            }
            AttrValue::MpReach(r) => {
                if let MpNlri::Prefixes(p) = &r.nlri {
                    match r.afi_safi.safi {
                        base::Safi::Multicast => announced_mc.extend(p.iter().copied()),
                        _ => announced.extend(p.iter().copied()),
                    }
                }
                attrs.push(format!("mp-nh {}", hex(&r.next_hop)));
            }
            AttrValue::MpUnreach(r) => {
                if let MpNlri::Prefixes(p) = &r.withdrawn {
                    match r.afi_safi.safi {
                        base::Safi::Multicast => withdrawn_mc.extend(p.iter().copied()),
                        _ => withdrawn.extend(p.iter().copied()),
                    }
                }
            }
            other => attrs.push(format!("attr {}", other.type_code())),
        }
    }
    let mut s = String::from("UPDATE");
    if !withdrawn.is_empty() {
        let _ = write!(s, " withdraw {}", nlri_list(&withdrawn));
    }
    if !withdrawn_mc.is_empty() {
        let _ = write!(s, " withdraw-multicast {}", nlri_list(&withdrawn_mc));
    }
    if !announced.is_empty() {
        let _ = write!(s, " announce {} {}", nlri_list(&announced), attrs.join(" "));
    }
    if !announced_mc.is_empty() {
        let l = nlri_list(&announced_mc);
        let _ = write!(s, " announce-multicast {l} {}", attrs.join(" "));
    }
    s
}
