//! A custom resource's structure as structured-merge-diff derives it from the CRD's structural
//! schema (kube-openapi's schemaconv): `x-kubernetes-list-type` `map` (merged by
//! `x-kubernetes-list-map-keys`) and `set`, other lists atomic; objects with `properties` are
//! structs, with `additionalProperties` or `x-kubernetes-preserve-unknown-fields` granular maps,
//! `x-kubernetes-map-type: atomic` owned whole; fields the schema does not describe (under
//! preserved unknown fields) are deduced: objects granular, lists atomic.

use super::Kind;
use serde_json::Value;
use std::sync::Mutex;

/// The schema node of the field at `fields` (list items are walked through), if described.
fn node_at<'s>(schema: &'s Value, fields: &[&str]) -> Option<&'s Value> {
    let mut node = schema;
    for f in fields {
        while node.get("type").and_then(Value::as_str) == Some("array") {
            node = node.get("items")?;
        }
        node = match node.get("properties").and_then(|p| p.get(*f)) {
            Some(p) => p,
            None => node.get("additionalProperties").filter(|a| a.is_object())?,
        };
    }
    Some(node)
}

/// How the value at `fields` is merged and owned.
pub(super) fn kind(schema: &Value, fields: &[&str], value: &Value) -> Kind {
    let node = node_at(schema, fields);
    let ext = |name: &str| node.and_then(|n| n.get(name)).and_then(Value::as_str);
    match value {
        Value::Array(_) => match ext("x-kubernetes-list-type") {
            Some("map") => {
                let keys: Vec<&str> = node
                    .and_then(|n| n.get("x-kubernetes-list-map-keys"))
                    .and_then(Value::as_array)
                    .map(|k| k.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                if keys.is_empty() {
                    return Kind::Leaf;
                }
                let items = node.and_then(|n| n.get("items"));
                let atomic_items = items
                    .and_then(|i| i.get("x-kubernetes-map-type"))
                    .and_then(Value::as_str)
                    == Some("atomic");
                Kind::ListMap {
                    keys: intern(&keys),
                    atomic_items,
                }
            }
            Some("set") => Kind::ListSet,
            _ => Kind::Leaf,
        },
        Value::Object(_) => {
            if ext("x-kubernetes-map-type") == Some("atomic") {
                return Kind::Leaf;
            }
            match node {
                Some(n) if n.get("properties").is_some() => Kind::Struct,
                Some(n)
                    if n.get("additionalProperties").is_some_and(Value::is_object)
                        || n.get("x-kubernetes-preserve-unknown-fields")
                            == Some(&Value::Bool(true)) =>
                {
                    Kind::Map
                }
                Some(_) => Kind::Struct,
                None => Kind::Map,
            }
        }
        _ => Kind::Leaf,
    }
}

/// `keys` as a `'static` slice, made once per distinct key list: CRD schemas name few
/// (`name`, `type`, `containerPort,protocol`, ...), so what is kept stays small however often
/// CRDs change.
fn intern(keys: &[&str]) -> &'static [&'static str] {
    static INTERNED: Mutex<Vec<&'static [&'static str]>> = Mutex::new(Vec::new());
    let mut known = INTERNED.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(found) = known.iter().find(|k| **k == keys) {
        return found;
    }
    let owned: Vec<&'static str> = keys
        .iter()
        .map(|k| &*Box::leak(k.to_string().into_boxed_str()))
        .collect();
    let leaked: &'static [&'static str] = Box::leak(owned.into_boxed_slice());
    known.push(leaked);
    leaked
}
