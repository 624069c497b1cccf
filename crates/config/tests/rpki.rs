//! `[rpki]`: the caches as parsed, defaults, and every bad value with its
//! file:line:column.

use std::time::Duration;

const HEAD: &str = "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n";

fn err(body: &str) -> String {
    match config::parse(&format!("{HEAD}{body}"), "tesserad.toml") {
        Ok(_) => panic!("accepted:\n{body}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn caches_with_defaults_and_preference() {
    let c = config::parse(
        &format!(
            "{HEAD}[[rpki.cache]]\naddress = \"127.0.0.1\"\nport = 3323\npreference = 2\n\
             retry = 5\nexpire = 900\n\n[[rpki.cache]]\naddress = \"::1\"\n"
        ),
        "t.toml",
    )
    .unwrap();
    let r = c.rpki.unwrap();
    assert_eq!(r.caches.len(), 2);
    assert_eq!(r.caches[0].addr, "127.0.0.1:3323".parse().unwrap());
    assert_eq!(r.caches[0].preference, 2);
    assert_eq!(r.caches[0].retry, Duration::from_secs(5));
    assert_eq!(r.caches[0].expire, Duration::from_secs(900));
    assert_eq!(r.caches[1].addr, "[::1]:323".parse().unwrap());
    assert_eq!(r.caches[1].preference, 1);
    assert_eq!(r.caches[1].retry, Duration::from_secs(600));
    assert_eq!(r.caches[1].expire, Duration::from_secs(7200));
    assert!(!r.caches[0].aspa_draft10);
    let none = config::parse(HEAD, "t.toml").unwrap();
    assert!(none.rpki.is_none());
}

#[test]
fn aspa_pdu_layout() {
    let c = config::parse(
        &format!("{HEAD}[[rpki.cache]]\naddress = \"127.0.0.1\"\naspa_pdu = \"8210bis-10\"\n"),
        "t.toml",
    )
    .unwrap();
    assert!(c.rpki.unwrap().caches[0].aspa_draft10);
    assert_eq!(
        err("[[rpki.cache]]\naddress = \"127.0.0.1\"\naspa_pdu = \"v9\"\n"),
        "tesserad.toml:7:12: rpki.cache[0].aspa_pdu: \"v9\": expected \"current\" or \"8210bis-10\""
    );
}

#[test]
fn bad_values_name_file_line_and_field() {
    assert_eq!(
        err("[rpki]\n"),
        "tesserad.toml:5:1: rpki: [rpki] needs at least one [[rpki.cache]] (address of an RTR cache)"
    );
    assert_eq!(
        err("[[rpki.cache]]\nport = 323\n"),
        "tesserad.toml:5:1: rpki.cache[0]: missing: address (the cache's IP address)"
    );
    assert_eq!(
        err("[[rpki.cache]]\naddress = \"cache.example\"\n"),
        "tesserad.toml:6:11: rpki.cache[0].address: \"cache.example\": expected an IP address"
    );
    assert_eq!(
        err("[[rpki.cache]]\naddress = \"127.0.0.1\"\npreference = 256\n"),
        "tesserad.toml:7:14: rpki.cache[0].preference: 256: must be 0..=255"
    );
    assert_eq!(
        err("[[rpki.cache]]\naddress = \"127.0.0.1\"\nretry = 0\n"),
        "tesserad.toml:7:9: rpki.cache[0].retry: 0: must be 1..=7200"
    );
    assert_eq!(
        err("[[rpki.cache]]\naddress = \"127.0.0.1\"\nexpire = 599\n"),
        "tesserad.toml:7:10: rpki.cache[0].expire: 599: must be 600..=172800"
    );
    assert_eq!(
        err("[[rpki.cache]]\naddress = \"127.0.0.1\"\nport = 0\n"),
        "tesserad.toml:7:8: rpki.cache[0].port: 0: must be 1..=65535"
    );
    assert_eq!(
        err("[[rpki.cache]]\naddress = \"127.0.0.1\"\n[[rpki.cache]]\naddress = \"127.0.0.1\"\n"),
        "tesserad.toml:8:11: rpki.cache[1].address: 127.0.0.1:323: a second cache at the same address and port"
    );
    assert_eq!(
        err("[[rpki.cache]]\naddress = \"127.0.0.1\"\nrefresh = 60\n"),
        "tesserad.toml:7:1: rpki.cache[0].refresh: unknown field `refresh`, expected one of `address`, `port`, `preference`, `retry`, `expire`, `aspa_pdu`"
    );
    assert_eq!(
        err(
            "[[rpki.cache]]\naddress = \"127.0.0.1\"\n\n[[neighbor]]\naddress = \"192.0.2.2\"\n\
             remote_as = 65001\nsoft_reconfiguration_inbound = false\n"
        ),
        "tesserad.toml:11:32: neighbor[0].soft_reconfiguration_inbound: must stay true with [rpki]: \
         VRP changes re-run import policy over the stored pre-policy routes"
    );
}

#[test]
fn reload_says_rpki_needs_a_restart() {
    let a = config::parse(
        &format!("{HEAD}[[rpki.cache]]\naddress = \"127.0.0.1\"\n"),
        "t.toml",
    )
    .unwrap();
    let b = config::parse(
        &format!("{HEAD}[[rpki.cache]]\naddress = \"127.0.0.1\"\npreference = 3\n"),
        "t.toml",
    )
    .unwrap();
    let p = config::diff(&a, &b);
    assert_eq!(p.other, vec!["rpki".to_string()]);
    assert!(p
        .describe()
        .contains(&"rpki changed: takes effect at the next start of tesserad".to_string()));
    assert!(config::diff(&a, &a).other.is_empty());
}
