//! How Go prints the values that end up in kube-apiserver's field errors: `strconv.Quote` (and
//! `%q`), `%v` of a float64, `encoding/json` of an unstructured value, and the Go view of a
//! JSON number (int64 when it fits, else float64, as k8s.io/apimachinery/pkg/util/json decodes
//! it). Byte-identical messages depend on these. May use: nothing internal.

use serde_json::{Number, Value};
use std::fmt::Write as _;

/// A JSON number as Go's unstructured decoding holds it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum GoNumber {
    /// `int64`.
    Int(i64),
    /// `float64` (a fraction, an exponent, or an integer beyond int64).
    Float(f64),
}

/// The Go type of `n`.
pub(crate) fn go_number(n: &Number) -> GoNumber {
    match n.as_i64() {
        Some(i) => GoNumber::Int(i),
        None => GoNumber::Float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

impl GoNumber {
    /// The value as a float64 (Go's `valueHelp.asFloat64`).
    pub(super) fn as_f64(self) -> f64 {
        match self {
            GoNumber::Int(i) => i as f64,
            GoNumber::Float(f) => f,
        }
    }

    /// `%v` of the value.
    pub(super) fn to_go_string(self) -> String {
        match self {
            GoNumber::Int(i) => i.to_string(),
            GoNumber::Float(f) => format_g(f),
        }
    }
}

/// The shortest decimal digits of `f` (no sign, no leading zeros) and the position of the
/// decimal point relative to them (Go's `decimalSlice` `d` and `dp`).
fn shortest_digits(f: f64) -> (String, i32) {
    // `{:e}` prints the shortest round-tripping digits: `1.25e-7`, `5e0`.
    let e = format!("{:e}", f.abs());
    let (mantissa, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if digits == "0" {
        return (String::new(), 0);
    }
    (digits, exp + 1)
}

/// Go's `%e` body for `digits`/`dp` with all digits kept: `1.5e+06`, `1e-07`.
fn fmt_e(out: &mut String, digits: &str, dp: i32) {
    let (first, rest) = if digits.is_empty() {
        ("0", "")
    } else {
        digits.split_at(1)
    };
    out.push_str(first);
    if !rest.is_empty() {
        out.push('.');
        out.push_str(rest);
    }
    let exp = if digits.is_empty() { 0 } else { dp - 1 };
    out.push('e');
    out.push(if exp < 0 { '-' } else { '+' });
    let abs = exp.unsigned_abs();
    if abs < 10 {
        out.push('0');
    }
    let _ = write!(out, "{abs}");
}

/// Go's `%f` body for `digits`/`dp` with all digits kept: `1500000`, `0.000125`.
fn fmt_f(out: &mut String, digits: &str, dp: i32) {
    if dp > 0 {
        let dp = dp as usize;
        if digits.len() >= dp {
            out.push_str(&digits[..dp]);
        } else {
            out.push_str(digits);
            out.extend(std::iter::repeat_n('0', dp - digits.len()));
        }
    } else {
        out.push('0');
    }
    let frac_start = dp.max(0) as usize;
    if digits.len() > frac_start {
        out.push('.');
        out.extend(std::iter::repeat_n('0', (-dp).max(0) as usize));
        out.push_str(&digits[frac_start..]);
    }
}

/// `strconv.FormatFloat(f, 'g', -1, 64)`, which is `%v` of a float64: `1.5`, `1e+06`, `1e-05`.
pub(crate) fn format_g(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    let (digits, dp) = shortest_digits(f);
    let mut out = String::new();
    if f.is_sign_negative() {
        out.push('-');
    }
    // The shortest form uses %e when the exponent is < -4 or >= 6 (eprec 6 in strconv).
    let exp = if digits.is_empty() { 0 } else { dp - 1 };
    if !(-4..6).contains(&exp) {
        fmt_e(&mut out, &digits, dp);
    } else {
        fmt_f(&mut out, &digits, dp);
    }
    out
}

/// encoding/json's float64: `%f` between 1e-6 and 1e21, else `%e` with `e-07` cut to `e-7`.
fn json_float(out: &mut String, f: f64) {
    let (digits, dp) = shortest_digits(f);
    if f.is_sign_negative() {
        out.push('-');
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let start = out.len();
        fmt_e(out, &digits, dp);
        let tail = &out[start..];
        if let Some(at) = tail.find("e-0") {
            out.remove(start + at + 2);
        }
    } else {
        fmt_f(out, &digits, dp);
    }
}

/// Whether Go's `strconv.IsPrint` holds for `c` (approximated outside ASCII: the separators,
/// C1 controls, format characters and private-use areas are the non-printable ones).
fn is_go_print(c: char) -> bool {
    let u = c as u32;
    if u < 0x80 {
        return (0x20..0x7f).contains(&u);
    }
    !matches!(u,
        0x80..=0xa0 | 0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x1680 | 0x180e
        | 0x2000..=0x200f | 0x2028..=0x202f | 0x205f..=0x2064 | 0x2066..=0x206f | 0x3000
        | 0xd800..=0xf8ff | 0xfeff | 0xfff9..=0xfffb | 0xf0000..=0x10ffff)
}

/// `strconv.Quote(s)` (and `%q`).
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if is_go_print(c) => out.push(c),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\x7f' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// encoding/json of a string (HTML characters escaped, as json.Marshal does).
fn json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// `json.Marshal` of a Go string.
pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    json_string(&mut out, s);
    out
}

/// `json.Marshal` of a float64 (`1`, `1.5`, `1e+21`, `1e-7`).
pub(crate) fn json_f64(f: f64) -> String {
    let mut out = String::new();
    json_float(&mut out, f);
    out
}

/// `json.Marshal` of an unstructured value: map keys sorted, Go number forms.
pub(crate) fn json(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v);
    out
}

fn write_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(i) => {
                let _ = write!(out, "{i}");
            }
            GoNumber::Float(f) => json_float(out, f),
        },
        Value::String(s) => json_string(out, s),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                json_string(out, k);
                out.push(':');
                write_json(out, &m[k.as_str()]);
            }
            out.push('}');
        }
    }
}

/// A field.Error's bad value as `ErrorBody` prints it: `%q` for strings, `%v` for numbers and
/// booleans, JSON for everything else (a nil value included: `null`).
pub(crate) fn bad_value(v: &Value) -> String {
    match v {
        Value::String(s) => quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n).to_go_string(),
        other => json(other),
    }
}

/// `reflect.DeepEqual` of two unstructured values: int64 and float64 never equal each other,
/// maps compare without order.
pub(crate) fn deep_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => go_number(x) == go_number(y),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| deep_equal(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| deep_equal(v, w)))
        }
        _ => a == b,
    }
}

/// swag.IsFloat64AJSONInteger (go-openapi/swag v0.23.0): a float that is an integer within
/// ±(2^53-1), allowing a relative error of 1e-9 above 1.
pub(crate) fn is_float_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f == f.trunc() {
        return true;
    }
    // Below zero Go's float64(uint64(f)) is far from f (or 0): only whole numbers pass.
    let g = f.trunc();
    if f < 0.0 || g == 0.0 {
        return false;
    }
    (f - g).abs() / (f.abs() + g.abs()) < 1e-9
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_as_go_does() {
        for (f, v, j) in [
            (1.5, "1.5", "1.5"),
            (100.0, "100", "100"),
            (1e6, "1e+06", "1000000"),
            (123456.0, "123456", "123456"),
            (0.0001, "0.0001", "0.0001"),
            (0.00001, "1e-05", "0.00001"),
            (1e-7, "1e-07", "1e-7"),
            (1e21, "1e+21", "1e+21"),
            (-2.5, "-2.5", "-2.5"),
            (0.0, "0", "0"),
            (1.2345678e8, "1.2345678e+08", "123456780"),
        ] {
            assert_eq!(format_g(f), v, "{f}");
            assert_eq!(json(&json!(f)), j, "{f}");
        }
    }

    #[test]
    fn quoting_and_json_follow_go() {
        assert_eq!(
            quote("a\"b\\\n\x01\x7f\u{a0}é"),
            r#""a\"b\\\n\x01\x7f\u00a0é""#
        );
        assert_eq!(
            json(&json!({"b": [1, 2.5, "<&>"], "a": null})),
            r#"{"a":null,"b":[1,2.5,"\u003c\u0026\u003e"]}"#
        );
        assert_eq!(bad_value(&json!("x")), "\"x\"");
        assert_eq!(bad_value(&json!(null)), "null");
        assert_eq!(bad_value(&json!(1.0)), "1");
    }

    #[test]
    fn json_integers_follow_swag() {
        assert!(is_float_json_integer(1.0));
        assert!(is_float_json_integer(-3.0));
        assert!(!is_float_json_integer(1.5));
        assert!(!is_float_json_integer(-1.5));
        assert!(is_float_json_integer(10_000_000_000.000_001));
        assert!(!is_float_json_integer(1e16));
    }
}
