//! Charts are well-formed XML with an `<svg>` root, carry every series,
//! label and legend entry, and escape hostile text.

use plot::{BarChart, HeatMap, LineChart};

/// A small XML well-formedness check: balanced tags, quoted attributes,
/// no raw `<` or `&` in text or attribute values. Returns the element
/// names in document order.
fn check_xml(doc: &str) -> Result<Vec<String>, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut names = Vec::new();
    let b = doc.as_bytes();
    let mut i = 0;
    let text_ok = |t: &str| -> Result<(), String> {
        let mut rest = t;
        while let Some(p) = rest.find('&') {
            let tail = &rest[p..];
            let ok = ["&amp;", "&lt;", "&gt;", "&quot;", "&#39;"]
                .iter()
                .any(|e| tail.starts_with(e));
            if !ok {
                return Err(format!("bare & in {t:?}"));
            }
            rest = &tail[1..];
        }
        Ok(())
    };
    while i < b.len() {
        if b[i] != b'<' {
            let end = doc[i..].find('<').map_or(b.len(), |p| i + p);
            text_ok(&doc[i..end])?;
            i = end;
            continue;
        }
        let end = i + doc[i..].find('>').ok_or("unclosed tag")?;
        let tag = &doc[i + 1..end];
        i = end + 1;
        if tag.starts_with('?') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let open = stack.pop().ok_or(format!("stray </{name}>"))?;
            if open != name.trim() {
                return Err(format!("</{name}> closes <{open}>"));
            }
            continue;
        }
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let name: String = body.chars().take_while(|c| !c.is_whitespace()).collect();
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(format!("bad element name in <{tag}>"));
        }
        // Attributes: name="value" pairs.
        let mut rest = body[name.len()..].trim();
        while !rest.is_empty() {
            let eq = rest
                .find('=')
                .ok_or(format!("attribute without value in <{tag}>"))?;
            let after = &rest[eq + 1..];
            if !after.starts_with('"') {
                return Err(format!("unquoted attribute in <{tag}>"));
            }
            let close = after[1..].find('"').ok_or("unterminated attribute")? + 1;
            let value = &after[1..close];
            if value.contains('<') {
                return Err(format!("< in attribute of <{tag}>"));
            }
            text_ok(value)?;
            rest = after[close + 1..].trim();
        }
        names.push(name.clone());
        if !self_closing {
            stack.push(name);
        }
    }
    if let Some(open) = stack.pop() {
        return Err(format!("<{open}> never closed"));
    }
    Ok(names)
}

#[test]
fn line_chart_is_valid_svg_with_every_series() {
    let c = LineChart::new("Prefixes at the monitor", "seconds", "prefixes")
        .series(
            "bird <2.0> & co",
            vec![(0.0, 0.0), (1.0, 500.0), (2.0, 1000.0)],
        )
        .series_with_markers("tessera", vec![(0.0, 0.0), (0.5, 800.0), (1.0, 1000.0)]);
    let svg = c.to_svg();
    let names = check_xml(&svg).expect("well-formed");
    assert_eq!(names.first().map(String::as_str), Some("svg"));
    assert_eq!(svg.matches("<polyline").count(), 2);
    assert_eq!(svg.matches("<circle").count(), 3, "markers on one series");
    assert!(svg.contains("bird &lt;2.0&gt; &amp; co"));
    assert!(svg.contains(">1000<"), "y tick at the top value");
    assert!(svg.contains(">seconds<") && svg.contains(">prefixes<"));
    // Same input, same bytes.
    assert_eq!(svg, c.to_svg());
}

#[test]
fn empty_and_degenerate_charts_still_render() {
    for c in [
        LineChart::new("empty", "x", "y"),
        LineChart::new("one point", "x", "y").series("s", vec![(3.0, 3.0)]),
        LineChart::new("nan", "x", "y").series("s", vec![(f64::NAN, 1.0), (1.0, f64::INFINITY)]),
    ] {
        let svg = c.to_svg();
        check_xml(&svg).unwrap_or_else(|e| panic!("{}: {e}\n{svg}", c.title));
        assert!(!svg.contains("NaN") && !svg.contains("inf"), "{svg}");
    }
}

#[test]
fn bar_chart_has_one_bar_per_value_and_whiskers() {
    let c = BarChart::new("Convergence", "seconds", &["(a)", "(b)", "(c)"])
        .series("BIRD", vec![0.99, 2.25, 5.9])
        .series_with_spread(
            "tessera",
            vec![0.5, f64::NAN, 2.0],
            vec![(0.4, 0.6), (f64::NAN, f64::NAN), (1.8, 2.3)],
        );
    let svg = c.to_svg();
    check_xml(&svg).expect("well-formed");
    assert_eq!(svg.matches("class=\"bar\"").count(), 5, "NaN leaves a gap");
    assert_eq!(svg.matches("class=\"spread\"").count(), 2);
    for cat in ["(a)", "(b)", "(c)", "BIRD", "tessera"] {
        assert!(svg.contains(&format!(">{cat}<")), "{cat}");
    }
}

#[test]
fn checker_rejects_broken_documents() {
    assert!(check_xml("<svg><g></svg>").is_err());
    assert!(check_xml("<svg a=b/>").is_err());
    assert!(check_xml("<svg>a & b</svg>").is_err());
    assert!(check_xml("<svg><text>").is_err());
}

#[test]
fn heat_map_has_one_cell_per_value_and_greys_missing_ones() {
    let m = HeatMap::new("Stability <K, R>", "K", "R", "intervals")
        .grid(
            vec![1.0, 2.0, 3.0],
            vec![10.0, 20.0],
            vec![vec![1.0, f64::NAN, 3.0], vec![4.0, 5.0, 6.0]],
        )
        .missing("unstable & slow");
    let svg = m.to_svg();
    let names = check_xml(&svg).expect("well-formed");
    assert_eq!(svg.matches("class=\"cell\"").count(), 6);
    assert_eq!(svg.matches("fill=\"#bbbbbb\"><title>").count(), 1);
    assert!(svg.contains("unstable &amp; slow"));
    assert!(svg.contains("Stability &lt;K, R&gt;"));
    assert_eq!(names[0], "svg");
    // Empty and all-missing maps still render.
    check_xml(&HeatMap::new("", "", "", "").to_svg()).expect("empty");
    let all_nan = HeatMap::new("t", "x", "y", "v").grid(vec![1.0], vec![1.0], vec![vec![f64::NAN]]);
    check_xml(&all_nan.to_svg()).expect("nan");
}
