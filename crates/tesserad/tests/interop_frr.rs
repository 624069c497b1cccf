//! tesserad against frr: the scenario list of `tests/interop/frr/README.md`.
//! Each test fails with "tesserad does not start: ..." until the daemon runs.

use e2e as common;

use common::peer::{Peer, Session};
use common::scenario;
use common::Lab;

fn start(lab: &Lab, name: &str, s: &Session) -> Box<dyn Peer> {
    Box::new(common::frr::Frr::start(lab, name, s))
}

fn tools() -> Vec<&'static str> {
    [common::frr::TOOLS, &["ip"]].concat()
}

#[test]
fn session_routes_withdraw_refresh() {
    scenario::basic("frr-basic", &tools(), start);
}

#[test]
fn max_prefix() {
    scenario::max_prefix("frr-maxpfx", &tools(), start);
}

#[test]
fn shutdown_message_both_ways() {
    scenario::shutdown_message("frr-shutdown", &tools(), start);
}

#[test]
fn hold_timer_expiry_both_ways() {
    scenario::hold_timer("frr-hold", &tools(), start);
}

#[test]
fn route_reflector_two_ibgp_clients() {
    scenario::two_clients("frr-rr", &tools(), start, true);
}

#[test]
fn route_server_two_clients() {
    scenario::two_clients("frr-rs", &tools(), start, false);
}
