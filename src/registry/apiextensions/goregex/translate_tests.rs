//! Go syntax rewritten for the regex crate.

use super::translate::{compile, translate};

#[test]
fn go_syntax_is_rewritten() {
    assert_eq!(translate(r"^\d+$"), "^[0-9]+$");
    assert_eq!(translate(r"[\d_]"), "[[0-9]_]");
    assert_eq!(translate(r"[[a]"), r"[\[a]");
    assert_eq!(translate(r"[[:alpha:]]"), "[[:alpha:]]");
    assert_eq!(translate(r"[]a]"), "[]a]");
    assert_eq!(translate(r"a{"), r"a\{");
    assert_eq!(translate(r"a{2,3}"), "a{2,3}");
    assert_eq!(translate(r"\Qa.b\E"), r"a\.b");
    assert_eq!(translate(r"\101"), r"\x{41}");
    // ASCII classes: a Unicode digit is not a digit for Go.
    let re = compile(r"^\d$").unwrap();
    assert!(re.is_match("7"));
    assert!(!re.is_match("٣"));
}
