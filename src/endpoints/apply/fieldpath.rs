//! Field paths and field sets (sigs.k8s.io/structured-merge-diff fieldpath): a path is a list
//! of elements written as in FieldsV1 — `f:<field>`, `k:{"key":"value"}` for an item of a
//! keyed list, `v:<json>` for an item of a set — and a set is what one manager owns.
//! Includes the FieldsV1 encoding (nested objects, `.` marking a member that also has
//! children), kube's path strings for conflict messages, and looking up or removing the value
//! a path names in a JSON object.
//! May use: api (JSON lookups).

use serde_json::{Map, Value};
use std::collections::BTreeSet;

/// One step of a path, in FieldsV1 notation.
pub(crate) type Element = String;
/// A path from the object root.
pub(crate) type Path = Vec<Element>;
/// A set of paths.
pub(crate) type Set = BTreeSet<Path>;

/// `f:<name>`.
pub(crate) fn field(name: &str) -> Element {
    format!("f:{name}")
}

/// `k:{...}` for a keyed list item: the key fields, sorted by name, as compact JSON. A key the
/// item omits takes its default (`default`), as structured-merge-diff does; None when it has
/// none.
pub(crate) fn key(
    item: &Value,
    keys: &[&str],
    default: impl Fn(&str) -> Option<&'static str>,
) -> Option<Element> {
    let mut sorted: Vec<&str> = keys.to_vec();
    sorted.sort_unstable();
    let mut m = Map::new();
    for k in sorted {
        let v = match item.get(k) {
            Some(v) => v.clone(),
            None => Value::from(default(k)?),
        };
        m.insert(k.to_string(), v);
    }
    Some(format!("k:{}", Value::Object(m)))
}

/// `v:<json>` for a set item.
pub(crate) fn value(item: &Value) -> Element {
    format!("v:{item}")
}

/// Encodes a set as a FieldsV1 object.
pub(crate) fn to_fields_v1(set: &Set) -> Value {
    let mut root = Map::new();
    for path in set {
        let mut node = &mut root;
        for (i, pe) in path.iter().enumerate() {
            let child = node
                .entry(pe.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            let Value::Object(child) = child else { break };
            if i + 1 == path.len() {
                // A member: `{}` when it is a leaf, `.` when it also has children. Children
                // added later turn an empty leaf into a parent, fixed up below.
                child
                    .entry(".".to_string())
                    .or_insert_with(|| Value::Object(Map::new()));
            }
            node = child;
        }
    }
    let mut v = Value::Object(root);
    collapse_leaf_dots(&mut v);
    v
}

/// `{".": {}}` alone is written `{}`.
fn collapse_leaf_dots(v: &mut Value) {
    if let Value::Object(m) = v {
        for child in m.values_mut() {
            collapse_leaf_dots(child);
        }
        if m.len() == 1 && m.contains_key(".") {
            m.clear();
        }
    }
}

/// Decodes a FieldsV1 object into a set.
pub(crate) fn from_fields_v1(v: &Value) -> Set {
    let mut set = Set::new();
    if let Value::Object(m) = v {
        walk_fields_v1(m, &mut Vec::new(), &mut set);
    }
    set
}

/// Whether the set a FieldsV1 object encodes has `path`, read off the object without
/// decoding the set (what `from_fields_v1(fields).contains(path)` answers).
pub(crate) fn fields_v1_has(fields: &Value, path: &[Element]) -> bool {
    let mut node = fields;
    for pe in path {
        let child = match node {
            Value::Object(m) => crate::api::json::field(m, pe),
            _ => None,
        };
        match child {
            Some(c) => node = c,
            None => return false,
        }
    }
    match node {
        // A node with children is a member only when marked with `.`.
        Value::Object(m) if !m.is_empty() => crate::api::json::field(m, ".").is_some(),
        // A leaf is a member; the root is not unless it is marked.
        _ => !path.is_empty(),
    }
}

fn walk_fields_v1(m: &Map<String, Value>, path: &mut Path, set: &mut Set) {
    for (k, child) in m {
        if k == "." {
            set.insert(path.clone());
            continue;
        }
        path.push(k.clone());
        match child {
            Value::Object(c) if !c.is_empty() => walk_fields_v1(c, path, set),
            _ => {
                set.insert(path.clone());
            }
        }
        path.pop();
    }
}

/// kube's rendering of a path in conflict messages: `.data.x`, `.spec.list[name="a"].f`,
/// `.metadata.finalizers[="a"]`.
pub(crate) fn to_string(path: &Path) -> String {
    let mut out = String::new();
    for pe in path {
        if let Some(f) = pe.strip_prefix("f:") {
            out.push('.');
            out.push_str(f);
        } else if let Some(k) = pe.strip_prefix("k:") {
            let keys: Map<String, Value> = serde_json::from_str(k).unwrap_or_default();
            let parts: Vec<String> = keys.iter().map(|(k, v)| format!("{k}={v}")).collect();
            out.push_str(&format!("[{}]", parts.join(",")));
        } else if let Some(v) = pe.strip_prefix("v:") {
            out.push_str(&format!("[={v}]"));
        }
    }
    out
}

/// Whether `item` is the list element `pe` names.
fn matches(item: &Value, pe: &str) -> bool {
    if let Some(k) = pe.strip_prefix("k:") {
        let Ok(Value::Object(keys)) = serde_json::from_str::<Value>(k) else {
            return false;
        };
        keys.iter().all(|(k, v)| item.get(k) == Some(v))
    } else if let Some(v) = pe.strip_prefix("v:") {
        serde_json::from_str::<Value>(v).is_ok_and(|v| &v == item)
    } else {
        false
    }
}

/// The value `path` names in `root`, if present.
pub(crate) fn get<'v>(root: &'v Value, path: &[Element]) -> Option<&'v Value> {
    let mut cur = root;
    for pe in path {
        cur = match pe.strip_prefix("f:") {
            Some(f) => cur.as_object()?.get(f)?,
            None => cur.as_array()?.iter().find(|item| matches(item, pe))?,
        };
    }
    Some(cur)
}

/// Removes the value `path` names from `root`; true when something was removed.
pub(crate) fn remove(root: &mut Value, path: &[Element]) -> bool {
    let Some((last, parents)) = path.split_last() else {
        return false;
    };
    let mut cur = root;
    for pe in parents {
        let next = match pe.strip_prefix("f:") {
            Some(f) => cur.as_object_mut().and_then(|m| m.get_mut(f)),
            None => cur
                .as_array_mut()
                .and_then(|a| a.iter_mut().find(|item| matches(item, pe))),
        };
        match next {
            Some(n) => cur = n,
            None => return false,
        }
    }
    match last.strip_prefix("f:") {
        Some(f) => cur
            .as_object_mut()
            .is_some_and(|m| m.shift_remove(f).is_some()),
        None => match cur.as_array_mut() {
            Some(a) => {
                let before = a.len();
                a.retain(|item| !matches(item, last));
                a.len() != before
            }
            None => false,
        },
    }
}

/// Whether `path` or anything under it is in `set`.
pub(crate) fn owns_within(set: &Set, path: &Path) -> bool {
    set.range(path.clone()..)
        .next()
        .is_some_and(|p| p.starts_with(path))
}
