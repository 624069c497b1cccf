//! `router.confederation` (RFC 5065): members, the AS each neighbour sees,
//! every refused value with its file:line:column, and what a change does
//! on reload.

use base::Asn;
use config::{diff, PolicyName};

const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65001\n";

fn parse(body: &str) -> config::Config {
    config::parse(&format!("{HEAD}{body}"), "t.toml").unwrap_or_else(|e| panic!("{e}"))
}

fn err(body: &str) -> String {
    match config::parse(&format!("{HEAD}{body}"), "tesserad.toml") {
        Ok(_) => panic!("accepted:\n{body}"),
        Err(e) => e.to_string(),
    }
}

const NEIGHBORS: &str =
    "\n[[neighbor]]\nname = \"member\"\naddress = \"198.18.0.2\"\nremote_as = 65002\n\
     \n[[neighbor]]\nname = \"ext\"\naddress = \"198.18.0.3\"\nremote_as = 65100\n\
     \n[[neighbor]]\nname = \"int\"\naddress = \"198.18.0.4\"\nremote_as = 65001\n";

#[test]
fn members_internal_and_external_neighbours() {
    let c = parse(&format!(
        "confederation = {{ identifier = 64512, members = [65001, 65002] }}\n{NEIGHBORS}"
    ));
    let cf = c.router.confederation.clone().expect("confederation");
    assert_eq!(cf.identifier, Asn(64512));
    assert_eq!(cf.members, [Asn(65001), Asn(65002)]);
    let n = |name: &str| c.neighbor(name).expect(name).clone();
    let (m, e, i) = (n("member"), n("ext"), n("int"));
    assert!(m.ebgp && m.confed && m.local_as == Asn(65001));
    assert!(e.ebgp && !e.confed && e.local_as == Asn(64512));
    assert!(!i.ebgp && !i.confed && i.local_as == Asn(65001));
    // RFC 8212 only outside the confederation.
    assert_eq!(m.import, PolicyName::Accept);
    assert_eq!(e.import, PolicyName::Reject);
    // Without a confederation everyone sees router.asn.
    let c = parse(NEIGHBORS);
    assert!(c.router.confederation.is_none());
    let m = c.neighbor("member").unwrap();
    assert!(m.ebgp && !m.confed && m.local_as == Asn(65001));
    // The table form, members defaulting to none.
    let c = parse("[router.confederation]\nidentifier = \"0.64512\"\n");
    assert_eq!(c.router.confederation.unwrap().members, []);
}

#[test]
fn bad_values_name_file_line_and_field() {
    assert_eq!(
        err("confederation = { identifier = 65001 }\n"),
        "tesserad.toml:4:32: router.confederation.identifier: 65001 is router.asn: the \
         identifier is the AS the confederation shows outside, router.asn our member AS \
         inside it (RFC 5065 §2)"
    );
    assert_eq!(
        err("confederation = { identifier = 64512, members = [65002, 64512] }\n"),
        "tesserad.toml:4:57: router.confederation.members[1]: 64512 is the confederation \
         identifier, not a member AS"
    );
    assert_eq!(
        err("confederation = { identifier = 64512, members = [65002, 65002] }\n"),
        "tesserad.toml:4:57: router.confederation.members[1]: 65002 is listed twice"
    );
    assert_eq!(
        err("confederation = { identifier = 0 }\n"),
        "tesserad.toml:4:32: router.confederation.identifier: 0 is not an AS number \
         (1..4294967295, or asdot \"X.Y\")"
    );
    assert_eq!(
        err("confederation = { members = [65002] }\n"),
        "tesserad.toml:4:17: router.confederation: missing field `identifier`"
    );
    let ident = "confederation = { identifier = 64512, members = [65002] }\n";
    assert_eq!(
        err(&format!(
            "{ident}\n[[neighbor]]\naddress = \"198.18.0.2\"\nremote_as = 64512\n"
        )),
        "tesserad.toml:8:13: neighbor[0].remote_as: 64512 is our confederation identifier: \
         a neighbour inside the confederation is configured with its member AS"
    );
    assert_eq!(
        err(&format!(
            "{ident}\n[[neighbor]]\naddress = \"198.18.0.2\"\nremote_as = 65002\n\
             route_server_client = true\n"
        )),
        "tesserad.toml:9:23: neighbor[0].route_server_client: AS 65002 is a member AS of \
         router.confederation: a route server client is outside the confederation (RFC 7947)"
    );
    assert_eq!(
        err(&format!(
            "{ident}\n[[neighbor]]\naddress = \"198.18.0.2\"\nremote_as = 65002\nrole = \"peer\"\n"
        )),
        "tesserad.toml:9:8: neighbor[0].role: roles are for eBGP sessions outside the \
         confederation (RFC 9234 §4)"
    );
}

#[test]
fn reload_resets_the_sessions_a_change_touches() {
    let with = |conf: &str| {
        config::parse(&format!("{HEAD}{conf}\n{NEIGHBORS}"), "t.toml")
            .unwrap_or_else(|e| panic!("{e}"))
    };
    let none = with("");
    let a = with("confederation = { identifier = 64512, members = [65002] }");
    let b = with("confederation = { identifier = 64512, members = [65003] }");
    let c = with("confederation = { identifier = 64513, members = [65003] }");
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Joining a confederation: every session.
    let p = diff(&none, &a);
    assert_eq!(p.reset, names(&["member", "ext", "int"]));
    assert!(p.other.contains(&"router.confederation".to_string()));
    // Another member list: the neighbour whose place changed.
    assert_eq!(diff(&a, &b).reset, names(&["member"]));
    // Another identifier: every session.
    assert_eq!(diff(&b, &c).reset, names(&["member", "ext", "int"]));
    assert!(diff(&a, &a).is_empty());
}
