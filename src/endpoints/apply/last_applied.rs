//! The client-side apply annotation under server-side apply, as kube's lastAppliedManager and
//! lastAppliedUpdater handle it for `kubectl apply --server-side` (field manager `kubectl`):
//! its conflicts with what an earlier client-side apply recorded are forgiven, and the
//! annotation, when the object has one, is kept up to date with what was applied, so that a
//! later client-side apply computes its patch from the right configuration.

use super::typed::Types;
use super::{compare, Set};
use crate::api::{At, GroupVersionKind};
use serde_json::{Map, Value};

/// The field manager of `kubectl apply --server-side`, the one applier whose conflicts with
/// an earlier client-side apply are forgiven ([`allowed_by_last_applied`]).
pub(super) const KUBECTL_SERVER_SIDE: &str = "kubectl";
/// The annotation client-side apply records the applied configuration in.
pub(super) const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// allowedConflictsFromLastApplied: the fields of the live object's last-applied
/// configuration that still have the values recorded there (those it lists but the live
/// object changed, lacks or adds are not). None without a usable annotation (missing, empty,
/// not JSON, or of another apiVersion than the object's).
pub(super) fn allowed_by_last_applied(
    types: &Types<'_>,
    live: &Value,
    gvk: &GroupVersionKind,
) -> Option<Set> {
    let text = live
        .at("/metadata/annotations")?
        .get(LAST_APPLIED)?
        .as_str()
        .filter(|t| !t.is_empty())?;
    let last: Value = serde_json::from_str(text).ok()?;
    if last.get("apiVersion").and_then(Value::as_str) != Some(gvk.api_version().as_str()) {
        return None;
    }
    let mut set = types.object_set(&last);
    let (changed, removed) = compare(types, &last, live);
    set.retain(|p| !changed.contains(p) && !removed.contains(p));
    Some(set)
}

/// lastAppliedUpdater: when the applied object `merged` carries a (non-empty) last-applied
/// annotation, it becomes the configuration `applied` without that annotation, encoded as
/// Go's encoding/json encodes the unstructured object (keys sorted, `<`, `>`, `&`, U+2028
/// and U+2029 escaped, a newline at the end).
pub(super) fn sync(merged: &mut Value, applied: &Value) {
    let Some(annotations) = merged
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    if annotations
        .get(LAST_APPLIED)
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        return;
    }
    let mut config = applied.clone();
    if let Some(a) = config
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
        .and_then(Value::as_object_mut)
    {
        a.shift_remove(LAST_APPLIED);
    }
    annotations.insert(LAST_APPLIED.into(), Value::from(go_json(&config)));
}

/// `v` as Go's `json.NewEncoder(w).Encode` writes a map-based value.
fn go_json(v: &Value) -> String {
    fn sorted(v: &Value) -> Value {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                let mut out = Map::new();
                for k in keys {
                    out.insert(k.clone(), sorted(&m[k]));
                }
                Value::Object(out)
            }
            Value::Array(a) => Value::Array(a.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    let text = sorted(v).to_string();
    // These characters only occur inside JSON strings, where Go writes them escaped.
    let mut out = String::with_capacity(text.len() + 1);
    for c in text.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out.push('\n');
    out
}

#[cfg(test)]
mod tests {
    use super::go_json;
    use serde_json::json;

    #[test]
    fn go_json_sorts_keys_escapes_html_and_ends_with_a_newline() {
        let v = json!({"kind": "ConfigMap", "apiVersion": "v1",
            "data": {"z": "<a & b>", "a": "\u{2028}", "n": 1, "f": 1.5, "l": [{"y": 1, "x": 2}]}});
        assert_eq!(
            go_json(&v),
            "{\"apiVersion\":\"v1\",\"data\":{\"a\":\"\\u2028\",\"f\":1.5,\"l\":[{\"x\":2,\"y\":1}],\"n\":1,\"z\":\"\\u003ca \\u0026 b\\u003e\"},\"kind\":\"ConfigMap\"}\n"
        );
    }
}
