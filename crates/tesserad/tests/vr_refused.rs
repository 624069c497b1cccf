//! `[[dataplane.vr]]` in `tesserad --check`: VRs matched by ingress, by
//! VLAN or by prefix, with `table = "main"` or `neighbors = [...]`, run
//! (dataplane_vr.rs, vr_match.rs); what does not run yet (VRs with a
//! separate dataplane process, `feed_socket`) is refused as "not
//! supported yet" with the FILE:LINE:COL of the VR, and an invalid VR
//! names its position. No namespaces, no interfaces opened.

use std::path::PathBuf;
use std::process::Command;

/// A config file removed when the test ends, also on failure.
struct Cfg(PathBuf);

impl Drop for Cfg {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn cfg(name: &str, vr: &str) -> Cfg {
    let p = std::env::temp_dir().join(format!("tessera-vr-{}-{name}.toml", std::process::id()));
    std::fs::write(
        &p,
        format!(
            "[router]\nid = \"192.0.2.1\"\nasn = 65000\n\n[dataplane]\n\
             [[dataplane.interface]]\nname = \"vr0\"\naddresses = [\"198.18.0.1/24\"]\n\n{vr}"
        ),
    )
    .expect("write config");
    Cfg(p)
}

/// `tesserad -c FILE --check` (bounded by coreutils' `timeout`): exit
/// success and standard error.
fn check(c: &Cfg) -> (bool, String) {
    let out = Command::new("timeout")
        .args(["20", env!("CARGO_BIN_EXE_tesserad"), "-c"])
        .arg(&c.0)
        .arg("--check")
        .output()
        .expect("run timeout (coreutils) and tesserad");
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn every_match_kind_runs_and_what_does_not_is_refused_with_its_position() {
    for (name, vr) in [
        (
            "vlan",
            "[[dataplane.vr]]\nname = \"red\"\nvlan = 10\ntable = \"main\"\ntickets = 300\n\
             [[dataplane.vr]]\nname = \"blue\"\nvlan = 20\ntable = \"main\"\n",
        ),
        (
            "prefix",
            "[[dataplane.vr]]\nname = \"red\"\nprefix = [\"198.18.4.0/24\", \"2001:db8:4::/48\"]\n\
             table = \"main\"\n\
             [[dataplane.vr]]\nname = \"blue\"\nprefix = [\"198.18.5.0/24\"]\ntable = \"main\"\n",
        ),
        (
            "ingress",
            "[[dataplane.vr]]\nname = \"red\"\ningress = \"vr0\"\ntable = \"main\"\n",
        ),
        (
            "neighbors",
            "[[dataplane.vr]]\nname = \"red\"\ningress = \"vr0\"\nneighbors = [\"peer\"]\n\n\
             [[neighbor]]\nname = \"peer\"\naddress = \"198.18.0.2\"\nremote_as = 65001\n",
        ),
    ] {
        let c = cfg(name, vr);
        let (ok, err) = check(&c);
        assert!(ok, "{name} VRs run: {err}");
    }
    // The VR's table header is on line 11 of the file above, with
    // feed_socket added.
    let c = cfg(
        "feed",
        "[[dataplane.vr]]\nname = \"red\"\nvlan = 10\ntable = \"main\"\n",
    );
    let text = std::fs::read_to_string(&c.0).expect("read");
    std::fs::write(
        &c.0,
        text.replace(
            "[dataplane]\n",
            "[dataplane]\nfeed_socket = \"/tmp/x.sock\"\n",
        ),
    )
    .expect("write");
    let (ok, err) = check(&c);
    assert!(!ok, "tesserad --check accepted VRs it cannot run: {err}");
    let want = format!("{}:11:", c.0.display());
    assert!(
        err.contains(&want) && err.contains("dataplane.vr[0]") && err.contains("not supported yet"),
        "want {want} in {err}"
    );
}

#[test]
fn an_invalid_vr_names_its_position() {
    let c = cfg(
        "zero",
        "[[dataplane.vr]]\nname = \"red\"\nvlan = 10\ntable = \"main\"\ntickets = 0\n",
    );
    let (ok, err) = check(&c);
    assert!(!ok, "{err}");
    // tickets is on line 14 of the file above.
    let want = format!("{}:14:", c.0.display());
    assert!(
        err.contains(&want) && err.contains("dataplane.vr[0].tickets"),
        "want {want} in {err}"
    );
    // Two VRs on one VLAN: the second's vlan key (line 16).
    let c = cfg(
        "dup",
        "[[dataplane.vr]]\nname = \"red\"\nvlan = 10\ntable = \"main\"\n\
         [[dataplane.vr]]\nname = \"blue\"\nvlan = 10\ntable = \"main\"\n",
    );
    let (ok, err) = check(&c);
    assert!(!ok, "{err}");
    let want = format!("{}:16:", c.0.display());
    assert!(
        err.contains(&want) && err.contains("overlaps VR \"red\": VLAN 10"),
        "want {want} in {err}"
    );
    // Overlapping prefixes of two VRs: the second's prefix (line 16).
    let c = cfg(
        "pfx",
        "[[dataplane.vr]]\nname = \"red\"\nprefix = [\"198.18.0.0/16\"]\ntable = \"main\"\n\
         [[dataplane.vr]]\nname = \"blue\"\nprefix = [\"198.18.4.0/24\"]\ntable = \"main\"\n",
    );
    let (ok, err) = check(&c);
    assert!(!ok, "{err}");
    let want = format!("{}:16:", c.0.display());
    assert!(
        err.contains(&want) && err.contains("198.18.0.0/16 and 198.18.4.0/24 overlap"),
        "want {want} in {err}"
    );
}
