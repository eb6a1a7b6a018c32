//! Which operand types CEL's standard operators take (cel-go's standard library, with the
//! cross-type numeric comparisons Kubernetes' environment turns on), and which arguments the
//! string functions take, so a checker can report a call no overload takes, in cel-go's words:
//! `found no matching overload for '_+_' applied to '(int, string)'`, `... for 'startsWith'
//! applied to 'string.(int)'`.
//!
//! Only what is certain is reported: operands of primitive types; equality between two numeric
//! types and everything else (lists, maps, objects, null, dyn) is left alone, and so are
//! functions not listed in [`call`].

use super::issues::Token;
use serde_json::Value;

/// A primitive CEL type.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Prim {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
}

impl Prim {
    /// The type's name as cel-go prints it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Prim::Bool => "bool",
            Prim::Int => "int",
            Prim::Uint => "uint",
            Prim::Double => "double",
            Prim::String => "string",
            Prim::Bytes => "bytes",
            Prim::Duration => "google.protobuf.Duration",
            Prim::Timestamp => "google.protobuf.Timestamp",
        }
    }

    fn is_number(self) -> bool {
        matches!(self, Prim::Int | Prim::Uint | Prim::Double)
    }

    /// The type of the values schema `s` describes, when primitive (the apiserver's
    /// SchemaDeclType: a string's `byte`, `duration`, `date` and `date-time` formats are bytes,
    /// durations and timestamps; int-or-string is dynamic).
    pub(crate) fn of_schema(s: &Value) -> Option<Prim> {
        if s.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true)) {
            return None;
        }
        match s.get("type").and_then(Value::as_str)? {
            "boolean" => Some(Prim::Bool),
            "integer" => Some(Prim::Int),
            "number" => Some(Prim::Double),
            "string" => Some(match s.get("format").and_then(Value::as_str) {
                Some("byte") => Prim::Bytes,
                Some("duration") => Prim::Duration,
                Some("date" | "date-time") => Prim::Timestamp,
                _ => Prim::String,
            }),
            _ => None,
        }
    }
}

/// What calling operator `op` on `args` gives, or the text cel-go reports when no overload
/// takes them. Ok(None) when the result's type is not known or `op` is not checked here.
pub(crate) fn apply(op: &str, args: &[Prim]) -> Result<Option<Prim>, String> {
    use Prim::{Bool, Bytes, Double, Duration, Int, String as Str, Timestamp, Uint};
    let result = match (op, args) {
        ("_+_", [a, b]) => match (a, b) {
            (Int, Int) | (Uint, Uint) | (Double, Double) | (Str, Str) | (Bytes, Bytes) => Some(*a),
            (Duration, Duration) => Some(Duration),
            (Timestamp, Duration) | (Duration, Timestamp) => Some(Timestamp),
            _ => None,
        },
        ("_-_", [a, b]) => match (a, b) {
            (Int, Int) | (Uint, Uint) | (Double, Double) => Some(*a),
            (Duration, Duration) | (Timestamp, Timestamp) => Some(Duration),
            (Timestamp, Duration) => Some(Timestamp),
            _ => None,
        },
        ("_*_" | "_/_", [a, b]) => (a == b && a.is_number()).then_some(*a),
        ("_%_", [a, b]) => (a == b && matches!(a, Int | Uint)).then_some(*a),
        // Ordering across numeric types is Kubernetes' CrossTypeNumericComparisons; equality
        // across them is left alone (see the module's doc).
        ("_<_" | "_<=_" | "_>_" | "_>=_" | "_==_" | "_!=_", [a, b]) => {
            (a == b || a.is_number() && b.is_number()).then_some(Bool)
        }
        ("_&&_" | "_||_", [a, b]) => (*a == Bool && *b == Bool).then_some(Bool),
        ("!_", [a]) => (*a == Bool).then_some(Bool),
        ("-_", [a]) => matches!(a, Int | Double).then_some(*a),
        _ => return Ok(None),
    };
    match result {
        Some(t) => Ok(Some(t)),
        None => Err(format!(
            "found no matching overload for '{op}' applied to '({})'",
            args.iter().map(|a| a.name()).collect::<Vec<_>>().join(", ")
        )),
    }
}

/// What calling function `func` (on `target` for a member call) with `args` gives, or the
/// text cel-go reports when no overload takes them (`found no matching overload for
/// 'startsWith' applied to 'string.(int)'`). Ok(None) when the result's type is not known or
/// `func` is not checked here: only functions whose every overload is known are, the
/// standard library's on strings and bytes, its conversions (`int(x)`...) and timestamp and
/// duration accessors (`getHours()`...), Kubernetes' string and regex libraries', and the
/// global constructors and checks of its URL, quantity, IP and CIDR libraries (a name another
/// library also defines on a primitive type would not be; `ip` and `cidr` are also member
/// functions of CIDRs, not primitive).
pub(crate) fn call(
    func: &str,
    target: Option<Prim>,
    args: &[Prim],
) -> Result<Option<Prim>, String> {
    use Prim::{Bool, Bytes, Int, String as Str};
    let string_method = |takes: &[&[Prim]], gives: Option<Prim>| {
        (target == Some(Str) && takes.contains(&args)).then_some(gives)
    };
    let result = match (func, target) {
        ("size", None) => match args {
            [Str | Bytes] => Some(Some(Int)),
            _ => None,
        },
        ("size", Some(Str | Bytes)) if args.is_empty() => Some(Some(Int)),
        ("size", Some(_)) => None,
        ("matches", None) => (args == [Str, Str]).then_some(Some(Bool)),
        ("contains" | "startsWith" | "endsWith" | "matches", Some(_)) => {
            string_method(&[&[Str]], Some(Bool))
        }
        ("charAt", Some(_)) => string_method(&[&[Int]], Some(Str)),
        ("indexOf" | "lastIndexOf", Some(_)) => string_method(&[&[Str], &[Str, Int]], Some(Int)),
        ("lowerAscii" | "upperAscii" | "trim", Some(_)) => string_method(&[&[]], Some(Str)),
        ("replace", Some(_)) => string_method(&[&[Str, Str], &[Str, Str, Int]], Some(Str)),
        ("substring", Some(_)) => string_method(&[&[Int], &[Int, Int]], Some(Str)),
        // A list of strings.
        ("split", Some(_)) => string_method(&[&[Str], &[Str, Int]], None),
        // Kubernetes' regex library.
        ("find", Some(_)) => string_method(&[&[Str]], Some(Str)),
        ("findAll", Some(_)) => string_method(&[&[Str], &[Str, Int]], None),
        // Kubernetes' URL, quantity, IP and CIDR libraries: global functions of one string
        // (the values the parsing ones give are not primitive).
        ("isURL" | "isQuantity" | "isIP" | "isCIDR", None) => (args == [Str]).then_some(Some(Bool)),
        ("url" | "quantity" | "ip" | "cidr", None) => (args == [Str]).then_some(None),
        ("isURL" | "isQuantity" | "isIP" | "isCIDR" | "url" | "quantity", Some(_)) => None,
        // The standard library's conversions: global functions of one argument, never
        // member functions.
        ("int" | "uint" | "double" | "string" | "bytes" | "bool" | "duration" | "timestamp", _) => {
            match (target, args) {
                (None, [arg]) => conversion(func, *arg),
                _ => None,
            }
        }
        // Its timestamp and duration accessors (member functions; a timestamp's take an
        // optional time zone).
        (
            "getFullYear" | "getMonth" | "getDayOfYear" | "getDayOfMonth" | "getDate"
            | "getDayOfWeek" | "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds",
            _,
        ) => {
            let of_duration = matches!(
                func,
                "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds"
            );
            let takes = match target {
                Some(Prim::Timestamp) => args.is_empty() || args == [Str],
                Some(Prim::Duration) => of_duration && args.is_empty(),
                _ => false,
            };
            takes.then_some(Some(Int))
        }
        _ => return Ok(None),
    };
    result.ok_or_else(|| no_overload(func, target, args))
}

/// Checks a member call of Kubernetes' list library (`sum`, `min`, `max`, `isSorted`,
/// `indexOf`, `lastIndexOf`) on a list of `elem` with arguments `args`, against upstream's
/// declarations (pkg/cel/library/lists.go: `sum` of int, uint, double and duration lists,
/// the others of any primitive element, `indexOf(A)` on a `list(A)`), and `contains`, which
/// no list has; other functions pass.
pub(crate) fn list_method(func: &str, elem: Prim, args: &[Prim]) -> Result<(), String> {
    use Prim::{Double, Duration, Int, Uint};
    let takes = match func {
        // A string function (lists test membership with `in`).
        "contains" => false,
        "sum" => args.is_empty() && matches!(elem, Int | Uint | Double | Duration),
        "min" | "max" | "isSorted" => args.is_empty(),
        "indexOf" | "lastIndexOf" => args == [elem],
        _ => return Ok(()),
    };
    if takes {
        return Ok(());
    }
    let list = format!("list({})", elem.name());
    Err(no_matching(
        func,
        Some(&list),
        args.iter().map(|a| a.name()),
    ))
}

/// An operand of a call on one of Kubernetes' library types: a primitive or a library type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operand {
    Prim(Prim),
    /// By the name kapi's types use (`quantity`, `semver`, `url`, `ip`, `cidr`).
    Library(&'static str),
}

impl Operand {
    /// The type's name as cel-go prints it.
    fn name(self) -> &'static str {
        match self {
            Operand::Prim(p) => p.name(),
            Operand::Library("quantity") => "kubernetes.Quantity",
            Operand::Library("semver") => "kubernetes.Semver",
            Operand::Library("url") => "kubernetes.URL",
            Operand::Library("ip") => "net.IP",
            Operand::Library("cidr") => "net.CIDR",
            Operand::Library(other) => other,
        }
    }
}

/// Checks a member call on a value of Kubernetes' library type `lib` against upstream's
/// declarations (pkg/cel/library quantity.go, semverlib.go, urls.go, ip.go, cidr.go):
/// `quantity.isLessThan(quantity)`, `quantity.add(int)`, `cidr.containsIP(string)`, ...;
/// functions not declared there pass.
pub(crate) fn library_method(
    lib: &'static str,
    func: &str,
    args: &[Operand],
) -> Result<(), String> {
    use Operand::{Library as L, Prim as P};
    const NONE: &[&[Operand]] = &[&[]];
    let takes: &[&[Operand]] = match (lib, func) {
        ("quantity", "isGreaterThan" | "isLessThan" | "compareTo") => &[&[L("quantity")]],
        ("quantity", "add" | "sub") => &[&[L("quantity")], &[P(Prim::Int)]],
        ("quantity", "asApproximateFloat" | "asInteger" | "isInteger") => NONE,
        ("semver", "isGreaterThan" | "isLessThan" | "compareTo") => &[&[L("semver")]],
        ("semver", "major" | "minor" | "patch") => NONE,
        (
            "url",
            "getScheme" | "getHost" | "getHostname" | "getPort" | "getEscapedPath" | "getQuery",
        ) => NONE,
        (
            "ip",
            "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast",
        ) => NONE,
        ("cidr", "containsIP") => &[&[P(Prim::String)], &[L("ip")]],
        ("cidr", "containsCIDR") => &[&[P(Prim::String)], &[L("cidr")]],
        ("cidr", "ip" | "prefixLength" | "masked") => NONE,
        _ => return Ok(()),
    };
    if takes.contains(&args) {
        return Ok(());
    }
    let target = Operand::Library(lib).name();
    Err(no_matching(
        func,
        Some(target),
        args.iter().map(|a| a.name()),
    ))
}

/// cel-go's text for a call of primitive operands no overload takes.
fn no_overload(func: &str, target: Option<Prim>, args: &[Prim]) -> String {
    no_matching(func, target.map(Prim::name), args.iter().map(|a| a.name()))
}

/// cel-go's text for a call no overload takes, by its operands' type names: `found no
/// matching overload for 'startsWith' applied to 'string.(int)'`.
fn no_matching<'a>(
    func: &str,
    target: Option<&str>,
    args: impl Iterator<Item = &'a str>,
) -> String {
    let args = args.collect::<Vec<_>>().join(", ");
    let signature = match target {
        Some(t) => format!("{t}.({args})"),
        None => format!("({args})"),
    };
    format!("found no matching overload for '{func}' applied to '{signature}'")
}

/// The result of conversion `func` of a value of type `arg`, None when no overload takes it
/// (cel-go's standard declarations, `TypeConvertInt` and the others).
fn conversion(func: &str, arg: Prim) -> Option<Option<Prim>> {
    use Prim::{Bool, Bytes, Double, Duration, Int, String as Str, Timestamp, Uint};
    let (to, from): (Prim, &[Prim]) = match func {
        "int" => (Int, &[Int, Uint, Double, Str, Duration, Timestamp]),
        "uint" => (Uint, &[Uint, Int, Double, Str]),
        "double" => (Double, &[Double, Int, Uint, Str]),
        "string" => (
            Str,
            &[Str, Bool, Bytes, Double, Duration, Int, Timestamp, Uint],
        ),
        "bytes" => (Bytes, &[Bytes, Str]),
        "bool" => (Bool, &[Bool, Str]),
        "duration" => (Duration, &[Duration, Int, Str]),
        "timestamp" => (Timestamp, &[Timestamp, Int, Str]),
        _ => return Some(None),
    };
    from.contains(&arg).then_some(Some(to))
}

/// Checks a call of `func` (on `target` for a member call): an operator by [`apply`], a
/// function by [`call`]; with the token cel-go points at when no overload takes it.
pub(crate) fn check(
    func: &str,
    target: Option<Prim>,
    args: &[Prim],
) -> Result<Option<Prim>, (String, Token)> {
    let operator = target.is_none() && (func.starts_with('_') || func.ends_with('_'));
    if operator {
        apply(func, args).map_err(|message| (message, Token::Operator))
    } else {
        call(func, target, args).map_err(|message| (message, Token::Paren))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use Prim::*;

    #[test]
    fn operands_an_overload_takes_give_its_result() {
        for (op, args, want) in [
            ("_+_", vec![Int, Int], Int),
            ("_+_", vec![String, String], String),
            ("_+_", vec![Timestamp, Duration], Timestamp),
            ("_-_", vec![Timestamp, Timestamp], Duration),
            ("_<_", vec![Int, Double], Bool),
            ("_>=_", vec![Timestamp, Timestamp], Bool),
            ("_<_", vec![Bool, Bool], Bool),
            ("_==_", vec![Int, Uint], Bool),
            ("_!=_", vec![String, String], Bool),
            ("_&&_", vec![Bool, Bool], Bool),
            ("-_", vec![Double], Double),
        ] {
            assert_eq!(apply(op, &args), Ok(Some(want)), "{op} {args:?}");
        }
        // Not an operator checked here.
        assert_eq!(apply("size", &[String]), Ok(None));
    }

    #[test]
    fn operands_no_overload_takes_are_reported_in_cel_go_words() {
        for (op, args, text) in [
            ("_+_", vec![Int, String], "found no matching overload for '_+_' applied to '(int, string)'"),
            ("_-_", vec![Duration, Timestamp], "found no matching overload for '_-_' applied to '(google.protobuf.Duration, google.protobuf.Timestamp)'"),
            ("_%_", vec![Double, Double], "found no matching overload for '_%_' applied to '(double, double)'"),
            ("_<_", vec![String, Int], "found no matching overload for '_<_' applied to '(string, int)'"),
            ("_==_", vec![String, Int], "found no matching overload for '_==_' applied to '(string, int)'"),
            ("_||_", vec![Int, Bool], "found no matching overload for '_||_' applied to '(int, bool)'"),
            ("!_", vec![String], "found no matching overload for '!_' applied to '(string)'"),
        ] {
            assert_eq!(apply(op, &args), Err(text.to_string()), "{op} {args:?}");
        }
    }

    #[test]
    fn list_functions_take_the_element_types_upstream_declares() {
        for (func, elem, args) in [
            ("sum", Int, vec![]),
            ("sum", Duration, vec![]),
            ("min", String, vec![]),
            ("isSorted", Timestamp, vec![]),
            ("indexOf", Bool, vec![Bool]),
            ("lastIndexOf", String, vec![String]),
            ("reverse", String, vec![Int]),
        ] {
            assert_eq!(list_method(func, elem, &args), Ok(()), "{func}");
        }
        for (func, elem, args, want) in [
            ("sum", String, vec![], "'sum' applied to 'list(string).()'"),
            ("sum", Int, vec![Int], "'sum' applied to 'list(int).(int)'"),
            (
                "max",
                Bytes,
                vec![Int],
                "'max' applied to 'list(bytes).(int)'",
            ),
            (
                "indexOf",
                Int,
                vec![Double],
                "'indexOf' applied to 'list(int).(double)'",
            ),
        ] {
            assert_eq!(
                list_method(func, elem, &args),
                Err(format!("found no matching overload for {want}"))
            );
        }
    }

    #[test]
    fn library_types_take_the_arguments_upstream_declares() {
        use Operand::{Library as L, Prim as P};
        for (lib, func, args) in [
            ("quantity", "add", vec![P(Int)]),
            ("quantity", "compareTo", vec![L("quantity")]),
            ("cidr", "containsIP", vec![P(String)]),
            ("cidr", "containsCIDR", vec![L("cidr")]),
            ("url", "getQuery", vec![]),
            ("quantity", "sign", vec![P(Bool)]),
        ] {
            assert_eq!(library_method(lib, func, &args), Ok(()), "{func}");
        }
        for (lib, func, args, want) in [
            (
                "quantity",
                "isLessThan",
                vec![P(Int)],
                "'isLessThan' applied to 'kubernetes.Quantity.(int)'",
            ),
            (
                "semver",
                "compareTo",
                vec![L("quantity")],
                "'compareTo' applied to 'kubernetes.Semver.(kubernetes.Quantity)'",
            ),
            (
                "ip",
                "family",
                vec![P(Int)],
                "'family' applied to 'net.IP.(int)'",
            ),
            (
                "cidr",
                "containsCIDR",
                vec![L("ip")],
                "'containsCIDR' applied to 'net.CIDR.(net.IP)'",
            ),
        ] {
            assert_eq!(
                library_method(lib, func, &args),
                Err(format!("found no matching overload for {want}"))
            );
        }
    }

    #[test]
    fn functions_take_the_arguments_their_overloads_declare() {
        for (func, target, args, want) in [
            ("size", None, vec![String], Ok(Some(Int))),
            ("size", Some(Bytes), vec![], Ok(Some(Int))),
            ("startsWith", Some(String), vec![String], Ok(Some(Bool))),
            ("matches", None, vec![String, String], Ok(Some(Bool))),
            ("indexOf", Some(String), vec![String, Int], Ok(Some(Int))),
            ("replace", Some(String), vec![String, String, Int], Ok(Some(String))),
            ("split", Some(String), vec![String], Ok(None)),
            ("find", Some(String), vec![String], Ok(Some(String))),
            ("findAll", Some(String), vec![String, Int], Ok(None)),
            ("isURL", None, vec![String], Ok(Some(Bool))),
            ("quantity", None, vec![String], Ok(None)),
            ("int", None, vec![String], Ok(Some(Int))),
            ("string", None, vec![Timestamp], Ok(Some(String))),
            ("timestamp", None, vec![Int], Ok(Some(Timestamp))),
            ("getHours", Some(Duration), vec![], Ok(Some(Int))),
            ("getDayOfWeek", Some(Timestamp), vec![String], Ok(Some(Int))),
            // Not checked here: functions of non-primitive values.
            ("isLessThan", Some(String), vec![Int], Ok(None)),
            (
                "int",
                Some(String),
                vec![],
                Err("found no matching overload for 'int' applied to 'string.()'"),
            ),
            (
                "duration",
                None,
                vec![Bool],
                Err("found no matching overload for 'duration' applied to '(bool)'"),
            ),
            (
                "bytes",
                None,
                vec![Int],
                Err("found no matching overload for 'bytes' applied to '(int)'"),
            ),
            (
                "uint",
                None,
                vec![Timestamp],
                Err("found no matching overload for 'uint' applied to '(google.protobuf.Timestamp)'"),
            ),
            (
                "getFullYear",
                Some(Duration),
                vec![],
                Err("found no matching overload for 'getFullYear' applied to 'google.protobuf.Duration.()'"),
            ),
            (
                "getMonth",
                Some(String),
                vec![],
                Err("found no matching overload for 'getMonth' applied to 'string.()'"),
            ),
            (
                "getHours",
                Some(Timestamp),
                vec![Int],
                Err("found no matching overload for 'getHours' applied to 'google.protobuf.Timestamp.(int)'"),
            ),
            (
                "isQuantity",
                Some(String),
                vec![],
                Err("found no matching overload for 'isQuantity' applied to 'string.()'"),
            ),
            (
                "isCIDR",
                None,
                vec![Int],
                Err("found no matching overload for 'isCIDR' applied to '(int)'"),
            ),
            (
                "findAll",
                Some(String),
                vec![Int],
                Err("found no matching overload for 'findAll' applied to 'string.(int)'"),
            ),
            (
                "size",
                None,
                vec![Int],
                Err("found no matching overload for 'size' applied to '(int)'"),
            ),
            (
                "startsWith",
                Some(String),
                vec![Int],
                Err("found no matching overload for 'startsWith' applied to 'string.(int)'"),
            ),
            (
                "contains",
                Some(Int),
                vec![String],
                Err("found no matching overload for 'contains' applied to 'int.(string)'"),
            ),
            (
                "substring",
                Some(String),
                vec![Int, Int, Int],
                Err("found no matching overload for 'substring' applied to 'string.(int, int, int)'"),
            ),
            (
                "size",
                Some(Bool),
                vec![],
                Err("found no matching overload for 'size' applied to 'bool.()'"),
            ),
        ] {
            let want = want.map_err(|e: &str| e.to_string());
            assert_eq!(call(func, target, &args), want, "{func} {target:?} {args:?}");
        }
    }

    #[test]
    fn schemas_give_the_types_the_apiserver_declares() {
        for (schema, want) in [
            (json!({"type": "integer", "format": "int32"}), Some(Int)),
            (json!({"type": "number"}), Some(Double)),
            (
                json!({"type": "string", "format": "date-time"}),
                Some(Timestamp),
            ),
            (json!({"type": "string", "format": "byte"}), Some(Bytes)),
            (json!({"type": "string"}), Some(String)),
            (
                json!({"x-kubernetes-int-or-string": true, "type": "string"}),
                None,
            ),
            (json!({"type": "object"}), None),
        ] {
            assert_eq!(Prim::of_schema(&schema), want, "{schema}");
        }
    }
}
