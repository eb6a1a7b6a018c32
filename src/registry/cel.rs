//! CEL struct literals (`Object{spec: Object.spec{replicas: 3}}`, `JSONPatch{op: "add", ...}`),
//! in one place for every expression the registry evaluates. The `cel` crate parses them but
//! its interpreter cannot run them, and kube-apiserver declares their types only where a
//! MutatingAdmissionPolicy's mutations are compiled (pkg/cel/mutation's DynamicTypeResolver):
//!
//! - everywhere else (ValidatingAdmissionPolicy expressions, matchConditions, CRD validation
//!   rules) a struct literal is a compile error, as cel-go's checker reports an undeclared type
//!   ([`refuse_structs`]), so such an expression is refused before anything evaluates it;
//! - in a mutation, [`rewrite_structs`] turns `Object`, `Object.<path>` and `JSONPatch` literals
//!   into maps with string keys that remember their type name under a key no object can hold,
//!   and [`object_literal`] / [`json_patch_literal`] turn what the expression returned back
//!   into JSON, checking the type names as upstream's ObjectVal does
//!   (CheckTypeNamesMatchFieldPathNames).
//!
//! May use: nothing else of the registry.

use kube_cel::cel::common::ast::{
    EntryExpr, Expr, IdedEntryExpr, IdedExpr, LiteralValue, MapEntryExpr, MapExpr, StructExpr,
};
use kube_cel::cel::common::types::CelString;
use kube_cel::cel::objects::{Key, OptionalValue};
use kube_cel::cel::ExecutionError;
use kube_cel::cel::Value as CelValue;
use serde_json::{Map, Value};
use std::sync::Arc;

/// The key under which a rewritten literal keeps its type name: a NUL cannot start a field
/// name of any Kubernetes object, so no object or map an expression reads holds it.
const TYPE_KEY: &str = "\u{0}type";

/// The root type of apply configurations (mutation.ObjectTypeName).
const OBJECT: &str = "Object";

/// The type of JSON Patch operations (mutation.JSONPatchTypeName).
const JSON_PATCH: &str = "JSONPatch";

/// The fields of a JSONPatch literal.
const JSON_PATCH_FIELDS: [&str; 4] = ["op", "path", "from", "value"];

/// Why an expression or what it returned is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// A struct literal of a type the environment does not declare (cel-go's checker).
    #[error("undeclared reference to '{0}' (in container '')")]
    UndeclaredType(String),
    /// A JSONPatch literal sets a field it does not have.
    #[error("undefined field '{0}'")]
    UndefinedField(String),
    /// An apply configuration's expression returned something else.
    #[error("must evaluate to Object but got {0}")]
    NotObject(String),
    /// A JSONPatch expression returned something else.
    #[error("must evaluate to list(JSONPatch) but got {0}")]
    NotJsonPatches(String),
    /// A JSONPatch's op, path or from is not a string.
    #[error("unexpected type {found} for JSONPatchType '{field}' field")]
    JsonPatchField {
        /// The field.
        field: &'static str,
        /// The type of its value.
        found: String,
    },
    /// `Object.<path>` literals whose names do not follow the field path from the root (one
    /// line per literal).
    #[error("type mismatch: {}", .0.join("\n"))]
    TypeMismatch(Vec<String>),
    /// A map with a key that is not a string.
    #[error("map key {0} is not a string")]
    MapKey(String),
    /// A value JSON cannot hold (a function, a JSONPatch inside an object, NaN).
    #[error("a value of type {0} cannot be written to an object")]
    Unconvertible(String),
}

/// Refuses the first struct literal of `expr`: where no object types are declared, a literal
/// is an undeclared reference, never evaluated.
///
/// # Errors
///
/// [`Error::UndeclaredType`] naming the literal's type.
pub(crate) fn refuse_structs(expr: &IdedExpr) -> Result<(), Error> {
    let mut found = None;
    visit(expr, &mut |e| {
        if let Expr::Struct(s) = &e.expr {
            found.get_or_insert_with(|| type_name(&s.type_name).to_string());
        }
    });
    found.map_or(Ok(()), |t| Err(Error::UndeclaredType(t)))
}

/// Parses `expr`, with CEL's optional syntax (`a.?b`, `a[?k]`, `{?k: v}`, `[?v]`) when
/// `optional_syntax` (upstream's environments enable optional types). A parse error reads as
/// cel-go's text after `compilation failed: ` (`ERROR: <input>:1:12: Syntax error: ...`, the
/// line, a caret under the column; one such group per error).
pub(crate) fn parse(expr: &str, optional_syntax: bool) -> Result<IdedExpr, String> {
    let mut parsed = kube_cel::cel::parser::Parser::new()
        .enable_optional_syntax(optional_syntax)
        .parse(expr)
        .map_err(|errors| {
            errors
                .errors
                .iter()
                .map(
                    |e| match (usize::try_from(e.pos.0), usize::try_from(e.pos.1)) {
                        (Ok(line @ 1..), Ok(column @ 1..)) => {
                            issues::at(expr, line, column - 1, &e.msg)
                        }
                        _ => format!("ERROR: <input>: {}", e.msg),
                    },
                )
                .collect::<Vec<_>>()
                .join("\n")
        })?;
    if optional_syntax {
        visit_mut(&mut parsed, &mut |e| {
            if let Expr::Call(c) = &mut e.expr {
                if c.func_name == "_?._" && c.target.is_none() {
                    c.func_name = OPT_SELECT.to_string();
                }
            }
        });
    }
    Ok(parsed)
}

/// The function `a.?f` is rewritten to call: the interpreter's own `_?._` fails when `a` is a
/// map without `f` (it should give `optional.none()`), so [`parse`] with optional syntax
/// routes the select here (see [`register_optional_select`]).
const OPT_SELECT: &str = "__kapi_opt_select__";

/// `_?._` as the CEL spec has it: on a map, `optional.of(a.f)` or `optional.none()`; on an
/// optional, the same on its value (none stays none).
fn opt_select(operand: CelValue, field: Arc<String>) -> Result<CelValue, ExecutionError> {
    let inner = match &operand {
        CelValue::Opaque(o) if o.runtime_type_name() == "optional_type" => {
            match o
                .downcast_ref::<OptionalValue>()
                .and_then(OptionalValue::value)
            {
                Some(v) => v.clone(),
                None => return Ok(CelValue::Opaque(Arc::new(OptionalValue::none()))),
            }
        }
        _ => operand,
    };
    let CelValue::Map(m) = inner else {
        return Err(ExecutionError::function_error(
            "_?._",
            "no such overload: optional select needs a map",
        ));
    };
    Ok(CelValue::Opaque(Arc::new(
        match m.map.get(&Key::String(field)) {
            Some(v) => OptionalValue::of(v.clone()),
            None => OptionalValue::none(),
        },
    )))
}

/// A context with Kubernetes' CEL library (kube-cel's), optional selects as [`parse`] routes
/// them, `size()` as cel-go counts, `contains` and the conversions as cel-go has them
/// (`convert`), and the cost meter: what every kapi expression runs over.
pub(crate) fn library_context() -> kube_cel::cel::Context<'static> {
    use kube_cel::KubeCelExt;
    let mut ctx = kube_cel::cel::Context::default().with_all();
    register_optional_select(&mut ctx);
    register_size(&mut ctx);
    ctx.add_function("contains", contains);
    convert::register(&mut ctx);
    budget::register(&mut ctx);
    ctx
}

/// Registers the function [`parse`] routes optional selects to.
pub(crate) fn register_optional_select(ctx: &mut kube_cel::cel::Context<'_>) {
    ctx.add_function(OPT_SELECT, opt_select);
}

/// Registers `size()` as CEL's spec and cel-go count: a string's code points (the cel crate
/// counts its bytes: `'héllo'.size()` is 5, not 6), a list's items, a map's entries, bytes.
/// (Admission's leaves count a JSON value the same way: `admission::leaves`.)
pub(crate) fn register_size(ctx: &mut kube_cel::cel::Context<'_>) {
    ctx.add_function("size", size);
}

fn size(
    ftx: &kube_cel::cel::FunctionContext,
    kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<CelValue>,
) -> Result<i64, ExecutionError> {
    let size = match this {
        CelValue::String(s) => s.chars().count(),
        CelValue::List(l) => l.len(),
        CelValue::Map(m) => m.map.len(),
        CelValue::Bytes(b) => b.len(),
        value => return Err(ftx.error(wording::no_such_overload("size", None, &[&value]))),
    };
    Ok(i64::try_from(size).unwrap_or(i64::MAX))
}

/// `contains` as cel-go has it: of a string in a string only (the cel crate also answers it
/// for lists, maps and bytes, and false for an argument of another type).
fn contains(
    ftx: &kube_cel::cel::FunctionContext,
    kube_cel::cel::extractors::This(this): kube_cel::cel::extractors::This<CelValue>,
    arg: CelValue,
) -> Result<bool, ExecutionError> {
    match (&this, &arg) {
        (CelValue::String(s), CelValue::String(sub)) => Ok(s.contains(sub.as_str())),
        _ => Err(ftx.error(wording::no_such_overload("contains", Some(&this), &[&arg]))),
    }
}

/// Why an expression does not compile (parsed with optional syntax when `optional_syntax`:
/// admission's expressions have it, CRD rules, which kube-cel evaluates, do not; struct
/// literals refused: no object types are declared there), as the text after upstream's
/// `compilation failed: ` on one line; None when it compiles. Parsing only, no type checking.
pub(crate) fn compile_failure(expr: &str, optional_syntax: bool) -> Option<String> {
    match parse(expr, optional_syntax) {
        Err(why) => Some(why),
        Ok(e) => refuse_structs(&e)
            .err()
            .map(|e| format!("ERROR: <input>: {e}")),
    }
}

/// `expr` with its `Object`, `Object.<path>` and `JSONPatch` literals made maps the
/// interpreter evaluates (a mutation's expression).
///
/// # Errors
///
/// A literal of another type, or a JSONPatch field other than op, path, from and value.
pub(crate) fn rewrite_structs(expr: &IdedExpr) -> Result<IdedExpr, Error> {
    let mut next_id = 0;
    visit(expr, &mut |e| next_id = next_id.max(e.id));
    let mut out = expr.clone();
    let mut failed = None;
    visit_mut(&mut out, &mut |e| {
        if let (Expr::Struct(s), None) = (&mut e.expr, &failed) {
            match struct_to_map(s, &mut next_id) {
                Ok(map) => e.expr = Expr::Map(map),
                Err(err) => failed = Some(err),
            }
        }
    });
    failed.map_or(Ok(out), Err)
}

fn type_name(name: &str) -> &str {
    name.trim_start_matches('.')
}

/// Calls `f` on `expr` and every expression below it.
pub(crate) fn visit(expr: &IdedExpr, f: &mut impl FnMut(&IdedExpr)) {
    f(expr);
    match &expr.expr {
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                visit(t, f);
            }
            c.args.iter().for_each(|a| visit(a, f));
        }
        Expr::Comprehension(c) => {
            for e in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                visit(e, f);
            }
        }
        Expr::List(l) => l.elements.iter().for_each(|e| visit(e, f)),
        Expr::Map(m) => visit_entries(&m.entries, f),
        Expr::Struct(s) => visit_entries(&s.entries, f),
        Expr::Select(s) => visit(&s.operand, f),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// Calls `f` on `expr` and every expression below it, which it may change (`f` sees a node
/// before what is below it).
pub(crate) fn visit_mut(expr: &mut IdedExpr, f: &mut impl FnMut(&mut IdedExpr)) {
    f(expr);
    match &mut expr.expr {
        Expr::Call(c) => {
            if let Some(t) = &mut c.target {
                visit_mut(t, f);
            }
            c.args.iter_mut().for_each(|a| visit_mut(a, f));
        }
        Expr::Comprehension(c) => {
            for e in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                visit_mut(e, f);
            }
        }
        Expr::List(l) => l.elements.iter_mut().for_each(|e| visit_mut(e, f)),
        Expr::Map(m) => m.entries.iter_mut().for_each(|e| entry_mut(e, f)),
        Expr::Struct(s) => s.entries.iter_mut().for_each(|e| entry_mut(e, f)),
        Expr::Select(s) => visit_mut(&mut s.operand, f),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn entry_mut(entry: &mut IdedEntryExpr, f: &mut impl FnMut(&mut IdedExpr)) {
    match &mut entry.expr {
        EntryExpr::MapEntry(e) => {
            visit_mut(&mut e.key, f);
            visit_mut(&mut e.value, f);
        }
        EntryExpr::StructField(s) => visit_mut(&mut s.value, f),
    }
}

fn visit_entries(entries: &[IdedEntryExpr], f: &mut impl FnMut(&IdedExpr)) {
    for entry in entries {
        match &entry.expr {
            EntryExpr::MapEntry(e) => {
                visit(&e.key, f);
                visit(&e.value, f);
            }
            EntryExpr::StructField(s) => visit(&s.value, f),
        }
    }
}

fn string_literal(s: &str, next_id: &mut u64) -> IdedExpr {
    *next_id += 1;
    IdedExpr {
        id: *next_id,
        expr: Expr::Literal(LiteralValue::String(CelString::from(s.to_string()))),
    }
}

/// The map a struct literal becomes: its type name under [`TYPE_KEY`], then its fields (whose
/// values [`visit_mut`] rewrites next).
fn struct_to_map(s: &mut StructExpr, next_id: &mut u64) -> Result<MapExpr, Error> {
    let name = type_name(&s.type_name).to_string();
    let is_object = name == OBJECT || name.starts_with("Object.");
    if !is_object && name != JSON_PATCH {
        return Err(Error::UndeclaredType(name));
    }
    let mut entries = Vec::with_capacity(s.entries.len() + 1);
    *next_id += 1;
    entries.push(IdedEntryExpr {
        id: *next_id,
        expr: EntryExpr::MapEntry(MapEntryExpr {
            key: string_literal(TYPE_KEY, next_id),
            value: string_literal(&name, next_id),
            optional: false,
        }),
    });
    for entry in std::mem::take(&mut s.entries) {
        let (key, value, optional) = match entry.expr {
            EntryExpr::StructField(f) => {
                if name == JSON_PATCH && !JSON_PATCH_FIELDS.contains(&f.field.as_str()) {
                    return Err(Error::UndefinedField(f.field));
                }
                (string_literal(&f.field, next_id), f.value, f.optional)
            }
            EntryExpr::MapEntry(e) => (e.key, e.value, e.optional),
        };
        entries.push(IdedEntryExpr {
            id: entry.id,
            expr: EntryExpr::MapEntry(MapEntryExpr {
                key,
                value,
                optional,
            }),
        });
    }
    Ok(MapExpr { entries })
}

/// The type name a rewritten literal remembers, if `v` is one.
fn literal_type(v: &CelValue) -> Option<&str> {
    let CelValue::Map(m) = v else { return None };
    match m.map.get(&Key::String(TYPE_KEY.to_string().into())) {
        Some(CelValue::String(s)) => Some(s.as_str()),
        _ => None,
    }
}

/// The CEL type of `v`, as cel-go prints it in its messages.
pub(crate) fn type_of(v: &CelValue) -> String {
    if let Some(t) = literal_type(v) {
        return t.to_string();
    }
    match v {
        CelValue::List(_) => "list(dyn)",
        CelValue::Map(_) => "map(dyn, dyn)",
        CelValue::Function(..) => "function",
        CelValue::Int(_) => "int",
        CelValue::UInt(_) => "uint",
        CelValue::Float(_) => "double",
        CelValue::String(_) => "string",
        CelValue::Bytes(_) => "bytes",
        CelValue::Bool(_) => "bool",
        CelValue::Duration(_) => "google.protobuf.Duration",
        CelValue::Timestamp(_) => "google.protobuf.Timestamp",
        CelValue::Opaque(_) => "opaque",
        CelValue::Null => "null_type",
    }
    .to_string()
}

/// The apply configuration an `Object{...}` expression returned, as JSON.
///
/// # Errors
///
/// It is not an `Object` literal ([`Error::NotObject`]), a nested literal's name does not
/// follow its field path ([`Error::TypeMismatch`]), or a value cannot be JSON.
pub(crate) fn object_literal(v: &CelValue) -> Result<Value, Error> {
    if literal_type(v) != Some(OBJECT) {
        return Err(Error::NotObject(type_of(v)));
    }
    typed_json(v)
}

/// `v` as JSON, with the names of the literals in it checked against their field paths from
/// its own type name when it is a literal.
fn typed_json(v: &CelValue) -> Result<Value, Error> {
    let mut mismatches = Vec::new();
    let mut path = literal_type(v).map(|t| vec![t.to_string()]);
    let json = to_json(v, path.as_mut(), &mut mismatches)?;
    if mismatches.is_empty() {
        Ok(json)
    } else {
        Err(Error::TypeMismatch(mismatches))
    }
}

/// The operations a JSONPatch expression returned, as a JSON Patch document.
///
/// # Errors
///
/// It is not a list of `JSONPatch` literals, a field has the wrong type, or a value cannot be
/// JSON.
pub(crate) fn json_patch_literal(v: &CelValue) -> Result<Value, Error> {
    let CelValue::List(ops) = v else {
        return Err(Error::NotJsonPatches(type_of(v)));
    };
    let mut out = Vec::with_capacity(ops.len());
    for op in ops.iter() {
        let CelValue::Map(m) = op else {
            return Err(Error::NotJsonPatches(format!("list({})", type_of(op))));
        };
        if literal_type(op) != Some(JSON_PATCH) {
            return Err(Error::NotJsonPatches(format!("list({})", type_of(op))));
        }
        let field = |name: &str| m.map.get(&Key::String(name.to_string().into()));
        let mut patch = Map::new();
        for name in ["op", "path", "from"] {
            match field(name) {
                None => {}
                Some(CelValue::String(s)) if name == "from" && s.is_empty() => {}
                Some(CelValue::String(s)) => {
                    patch.insert(name.to_string(), Value::String(s.to_string()));
                }
                Some(other) => {
                    return Err(Error::JsonPatchField {
                        field: match name {
                            "op" => "op",
                            "path" => "path",
                            _ => "from",
                        },
                        found: type_of(other),
                    })
                }
            }
        }
        for name in ["op", "path"] {
            patch
                .entry(name.to_string())
                .or_insert_with(|| Value::String(String::new()));
        }
        if let Some(value) = field("value") {
            patch.insert("value".to_string(), typed_json(value)?);
        }
        out.push(Value::Object(patch));
    }
    Ok(Value::Array(out))
}

/// `v` as JSON. `path`: the type-name path of the field `v` is at, when its literals are
/// checked (upstream checks below an `Object` literal only; lists and maps keep the path).
fn to_json(
    v: &CelValue,
    mut path: Option<&mut Vec<String>>,
    mismatches: &mut Vec<String>,
) -> Result<Value, Error> {
    Ok(match v {
        CelValue::Map(m) => {
            let literal = literal_type(v);
            if literal == Some(JSON_PATCH) {
                return Err(Error::Unconvertible(JSON_PATCH.to_string()));
            }
            if let (Some(name), Some(path)) = (literal, path.as_deref()) {
                let expected = path.join(".");
                if name != expected {
                    mismatches.push(format!("unexpected type name {name:?}, expected {expected:?}, which matches field name path from root Object type"));
                }
            }
            // Go encodes maps with sorted keys; so does this, whatever order CEL kept.
            let mut entries: Vec<(&str, &CelValue)> = Vec::with_capacity(m.map.len());
            for (k, v) in m.map.iter() {
                match k {
                    Key::String(s) if s.as_str() == TYPE_KEY => {}
                    Key::String(s) => entries.push((s.as_str(), v)),
                    other => return Err(Error::MapKey(format!("{other:?}"))),
                }
            }
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let mut out = Map::with_capacity(entries.len());
            for (k, v) in entries {
                // Only a literal's fields extend the path; a plain map's entries share it.
                let value = match (literal.is_some(), path.as_deref_mut()) {
                    (true, Some(p)) => {
                        p.push(k.to_string());
                        let value = to_json(v, Some(p), mismatches);
                        p.pop();
                        value?
                    }
                    (_, p) => to_json(v, p, mismatches)?,
                };
                out.insert(k.to_string(), value);
            }
            Value::Object(out)
        }
        CelValue::List(items) => Value::Array(
            items
                .iter()
                .map(|i| to_json(i, path.as_deref_mut(), mismatches))
                .collect::<Result<_, _>>()?,
        ),
        CelValue::Int(i) => Value::from(*i),
        CelValue::UInt(u) => Value::from(*u),
        CelValue::Float(f) => serde_json::Number::from_f64(*f)
            .map(Value::Number)
            .ok_or_else(|| Error::Unconvertible("double".into()))?,
        CelValue::String(s) => Value::String(s.to_string()),
        CelValue::Bool(b) => Value::Bool(*b),
        CelValue::Null => Value::Null,
        CelValue::Bytes(b) => {
            use base64::Engine;
            Value::String(base64::engine::general_purpose::STANDARD.encode(b.as_slice()))
        }
        // protobuf's JSON forms, as upstream's conversion through structpb writes them.
        CelValue::Duration(d) => Value::String(duration(d)),
        CelValue::Timestamp(t) => Value::String(
            t.with_timezone(&chrono::Utc)
                .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        ),
        CelValue::Function(..) | CelValue::Opaque(_) => {
            return Err(Error::Unconvertible(type_of(v)))
        }
    })
}

/// `v` as a CEL value, numbers as Kubernetes CEL reads JSON: integers are `int` (`uint` only
/// past its range), the rest `double`.
pub(crate) fn from_json(v: &Value) -> CelValue {
    match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => CelValue::Int(i),
            (None, Some(u)) => CelValue::UInt(u),
            _ => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => CelValue::String(s.clone().into()),
        Value::Array(items) => {
            CelValue::List(items.iter().map(from_json).collect::<Vec<_>>().into())
        }
        Value::Object(m) => CelValue::Map(kube_cel::cel::objects::Map {
            map: std::sync::Arc::new(
                m.iter()
                    .map(|(k, v)| (Key::String(k.clone().into()), from_json(v)))
                    .collect(),
            ),
        }),
    }
}

/// A duration as protobuf's JSON writes it (`1.5s`).
fn duration(d: &chrono::Duration) -> String {
    let secs = d.num_seconds();
    let nanos = d.subsec_nanos().unsigned_abs();
    if nanos == 0 {
        return format!("{secs}s");
    }
    let sign = if secs == 0 && d.subsec_nanos() < 0 {
        "-"
    } else {
        ""
    };
    let frac = format!("{nanos:09}");
    format!("{sign}{secs}.{}s", frac.trim_end_matches('0'))
}

pub(crate) mod budget;
mod convert;
pub(crate) mod cost;
pub(crate) mod decl;
pub(crate) mod issues;
mod names;
pub(crate) mod overloads;
pub(crate) use names::{references, DECLARED_NAMES, RESERVED_WORDS};
pub(crate) mod types;
pub(crate) mod wording;

#[cfg(test)]
mod tests;
