use super::*;

fn m(re: &str, path: &[u32]) -> bool {
    AsPathRegex::new(re).unwrap().matches(path.iter().copied())
}

fn err(re: &str) -> RegexError {
    AsPathRegex::new(re).unwrap_err().1
}

#[test]
fn anchors_and_boundaries() {
    // Learned from 65001.
    assert!(m("^65001_", &[65001, 3356]));
    assert!(m("^65001_", &[65001]));
    assert!(!m("^65001_", &[3356, 65001]));
    assert!(!m("^65001_", &[650011, 3356]));
    assert!(!m("^65001_", &[6500]));
    // Originated by 3356.
    assert!(m("_3356$", &[65001, 3356]));
    assert!(!m("_3356$", &[3356, 1]));
    // Anywhere, as a whole ASN.
    assert!(m("_3356_", &[1, 3356, 2]));
    assert!(!m("_3356_", &[1, 33560, 2]));
    assert!(m("3356", &[1, 3356, 2]));
    assert!(!m("1", &[3356]));
    // Empty path.
    assert!(m("^$", &[]));
    assert!(!m("^$", &[1]));
    // Both anchors: exactly this path.
    assert!(m("^1_2_3$", &[1, 2, 3]));
    assert!(!m("^1_2_3$", &[1, 2, 3, 4]));
    assert!(!m("^1_2_3$", &[0, 1, 2, 3]));
    assert!(m("^1 2 3$", &[1, 2, 3]));
    // Adjacent sequence somewhere.
    assert!(m("_2_3_", &[1, 2, 3, 4]));
    assert!(!m("_2_3_", &[1, 2, 4, 3]));
}

#[test]
fn dot_star_plus_opt_and_groups() {
    assert!(m(".*", &[]));
    assert!(m(".*", &[1, 2]));
    assert!(m("^.$", &[7]));
    assert!(!m("^.$", &[7, 8]));
    assert!(m("^1_._3$", &[1, 99, 3]));
    assert!(!m("^1_._3$", &[1, 3]));
    assert!(m("^65001(_65001)*$", &[65001, 65001, 65001]));
    assert!(m("^65001(_65001)*$", &[65001]));
    assert!(!m("^65001(_65001)*$", &[65001, 2]));
    assert!(m("^(65001)+_2$", &[65001, 65001, 2]));
    assert!(!m("^(65001)+_2$", &[2]));
    assert!(m("^1_(2_)?3$", &[1, 3]));
    assert!(m("^1_(2_)?3$", &[1, 2, 3]));
    assert!(!m("^1_(2_)?3$", &[1, 2, 2, 3]));
    assert!(m("^(1|2)_3", &[2, 3, 9]));
    assert!(!m("^(1|2)_3", &[12, 3]));
    assert!(m("^1$|^2$", &[2]));
    assert!(!m("^1$|^2$", &[1, 2]));
    assert!(m("^.+$", &[5]));
    assert!(!m("^.+$", &[]));
    assert!(m("^(.)*$", &[]));
}

#[test]
fn digit_runs_and_classes() {
    assert!(m("^[0-9]+$", &[4_200_000_000]));
    assert!(!m("^[0-9]+$", &[1, 2]));
    assert!(m("_6450[0-9]_", &[64509]));
    assert!(!m("_6450[0-9]_", &[6450]));
    assert!(!m("_6450[0-9]_", &[645091]));
    assert!(m("^6450.$", &[64501]));
    assert!(m("^[1-9][0-9]?$", &[42]));
    assert!(m("^[1-9][0-9]?$", &[4]));
    assert!(!m("^[1-9][0-9]?$", &[420]));
    assert!(m("^65001?$", &[6500]));
    assert!(m("^65001?$", &[65001]));
    assert!(!m("^65001?$", &[650011]));
    assert!(m("^6500[^0-4]$", &[65005]));
    assert!(!m("^6500[^0-4]$", &[65004]));
    assert!(m("^1[0-9]*$", &[1]));
    assert!(m("^1[0-9]*$", &[1999]));
    assert!(!m("^1[0-9]*$", &[2999]));
    assert!(m("^0$", &[0]));
    // A run followed by `.*` stays within one ASN.
    assert!(m("^65001.*$", &[650017]));
    assert!(!m("^65001.*$", &[65001, 7]));
    assert!(m("^65001_.*$", &[65001, 7]));
}

#[test]
fn ranges() {
    assert!(m("_<64512-65534>_", &[1, 64512, 2]));
    assert!(m("_<64512-65534>_", &[65534]));
    assert!(!m("_<64512-65534>_", &[65535, 64511]));
    assert!(m("^<4200000000-4294967294>$", &[4_294_967_294]));
}

#[test]
fn errors_name_the_problem() {
    assert_eq!(err(""), RegexError::Empty);
    assert_eq!(err("  "), RegexError::Empty);
    assert_eq!(err("(1"), RegexError::Unbalanced);
    assert_eq!(err("1)"), RegexError::Unbalanced);
    assert_eq!(err("*1"), RegexError::NothingToRepeat);
    assert_eq!(err("^*"), RegexError::NothingToRepeat);
    assert_eq!(err("[a]"), RegexError::BadClass);
    assert_eq!(err("[1"), RegexError::BadClass);
    assert_eq!(err("[]"), RegexError::BadClass);
    assert_eq!(err("[^0-9]"), RegexError::BadClass);
    assert_eq!(err("[5-1]"), RegexError::BadClass);
    assert_eq!(err("<5-1>"), RegexError::BadRange);
    assert_eq!(err("<5>"), RegexError::BadRange);
    assert_eq!(err("4294967296"), RegexError::AsnTooLarge);
    assert_eq!(err("1{2}"), RegexError::UnexpectedChar('{'));
    assert_eq!(err("a"), RegexError::UnexpectedChar('a'));
    assert_eq!(
        AsPathRegex::new("1 2 x").unwrap_err(),
        (4, RegexError::UnexpectedChar('x'))
    );
    let deep = "(".repeat(100) + "1" + &")".repeat(100);
    assert_eq!(err(&deep), RegexError::TooComplex);
    let long = "_1".repeat(300);
    assert_eq!(err(&long), RegexError::TooComplex);
    assert!(AsPathRegex::new("4294967295").is_ok());
}

/// Reference semantics for a restricted shape, `^`? ASN list `$`?: a
/// window search (an empty list with both anchors needs an empty path).
#[test]
fn literal_sequences_agree_with_window_search() {
    use proptest::prelude::*;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::default();
    let strat = (
        proptest::collection::vec(0u32..4, 0..4),
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec(0u32..4, 0..7),
    );
    runner
        .run(&strat, |(pat, a, z, path)| {
            let mut re = String::new();
            if a {
                re.push('^');
            }
            for p in &pat {
                re.push_str(&format!("_{p}"));
            }
            if z {
                re.push('$');
            }
            if re.is_empty() {
                re.push('_');
            }
            let reference = (0..=path.len().saturating_sub(pat.len())).any(|i| {
                path.get(i..i + pat.len()) == Some(pat.as_slice())
                    && (!a || i == 0)
                    && (!z || i + pat.len() == path.len())
            });
            let got = AsPathRegex::new(&re).unwrap().matches(path.iter().copied());
            prop_assert_eq!(got, reference, "{} on {:?}", re, path);
            Ok(())
        })
        .unwrap();
}
