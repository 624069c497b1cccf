//! The graph configuration language (`graph::parse`, a subset of Click's)
//! on any text (non-UTF-8 input is decoded lossily). It must return a
//! config or a `file:line:col` error, never panic, and what it returns
//! must be consistent: element names unique, every connection between
//! declared elements, every position inside the text.
#![no_main]

use libfuzzer_sys::fuzz_target;

const FILE: &str = "fuzz.click";

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    // Positions are 1-based; the end of input is one past the last line.
    let lines = text.split('\n').count() as u32;
    let inside = |p: graph::Pos| p.line >= 1 && p.col >= 1 && p.line <= lines;
    match graph::parse(&text, FILE) {
        Ok(cfg) => {
            let mut names = std::collections::HashSet::new();
            for d in &cfg.decls {
                assert!(names.insert(d.name.as_str()), "element {} twice", d.name);
                assert!(!d.class.is_empty(), "element {} has no class", d.name);
                assert!(inside(d.pos), "{} at {:?}", d.name, d.pos);
                for a in &d.args {
                    assert!(inside(a.pos), "argument of {} at {:?}", d.name, a.pos);
                    assert_eq!(a.text, a.text.trim(), "argument not trimmed");
                }
            }
            for c in &cfg.conns {
                assert!(
                    names.contains(c.from.as_str()),
                    "from {} undeclared",
                    c.from
                );
                assert!(names.contains(c.to.as_str()), "to {} undeclared", c.to);
                assert!(inside(c.pos), "connection at {:?}", c.pos);
            }
        }
        Err(e) => {
            assert_eq!(e.file, FILE);
            assert!(!e.msg.is_empty());
            assert!(inside(e.pos), "error at {:?}: {}", e.pos, e.msg);
            assert!(e
                .to_string()
                .starts_with(&format!("{FILE}:{}:", e.pos.line)));
        }
    }
});
