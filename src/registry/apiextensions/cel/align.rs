//! Old values lined up with new ones where upstream correlates them by key: the items of a
//! list with `x-kubernetes-list-type: map` are matched by their `x-kubernetes-list-map-keys`,
//! not by position (kube-cel pairs list items by index). Only lists with a rule below them are
//! lined up; everything else is left as it is.

use serde_json::Value;

/// Whether `schema` has a map list with a rule below it (so old values need lining up).
pub(super) fn needed(schema: &Value) -> bool {
    let Value::Object(m) = schema else {
        return false;
    };
    let map_list = m.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map");
    if map_list && m.get("items").is_some_and(super::has_rules) {
        return true;
    }
    m.get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.values().any(needed))
        || m.get("items").is_some_and(needed)
        || m.get("additionalProperties").is_some_and(needed)
}

/// `old` lined up with `new` under `schema`, twice: for the rules (an item with no old
/// counterpart gets a copy of itself, so a transition rule compares it with itself, as
/// without an old value upstream skips it) and for ratcheting (such an item gets null, so its
/// errors are never taken for old ones).
pub(super) fn align(schema: &Value, new: &Value, old: &Value) -> (Value, Value) {
    match (new, old) {
        (Value::Array(n), Value::Array(o)) => {
            let items = schema.get("items").unwrap_or(&Value::Null);
            let keys: Option<Vec<&str>> = schema
                .get("x-kubernetes-list-map-keys")
                .and_then(Value::as_array)
                .filter(|_| {
                    schema.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map")
                })
                .map(|k| k.iter().filter_map(Value::as_str).collect());
            let Some(keys) = keys else {
                // By position, as kube-cel pairs them.
                let (rules, ratchet) = n.iter().zip(o).map(|(n, o)| align(items, n, o)).unzip();
                return (Value::Array(rules), Value::Array(ratchet));
            };
            let key_of = |v: &Value| -> Vec<Value> {
                keys.iter()
                    .map(|k| v.get(*k).cloned().unwrap_or(Value::Null))
                    .collect()
            };
            let (rules, ratchet) = n
                .iter()
                .map(|item| {
                    let k = key_of(item);
                    match o.iter().find(|x| key_of(x) == k) {
                        Some(old_item) => align(items, item, old_item),
                        None => (item.clone(), Value::Null),
                    }
                })
                .unzip();
            (Value::Array(rules), Value::Array(ratchet))
        }
        (Value::Object(n), Value::Object(o)) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let additional = schema.get("additionalProperties");
            let (mut rules, mut ratchet) = (o.clone(), o.clone());
            for (k, nv) in n {
                let Some(ov) = o.get(k) else { continue };
                let Some(sub) = props.and_then(|p| p.get(k)).or(additional) else {
                    continue;
                };
                if !needed(sub) {
                    continue;
                }
                let (a, b) = align(sub, nv, ov);
                rules.insert(k.clone(), a);
                ratchet.insert(k.clone(), b);
            }
            (Value::Object(rules), Value::Object(ratchet))
        }
        _ => (old.clone(), old.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn map_list_items_meet_their_old_selves_by_key() {
        let schema = json!({"type": "object", "properties": {"ports": {
            "type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "port": {"type": "integer", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}}}});
        assert!(needed(&schema));
        let old = json!({"ports": [{"name": "a", "port": 1}, {"name": "b", "port": 2}]});
        let new = json!({"ports": [{"name": "c", "port": 3}, {"name": "b", "port": 2}, {"name": "a", "port": 1}]});
        let (rules, ratchet) = align(&schema, &new, &old);
        assert_eq!(
            rules,
            json!({"ports": [{"name": "c", "port": 3}, {"name": "b", "port": 2}, {"name": "a", "port": 1}]})
        );
        assert_eq!(
            ratchet,
            json!({"ports": [null, {"name": "b", "port": 2}, {"name": "a", "port": 1}]})
        );
        let plain = json!({"type": "object", "properties": {"x": {"type": "string"}}});
        assert!(!needed(&plain));
    }
}
