//! tesserad against gobgp: the scenario list of `tests/interop/gobgp/README.md`.
//! Each test fails with "tesserad does not start: ..." until the daemon runs.

use e2e as common;

use common::peer::{Peer, Session};
use common::scenario;
use common::Lab;

fn start(lab: &Lab, name: &str, s: &Session) -> Box<dyn Peer> {
    Box::new(common::gobgp::Gobgp::start(lab, name, s))
}

fn tools() -> Vec<&'static str> {
    [common::gobgp::TOOLS, &["ip"]].concat()
}

#[test]
fn session_routes_withdraw_refresh() {
    scenario::basic("gobgp-basic", &tools(), start);
}

#[test]
fn max_prefix() {
    scenario::max_prefix("gobgp-maxpfx", &tools(), start);
}

#[test]
fn shutdown_message_both_ways() {
    scenario::shutdown_message("gobgp-shutdown", &tools(), start);
}

#[test]
fn hold_timer_expiry_both_ways() {
    scenario::hold_timer("gobgp-hold", &tools(), start);
}

#[test]
fn route_reflector_two_ibgp_clients() {
    scenario::two_clients("gobgp-rr", &tools(), start, true);
}

#[test]
fn route_server_two_clients() {
    scenario::two_clients("gobgp-rs", &tools(), start, false);
}
