//! `[[dataplane.vr]]` in `tesserad --check`: VRs matched by ingress with
//! `table = "main"` or `neighbors = [...]` run (dataplane_vr.rs); what
//! does not run yet (a `vlan` or `prefix` match) is refused as "not
//! supported yet" with the FILE:LINE:COL of the key, and an invalid VR
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
fn what_does_not_run_yet_is_refused_with_its_position() {
    // vlan is on line 12 of the file above, neighbors on line 12 too.
    let c = cfg(
        "vlan",
        "[[dataplane.vr]]\nname = \"red\"\nvlan = 10\ntable = \"main\"\ntickets = 300\n",
    );
    let (ok, err) = check(&c);
    assert!(!ok, "tesserad --check accepted VRs it cannot run: {err}");
    let want = format!("{}:12:", c.0.display());
    assert!(
        err.contains(&want)
            && err.contains("dataplane.vr[0].vlan")
            && err.contains("not supported yet"),
        "want {want} in {err}"
    );
    let c = cfg(
        "neighbors",
        "[[dataplane.vr]]\nname = \"red\"\ningress = \"vr0\"\nneighbors = [\"peer\"]\n\n\
         [[neighbor]]\nname = \"peer\"\naddress = \"198.18.0.2\"\nremote_as = 65001\n",
    );
    let (ok, err) = check(&c);
    assert!(ok, "neighbors = [...] runs: {err}");
    let c = cfg(
        "ingress",
        "[[dataplane.vr]]\nname = \"red\"\ningress = \"vr0\"\ntable = \"main\"\n",
    );
    let (ok, err) = check(&c);
    assert!(ok, "an ingress VR with table = main runs: {err}");
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
}
