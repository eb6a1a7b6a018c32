//! The interpreter's errors as cel-go words them (`no such overload`, `no such key: x`,
//! `division by zero`, ...). The `cel` crate's own texts are capitalized and several print
//! values with Rust's debug formatting (`Unsupported binary operator '+': Int(1),
//! String("x")`), which must not reach a user.

use super::type_of;
use kube_cel::cel::{ExecutionError, Value as CelValue};

/// What cel-go reports for a call of `func` (on `target` for a member call) no overload takes
/// at runtime: `no such overload: size(int)`, `no such overload: string.contains(int)`.
pub(crate) fn no_such_overload(
    func: &str,
    target: Option<&CelValue>,
    args: &[&CelValue],
) -> String {
    let args = args
        .iter()
        .map(|a| type_of(a))
        .collect::<Vec<_>>()
        .join(", ");
    match target {
        Some(t) => format!("no such overload: {}.{func}({args})", type_of(t)),
        None => format!("no such overload: {func}({args})"),
    }
}

/// What cel-go reports for `e` at runtime.
pub(crate) fn runtime_error(e: &ExecutionError) -> String {
    use ExecutionError as E;
    match e {
        E::NoSuchKey(key) => format!("no such key: {key}"),
        E::InvalidArgumentCount { .. }
        | E::UnsupportedTargetType { .. }
        | E::NotSupportedAsMethod { .. }
        | E::NoSuchOverload
        | E::MissingArgumentOrTarget
        | E::ValuesNotComparable(..)
        | E::UnsupportedUnaryOperator(..)
        | E::UnsupportedBinaryOperator(..)
        | E::UnsupportedMapIndex(_)
        | E::UnsupportedIndex(..)
        // A function's argument or target of a type it does not take (its texts debug-print
        // the value; kapi's conversions word their own errors).
        | E::UnexpectedType { .. } => "no such overload".into(),
        E::UnsupportedKeyType(key) => format!("unsupported key type: {}", type_of(key)),
        E::UnsupportedListIndex(index) => {
            format!("unsupported index type '{}' in list", type_of(index))
        }
        E::IndexOutOfBounds(index) => format!("index '{}' out of range in list", scalar(index)),
        E::UndeclaredReference(name) => format!("no such attribute(s): {name}"),
        E::FunctionError { message, .. } => message.clone(),
        E::DivisionByZero(_) => "division by zero".into(),
        E::RemainderByZero(_) => "modulus by zero".into(),
        E::Overflow(_, CelValue::UInt(_), _) => "unsigned integer overflow".into(),
        E::Overflow(..) => "integer overflow".into(),
        // And any kind a later cel crate adds: its text may hold debug-formatted values.
        _ => "the expression uses CEL that kapi cannot evaluate yet".into(),
    }
}

/// A number as CEL prints it; other values by their type.
fn scalar(v: &CelValue) -> String {
    match v {
        CelValue::Int(i) => i.to_string(),
        CelValue::UInt(u) => u.to_string(),
        other => type_of(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_cel::cel::{Context, Program};

    fn error_of(expr: &str) -> String {
        let program = Program::compile(expr).unwrap();
        let mut ctx = Context::default();
        ctx.add_variable_from_value("n", 1);
        ctx.add_variable_from_value("s", "x");
        let err = program.execute(&ctx).unwrap_err();
        runtime_error(&err)
    }

    #[test]
    fn errors_read_as_cel_go_words_them_without_rust_values() {
        for (expr, want) in [
            ("n + s", "no such overload"),
            ("n < s", "no such overload"),
            ("-s", "no such overload"),
            ("s[0]", "no such overload"),
            ("{'a': 1}['b']", "no such key: b"),
            ("1 / 0", "division by zero"),
            ("1 % 0", "modulus by zero"),
            ("9223372036854775807 + 1", "integer overflow"),
            ("[1, 2][5]", "index '5' out of range in list"),
            ("n.startsWith('x')", "no such overload"),
            ("s.endsWith(n)", "no such overload"),
        ] {
            let got = error_of(expr);
            assert_eq!(got, want, "{expr}");
            assert!(!got.contains("Int(") && !got.contains("String("), "{got}");
        }
    }
}
