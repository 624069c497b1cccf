//! Named experiments.
pub fn fig61_grid() {}
pub fn run() {}
pub struct Outcome;
pub struct Scenario;
pub const SCENARIOS: &[&str] = &[];
