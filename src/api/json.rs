//! Looking up a field of a JSON object by JSON pointer without allocating.
//! May use: nothing internal.

use serde_json::Value;

/// [`Value::pointer`] for the constant pointers the server uses (`/metadata/uid`):
/// the same result, without the two strings `Value::pointer` allocates per step to unescape
/// `~0`/`~1` (pointers that contain `~` are handed to it).
pub trait At {
    /// The value `pointer` names, if any.
    fn at(&self, pointer: &str) -> Option<&Value>;
}

impl At for Value {
    fn at(&self, pointer: &str) -> Option<&Value> {
        if pointer.is_empty() {
            return Some(self);
        }
        if pointer.contains('~') {
            return self.pointer(pointer);
        }
        pointer
            .strip_prefix('/')?
            .split('/')
            .try_fold(self, |v, token| match v {
                Value::Object(map) => map.get(token),
                Value::Array(list) => index(token).and_then(|i| list.get(i)),
                _ => None,
            })
    }
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
    fn agrees_with_value_pointer() {
        let v =
            json!({"metadata": {"name": "x", "a/b": 1, "m~n": 2, "list": [10, 20]}, "": {"": 3}});
        for p in [
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
}
