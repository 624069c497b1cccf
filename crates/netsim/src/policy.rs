//! Gao-Rexford policies written in the policy language the daemon runs
//! (`bgp-policy`), compiled once and shared by every AS.
//!
//! * Import sets LOCAL_PREF by the neighbour's role: customer 300, peer
//!   200, provider 100 (unknown: 100), so customer routes beat peer routes
//!   beat provider routes. Routes from customers get the AS-local marker
//!   large community [`CUSTOMER_TAG`]; routes from anyone else lose it.
//! * Export to customers (and to unknown neighbours) sends everything;
//!   export to peers and providers sends only tagged routes (learned from a
//!   customer, or originated: originated routes carry the tag too). Every
//!   export strips the tag, so it never leaves the AS.
//!
//! The result is valley-free propagation (Gao and Rexford, "Stable
//! Internet routing without global coordination", 2001).

use std::sync::Arc;

use bgp_core::PolicyRef;
use bgp_policy::{ast::PolicyDef, compile};
use topo::Role;

/// The marker of routes an AS may export to peers and providers:
/// large community `0:1:1` (global administrator 0 is reserved, so no
/// real AS uses it).
pub const CUSTOMER_TAG: bgp_wire::LargeCommunity = bgp_wire::LargeCommunity {
    global_admin: 0,
    local_data1: 1,
    local_data2: 1,
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
        let import_tagged = |lp: u32| {
            format!(
                "default = \"accept\"\n[[term]]\nthen = {{ local_pref = {lp}, large_community_add = [\"0:1:1\"] }}\n"
            )
        };
        let import_plain = |lp: u32| {
            format!(
                "default = \"accept\"\n[[term]]\nthen = {{ local_pref = {lp}, large_community_remove = [\"0:1:*\"] }}\n"
            )
        };
        let import = [
            named(
                "gr-import-customer",
                &import_tagged(local_pref(Role::Customer)),
            ),
            named("gr-import-peer", &import_plain(local_pref(Role::Peer))),
            named(
                "gr-import-provider",
                &import_plain(local_pref(Role::Provider)),
            ),
            named(
                "gr-import-unknown",
                &import_plain(local_pref(Role::Unknown)),
            ),
        ];
        let export_all = named(
            "gr-export-all",
            "default = \"accept\"\n[[term]]\nthen = { large_community_remove = [\"0:1:*\"] }\n",
        );
        let export_tagged = named(
            "gr-export-customer-routes",
            "default = \"reject\"\n[[term]]\nmatch = { large_community = [\"0:1:1\"] }\nthen = { large_community_remove = [\"0:1:*\"], action = \"accept\" }\n",
        );
        Policies {
            import,
            export_all,
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

    /// Export everything with MULTI_EXIT_DISC `med` (per-link MED, set
    /// with [`crate::Sim::set_export_med`]); the role rule still applies.
    pub fn export_with_med(&self, role: Role, leak: bool, med: u32) -> PolicyRef {
        let src = match role {
            Role::Customer | Role::Unknown => format!(
                "default = \"accept\"\n[[term]]\nthen = {{ large_community_remove = [\"0:1:*\"], med = \"{med}\" }}\n"
            ),
            _ if leak => format!(
                "default = \"accept\"\n[[term]]\nthen = {{ large_community_remove = [\"0:1:*\"], med = \"{med}\" }}\n"
            ),
            _ => format!(
                "default = \"reject\"\n[[term]]\nmatch = {{ large_community = [\"0:1:1\"] }}\nthen = {{ large_community_remove = [\"0:1:*\"], med = \"{med}\", action = \"accept\" }}\n"
            ),
        };
        named("gr-export-med", &src)
    }
}

impl Default for Policies {
    fn default() -> Self {
        Policies::new()
    }
}
