//! cel-go's standard conversions where the cel crate's differ:
//!
//! - `int` of a timestamp (its Unix seconds) and of a duration (its nanoseconds),
//!   `timestamp` of an int (Unix seconds), `duration` of an int (nanoseconds), the identity
//!   conversions of timestamps and durations;
//! - `bool` of a bool or of a string as Go's strconv.ParseBool reads it;
//! - `string` of a bool, of a double (Go's shortest `%g`: `1.5e+06`), of a timestamp (RFC 3339
//!   with `Z` and no trailing zeros, as Go's RFC3339Nano) and of a duration (its seconds,
//!   `3600s`);
//! - cel-go's errors: `type conversion error from 'string' to 'int'` for a string that does not
//!   parse, `no such overload: int(list(dyn))` for a type no overload takes (the crate's own
//!   texts debug-print the value).
//!
//! Every other argument goes to the crate's own conversion.

use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::Value as CelValue;
use kube_cel::cel::{functions, Context, ExecutionError, FunctionContext};
use std::sync::Arc;

type Result<T> = std::result::Result<T, ExecutionError>;

/// Registers the conversions over the crate's.
pub(crate) fn register(ctx: &mut Context<'_>) {
    ctx.add_function("int", int);
    ctx.add_function("uint", uint);
    ctx.add_function("double", double);
    ctx.add_function("string", string);
    ctx.add_function("timestamp", timestamp);
    ctx.add_function("duration", duration);
    ctx.add_function("bool", bool);
}

fn int(ftx: &FunctionContext, This(this): This<CelValue>) -> Result<CelValue> {
    match this {
        CelValue::Timestamp(t) => Ok(CelValue::Int(t.timestamp())),
        CelValue::Duration(d) => d
            .num_nanoseconds()
            .map(CelValue::Int)
            .ok_or_else(|| ftx.error("integer overflow")),
        other => number(
            ftx,
            other,
            "int",
            |s| s.parse().ok().map(CelValue::Int),
            functions::int,
        ),
    }
}

fn uint(ftx: &FunctionContext, This(this): This<CelValue>) -> Result<CelValue> {
    let parse = |s: &str| s.parse().ok().map(CelValue::UInt);
    number(ftx, this, "uint", parse, functions::uint)
}

fn double(ftx: &FunctionContext, This(this): This<CelValue>) -> Result<CelValue> {
    let parse = |s: &str| s.parse().ok().map(CelValue::Float);
    number(ftx, this, "double", parse, functions::double)
}

/// A numeric conversion `to` of `value`: a string by `parse` (cel-go's error when it does not
/// parse), a number by the crate's conversion `of_number`, anything else no overload's.
fn number(
    ftx: &FunctionContext,
    value: CelValue,
    to: &str,
    parse: impl FnOnce(&str) -> Option<CelValue>,
    of_number: fn(&FunctionContext, This<CelValue>) -> Result<CelValue>,
) -> Result<CelValue> {
    match value {
        CelValue::String(s) => parse(&s)
            .ok_or_else(|| ftx.error(format!("type conversion error from 'string' to '{to}'"))),
        v @ (CelValue::Int(_) | CelValue::UInt(_) | CelValue::Float(_)) => of_number(ftx, This(v)),
        other => Err(no_overload(ftx, to, &other)),
    }
}

fn string(ftx: &FunctionContext, This(this): This<CelValue>) -> Result<CelValue> {
    let text = match this {
        CelValue::Bool(b) => b.to_string(),
        CelValue::Timestamp(t) => rfc3339_nano(&t),
        // Duration.ConvertToType: strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s".
        CelValue::Duration(d) => {
            let seconds = d.num_seconds() as f64 + f64::from(d.subsec_nanos()) / 1e9;
            format!("{seconds}s")
        }
        CelValue::Float(f) => go_float(f),
        v @ (CelValue::String(_) | CelValue::Int(_) | CelValue::UInt(_) | CelValue::Bytes(_)) => {
            return functions::string(ftx, This(v))
        }
        other => return Err(no_overload(ftx, "string", &other)),
    };
    Ok(CelValue::String(Arc::new(text)))
}

/// A double as cel-go writes it: Go's strconv.FormatFloat(f, 'g', -1, 64), the shortest
/// digits that read back as `f`, in exponent form below 1e-4 and from 1e6 up (`1.5e+06`,
/// `1e-05`), and `NaN`, `+Inf`, `-Inf`.
fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.into();
    }
    // Rust's `{:e}` gives the same shortest digits: `1.5e6`, `1e-5`, `0e0`.
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if f != 0.0 && !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exp.abs())
    } else {
        format!("{f}")
    }
}

/// Go's time.RFC3339Nano: `Z` for UTC, the fraction without trailing zeros.
fn rfc3339_nano(t: &chrono::DateTime<chrono::FixedOffset>) -> String {
    let full = t.to_rfc3339_opts(chrono::SecondsFormat::Nanos, true);
    // `...:SS.fffffffff` then `Z` or `+hh:mm`.
    let Some(dot) = full.find('.') else {
        return full;
    };
    let zone = full[dot..]
        .find(['Z', '+', '-'])
        .map_or(full.len(), |z| dot + z);
    let fraction = full[dot + 1..zone].trim_end_matches('0');
    if fraction.is_empty() {
        format!("{}{}", &full[..dot], &full[zone..])
    } else {
        format!("{}.{fraction}{}", &full[..dot], &full[zone..])
    }
}

/// The range CEL gives timestamps (0001-01-01 to 9999-12-31, UTC), in Unix seconds.
const SECONDS: std::ops::RangeInclusive<i64> = -62_135_596_800..=253_402_300_799;

fn timestamp(ftx: &FunctionContext, This(this): This<CelValue>) -> Result<CelValue> {
    match this {
        CelValue::Timestamp(t) => Ok(CelValue::Timestamp(t)),
        CelValue::Int(secs) => SECONDS
            .contains(&secs)
            .then(|| chrono::DateTime::from_timestamp(secs, 0))
            .flatten()
            .map(|t| CelValue::Timestamp(t.fixed_offset()))
            .ok_or_else(|| ftx.error("timestamp overflow")),
        CelValue::String(s) => functions::timestamp(s),
        other => Err(no_overload(ftx, "timestamp", &other)),
    }
}

fn duration(ftx: &FunctionContext, This(this): This<CelValue>) -> Result<CelValue> {
    match this {
        CelValue::Duration(d) => Ok(CelValue::Duration(d)),
        CelValue::Int(nanos) => Ok(CelValue::Duration(chrono::Duration::nanoseconds(nanos))),
        CelValue::String(s) => functions::duration(s),
        other => Err(no_overload(ftx, "duration", &other)),
    }
}

fn bool(ftx: &FunctionContext, This(this): This<CelValue>) -> Result<CelValue> {
    match this {
        CelValue::Bool(b) => Ok(CelValue::Bool(b)),
        CelValue::String(s) => match s.as_str() {
            "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(CelValue::Bool(true)),
            "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(CelValue::Bool(false)),
            _ => Err(ftx.error("type conversion error from 'string' to 'bool'")),
        },
        other => Err(no_overload(ftx, "bool", &other)),
    }
}

/// As cel-go words a call with no overload for the argument's type.
fn no_overload(ftx: &FunctionContext, func: &str, value: &CelValue) -> ExecutionError {
    ftx.error(super::wording::no_such_overload(func, None, &[value]))
}

#[cfg(test)]
mod tests {
    use super::super::library_context;
    use kube_cel::cel::{Program, Value};

    fn eval(expr: &str) -> Result<Value, String> {
        let ctx = library_context();
        let program = Program::compile(expr).map_err(|e| e.to_string())?;
        program.execute(&ctx).map_err(|e| e.to_string())
    }

    #[test]
    fn conversions_of_times_take_cel_go_units() {
        for expr in [
            "int(timestamp('2024-01-01T00:00:00Z')) == 1704067200",
            "int(duration('1s')) == 1000000000",
            "timestamp(1704067200) == timestamp('2024-01-01T00:00:00Z')",
            "duration(1500000000) == duration('1.5s')",
            "timestamp(timestamp('2024-01-01T00:00:00Z')) == timestamp('2024-01-01T00:00:00Z')",
            "duration(duration('1h')) == duration('60m')",
            "bool('true') && bool('T') && !bool('0') && bool(true)",
            "int('12') == 12 && int(2.7) == 2 && uint('7') == 7u && double('1.5') == 1.5",
            "string(true) == 'true' && string(duration('1h')) == '3600s' && string(duration('1.5s')) == '1.5s'",
            "string(1.5) == '1.5' && string(2.0) == '2' && string(123456.0) == '123456' && string(1234567.0) == '1.234567e+06'",
            "string(0.0001) == '0.0001' && string(0.00001) == '1e-05' && string(-2.5e21) == '-2.5e+21' && string(0.0) == '0'",
            "string(timestamp('2024-01-01T00:00:00Z')) == '2024-01-01T00:00:00Z'",
            "string(timestamp('2024-01-01T00:00:00.120Z')) == '2024-01-01T00:00:00.12Z'",
            "string(timestamp('2024-01-01T01:00:00+01:00')) == '2024-01-01T01:00:00+01:00'",
        ] {
            assert_eq!(eval(expr), Ok(Value::Bool(true)), "{expr}");
        }
    }

    #[test]
    fn conversions_out_of_range_or_of_other_types_fail() {
        for (expr, want) in [
            ("timestamp(253402300800)", "timestamp overflow"),
            (
                "bool('yes')",
                "type conversion error from 'string' to 'bool'",
            ),
            ("duration(true)", "no such overload: duration(bool)"),
            ("int('abc')", "type conversion error from 'string' to 'int'"),
            (
                "uint('-1')",
                "type conversion error from 'string' to 'uint'",
            ),
            (
                "double('x')",
                "type conversion error from 'string' to 'double'",
            ),
            ("int([1])", "no such overload: int(list(dyn))"),
            (
                "string({'a': 1})",
                "no such overload: string(map(dyn, dyn))",
            ),
            ("uint(-1)", "unsigned integer overflow"),
        ] {
            let got = eval(expr).expect_err(expr);
            assert!(got.contains(want), "{expr}: {got}");
        }
    }
}
