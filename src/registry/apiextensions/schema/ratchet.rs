//! Validation ratcheting on update (CRDValidationRatcheting, GA and locked on since 1.33):
//! a value that is unchanged from the old object keeps its errors to itself. This is
//! k8s.io/apiserver's CorrelatedObject: old values are found for new ones by object key
//! (for a property or an additionalProperties key) and, in `x-kubernetes-list-type: map`
//! lists, by the list-map keys; anything else has no old value and is validated as new.
//! May use: nothing internal.

use super::super::gofmt::deep_equal;
use super::compile::{ListType, Node, Types};
use serde_json::Value;

/// The old value of field `key`, when both objects have it and the schema knows it
/// (CorrelatedObject.Key).
pub(super) fn old_field<'v>(node: &Node, old: &'v Value, key: &str) -> Option<&'v Value> {
    node.field_schema(key)?;
    old.as_object()?.get(key)
}

/// The old item the new `item` of a list-map corresponds to (CorrelatedObject.Index): the
/// first old item with the same key values. Other lists do not correlate.
pub(super) fn old_item<'v>(node: &Node, old: &'v Value, item: &Value) -> Option<&'v Value> {
    let ListType::Map(keys) = &node.list else {
        return None;
    };
    node.items.as_ref()?;
    if !node.types.contains(Types::ARRAY) || keys.is_empty() {
        return None;
    }
    let item = item.as_object()?;
    let scalar = |v: &Value| matches!(v, Value::Bool(_) | Value::Number(_) | Value::String(_));
    if !keys.iter().all(|k| item.get(&**k).is_some_and(scalar)) {
        return None;
    }
    old.as_array()?.iter().find(|o| {
        o.as_object().is_some_and(|o| {
            keys.iter().all(|k| match (item.get(&**k), o.get(&**k)) {
                (Some(a), Some(b)) => scalar(b) && deep_equal(a, b),
                _ => false,
            })
        })
    })
}

/// CorrelatedObject.CachedDeepEqual: whether `new` is unchanged from its correlated `old`,
/// comparing through the schema (a field the schema does not know never compares equal).
pub(super) fn unchanged(node: &Node, new: &Value, old: &Value) -> bool {
    match (new, old) {
        (Value::Null, Value::Null) => true,
        (Value::Null, _) | (_, Value::Null) => false,
        (Value::Array(n), Value::Array(o)) => {
            if n.len() != o.len() {
                return false;
            }
            if matches!(node.list, ListType::Map(_)) {
                let Some(items) = node.items.as_deref() else {
                    return false;
                };
                n.iter()
                    .all(|x| old_item(node, old, x).is_some_and(|ox| unchanged(items, x, ox)))
            } else {
                deep_equal(new, old)
            }
        }
        (Value::Object(n), Value::Object(o)) => {
            n.len() == o.len()
                && n.iter().all(|(k, v)| {
                    node.field_schema(k)
                        .zip(o.get(k))
                        .is_some_and(|(s, ov)| unchanged(s, v, ov))
                })
        }
        (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => false,
        _ => deep_equal(new, old),
    }
}
