//! The `metadata` of an embedded resource read as a metav1.ObjectMeta and written back
//! (pkg/apiserver/schema/objectmeta: GetObjectMetaWithOptions + SetObjectMeta): fields
//! ObjectMeta does not have are dropped (and reported for fieldValidation), values take
//! their typed form (a null string is "", an empty value is omitted, timestamps become
//! whole-second UTC), and a value of the wrong type is an error, or, when dropping malformed
//! fields (storage reads, defaults), drops that field. May use: nothing internal.

use serde_json::{Map, Value};

/// A typed ObjectMeta field (or a field of one of its structs).
#[derive(Clone, Copy)]
enum Kind {
    /// `string` (null is "", "" is omitted unless `keep_empty`).
    Str,
    /// `int64` (0 omitted).
    Int,
    /// `*int64`.
    IntPtr,
    /// `*bool`.
    BoolPtr,
    /// metav1.Time or *metav1.Time (the zero time omitted).
    Time,
    /// `map[string]string`.
    StrMap,
    /// `[]string`.
    StrList,
    /// `[]OwnerReference`.
    OwnerRefs,
    /// `[]ManagedFieldsEntry`.
    ManagedFields,
    /// FieldsV1: any JSON, kept as is.
    Raw,
}

/// ObjectMeta's fields in JSON (and so output) order.
const OBJECT_META: &[(&str, Kind)] = &[
    ("annotations", Kind::StrMap),
    ("creationTimestamp", Kind::Time),
    ("deletionGracePeriodSeconds", Kind::IntPtr),
    ("deletionTimestamp", Kind::Time),
    ("finalizers", Kind::StrList),
    ("generateName", Kind::Str),
    ("generation", Kind::Int),
    ("labels", Kind::StrMap),
    ("managedFields", Kind::ManagedFields),
    ("name", Kind::Str),
    ("namespace", Kind::Str),
    ("ownerReferences", Kind::OwnerRefs),
    ("resourceVersion", Kind::Str),
    ("selfLink", Kind::Str),
    ("uid", Kind::Str),
];

/// OwnerReference's fields; the four strings are not omitempty.
const OWNER_REFERENCE: &[(&str, Kind)] = &[
    ("apiVersion", Kind::Str),
    ("blockOwnerDeletion", Kind::BoolPtr),
    ("controller", Kind::BoolPtr),
    ("kind", Kind::Str),
    ("name", Kind::Str),
    ("uid", Kind::Str),
];

const MANAGED_FIELDS_ENTRY: &[(&str, Kind)] = &[
    ("apiVersion", Kind::Str),
    ("fieldsType", Kind::Str),
    ("fieldsV1", Kind::Raw),
    ("manager", Kind::Str),
    ("operation", Kind::Str),
    ("subresource", Kind::Str),
    ("time", Kind::Time),
];

/// Unknown fields found (kjson's paths below `metadata`: `foo`, `ownerReferences[0].foo`).
type Unknown = Vec<String>;

/// `metadata` as ObjectMeta would write it back. Unknown fields go to `unknown` (relative to
/// metadata). A wrong type is an `Err` with Go's decoding message, unless `drop_malformed`,
/// which drops each field that fails on its own; a non-object then passes through unchanged.
pub(super) fn coerce(
    metadata: &Value,
    drop_malformed: bool,
    unknown: &mut Unknown,
) -> Result<Value, String> {
    super::probe::allocates();
    let map = match metadata {
        // json.Unmarshal of null into a struct leaves it zero: `{}` is written back.
        Value::Null => return Ok(Value::Object(Map::new())),
        Value::Object(m) => m,
        other if drop_malformed => return Ok(other.clone()),
        other => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
                json_kind(other)
            ))
        }
    };
    let mut found = Vec::new();
    match decode_struct(
        map,
        OBJECT_META,
        "ObjectMeta",
        "",
        drop_malformed,
        &mut found,
    ) {
        Ok(out) => {
            unknown.append(&mut found);
            Ok(Value::Object(out))
        }
        Err(e) if !drop_malformed => Err(e),
        // decode_struct drops field by field when asked, so it only fails when not asked.
        Err(_) => Ok(Value::Object(Map::new())),
    }
}

/// Go's word for a JSON value in an UnmarshalTypeError.
fn json_kind(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) => {
            if n.is_i64() || n.is_u64() {
                "number".into()
            } else {
                format!("number {n}")
            }
        }
        Value::String(_) => "string".into(),
        Value::Array(_) => "array".into(),
        Value::Object(_) => "object".into(),
    }
}

fn type_error(v: &Value, strukt: &str, field: &str, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field {strukt}.{field} of type {go_type}",
        json_kind(v)
    )
}

/// Decodes `map` as the struct with `fields`, returning the fields it writes back.
fn decode_struct(
    map: &Map<String, Value>,
    fields: &[(&str, Kind)],
    strukt: &str,
    at: &str,
    drop_malformed: bool,
    unknown: &mut Unknown,
) -> Result<Map<String, Value>, String> {
    let mut out = Map::new();
    let mut first_error = None;
    for k in map.keys() {
        if !fields.iter().any(|(name, _)| name == k) {
            unknown.push(join(at, k));
        }
    }
    for (name, kind) in fields {
        // Strings of an OwnerReference are written even when empty.
        let keep_empty = strukt == "OwnerReference" && matches!(kind, Kind::Str);
        let Some(v) = map.get(*name) else {
            if keep_empty {
                out.insert((*name).to_string(), Value::String(String::new()));
            }
            continue;
        };
        let field = if at.is_empty() {
            (*name).to_string()
        } else {
            format!("{at}.{name}")
        };
        // A field's unknown fields count only if the field decodes.
        let mut inner = Vec::new();
        let decoded = decode_field(v, *kind, strukt, &field, &mut inner);
        if decoded.is_ok() {
            unknown.append(&mut inner);
        }
        match decoded {
            Ok(Some(x)) => {
                out.insert((*name).to_string(), x);
            }
            Ok(None) if keep_empty => {
                out.insert((*name).to_string(), Value::String(String::new()));
            }
            Ok(None) => {}
            Err(_) if drop_malformed => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// `at` + `.key` (kjson field paths).
fn join(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

/// One field's written-back value (None: omitted).
fn decode_field(
    v: &Value,
    kind: Kind,
    strukt: &str,
    field: &str,
    unknown: &mut Unknown,
) -> Result<Option<Value>, String> {
    let err = |go_type: &str| type_error(v, strukt, field, go_type);
    Ok(match (kind, v) {
        (Kind::Raw, Value::Null) => None,
        (Kind::Raw, v) => Some(v.clone()),
        (_, Value::Null) => None,
        (Kind::Str, Value::String(s)) => (!s.is_empty()).then(|| v.clone()),
        (Kind::Str, _) => return Err(err("string")),
        (Kind::Int | Kind::IntPtr, Value::Number(n)) => {
            // Go marshals a whole float64 without a fraction, so 1.0 decodes as 1.
            let i = n
                .as_i64()
                .or_else(|| {
                    n.as_f64()
                        .filter(|f| f.fract() == 0.0 && f.abs() < 9.2e18)
                        .map(|f| f as i64)
                })
                .ok_or_else(|| err("int64"))?;
            (i != 0 || matches!(kind, Kind::IntPtr)).then(|| Value::from(i))
        }
        (Kind::Int | Kind::IntPtr, _) => return Err(err("int64")),
        (Kind::BoolPtr, Value::Bool(_)) => Some(v.clone()),
        (Kind::BoolPtr, _) => return Err(err("bool")),
        (Kind::Time, Value::String(s)) => Some(Value::String(normalize_time(s)?)),
        (Kind::Time, _) => {
            return Err(format!(
                "json: cannot unmarshal {} into Go value of type string",
                json_kind(v)
            ))
        }
        (Kind::StrMap, Value::Object(m)) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            let mut out = Map::new();
            for (k, x) in entries {
                match x {
                    Value::String(_) => out.insert(k.clone(), x.clone()),
                    Value::Null => out.insert(k.clone(), Value::String(String::new())),
                    _ => return Err(type_error(x, strukt, &format!("{field}.{k}"), "string")),
                };
            }
            (!out.is_empty()).then_some(Value::Object(out))
        }
        (Kind::StrMap, _) => return Err(err("map[string]string")),
        (Kind::StrList, Value::Array(a)) => {
            let out = a
                .iter()
                .map(|x| match x {
                    Value::String(_) => Ok(x.clone()),
                    Value::Null => Ok(Value::String(String::new())),
                    _ => Err(type_error(x, strukt, field, "string")),
                })
                .collect::<Result<Vec<_>, _>>()?;
            (!out.is_empty()).then_some(Value::Array(out))
        }
        (Kind::StrList, _) => return Err(err("[]string")),
        (Kind::OwnerRefs | Kind::ManagedFields, Value::Array(a)) => {
            let (fields, name) = match kind {
                Kind::OwnerRefs => (OWNER_REFERENCE, "OwnerReference"),
                _ => (MANAGED_FIELDS_ENTRY, "ManagedFieldsEntry"),
            };
            let mut out = Vec::with_capacity(a.len());
            for (i, x) in a.iter().enumerate() {
                let at = format!("{field}[{i}]");
                let empty = Map::new();
                let m = match x {
                    Value::Object(m) => m,
                    Value::Null => &empty,
                    _ => return Err(type_error(x, strukt, field, &format!("v1.{name}"))),
                };
                // An element's error fails the whole list (dropping works per field).
                out.push(Value::Object(decode_struct(
                    m, fields, name, &at, false, unknown,
                )?));
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
        (Kind::OwnerRefs, _) => return Err(err("[]v1.OwnerReference")),
        (Kind::ManagedFields, _) => return Err(err("[]v1.ManagedFieldsEntry")),
    })
}

/// metav1.Time's round trip: RFC 3339 in, whole-second UTC out.
fn normalize_time(s: &str) -> Result<String, String> {
    chrono::DateTime::parse_from_rfc3339(s)
        .map(|t| {
            t.with_timezone(&chrono::Utc)
                .format("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        })
        .map_err(|_| {
            format!(
                "parsing time {} as \"2006-01-02T15:04:05Z07:00\": cannot parse {} as \"2006\"",
                super::super::gofmt::quote(s),
                super::super::gofmt::quote(s)
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metadata_takes_its_typed_form() {
        let mut unknown = Vec::new();
        let out = coerce(
            &json!({"name": "a", "namespace": "", "foo": 1, "labels": {"b": null, "a": "x"},
                    "generation": 2.0, "creationTimestamp": "2024-01-01T01:00:00+01:00",
                    "ownerReferences": [{"kind": "K", "bar": true}], "finalizers": []}),
            false,
            &mut unknown,
        )
        .unwrap();
        assert_eq!(
            out,
            json!({"creationTimestamp": "2024-01-01T00:00:00Z", "generation": 2,
                   "labels": {"a": "x", "b": ""}, "name": "a",
                   "ownerReferences": [{"apiVersion": "", "kind": "K", "name": "", "uid": ""}]})
        );
        assert_eq!(unknown, vec!["foo", "ownerReferences[0].bar"]);
        assert_eq!(
            coerce(&json!(null), false, &mut unknown).unwrap(),
            json!({})
        );
    }

    #[test]
    fn a_wrong_type_fails_or_is_dropped() {
        let mut unknown = Vec::new();
        let bad = json!({"name": 5, "namespace": "ns"});
        assert_eq!(
            coerce(&bad, false, &mut unknown).unwrap_err(),
            "json: cannot unmarshal number into Go struct field ObjectMeta.name of type string"
        );
        assert_eq!(
            coerce(&bad, true, &mut unknown).unwrap(),
            json!({"namespace": "ns"})
        );
    }
}
