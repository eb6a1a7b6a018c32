//! The uniqueness invariants of `x-kubernetes-list-type: set` (whole items) and `map` (the
//! `x-kubernetes-list-map-keys`), as apiextensions-apiserver's pkg/apiserver/schema/listtype
//! checks them: `Duplicate value` on the second occurrence of each repeated item or key, and
//! `Invalid value` for a non-object item of a list-map. May use: registry's error types.

use super::super::super::error::{FieldError, FieldErrorKind};
use super::super::gofmt::{self, go_number, GoNumber};
use super::compile::{ListType, Node};
use super::path::{Path, Seg};
use serde_json::{Map, Value};

/// ValidateListSetsAndMaps over the object `obj` (the root walk: its properties and
/// additionalProperties).
pub(super) fn validate(node: &Node, obj: &Value, errs: &mut Vec<FieldError>) {
    if let Value::Object(m) = obj {
        object(node, m, &Path::ROOT, errs);
    }
}

fn object(node: &Node, m: &Map<String, Value>, path: &Path<'_>, errs: &mut Vec<FieldError>) {
    if let Some(schema) = node.additional.as_ref().and_then(|a| a.schema.as_ref()) {
        for (k, v) in m {
            value(schema, v, &path.child(Seg::Key(k)), errs);
        }
    }
    if !node.properties.is_empty() {
        for (k, v) in m {
            if let Some(prop) = node.property(k) {
                value(prop, v, &path.child(Seg::Prop(k)), errs);
            }
        }
    }
}

fn value(node: &Node, v: &Value, path: &Path<'_>, errs: &mut Vec<FieldError>) {
    match v {
        Value::Array(items) => array(node, items, path, errs),
        Value::Object(m) => object(node, m, path, errs),
        _ => {}
    }
}

fn array(node: &Node, items: &[Value], path: &Path<'_>, errs: &mut Vec<FieldError>) {
    match &node.list {
        ListType::Set => {
            let hash = |i: usize| hash_value(&items[i], false);
            for i in duplicates(items.len(), hash, |i, j| same(&items[i], &items[j])) {
                errs.push(duplicate(path, i, gofmt::bad_value(&items[i])));
            }
        }
        ListType::Map(keys) => list_map(keys, items, path, errs),
        ListType::Atomic => {}
    }
    if let Some(item) = node.items.as_deref() {
        for (i, v) in items.iter().enumerate() {
            value(item, v, &path.child(Seg::Index(i)), errs);
        }
    }
}

fn list_map(keys: &[Box<str>], items: &[Value], path: &Path<'_>, errs: &mut Vec<FieldError>) {
    // Only objects (and nulls) may be items.
    if let Some((i, x)) = items
        .iter()
        .enumerate()
        .find(|(_, x)| !matches!(x, Value::Null | Value::Object(_)))
    {
        errs.push(FieldError {
            kind: FieldErrorKind::Invalid,
            field: path.child(Seg::Index(i)).field().unwrap_or_default(),
            value: Some(gofmt::bad_value(x)),
            detail: "must be an object for an array of list-type map".into(),
        });
        return;
    }
    // An item's key: the key fields it has (a missing one, or a null item, is unspecified).
    fn key_of<'v>(x: &'v Value, k: &str) -> Option<&'v Value> {
        x.as_object().and_then(|o| o.get(k))
    }
    let same_key = |i: usize, j: usize| {
        if let [k] = keys {
            // One key: unspecified equals unspecified, values compare as Go map keys.
            match (key_of(&items[i], k), key_of(&items[j], k)) {
                (None, None) => true,
                (Some(a), Some(b)) => same(a, b),
                _ => false,
            }
        } else {
            // Several: the maps of present key fields compare as JSON.
            keys.iter()
                .all(|k| match (key_of(&items[i], k), key_of(&items[j], k)) {
                    (None, None) => true,
                    (Some(a), Some(b)) => same_json(a, b),
                    _ => false,
                })
        }
    };
    let hash = |i: usize| {
        if let [k] = keys {
            key_of(&items[i], k).map_or(0, |v| hash_value(v, false))
        } else {
            keys.iter().fold(0u64, |acc, k| {
                let h = key_of(&items[i], k).map_or(1, |v| hash_value(v, true));
                acc.wrapping_mul(31).wrapping_add(h)
            })
        }
    };
    for i in duplicates(items.len(), hash, same_key) {
        let mut key = Map::new();
        for k in keys.iter() {
            if let Some(v) = key_of(&items[i], k) {
                key.insert(k.to_string(), v.clone());
            }
        }
        errs.push(duplicate(path, i, gofmt::json(&Value::Object(key))));
    }
}

fn duplicate(path: &Path<'_>, i: usize, value: String) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Duplicate,
        field: path.child(Seg::Index(i)).field().unwrap_or_default(),
        value: Some(value),
        detail: String::new(),
    }
}

/// The indices of the second occurrence of each value that occurs more than once
/// (validateListSet's nonUniqueIndices), in order. `hash` must agree with `eq`; short lists
/// are compared pairwise, longer ones grouped by hash first.
fn duplicates(
    n: usize,
    hash: impl Fn(usize) -> u64,
    eq: impl Fn(usize, usize) -> bool,
) -> Vec<usize> {
    let mut out = Vec::new();
    if n <= 1 {
        return out;
    }
    // The i-th is reported when exactly one earlier item equals it.
    let second = |i: usize, earlier: &mut dyn Iterator<Item = usize>| {
        let mut equal = earlier.filter(|&j| eq(j, i));
        equal.next().is_some() && equal.next().is_none()
    };
    if n <= 16 {
        out.extend((1..n).filter(|&i| second(i, &mut (0..i))));
        return out;
    }
    super::probe::allocates();
    let mut order: Vec<(u64, usize)> = (0..n).map(|i| (hash(i), i)).collect();
    order.sort_unstable();
    for group in order.chunk_by(|a, b| a.0 == b.0) {
        for (p, &(_, i)) in group.iter().enumerate() {
            if second(i, &mut group[..p].iter().map(|g| g.1)) {
                out.push(i);
            }
        }
    }
    out.sort_unstable();
    out
}

/// A hash that agrees with [`same`] (`compound`: inside an object or array, where numbers
/// compare by their JSON).
fn hash_value(v: &Value, compound: bool) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    match v {
        Value::Null => 0u8.hash(&mut h),
        Value::Bool(b) => (1u8, b).hash(&mut h),
        Value::Number(n) => match (compound, go_number(n)) {
            (true, n) => (2u8, n.as_f64().to_bits()).hash(&mut h),
            (false, GoNumber::Int(i)) => (3u8, i).hash(&mut h),
            (false, GoNumber::Float(f)) => (4u8, f.to_bits()).hash(&mut h),
        },
        Value::String(s) => (5u8, s).hash(&mut h),
        Value::Array(a) => {
            (6u8, a.len()).hash(&mut h);
            for x in a {
                hash_value(x, true).hash(&mut h);
            }
        }
        Value::Object(m) => {
            // Order-independent: the entries' hashes summed.
            let sum = m.iter().fold(0u64, |acc, (k, x)| {
                let mut e = std::hash::DefaultHasher::new();
                (k, hash_value(x, true)).hash(&mut e);
                acc.wrapping_add(e.finish())
            });
            (7u8, m.len(), sum).hash(&mut h);
        }
    }
    h.finish()
}

/// validateListSet's equality: scalars as Go map keys (int64 and float64 differ), objects and
/// arrays by their JSON.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Object(_) | Value::Array(_), _) | (_, Value::Object(_) | Value::Array(_)) => {
            same_json(a, b)
        }
        (Value::Number(x), Value::Number(y)) => go_number(x) == go_number(y),
        _ => a == b,
    }
}

/// Whether `a` and `b` marshal to the same JSON (key order aside; 1 and 1.0 alike).
fn same_json(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (go_number(x), go_number(y)) {
            (GoNumber::Int(x), GoNumber::Int(y)) => x == y,
            _ => gofmt::json(a) == gofmt::json(b),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_json(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_json(v, w)))
        }
        _ => a == b,
    }
}
