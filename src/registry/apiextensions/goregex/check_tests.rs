//! Go's regexp.Compile errors, and what it accepts.

use super::check;

fn err(re: &str) -> String {
    check(re).err().unwrap_or_default()
}

#[test]
fn go_accepts_these() {
    for re in [
        "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
        r"^\d{1,3}(\.\d{1,3}){3}$",
        r"(?i)^abc$",
        r"(?P<year>\d{4})-(?<m>\d\d)",
        r"[[:alpha:]_][\w.-]*",
        r"\p{Greek}+\PL",
        r"a{,5}",
        r"\Q*.*\E",
        "(x{2}){3}?",
        "",
        r"[\]\-]",
        "a|b|",
        r"^\/path$",
        "^*",
    ] {
        assert_eq!(check(re), Ok(()), "{re}");
    }
}

#[test]
fn errors_read_like_go() {
    // Texts from Go's regexp/syntax parse_test.go invalidRegexps and its error format.
    assert_eq!(
        err("(?=x)"),
        "error parsing regexp: invalid or unsupported Perl syntax: `(?=`"
    );
    assert_eq!(
        err("(?!x)"),
        "error parsing regexp: invalid or unsupported Perl syntax: `(?!`"
    );
    assert_eq!(
        err("[a-z"),
        "error parsing regexp: missing closing ]: `[a-z`"
    );
    assert_eq!(err("a(b"), "error parsing regexp: missing closing ): `a(b`");
    assert_eq!(err("a)b"), "error parsing regexp: unexpected ): `a)b`");
    assert_eq!(
        err("a**"),
        "error parsing regexp: invalid nested repetition operator: `**`"
    );
    assert_eq!(
        err("*a"),
        "error parsing regexp: missing argument to repetition operator: `*`"
    );
    assert_eq!(
        err(r"\1"),
        "error parsing regexp: invalid escape sequence: `\\1`"
    );
    assert_eq!(
        err(r"\q"),
        "error parsing regexp: invalid escape sequence: `\\q`"
    );
    assert_eq!(
        err("[z-a]"),
        "error parsing regexp: invalid character class range: `z-a`"
    );
    assert_eq!(
        err("a{2,1}"),
        "error parsing regexp: invalid repeat count: `{2,1}`"
    );
    assert_eq!(
        err("a{1001}"),
        "error parsing regexp: invalid repeat count: `{1001}`"
    );
    assert_eq!(
        err("(a{500}){3}"),
        "error parsing regexp: invalid repeat count: `{3}`"
    );
    assert_eq!(
        err("a\\"),
        "error parsing regexp: trailing backslash at end of expression: ``"
    );
    assert_eq!(
        err("[[:foo:]]"),
        "error parsing regexp: invalid character class range: `[:foo:]`"
    );
    assert_eq!(
        err("(?P<n!>x)"),
        "error parsing regexp: invalid named capture: `(?P<n!>`"
    );
}
