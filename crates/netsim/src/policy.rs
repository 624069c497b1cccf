//! Gao-Rexford policies written in the policy language the daemon runs
//! (`bgp-policy`), compiled once and shared by every AS.
//!
//! * Import sets LOCAL_PREF by the neighbour's role: customer 300, peer
//!   200, provider 100 (unknown: 100), so customer routes beat peer routes
//!   beat provider routes. Routes from peers and providers get the large
//!   community [`NOT_UP_TAG`] ("not for peers or providers"); routes from
//!   customers (and unknown neighbours) lose it.
//! * Export to customers (and to unknown neighbours) sends everything, as
//!   is (`PolicyRef::AcceptAll`: no per-prefix work, and the RIB's export
//!   cache applies); export to peers and providers rejects tagged routes.
//!   Own routes carry no tag.
//!
//! The tag is not stripped on export: routes sent down to customers carry
//! it on the wire (as operators' informational communities do); the
//! receiving AS's import sets or clears it again, so it only ever means
//! what its holder learned. Stripping it on export would copy the
//! attributes of every exported route.
//!
//! The result is valley-free propagation (Gao and Rexford, "Stable
//! Internet routing without global coordination", 2001).

use std::sync::Arc;

use bgp_core::PolicyRef;
use bgp_policy::{ast::PolicyDef, compile};
use topo::Role;

/// The marker of routes learned from a peer or a provider, which an AS
/// exports to its customers only: large community `0:1:2` (global
/// administrator 0 is reserved, so no real AS uses it).
pub const NOT_UP_TAG: bgp_wire::LargeCommunity = bgp_wire::LargeCommunity {
    global_admin: 0,
    local_data1: 1,
    local_data2: 2,
};

/// LOCAL_PREF given to routes from each role.
pub fn local_pref(role: Role) -> u32 {
    match role {
        Role::Customer => 300,
        Role::Peer => 200,
        Role::Provider | Role::Unknown => 100,
    }
}

/// The compiled policies, one per (direction, role).
#[derive(Clone, Debug)]
pub struct Policies {
    import: [PolicyRef; 4],
    export_all: PolicyRef,
    export_tagged: PolicyRef,
}

fn named(name: &str, src: &str) -> PolicyRef {
    let def: PolicyDef = match toml::from_str(src) {
        Ok(d) => d,
        Err(e) => panic!("built-in policy {name} does not parse: {e}"),
    };
    match compile(&def) {
        Ok(p) => PolicyRef::Named(name.to_string(), Arc::new(p)),
        Err(e) => panic!("built-in policy {name} does not compile: {e}"),
    }
}

fn role_index(role: Role) -> usize {
    match role {
        Role::Customer => 0,
        Role::Peer => 1,
        Role::Provider => 2,
        Role::Unknown => 3,
    }
}

impl Policies {
    /// Compiles the policies.
    pub fn new() -> Policies {
        let import = |lp: u32, edit: &str| {
            format!("default = \"accept\"\n[[term]]\nthen = {{ local_pref = {lp}, {edit} }}\n")
        };
        let tag = "large_community_add = [\"0:1:2\"]";
        let untag = "large_community_remove = [\"0:1:*\"]";
        let import = [
            named(
                "gr-import-customer",
                &import(local_pref(Role::Customer), untag),
            ),
            named("gr-import-peer", &import(local_pref(Role::Peer), tag)),
            named(
                "gr-import-provider",
                &import(local_pref(Role::Provider), tag),
            ),
            named(
                "gr-import-unknown",
                &import(local_pref(Role::Unknown), untag),
            ),
        ];
        let export_tagged = named(
            "gr-export-up",
            "default = \"accept\"\n[[term]]\nmatch = { large_community = [\"0:1:2\"] }\nthen = { action = \"reject\" }\n",
        );
        Policies {
            import,
            export_all: PolicyRef::AcceptAll,
            export_tagged,
        }
    }

    /// Import policy for routes from a neighbour with `role`.
    pub fn import(&self, role: Role) -> PolicyRef {
        self.import[role_index(role)].clone()
    }

    /// Export policy towards a neighbour with `role`; a leaking AS
    /// (`leak`) exports everything to everyone.
    pub fn export(&self, role: Role, leak: bool) -> PolicyRef {
        match role {
            Role::Customer | Role::Unknown => self.export_all.clone(),
            _ if leak => self.export_all.clone(),
            Role::Peer | Role::Provider => self.export_tagged.clone(),
        }
    }

    /// [`Self::export`] with MULTI_EXIT_DISC `med` set on what is sent
    /// (per-link MED, see [`crate::Sim::set_export_med`]).
    pub fn export_with_med(&self, role: Role, leak: bool, med: u32) -> PolicyRef {
        let up = matches!(role, Role::Peer | Role::Provider) && !leak;
        let src = if up {
            format!(
                "default = \"reject\"\n[[term]]\nmatch = {{ large_community = [\"0:1:2\"] }}\nthen = {{ action = \"reject\" }}\n[[term]]\nthen = {{ med = \"{med}\", action = \"accept\" }}\n"
            )
        } else {
            format!("default = \"accept\"\n[[term]]\nthen = {{ med = \"{med}\" }}\n")
        };
        named("gr-export-med", &src)
    }
}

impl Default for Policies {
    fn default() -> Self {
        Policies::new()
    }
}
