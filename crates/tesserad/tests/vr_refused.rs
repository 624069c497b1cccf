//! `[[dataplane.vr]]` is validated (FILE:LINE:COL) but not run by
//! tesserad yet: `tesserad --check` must say so for a valid VR, and name
//! the position of an invalid one. No namespaces, no interfaces opened.

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
fn a_valid_vr_is_refused_as_not_supported() {
    let c = cfg(
        "valid",
        "[[dataplane.vr]]\nname = \"red\"\nvlan = 10\ntable = \"main\"\ntickets = 300\n",
    );
    let (ok, err) = check(&c);
    assert!(!ok, "tesserad --check accepted VRs it cannot run: {err}");
    assert!(
        err.contains("dataplane.vr[0] (\"red\")") && err.contains("not supported yet"),
        "{err}"
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
}
