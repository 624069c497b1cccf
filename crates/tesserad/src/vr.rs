//! `[[dataplane.vr]]` in the daemon: validated by crate `config`, but not
//! run yet. Every entry point that would run a dataplane (`--check`,
//! start, `--dataplane`, reload) refuses VRs with this one clear error,
//! so that no VR key is silently ignored. The scheduler the VRs will run
//! under is `graph::VrScheduler` (measured in
//! `crates/elements/examples/vr_isolation.rs`).

/// Why a configuration with VRs cannot run (issue 19).
pub const NOT_SUPPORTED: &str = "is not supported yet: tesserad's dataplane runs one FIB and \
     one graph per core; virtual routers (graph::VrScheduler) run in process only (issue 19). \
     Remove the [[dataplane.vr]] entries";

/// Refuses `[[dataplane.vr]]`, naming the first VR.
pub fn refuse(d: &config::Dataplane) -> Result<(), String> {
    match d.vrs.first() {
        None => Ok(()),
        Some(v) => Err(format!(
            "dataplane.vr[0] ({:?}): [[dataplane.vr]] {NOT_SUPPORTED}",
            v.name
        )),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn refuses_vrs_and_names_the_first() {
        let c = config::parse(
            "[router]\nid = \"192.0.2.1\"\nasn = 65000\n[dataplane]\n\
             [[dataplane.interface]]\nname = \"r0\"\n\
             [[dataplane.vr]]\nname = \"red\"\nvlan = 10\ntable = \"main\"\n",
            "t.toml",
        )
        .expect("valid");
        let d = c.dataplane.expect("dataplane");
        let e = super::refuse(&d).expect_err("refused");
        assert!(
            e.contains("\"red\"") && e.contains("not supported yet"),
            "{e}"
        );
        let none = config::Dataplane {
            vrs: Vec::new(),
            ..d
        };
        assert!(super::refuse(&none).is_ok());
    }
}
