//! tesserad's TOML configuration (`config::parse`: TOML, then the whole
//! validation pass, policies compiled) on any text (non-UTF-8 input is
//! skipped: `config::load` refuses it before parsing). It must return a
//! configuration or `FILE:LINE:COL: field: message` errors, never panic;
//! an accepted configuration must diff empty against itself and every
//! neighbour in it must be locatable.
#![no_main]

use libfuzzer_sys::fuzz_target;

const FILE: &str = "fuzz.toml";

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let lines = text.split('\n').count();
    match config::parse(text, FILE) {
        Ok(c) => {
            assert_eq!(c.file, FILE);
            assert!(
                config::diff(&c, &c).is_empty(),
                "a config differs from itself"
            );
            for n in &c.neighbors {
                let at = c
                    .locate_neighbor(&n.name)
                    .expect("neighbour without a line");
                assert!(
                    at.line >= 1 && at.line <= lines,
                    "{} at {}",
                    n.name,
                    at.line
                );
            }
        }
        Err(e) => {
            for one in std::iter::once(&e).chain(&e.more) {
                assert_eq!(one.file, FILE);
                assert!(!one.message.is_empty(), "empty message");
                assert!(one.line <= lines, "line {} of {lines}", one.line);
                // No position at all only for something absent from the
                // file (a missing table), never a half-known one.
                assert_eq!(one.line == 0, one.col == 0, "{}", one.first());
                let head = if one.line == 0 {
                    format!("{FILE}: ")
                } else {
                    format!("{FILE}:{}:{}: ", one.line, one.col)
                };
                assert!(one.first().starts_with(&head), "{}", one.first());
            }
            assert_eq!(e.lines().len(), 1 + e.more.len());
        }
    }
});
