//! Looking up a field of a JSON object by JSON pointer without allocating, and pairing and
//! comparing JSON objects without hashing their keys when both list them in the same order.
//! May use: nothing internal.

use serde_json::Value;

/// [`Value::pointer`] for the constant pointers the server uses (`/metadata/uid`):
/// the same result, without the two strings `Value::pointer` allocates per step to unescape
/// `~0`/`~1` (pointers that contain `~` are handed to it).
pub(crate) trait At {
    /// The value `pointer` names, if any.
    fn at(&self, pointer: &str) -> Option<&Value>;
}

impl At for Value {
    fn at(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        // Split as bytes: `str::split` sets up a searcher per call, and pointers are short.
        let tokens = pointer.strip_prefix('/')?.as_bytes();
        if tokens.contains(&b'~') {
            return self.pointer(pointer);
        }
        tokens
            .split(|&b| b == b'/')
            .try_fold(self, |v, token| match v {
                Value::Object(map) => field_bytes(map, token),
                Value::Array(list) => {
                    index(std::str::from_utf8(token).ok()?).and_then(|i| list.get(i))
                }
                _ => None,
            })
    }
}

/// Objects up to this many keys are searched in order rather than through the map's hash
/// index: comparing a few short keys costs less than SipHashing the one looked for.
const SCAN_UP_TO: usize = 16;

/// `map.get(key)`, without hashing `key` when the map is small (most objects' maps are).
pub(crate) fn field<'m>(map: &'m serde_json::Map<String, Value>, key: &str) -> Option<&'m Value> {
    field_bytes(map, key.as_bytes())
}

/// [`field`] for a key given as bytes (a pointer token); a key that is not UTF-8 is in no map.
#[inline]
fn field_bytes<'m>(map: &'m serde_json::Map<String, Value>, key: &[u8]) -> Option<&'m Value> {
    if map.len() > SCAN_UP_TO {
        return map.get(std::str::from_utf8(key).ok()?);
    }
    map.iter()
        .find(|(k, _)| k.as_bytes() == key)
        .map(|(_, v)| v)
}

/// Each entry of `new` with the value `old` has under the same key. Objects of one type
/// usually list their keys in the same order, so `old` is walked alongside `new` and a key is
/// looked up only where the two part.
pub(crate) fn pair_up<'a>(
    old: &'a serde_json::Map<String, Value>,
    new: &'a serde_json::Map<String, Value>,
) -> impl Iterator<Item = (&'a String, &'a Value, Option<&'a Value>)> {
    let mut olds = old.iter();
    new.iter().map(move |(k, nv)| {
        let ov = match olds.next() {
            Some((ok, ov)) if ok == k => Some(ov),
            _ => field(old, k),
        };
        (k, nv, ov)
    })
}

/// `a == b` (objects compare as maps, whatever their key order), without the SipHash of every
/// key that `Value`'s own equality spends looking each key of one map up in the other: keys
/// are paired in order first ([`pair_up`]).
pub(crate) fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        // Keys are unique and the lengths equal: every key of `y` found in `x` with the same
        // value makes the maps equal.
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && pair_up(x, y).all(|(_, yv, xv)| xv.is_some_and(|xv| same(xv, yv)))
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| same(v, w))
        }
        _ => a == b,
    }
}

/// [`same`], comparing the entry `last` of two objects after all their other entries: an
/// update usually changes an object's spec or data, while its metadata (with the large
/// managedFields) is mostly equal and would be walked in full before the difference is found.
pub(crate) fn same_with_last(a: &Value, b: &Value, last: &str) -> bool {
    let (Value::Object(x), Value::Object(y)) = (a, b) else {
        return same(a, b);
    };
    x.len() == y.len()
        && pair_up(x, y)
            .filter(|(k, _, _)| k.as_str() != last)
            .all(|(_, yv, xv)| xv.is_some_and(|xv| same(xv, yv)))
        && match (field(x, last), field(y, last)) {
            (Some(xv), Some(yv)) => same(xv, yv),
            (None, None) => true,
            _ => false,
        }
}

/// Whether the objects `a` and `b` are [`same`] but for their entries under the keys `skip`
/// (which may differ, or be in one only). False unless both are objects.
pub(crate) fn same_except(a: &Value, b: &Value, skip: &[&str]) -> bool {
    let (Value::Object(x), Value::Object(y)) = (a, b) else {
        return false;
    };
    let kept = |m: &serde_json::Map<String, Value>| {
        m.keys().filter(|k| !skip.contains(&k.as_str())).count()
    };
    kept(x) == kept(y)
        && pair_up(x, y)
            .filter(|(k, _, _)| !skip.contains(&k.as_str()))
            .all(|(_, yv, xv)| xv.is_some_and(|xv| same(xv, yv)))
}

/// An array index as RFC 6901 writes it: digits, no leading zero (serde_json's parse_index).
fn index(token: &str) -> Option<usize> {
    if token.starts_with('+') || (token.len() > 1 && token.starts_with('0')) {
        return None;
    }
    token.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn same_except_ignores_the_skipped_keys_only() {
        let a = json!({"name": "x", "rv": "1", "spec": {"t": 1}});
        assert!(same_except(
            &a,
            &json!({"spec": {"t": 1}, "name": "x", "rv": "2"}),
            &["rv"]
        ));
        assert!(same_except(
            &a,
            &json!({"name": "x", "spec": {"t": 1}}),
            &["rv"]
        ));
        assert!(!same_except(
            &a,
            &json!({"name": "y", "rv": "1", "spec": {"t": 1}}),
            &["rv"]
        ));
        assert!(!same_except(
            &a,
            &json!({"name": "x", "spec": {"t": 2}}),
            &["rv"]
        ));
        assert!(!same_except(
            &a,
            &json!({"name": "x", "spec": {"t": 1}, "extra": 0}),
            &["rv"]
        ));
        assert!(!same_except(&a, &json!({"name": "x", "rv": "1"}), &["rv"]));
        assert!(
            !same_except(&json!([1]), &json!([1]), &[]),
            "arrays are not objects"
        );
    }

    #[test]
    fn agrees_with_value_pointer() {
        let mut v =
            json!({"metadata": {"name": "x", "a/b": 1, "m~n": 2, "list": [10, 20]}, "": {"": 3}});
        // A map past the scanned size, looked up through its index.
        v["big"] = (0..SCAN_UP_TO + 5)
            .map(|i| (format!("k{i}"), json!({"i": i})))
            .collect();
        for p in [
            "/big/k0",
            "/big/k20/i",
            "/big/missing",
            "",
            "/",
            "/metadata",
            "/metadata/name",
            "/metadata/missing",
            "/metadata/name/deeper",
            "/metadata/a~1b",
            "/metadata/m~0n",
            "/metadata/list/1",
            "/metadata/list/01",
            "/metadata/list/+1",
            "/metadata/list/2",
            "/metadata/list/x",
            "//",
            "metadata",
        ] {
            assert_eq!(v.at(p), v.pointer(p), "{p}");
        }
    }

    #[test]
    fn field_agrees_with_get_for_small_and_large_maps() {
        let mut large = serde_json::Map::new();
        for i in 0..(SCAN_UP_TO + 5) {
            large.insert(format!("k{i}"), json!(i));
        }
        let small = json!({"a": 1, "b": {"c": 2}, "": 3});
        for m in [small.as_object().unwrap(), &large] {
            for key in ["a", "b", "", "k0", "k20", "missing", "A"] {
                assert_eq!(field(m, key), m.get(key), "{key}");
            }
        }
    }

    #[test]
    fn same_with_last_agrees_with_same() {
        let base = json!({"apiVersion": "v1", "metadata": {"name": "a", "managedFields": [{"m": 1}]}, "spec": {"x": 1}});
        let cases = [
            base.clone(),
            json!({"spec": {"x": 1}, "apiVersion": "v1", "metadata": {"managedFields": [{"m": 1}], "name": "a"}}),
            json!({"apiVersion": "v1", "metadata": {"name": "a", "managedFields": [{"m": 1}]}, "spec": {"x": 2}}),
            json!({"apiVersion": "v1", "metadata": {"name": "b", "managedFields": [{"m": 1}]}, "spec": {"x": 1}}),
            json!({"apiVersion": "v1", "spec": {"x": 1}}),
            json!({"apiVersion": "v1", "spec": {"x": 1}, "other": {}}),
            json!({"apiVersion": "v1", "metadata": null, "spec": {"x": 1}}),
            json!({"apiVersion": "v1", "metadata": {"name": "a", "managedFields": [{"m": 1}]}}),
            json!([1, 2]),
            json!("metadata"),
        ];
        for a in &cases {
            for b in &cases {
                assert_eq!(same_with_last(a, b, "metadata"), same(a, b), "{a} vs {b}");
                assert_eq!(same(a, b), a == b, "{a} vs {b}");
            }
        }
    }

    #[test]
    fn pair_up_pairs_by_key_in_any_order() {
        let old = json!({"a": 1, "b": 2, "c": 3});
        let new = json!({"a": 10, "c": 30, "d": 40, "b": 20});
        let pairs: Vec<(&str, i64, Option<i64>)> =
            pair_up(old.as_object().unwrap(), new.as_object().unwrap())
                .map(|(k, n, o)| (k.as_str(), n.as_i64().unwrap(), o.and_then(Value::as_i64)))
                .collect();
        assert_eq!(
            pairs,
            [
                ("a", 10, Some(1)),
                ("c", 30, Some(3)),
                ("d", 40, None),
                ("b", 20, Some(2))
            ]
        );
    }

    #[test]
    fn same_agrees_with_value_equality() {
        let base = json!({"a": 1, "b": {"x": [1, {"y": "z"}], "w": null}, "c": 2.5});
        let cases = [
            json!({"a": 1, "b": {"x": [1, {"y": "z"}], "w": null}, "c": 2.5}),
            // Other key orders, at the top and inside.
            json!({"c": 2.5, "a": 1, "b": {"w": null, "x": [1, {"y": "z"}]}}),
            json!({"a": 1, "c": 2.5, "b": {"x": [1, {"y": "z"}], "w": null}}),
            // Different values, keys, lengths, number kinds, array orders.
            json!({"a": 1, "b": {"x": [1, {"y": "q"}], "w": null}, "c": 2.5}),
            json!({"a": 1, "b": {"x": [{"y": "z"}, 1], "w": null}, "c": 2.5}),
            json!({"a": 1, "b": {"x": [1, {"y": "z"}], "v": null}, "c": 2.5}),
            json!({"a": 1, "b": {"x": [1, {"y": "z"}]}, "c": 2.5}),
            json!({"a": 1.0, "b": {"x": [1, {"y": "z"}], "w": null}, "c": 2.5}),
            json!({"a": 1, "c": 2.5, "d": {"x": [1, {"y": "z"}], "w": null}}),
            json!({"a": 1, "b": {"x": [1, {"y": "z"}], "w": null}, "c": 2.5, "e": 0}),
            json!([1, 2]),
            json!(null),
        ];
        for c in &cases {
            assert_eq!(same(&base, c), base == *c, "{c}");
            assert_eq!(same(c, &base), *c == base, "{c}");
        }
    }
}
