//! The conversions of cel-go's standard library the cel crate lacks: `int` of a timestamp
//! (its Unix seconds) and of a duration (its nanoseconds), `timestamp` of an int (Unix
//! seconds), `duration` of an int (nanoseconds), the identity conversions of timestamps and
//! durations, and `bool` of a bool or of a string as Go's strconv.ParseBool reads it. Every
//! other argument goes to the crate's own conversion.

use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::Value as CelValue;
use kube_cel::cel::{functions, Context, ExecutionError, FunctionContext};

type Result<T> = std::result::Result<T, ExecutionError>;

/// Registers the conversions over the crate's.
pub(crate) fn register(ctx: &mut Context<'_>) {
    ctx.add_function("int", int);
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
        other => functions::int(ftx, This(other)),
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
    ftx.error(format!(
        "no such overload: {func}({})",
        super::type_of(value)
    ))
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
            "int('12') == 12 && int(2.7) == 2",
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
        ] {
            let got = eval(expr).expect_err(expr);
            assert!(got.contains(want), "{expr}: {got}");
        }
    }
}
