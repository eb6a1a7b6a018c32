//! Lists of `x-kubernetes-list-type: set` and `map` as CRD rules see them
//! (k8s.io/apiserver pkg/cel/common/valuesunstructured.go `unstructuredSetList`,
//! `unstructuredMapList`, and valuesreflect.go's `addToSetList`, `addToMapList`):
//!
//! - `==` and `!=` ignore the order of a set's elements and of a map list's items (items meet
//!   by their keys, then compare by their own schema), and objects, maps and atomic lists
//!   holding such lists compare through them;
//! - `+` on a set is a union (the left's elements in place, the right's new ones appended),
//!   on a map list a merge (an item of the right replaces the left's item with its keys, in
//!   place; new keys are appended), and the result keeps the left's semantics.
//!
//! As in cel-go, the left operand decides: `[2, 1] == self.set` compares as plain lists.
//!
//! The `cel` crate's values carry no schema, so a rule is rewritten when it is compiled:
//! every `==`, `!=` and `+` whose left operand is a value of the schema (`self`, `oldSelf`,
//! their fields, items and entries, a comprehension's variable over them) holding such a list
//! becomes a call of a function given the operand's [`Shape`] ([`rewrite`], [`register`]).
//! Elements of sets must be scalars, as upstream's: otherwise the operation fails with
//! upstream's error.

use crate::registry::cel::decl::escape;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr};
use kube_cel::cel::objects::{AsKeyRef, Key, KeyRef, Opaque};
use kube_cel::cel::{Context, ExecutionError, FunctionContext, Value as CelValue};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

const EQ: &str = "@list_eq";
const NE: &str = "@list_ne";
const ADD: &str = "@list_add";

/// Upstream's error for a set holding lists or maps.
const NOT_SCALAR: &str = "listSet operations are only supported on lists of scalar values";

/// How values of a schema node compare: where, at or below it, lists of type set or map lie.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Shape {
    /// As CEL compares values.
    Plain,
    /// An object: its properties by their CEL names (those not named are plain).
    Object(HashMap<String, Shape>),
    /// An object of `additionalProperties`: every entry's value.
    Map(Box<Shape>),
    /// An atomic list: every item.
    List(Box<Shape>),
    Set,
    /// A list of type map, by its keys' CEL names.
    MapList {
        keys: Vec<String>,
        items: Box<Shape>,
    },
}

impl Opaque for Shape {
    fn runtime_type_name(&self) -> &str {
        "kapi.listShape"
    }
}

impl Shape {
    /// The shape of values of schema `s`.
    pub(super) fn of(s: &Value) -> Shape {
        match s.get("type").and_then(Value::as_str) {
            Some("array") => {
                let items = s.get("items").map_or(Shape::Plain, Shape::of);
                match s.get("x-kubernetes-list-type").and_then(Value::as_str) {
                    Some("set") => Shape::Set,
                    Some("map") => Shape::MapList {
                        keys: s
                            .get("x-kubernetes-list-map-keys")
                            .and_then(Value::as_array)
                            .into_iter()
                            .flatten()
                            .filter_map(Value::as_str)
                            .map(|k| escape(k).unwrap_or_else(|| k.to_string()))
                            .collect(),
                        items: Box::new(items),
                    },
                    _ if items == Shape::Plain => Shape::Plain,
                    _ => Shape::List(Box::new(items)),
                }
            }
            Some("object") => {
                if let Some(props) = s.get("properties").and_then(Value::as_object) {
                    let props: HashMap<String, Shape> = props
                        .iter()
                        .filter_map(|(name, p)| Some((escape(name)?, Shape::of(p))))
                        .filter(|(_, shape)| *shape != Shape::Plain)
                        .collect();
                    return if props.is_empty() {
                        Shape::Plain
                    } else {
                        Shape::Object(props)
                    };
                }
                match s.get("additionalProperties").map(Shape::of) {
                    Some(values) if values != Shape::Plain => Shape::Map(Box::new(values)),
                    _ => Shape::Plain,
                }
            }
            _ => Shape::Plain,
        }
    }

    fn is_list_type(&self) -> bool {
        matches!(self, Shape::Set | Shape::MapList { .. })
    }
}

/// What one scope of a rule names: `self` and `oldSelf` at the rule's node, comprehension
/// variables over its values; a name bound to None hides an outer one.
struct Scope<'s, 'p> {
    name: &'p str,
    schema: Option<&'s Value>,
    outer: Option<&'p Scope<'s, 'p>>,
}

impl<'s> Scope<'s, '_> {
    fn lookup(&self, name: &str) -> Option<&'s Value> {
        let mut scope = Some(self);
        while let Some(s) = scope {
            if s.name == name {
                return s.schema;
            }
            scope = s.outer;
        }
        None
    }
}

/// The schema of property `field` (its CEL name) of a value of `s`, or of any entry when the
/// value is a map (`additionalProperties`).
fn property<'s>(s: &'s Value, field: &str) -> Option<&'s Value> {
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        return props
            .iter()
            .find(|(name, _)| escape(name).as_deref() == Some(field))
            .map(|(_, p)| p);
    }
    s.get("additionalProperties").filter(|a| a.is_object())
}

fn element(s: &Value) -> Option<&Value> {
    match s.get("type").and_then(Value::as_str) {
        Some("array") => s.get("items"),
        Some("object") => s.get("additionalProperties").filter(|a| a.is_object()),
        _ => None,
    }
}

/// The schema of the values `e` gives, when it is a value of the rule's schema.
fn schema_of<'s>(e: &IdedExpr, scope: &Scope<'s, '_>) -> Option<&'s Value> {
    match &e.expr {
        Expr::Ident(name) => scope.lookup(name),
        Expr::Select(s) if !s.test => property(schema_of(&s.operand, scope)?, &s.field),
        Expr::Call(c) => match (c.func_name.as_str(), c.target.as_deref(), &c.args[..]) {
            ("_[_]", None, [operand, _]) => element(schema_of(operand, scope)?),
            // An optional oldSelf's value; a set or map list merged keeps its semantics.
            ("value", Some(target), []) => schema_of(target, scope),
            (ADD, None, [left, _, _]) => schema_of(left, scope),
            _ => None,
        },
        _ => None,
    }
}

/// Rewrites the `==`, `!=` and `+` of `expr` whose left operand is a value of `schema` (the
/// schema of the rule's node) holding sets or map lists, adding the shapes the rewritten
/// calls name to `shapes` (the `i`th is named by [`variable`]`(i)`).
pub(super) fn rewrite(expr: &mut IdedExpr, schema: &Value, shapes: &mut Vec<Arc<Shape>>) {
    let old = Scope {
        name: "oldSelf",
        schema: Some(schema),
        outer: None,
    };
    let scope = Scope {
        name: "self",
        schema: Some(schema),
        outer: Some(&old),
    };
    walk(expr, &scope, shapes);
}

/// The name of the variable holding a rule's `i`th shape.
pub(super) fn variable(i: usize) -> String {
    format!("@shape{i}")
}

fn walk(e: &mut IdedExpr, scope: &Scope<'_, '_>, shapes: &mut Vec<Arc<Shape>>) {
    match &mut e.expr {
        Expr::Comprehension(c) => {
            walk(&mut c.iter_range, scope, shapes);
            walk(&mut c.accu_init, scope, shapes);
            // A list's variable is its item; a map's (and a second variable) is not schema's.
            let item = schema_of(&c.iter_range, scope)
                .filter(|s| s.get("type").and_then(Value::as_str) == Some("array"))
                .and_then(element);
            let accu = Scope {
                name: &c.accu_var,
                schema: None,
                outer: Some(scope),
            };
            let iter = Scope {
                name: &c.iter_var,
                schema: if c.iter_var2.is_some() { None } else { item },
                outer: Some(&accu),
            };
            let second = c.iter_var2.as_deref().map(|name| Scope {
                name,
                schema: None,
                outer: Some(&iter),
            });
            let inner = second.as_ref().unwrap_or(&iter);
            walk(&mut c.loop_cond, inner, shapes);
            walk(&mut c.loop_step, inner, shapes);
            walk(&mut c.result, &accu, shapes);
        }
        Expr::Call(c) => {
            if let Some(t) = c.target.as_deref_mut() {
                walk(t, scope, shapes);
            }
            for a in &mut c.args {
                walk(a, scope, shapes);
            }
            let func = match c.func_name.as_str() {
                "_==_" => EQ,
                "_!=_" => NE,
                "_+_" => ADD,
                _ => return,
            };
            let Some(left) = c.args.first() else { return };
            let Some(shape) = schema_of(left, scope).map(Shape::of) else {
                return;
            };
            let wanted = if func == ADD {
                shape.is_list_type()
            } else {
                shape != Shape::Plain
            };
            if !wanted {
                return;
            }
            let id = e.id;
            let name = variable(shapes.len());
            shapes.push(Arc::new(shape));
            c.func_name = func.to_string();
            c.args.push(IdedExpr {
                id,
                expr: Expr::Ident(name),
            });
        }
        Expr::Select(s) => walk(&mut s.operand, scope, shapes),
        Expr::List(l) => l.elements.iter_mut().for_each(|x| walk(x, scope, shapes)),
        Expr::Map(m) => {
            for entry in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut entry.expr {
                    walk(&mut me.key, scope, shapes);
                    walk(&mut me.value, scope, shapes);
                }
            }
        }
        Expr::Struct(_) | Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// Registers the functions rewritten operators call.
pub(super) fn register(ctx: &mut Context<'_>) {
    ctx.add_function(EQ, |ftx: &FunctionContext| {
        with_operands(ftx, |a, b, shape| equal(a, b, shape).map(CelValue::Bool))
    });
    ctx.add_function(NE, |ftx: &FunctionContext| {
        with_operands(ftx, |a, b, shape| {
            equal(a, b, shape).map(|eq| CelValue::Bool(!eq))
        })
    });
    ctx.add_function(ADD, |ftx: &FunctionContext| with_operands(ftx, add));
}

/// Runs `f` on a rewritten call's operands and shape.
fn with_operands(
    ftx: &FunctionContext,
    f: impl FnOnce(&CelValue, &CelValue, &Shape) -> Result<CelValue, ExecutionError>,
) -> Result<CelValue, ExecutionError> {
    let [a, b, shape] = ftx.args else {
        return Err(ftx.error("a rewritten operator takes two operands and a shape"));
    };
    let a = CelValue::resolve(a, ftx.ptx)?;
    let b = CelValue::resolve(b, ftx.ptx)?;
    match CelValue::resolve(shape, ftx.ptx)? {
        CelValue::Opaque(o) => match o.downcast_ref::<Shape>() {
            Some(shape) => f(&a, &b, shape),
            None => Err(ftx.error("a rewritten operator lost its shape")),
        },
        _ => Err(ftx.error("a rewritten operator lost its shape")),
    }
}

/// A scalar, as upstream keys set elements and map list keys (numbers of different types
/// differ).
#[derive(Clone, PartialEq, Eq, Hash)]
enum Scalar<'v> {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Double(u64),
    String(&'v str),
    Bytes(&'v [u8]),
    Duration(chrono::Duration),
    Timestamp(chrono::DateTime<chrono::FixedOffset>),
}

fn scalar(v: &CelValue) -> Option<Scalar<'_>> {
    Some(match v {
        CelValue::Null => Scalar::Null,
        CelValue::Bool(b) => Scalar::Bool(*b),
        CelValue::Int(i) => Scalar::Int(*i),
        CelValue::UInt(u) => Scalar::Uint(*u),
        CelValue::Float(f) => Scalar::Double(f.to_bits()),
        CelValue::String(s) => Scalar::String(s),
        CelValue::Bytes(b) => Scalar::Bytes(b),
        CelValue::Duration(d) => Scalar::Duration(*d),
        CelValue::Timestamp(t) => Scalar::Timestamp(*t),
        _ => return None,
    })
}

fn set_key(v: &CelValue) -> Result<Scalar<'_>, ExecutionError> {
    scalar(v).ok_or_else(|| ExecutionError::function_error("_==_", NOT_SCALAR))
}

/// A map list item's keys (None for a key it lacks or that is not a scalar).
fn item_key<'v>(v: &'v CelValue, keys: &[String]) -> Vec<Option<Scalar<'v>>> {
    let CelValue::Map(m) = v else {
        return vec![None; keys.len()];
    };
    keys.iter()
        .map(|k| {
            let k: &dyn AsKeyRef = &KeyRef::String(k);
            m.map.get(k).and_then(scalar)
        })
        .collect()
}

/// `a == b` where `a` is a value of `shape`.
fn equal(a: &CelValue, b: &CelValue, shape: &Shape) -> Result<bool, ExecutionError> {
    match (shape, a, b) {
        (Shape::Set, CelValue::List(x), CelValue::List(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            let set = x.iter().map(set_key).collect::<Result<HashSet<_>, _>>()?;
            let mut seen = HashSet::with_capacity(set.len());
            for e in y.iter() {
                let k = set_key(e)?;
                if !set.contains(&k) {
                    return Ok(false);
                }
                seen.insert(k);
            }
            Ok(seen.len() == set.len())
        }
        (Shape::MapList { keys, items }, CelValue::List(x), CelValue::List(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            let by_key: HashMap<_, _> = x.iter().map(|e| (item_key(e, keys), e)).collect();
            let mut seen = HashSet::with_capacity(by_key.len());
            for e in y.iter() {
                let k = item_key(e, keys);
                match by_key.get(&k) {
                    Some(mine) if equal(mine, e, items)? => {}
                    _ => return Ok(false),
                }
                seen.insert(k);
            }
            Ok(seen.len() == by_key.len())
        }
        (Shape::List(items), CelValue::List(x), CelValue::List(y)) => {
            if x.len() != y.len() {
                return Ok(false);
            }
            for (e, f) in x.iter().zip(y.iter()) {
                if !equal(e, f, items)? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        (Shape::Object(_) | Shape::Map(_), CelValue::Map(x), CelValue::Map(y)) => {
            if x.map.len() != y.map.len() {
                return Ok(false);
            }
            for (k, v) in x.map.iter() {
                let Some(w) = y.map.get(k) else {
                    return Ok(false);
                };
                let sub = match (shape, k) {
                    (Shape::Object(props), Key::String(name)) => props.get(name.as_str()),
                    (Shape::Map(values), _) => Some(&**values),
                    _ => None,
                };
                if !equal(v, w, sub.unwrap_or(&Shape::Plain))? {
                    return Ok(false);
                }
            }
            Ok(true)
        }
        _ => Ok(a == b),
    }
}

/// `a + b` where `a` is a set or a map list.
fn add(a: &CelValue, b: &CelValue, shape: &Shape) -> Result<CelValue, ExecutionError> {
    let (CelValue::List(x), CelValue::List(y)) = (a, b) else {
        return Err(ExecutionError::NoSuchOverload);
    };
    let mut out: Vec<CelValue> = x.to_vec();
    match shape {
        Shape::Set => {
            let mut set = x.iter().map(set_key).collect::<Result<HashSet<_>, _>>()?;
            for e in y.iter() {
                if set.insert(set_key(e)?) {
                    out.push(e.clone());
                }
            }
        }
        Shape::MapList { keys, .. } => {
            let at: HashMap<_, usize> = x
                .iter()
                .enumerate()
                .map(|(i, e)| (item_key(e, keys), i))
                .collect();
            for e in y.iter() {
                match at.get(&item_key(e, keys)) {
                    Some(&i) => out[i] = e.clone(),
                    None => out.push(e.clone()),
                }
            }
        }
        _ => out.extend(y.iter().cloned()),
    }
    Ok(CelValue::List(Arc::new(out)))
}

#[cfg(test)]
#[path = "lists_tests.rs"]
mod tests;
