//! Bad configurations and the exact message each one gets: file, line,
//! column, field path, reason.

/// Lines 1-4; the cases below start at line 5.
const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n";

fn err(body: &str) -> String {
    match config::parse(&format!("{HEAD}{body}"), "tesserad.toml") {
        Ok(_) => panic!("accepted:\n{body}"),
        Err(e) => e.to_string(),
    }
}

fn nb(extra: &str) -> String {
    format!("[[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 65001\n{extra}")
}

#[test]
fn type_errors_name_the_field() {
    assert_eq!(
        err(
            "[[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 65001\n\n\
             [[neighbor]]\naddress = \"192.0.2.3\"\nremote_as = true\n"
        ),
        "tesserad.toml:11:13: neighbor[1].remote_as: invalid type: boolean `true`, \
         expected an AS number (integer, or asdot \"X.Y\")"
    );
    assert_eq!(
        err(&nb("port = 70000\n")),
        "tesserad.toml:8:8: neighbor[0].port: invalid value: integer `70000`, expected u16"
    );
    assert_eq!(
        err(&nb("families = [\n  \"ipv4-unicast\",\n  3,\n]\n")),
        "tesserad.toml:10:3: neighbor[0].families[1]: invalid type: integer `3`, expected a string"
    );
    assert_eq!(
        err(&nb("max_prefix = { limit = \"x\" }\n")),
        "tesserad.toml:8:24: neighbor[0].max_prefix.limit: invalid type: string \"x\", expected u64"
    );
    assert_eq!(
        err(&nb("max_prefix = true\n")),
        "tesserad.toml:8:14: neighbor[0].max_prefix: invalid type: boolean `true`, \
         expected a prefix count or a table { limit, action, ... }"
    );
}

#[test]
fn unknown_and_missing_keys() {
    assert_eq!(
        err("[[neighbor]]\naddress = \"192.0.2.2\"\nremote-as = 65001\n"),
        "tesserad.toml:7:1: neighbor[0].remote-as: unknown field `remote-as`, did you mean `remote_as`?"
    );
    assert_eq!(
        err(&nb("[neighbor.max_prefix]\nlimit = 5\nactoin = \"warn\"\n")),
        "tesserad.toml:10:1: neighbor[0].max_prefix.actoin: unknown field `actoin`, did you mean `action`?"
    );
    assert_eq!(
        err("[routr]\n"),
        "tesserad.toml:5:2: routr: unknown field `routr`, did you mean `router`?"
    );
    assert_eq!(
        err("[[neighbor]]\naddress = \"192.0.2.2\"\n"),
        "tesserad.toml:5:1: neighbor[0]: missing field `remote_as`"
    );
    assert_eq!(
        config::parse("[control]\nsocket = \"/tmp/x\"\n", "t.toml")
            .unwrap_err()
            .to_string(),
        "t.toml: router: missing [router] table (id and asn are required)"
    );
    assert_eq!(
        config::parse("[router]\nid = \"192.0.2.1\"\n", "t.toml")
            .unwrap_err()
            .to_string(),
        "t.toml:1:1: router: missing field `asn`"
    );
}

#[test]
fn syntax_error() {
    assert_eq!(
        err("[[neighbor]]\naddress = \"192.0.2.2\nremote_as = 1\n"),
        "tesserad.toml:6:21: invalid basic string"
    );
    // toml has no message for a control character in a comment; found by
    // the tesserad_config fuzz target, which requires one.
    assert_eq!(
        err("# a comment with a NUL \u{0} in it\n"),
        "tesserad.toml:5:24: control character U+0000 is not allowed here"
    );
    assert_eq!(
        err("[[neighbor]]\n# \u{1}\n"),
        "tesserad.toml:6:3: control character U+0001 is not allowed here"
    );
}

#[test]
fn router_values() {
    let r = |body: &str| match config::parse(body, "r.toml") {
        Ok(_) => panic!("accepted {body}"),
        Err(e) => e.to_string(),
    };
    assert_eq!(
        r("[router]\nid = \"0.0.0.0\"\nasn = 1\n"),
        "r.toml:2:6: router.id: 0.0.0.0 is not a valid identifier (RFC 6286 §2.1)"
    );
    assert_eq!(
        r("[router]\nid = \"2001:db8::1\"\nasn = 1\n"),
        "r.toml:2:6: router.id: \"2001:db8::1\" is not an IPv4 address"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = \"1.70000\"\n"),
        "r.toml:3:7: router.asn: \"1.70000\" is not an AS number (1..4294967295, or asdot \"X.Y\")"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 4294967296\n"),
        "r.toml:3:7: router.asn: 4294967296 is not an AS number (1..4294967295, or asdot \"X.Y\")"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 23456\n"),
        "r.toml:3:7: router.asn: 23456 is AS_TRANS (RFC 6793 §9), not an AS of its own"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\nhold_time = 1\n"),
        "r.toml:4:13: router.hold_time: 1: the hold time is 0 or at least 3 seconds (RFC 4271 §4.2)"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\nkeepalive = 30\nhold_time = 30\n"),
        "r.toml:4:13: router.keepalive: 30: the keepalive interval must be shorter than the hold time (30)"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\nlisten = [\"0.0.0.0:179\", \"::1:179\"]\n"),
        "r.toml:4:26: router.listen[1]: \"::1:179\" is not ADDRESS:PORT (\"[ADDRESS]:PORT\" for IPv6)"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\npipeline = \"threads\"\n"),
        "r.toml:4:12: router.pipeline: unknown value \"threads\", expected one of \
         \"sequential\", \"per-peer\", \"worker-pool\", \"sharded\""
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\nselect_defer_time = 0\n"),
        "r.toml:4:21: router.select_defer_time: 0: 1 to 3600 seconds"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\ndefault_import = \"strict\"\n"),
        "r.toml:4:18: router.default_import: unknown policy \"strict\""
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\n[log]\nlevel = \"loud\"\n"),
        "r.toml:5:9: log.level: \"loud\" is not a level (error, warn, info, debug, trace) \
         or a filter such as \"info,bgp_speaker=debug\""
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\n[log]\nformat = \"xml\"\n"),
        "r.toml:5:10: log.format: \"xml\" is not a log format (\"text\" or \"json\")"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\n[log]\nsyslog_socket = \"/dev/log\"\n"),
        "r.toml:5:17: log.syslog_socket: needs log.syslog = true (it names the socket syslog lines go to)"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\n[log]\nfile = \"\"\n"),
        "r.toml:5:8: log.file: an empty path"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\n[mrt]\nupdates_interval = 60\n"),
        "r.toml:5:20: mrt.updates_interval: set without mrt.updates"
    );
    assert_eq!(
        r("[router]\nid = \"192.0.2.1\"\nasn = 1\n[control]\nmetrics = \"localhost:9179\"\n"),
        "r.toml:5:11: control.metrics: \"localhost:9179\" is not ADDRESS:PORT (\"[ADDRESS]:PORT\" for IPv6)"
    );
}

#[test]
fn neighbor_values() {
    assert_eq!(
        err(&nb("hold_time = 2\n")),
        "tesserad.toml:8:13: neighbor[0].hold_time: 2: the hold time is 0 or at least 3 seconds (RFC 4271 §4.2)"
    );
    assert_eq!(
        err("[[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = \"x\"\n"),
        "tesserad.toml:7:13: neighbor[0].remote_as: \"x\" is not an AS number (1..4294967295, or asdot \"X.Y\")"
    );
    assert_eq!(
        err("[[neighbor]]\naddress = \"192.0.2.256\"\nremote_as = 1\n"),
        "tesserad.toml:6:11: neighbor[0].address: \"192.0.2.256\" is not an IP address"
    );
    assert_eq!(
        err(&nb("import = \"foo\"\n")),
        "tesserad.toml:8:10: neighbor[0].import: unknown policy \"foo\""
    );
    assert_eq!(
        err(&nb("name = \"edge 1\"\n")),
        "tesserad.toml:8:8: neighbor[0].name: \"edge 1\" is not a name (1 to 64 letters, digits, '_' and '-')"
    );
    assert_eq!(
        err(&nb("local_address = \"2001:db8::1\"\n")),
        "tesserad.toml:8:17: neighbor[0].local_address: 2001:db8::1 is not of the family of 192.0.2.2"
    );
    assert_eq!(
        err(&nb("families = [\"ipv4-unicast\", \"ipv4\"]\n")),
        "tesserad.toml:8:29: neighbor[0].families[1]: unknown value \"ipv4\", expected one of \
         \"ipv4-unicast\", \"ipv6-unicast\", \"ipv4-multicast\", \"ipv6-multicast\""
    );
    assert_eq!(
        err(&nb("families = [\"ipv4-unicast\", \"ipv4-unicast\"]\n")),
        "tesserad.toml:8:29: neighbor[0].families[1]: \"ipv4-unicast\" is listed twice"
    );
    assert_eq!(
        err(&nb("families = []\n")),
        "tesserad.toml:8:12: neighbor[0].families: at least one family"
    );
    assert_eq!(
        err(&nb("route_reflector_client = true\n")),
        "tesserad.toml:8:26: neighbor[0].route_reflector_client: AS 65001 is not the local AS 65000: \
         route reflection is for iBGP (RFC 4456)"
    );
    assert_eq!(
        err("[[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 65000\nroute_server_client = true\n"),
        "tesserad.toml:8:23: neighbor[0].route_server_client: AS 65000 is the local AS: \
         a route server client is an eBGP neighbour (RFC 7947)"
    );
    assert_eq!(
        err("[[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 65000\nrole = \"peer\"\n"),
        "tesserad.toml:8:8: neighbor[0].role: roles are for eBGP sessions (RFC 9234 §4)"
    );
    assert_eq!(
        err(&nb(
            "families = [\"ipv6-unicast\"]\nextended_nexthop = true\n"
        )),
        "tesserad.toml:9:20: neighbor[0].extended_nexthop: needs an IPv4 family in families \
         (RFC 8950 carries IPv4 NLRI)"
    );
    assert_eq!(
        err(&nb("role_strict = true\n")),
        "tesserad.toml:8:15: neighbor[0].role_strict: needs a role"
    );
    assert_eq!(
        err(&nb("passive = true\nconnection = \"active\"\n")),
        "tesserad.toml:8:11: neighbor[0].passive: contradicts connection"
    );
    assert_eq!(
        err(&nb("password = \"\"\n")),
        "tesserad.toml:8:12: neighbor[0].password: a TCP-MD5 key is 1 to 80 bytes, not 0"
    );
    assert_eq!(
        err(&nb("max_prefix = { limit = 10, action = \"warn\", restart_after = 30 }\n")),
        "tesserad.toml:8:61: neighbor[0].max_prefix.restart_after: only meaningful with action = \"restart\""
    );
    assert_eq!(
        err(&nb("max_prefix = 0\n")),
        "tesserad.toml:8:14: neighbor[0].max_prefix: 0: the limit is at least 1"
    );
    assert_eq!(
        err(&nb("max_prefix = { limit = 10, warn_threshold = 150 }\n")),
        "tesserad.toml:8:45: neighbor[0].max_prefix.warn_threshold: 150: a percentage of the limit, 0 to 100"
    );
    assert_eq!(
        err("[[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 4200000000\nfour_octet_asn = false\n"),
        "tesserad.toml:8:18: neighbor[0].four_octet_asn: false needs 2-octet ASNs on both sides (RFC 6793)"
    );
    assert_eq!(
        err(&nb("restart_time = 5000\n")),
        "tesserad.toml:8:16: neighbor[0].restart_time: 5000: at most 4095 seconds (RFC 4724 §3)"
    );
    assert_eq!(
        err(&nb("long_lived_stale_time = 16777216\n")),
        "tesserad.toml:8:25: neighbor[0].long_lived_stale_time: 16777216: at most 16777215 seconds (RFC 9494)"
    );
    assert_eq!(
        err(&nb(
            "graceful_restart = false\nlong_lived_stale_time = 60\n"
        )),
        "tesserad.toml:9:25: neighbor[0].long_lived_stale_time: needs graceful_restart (RFC 9494)"
    );
}

#[test]
fn duplicates() {
    assert_eq!(
        err("[[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 1\n\
             [[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 2\n"),
        "tesserad.toml:9:11: neighbor[1].address: 192.0.2.2 is also neighbor[0]"
    );
    assert_eq!(
        err(
            "[[neighbor]]\nname = \"a\"\naddress = \"192.0.2.2\"\nremote_as = 1\n\
             [[neighbor]]\nname = \"a\"\naddress = \"192.0.2.3\"\nremote_as = 2\n"
        ),
        "tesserad.toml:10:8: neighbor[1].name: the name \"a\" is also neighbor[0]'s"
    );
    assert_eq!(
        err("[[static]]\nprefix = \"10.0.0.0/8\"\n[[static]]\nprefix = \"10.0.0.0/8\"\n"),
        "tesserad.toml:8:10: static[1].prefix: 10.0.0.0/8 is also static[0]"
    );
}

#[test]
fn statics() {
    assert_eq!(
        err("[[static]]\nprefix = \"10.0.0.1/8\"\n"),
        "tesserad.toml:6:10: static[0].prefix: \"10.0.0.1/8\" has bits set beyond the prefix length \
         (did you mean 10.0.0.0/8?)"
    );
    assert_eq!(
        err("[[static]]\nprefix = \"10.0.0.0/33\"\n"),
        "tesserad.toml:6:10: static[0].prefix: \"10.0.0.0/33\" is not a prefix ADDRESS/LENGTH"
    );
    assert_eq!(
        err("[[static]]\nprefix = \"2001:db8::/32\"\nnext_hop = \"192.0.2.1\"\n"),
        "tesserad.toml:7:12: static[0].next_hop: 192.0.2.1 is not of the family of 2001:db8::/32"
    );
    assert_eq!(
        err("[[static]]\nprefix = \"10.0.0.0/8\"\ncommunities = [\"65000:1\", \"65000:x\"]\n"),
        "tesserad.toml:7:27: static[0].communities[1]: \"65000:x\": not a community of the expected form"
    );
    assert_eq!(
        err("[[static]]\nprefix = \"10.0.0.0/8\"\norigin = \"bgp\"\n"),
        "tesserad.toml:7:10: static[0].origin: unknown value \"bgp\", expected one of \
         \"igp\", \"egp\", \"incomplete\""
    );
}

#[test]
fn policies() {
    assert_eq!(
        err("[policy.p]\nterm = [{ match = { prefix = [\"10.0.0.0/8\", \"10.0.0.0/33\"] } }]\n"),
        "tesserad.toml:6:45: policy.p.term[0].match.prefix[1]: \"10.0.0.0/33\": prefix length 33 > 32"
    );
    assert_eq!(
        err("[policy.p]\n[[policy.p.term]]\nmatch.prefix = [\"10.0.0.0/8\"]\nthen.med = \"x\"\n"),
        "tesserad.toml:8:12: policy.p.term[0].then.med: \"x\": expected N, +N or -N"
    );
    assert_eq!(
        err("[policy.accept]\ndefault = \"reject\"\n"),
        "tesserad.toml:5:1: policy.accept: \"accept\" is not a policy name (letters, digits, '_', '-'; \
         not \"accept\" or \"reject\")"
    );
}

#[test]
fn several_errors_in_file_order() {
    let e = config::parse(
        &format!(
            "{HEAD}[[static]]\nprefix = \"10.0.0.1/8\"\n\
             [[neighbor]]\naddress = \"192.0.2.2\"\nremote_as = 65001\nhold_time = 2\n\
             [[neighbor]]\naddress = \"192.0.2.3\"\nremote_as = 65001\nimport = \"nope\"\n"
        ),
        "t.toml",
    )
    .unwrap_err();
    assert_eq!(
        e.lines(),
        [
            "t.toml:6:10: static[0].prefix: \"10.0.0.1/8\" has bits set beyond the prefix length \
             (did you mean 10.0.0.0/8?)",
            "t.toml:10:13: neighbor[0].hold_time: 2: the hold time is 0 or at least 3 seconds (RFC 4271 §4.2)",
            "t.toml:14:10: neighbor[1].import: unknown policy \"nope\"",
        ]
    );
    assert_eq!(e.line, 6);
    assert_eq!(e.more.len(), 2);
    assert_eq!(e.to_string(), e.lines().join("\n"));
}

#[test]
fn unreadable_file() {
    let e = config::load(std::path::Path::new("/nonexistent/tesserad.toml")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "/nonexistent/tesserad.toml: cannot read: No such file or directory (os error 2)"
    );
}

#[test]
fn ttl_security_values_and_conflicts() {
    let ok = |extra: &str| {
        let c = config::parse(&format!("{HEAD}{}", nb(extra)), "t.toml")
            .unwrap_or_else(|e| panic!("{e}"));
        c.neighbors[0].ttl_security
    };
    assert_eq!(ok(""), None);
    assert_eq!(ok("ttl_security = false\n"), None);
    assert_eq!(ok("ttl_security = true\n"), Some(1));
    assert_eq!(ok("ttl_security = 2\n"), Some(2));
    assert_eq!(
        err(&nb("ttl_security = 0\n")),
        "tesserad.toml:8:16: neighbor[0].ttl_security: 0: the hop count is 1 (directly \
         connected) to 254"
    );
    assert_eq!(
        err(&nb("ttl_security = 255\n")),
        "tesserad.toml:8:16: neighbor[0].ttl_security: 255: the hop count is 1 (directly \
         connected) to 254"
    );
    assert_eq!(
        err(&nb("ttl = 2\nttl_security = true\n")),
        "tesserad.toml:9:16: neighbor[0].ttl_security: cannot be combined with `ttl`: GTSM \
         sends with TTL 255; for a peer N hops away write ttl_security = N"
    );
    assert!(err(&nb("ttl_security = \"yes\"\n")).starts_with("tesserad.toml:8:16: "));
}

#[test]
fn bfd_values_and_errors() {
    let ok = |head: &str, extra: &str| {
        let c = config::parse(&format!("{HEAD}{head}{}", nb(extra)), "t.toml")
            .unwrap_or_else(|e| panic!("{e}"));
        c.neighbors[0].bfd
    };
    assert_eq!(ok("", ""), None);
    assert_eq!(ok("", "bfd = false\n"), None);
    assert_eq!(ok("", "bfd = true\n"), Some(config::Bfd::default()));
    assert_eq!(
        ok(
            "[bfd]\nmin_tx = 10\nmin_rx = 20\nmultiplier = 5\n\n",
            "bfd = true\nbfd_min_rx = 50\n"
        ),
        Some(config::Bfd {
            min_tx_ms: 10,
            min_rx_ms: 50,
            multiplier: 5
        })
    );
    assert_eq!(
        err(&nb("bfd_min_tx = 10\n")),
        "tesserad.toml:8:14: neighbor[0].bfd_min_tx: needs bfd = true"
    );
    assert_eq!(
        err(&nb("bfd = true\nbfd_min_rx = 0\n")),
        "tesserad.toml:9:14: neighbor[0].bfd_min_rx: 0: milliseconds, 1 to 60000"
    );
    assert_eq!(
        err(&nb("bfd = true\nbfd_multiplier = 256\n")),
        "tesserad.toml:9:18: neighbor[0].bfd_multiplier: 256: the multiplier is 1 to 255"
    );
    assert_eq!(
        err("[bfd]\nmin_tx = 60001\n"),
        "tesserad.toml:6:10: bfd.min_tx: 60001: milliseconds, 1 to 60000"
    );
    assert!(err("[bfd]\ninterval = 3\n").starts_with("tesserad.toml:6:1: "));
}
