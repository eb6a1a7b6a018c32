//! CEL's optional syntax (`a.?b`, `a[?k]`) written out without it, for the evaluator of CRD
//! rules, which parses expressions without optional syntax while upstream's CRD environment
//! has optional types. `x.?f` becomes `(has(x.f) ? optional.of(x.f) : optional.none())` (on an
//! optional `x`, the same on its value when it has one), `x[?k]` the same with `k in x` for a
//! map or a bounds check for a list (the index must be a literal, which says which). The expression is printed back from its tree, with
//! macros written as macros and every operator parenthesized.

use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use std::fmt::Write;

/// The most text a lowered expression may take (an optional chain repeats its operand).
const MAX_LOWERED: usize = 16 * 1024;

/// Why an expression could not be written without optional syntax.
pub(crate) const UNSUPPORTED: &str = "optional list elements and map entries ([?x], {?k: v}) and optional indexes other than a literal ([?0], [?'key']) are not supported yet in this server";

/// `source` without optional syntax: Ok(None) when it has none (or does not parse either way:
/// the parse error is reported elsewhere), Err when it uses a form this cannot write out.
pub(crate) fn lower_optional_syntax(source: &str) -> Result<Option<String>, String> {
    if super::parse(source, false).is_ok() {
        return Ok(None);
    }
    let Ok(parsed) = super::parse(source, true) else {
        return Ok(None);
    };
    let mut out = String::new();
    print(&parsed, &mut out).ok_or_else(|| UNSUPPORTED.to_string())?;
    if out.len() > MAX_LOWERED {
        return Err("the optional chain is too long to evaluate in this server".into());
    }
    Ok(Some(out))
}

/// Whether `e` is known to be an optional value.
fn is_optional(e: &IdedExpr) -> bool {
    matches!(&e.expr, Expr::Call(c) if matches!(c.func_name.as_str(),
        super::OPT_SELECT | "_[?_]" | "of" | "none" | "ofNonZeroValue" | "optional.of"
        | "optional.none" | "optional.ofNonZeroValue" | "or"))
}

fn text(e: &IdedExpr) -> Option<String> {
    let mut s = String::new();
    print(e, &mut s)?;
    Some(s)
}

/// `present ? optional.of(value) : optional.none()`, on `operand` or, when it is an
/// optional, on its value.
fn optional_of(operand: &IdedExpr, form: impl Fn(&str) -> (String, String)) -> Option<String> {
    let o = text(operand)?;
    Some(if is_optional(operand) {
        let (present, value) = form(&format!("{o}.value()"));
        format!("({o}.hasValue() && {present} ? optional.of({value}) : optional.none())")
    } else {
        let (present, value) = form(&o);
        format!("({present} ? optional.of({value}) : optional.none())")
    })
}

fn print(e: &IdedExpr, out: &mut String) -> Option<()> {
    match &e.expr {
        Expr::Literal(l) => literal(l, out),
        Expr::Ident(name) => out.push_str(name),
        Expr::Select(s) => {
            let operand = text(&s.operand)?;
            if s.test {
                write!(out, "has({operand}.{})", s.field).ok()?;
            } else {
                write!(out, "{operand}.{}", s.field).ok()?;
            }
        }
        Expr::List(l) => {
            if !l.optional_indices.is_empty() {
                return None;
            }
            out.push('[');
            list(&l.elements, out)?;
            out.push(']');
        }
        Expr::Map(m) => {
            out.push('{');
            for (i, entry) in m.entries.iter().enumerate() {
                let EntryExpr::MapEntry(me) = &entry.expr else {
                    return None;
                };
                if me.optional {
                    return None;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                write!(out, "{}: {}", text(&me.key)?, text(&me.value)?).ok()?;
            }
            out.push('}');
        }
        Expr::Struct(s) => {
            write!(out, "{}{{", s.type_name).ok()?;
            for (i, entry) in s.entries.iter().enumerate() {
                let EntryExpr::StructField(f) = &entry.expr else {
                    return None;
                };
                if f.optional {
                    return None;
                }
                if i > 0 {
                    out.push_str(", ");
                }
                write!(out, "{}: {}", f.field, text(&f.value)?).ok()?;
            }
            out.push('}');
        }
        Expr::Call(c) => call(c, out)?,
        Expr::Comprehension(_) => out.push_str(&comprehension(e)?),
        Expr::Unspecified => return None,
    }
    Some(())
}

fn list(items: &[IdedExpr], out: &mut String) -> Option<()> {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        print(x, out)?;
    }
    Some(())
}

fn call(c: &kube_cel::cel::common::ast::CallExpr, out: &mut String) -> Option<()> {
    let arg = |i: usize| c.args.get(i).and_then(text);
    let binary = |op: &str| Some(format!("({} {op} {})", arg(0)?, arg(1)?));
    let s = match (c.func_name.as_str(), c.target.is_some(), c.args.len()) {
        (super::OPT_SELECT, false, 2) => {
            let Expr::Literal(LiteralValue::String(f)) = &c.args[1].expr else {
                return None;
            };
            let f = f.inner().to_string();
            optional_of(&c.args[0], |o| {
                (format!("has({o}.{f})"), format!("{o}.{f}"))
            })?
        }
        ("_[?_]", false, 2) => {
            // A literal index says which it is: an int reads a list, a string a map.
            let k = arg(1)?;
            let list = match &c.args[1].expr {
                Expr::Literal(LiteralValue::Int(_) | LiteralValue::UInt(_)) => true,
                Expr::Literal(LiteralValue::String(_)) => false,
                _ => return None,
            };
            optional_of(&c.args[0], |o| {
                let present = if list {
                    format!("({k} >= 0 && {k} < size({o}))")
                } else {
                    format!("({k} in {o})")
                };
                (present, format!("{o}[{k}]"))
            })?
        }
        ("_&&_", false, 2) => binary("&&")?,
        ("_||_", false, 2) => binary("||")?,
        ("_==_", false, 2) => binary("==")?,
        ("_!=_", false, 2) => binary("!=")?,
        ("_<_", false, 2) => binary("<")?,
        ("_<=_", false, 2) => binary("<=")?,
        ("_>_", false, 2) => binary(">")?,
        ("_>=_", false, 2) => binary(">=")?,
        ("_+_", false, 2) => binary("+")?,
        ("_-_", false, 2) => binary("-")?,
        ("_*_", false, 2) => binary("*")?,
        ("_/_", false, 2) => binary("/")?,
        ("_%_", false, 2) => binary("%")?,
        ("@in", false, 2) => binary("in")?,
        ("!_", false, 1) => format!("!({})", arg(0)?),
        ("-_", false, 1) => format!("-({})", arg(0)?),
        ("_?_:_", false, 3) => format!("({} ? {} : {})", arg(0)?, arg(1)?, arg(2)?),
        ("_[_]", false, 2) => format!("{}[{}]", arg(0)?, arg(1)?),
        (name, _, _) if name.starts_with('_') || name.starts_with('@') => return None,
        (name, true, _) => {
            let target = c.target.as_deref().and_then(text)?;
            let mut args = String::new();
            list(&c.args, &mut args)?;
            format!("{target}.{name}({args})")
        }
        (name, false, _) => {
            let mut args = String::new();
            list(&c.args, &mut args)?;
            format!("{name}({args})")
        }
    };
    out.push_str(&s);
    Some(())
}

/// The macro a comprehension was expanded from, written as that macro.
fn comprehension(e: &IdedExpr) -> Option<String> {
    let Expr::Comprehension(c) = &e.expr else {
        return None;
    };
    if c.iter_var2.is_some() {
        return None;
    }
    let range = text(&c.iter_range)?;
    let v = &c.iter_var;
    let is_accu = |x: &IdedExpr| matches!(&x.expr, Expr::Ident(n) if *n == c.accu_var);
    let step = match &c.loop_step.expr {
        Expr::Call(s) => s,
        _ => return None,
    };
    let args = &step.args;
    let appended = |x: &IdedExpr| -> Option<IdedExpr> {
        // `@result + [F]`: F.
        match &x.expr {
            Expr::Call(add) if add.func_name == "_+_" && add.args.len() == 2 => {
                if !is_accu(&add.args[0]) {
                    return None;
                }
                match &add.args[1].expr {
                    Expr::List(l) if l.elements.len() == 1 => Some(l.elements[0].clone()),
                    _ => None,
                }
            }
            _ => None,
        }
    };
    let init = &c.accu_init.expr;
    let made = match (init, step.func_name.as_str(), args.len()) {
        (Expr::Literal(LiteralValue::Boolean(b)), "_&&_", 2) if *b.inner() && is_accu(&args[0]) => {
            format!("{range}.all({v}, {})", text(&args[1])?)
        }
        (Expr::Literal(LiteralValue::Boolean(b)), "_||_", 2)
            if !*b.inner() && is_accu(&args[0]) =>
        {
            format!("{range}.exists({v}, {})", text(&args[1])?)
        }
        (Expr::Literal(LiteralValue::Int(_)), "_?_:_", 3) if is_accu(&args[2]) => {
            format!("{range}.exists_one({v}, {})", text(&args[0])?)
        }
        (Expr::List(_), "_+_", 2) => {
            format!("{range}.map({v}, {})", text(&appended(&c.loop_step)?)?)
        }
        (Expr::List(_), "_?_:_", 3) if is_accu(&args[2]) => {
            let f = appended(&args[1])?;
            let p = text(&args[0])?;
            if matches!(&f.expr, Expr::Ident(n) if n == v) {
                format!("{range}.filter({v}, {p})")
            } else {
                format!("{range}.map({v}, {p}, {})", text(&f)?)
            }
        }
        _ => return None,
    };
    Some(made)
}

fn literal(l: &LiteralValue, out: &mut String) {
    match l {
        LiteralValue::Boolean(b) => out.push_str(if *b.inner() { "true" } else { "false" }),
        LiteralValue::Null => out.push_str("null"),
        LiteralValue::Int(i) => {
            let _ = write!(out, "{}", i.inner());
        }
        LiteralValue::UInt(u) => {
            let _ = write!(out, "{}u", u.inner());
        }
        LiteralValue::Double(d) => {
            let _ = write!(out, "{:?}", d.inner());
        }
        LiteralValue::String(s) => {
            out.push('"');
            for ch in s.inner().chars() {
                match ch {
                    '"' => out.push_str("\\\""),
                    '\\' => out.push_str("\\\\"),
                    '\n' => out.push_str("\\n"),
                    '\r' => out.push_str("\\r"),
                    '\t' => out.push_str("\\t"),
                    c if c.is_control() => {
                        let _ = write!(out, "\\u{:04x}", c as u32);
                    }
                    c => out.push(c),
                }
            }
            out.push('"');
        }
        LiteralValue::Bytes(b) => {
            out.push_str("b\"");
            for byte in b.inner() {
                let _ = write!(out, "\\x{byte:02x}");
            }
            out.push('"');
        }
    }
}
