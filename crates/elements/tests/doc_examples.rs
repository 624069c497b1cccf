//! Every element section of docs/elements.md has an `Example:` line, and
//! every example parses (crate `graph`'s language) and every element it
//! declares builds with its arguments (crate `elements`' factory). Names
//! the example only refers to (`rt`, `c`, ...: declared elsewhere in a
//! real graph) are lower-case words, which the parser takes for classes
//! of anonymous elements; those are not built.

use graph::{parse, Factory};

fn doc() -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/elements.md");
    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// (line, element class of the section, example text) for every element
/// section (`## Class(...)`).
fn examples(text: &str) -> Vec<(usize, String, Option<String>)> {
    let mut out: Vec<(usize, String, Option<String>)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if let Some(h) = line.strip_prefix("## ") {
            let class: String = h
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric())
                .collect();
            let is_elem = h[class.len()..].starts_with('(')
                && class.starts_with(|c: char| c.is_ascii_uppercase());
            if is_elem {
                out.push((i + 1, class, None));
            }
            continue;
        }
        if let (Some(ex), Some(last)) = (line.strip_prefix("* Example: `"), out.last_mut()) {
            if last.2.is_none() {
                last.2 = Some(ex.trim_end().trim_end_matches('`').to_string());
            }
        }
    }
    out
}

#[test]
fn every_element_has_an_example_that_parses_and_builds() {
    let text = doc();
    let ex = examples(&text);
    assert!(ex.len() >= 25, "only {} element sections", ex.len());
    for (line, class, example) in ex {
        let example =
            example.unwrap_or_else(|| panic!("docs/elements.md:{line}: {class} has no Example"));
        let file = format!("docs/elements.md:{line}");
        let cfg = parse(&example, &file).unwrap_or_else(|e| panic!("{e}: {example}"));
        assert!(
            cfg.decls.iter().any(|d| d.class == class)
                || (class == "RoundRobinSched" && example.contains(&class)),
            "{file}: the example of {class} does not use it: {example}"
        );
        for d in &cfg.decls {
            if !d.class.starts_with(|c: char| c.is_ascii_uppercase()) {
                continue;
            }
            let mut env = elements::Env::new();
            if let Err(e) = env.build(&d.name, &d.class, &d.args) {
                panic!("{file}: {} ({}): {}: {example}", d.name, d.class, e.msg);
            }
        }
    }
}
