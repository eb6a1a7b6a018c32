//! The CEL type a structural schema declares, with the sizes cost estimation reads
//! (k8s.io/apiserver pkg/cel/common/schemas.go `SchemaDeclType`, pkg/cel/types.go, and
//! apiextensions-apiserver's `WithTypeAndObjectMeta`): the most elements (characters, items,
//! properties) a value of the node can have in a request, and the fewest bytes it takes
//! serialized, from which an unbounded list's or map's largest size is estimated.

use serde_json::Value;
use std::collections::BTreeMap;

/// The largest request body kube-apiserver accepts (celconfig.MaxRequestSizeBytes).
pub(crate) const MAX_REQUEST_SIZE_BYTES: i64 = 3 * 1024 * 1024;

const MAX_DURATION_SIZE_JSON: i64 = 32;
const MAX_DATETIME_SIZE_JSON: i64 = 32;
const MIN_DURATION_SIZE_JSON: i64 = 3;
const JSON_DATE_SIZE: i64 = 12;
const MIN_DATETIME_SIZE_JSON: i64 = 21;
const MIN_STRING_SIZE: i64 = 2;
const MIN_BOOL_SIZE: i64 = 4;
const MIN_NUMBER_SIZE: i64 = 1;

/// DNS1123SubdomainMaxLength: the bound of `metadata.name` when the schema sets none.
const NAME_MAX_LENGTH: i64 = 253;

/// What a value of a schema node is.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Kind {
    /// x-kubernetes-int-or-string.
    Dyn,
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    List(Box<Decl>),
    /// Keys are strings (their declared size is 0, as upstream's StringType has it).
    Map(Box<Decl>),
    /// Properties by their CEL (escaped) names.
    Object(BTreeMap<String, Decl>),
}

/// A declared type: its kind, the most elements a value holds, the fewest bytes it takes.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Decl {
    pub(crate) kind: Kind,
    pub(crate) max_elements: i64,
    pub(crate) min_size: i64,
}

impl Decl {
    fn simple(kind: Kind, min_size: i64) -> Decl {
        Decl {
            kind,
            max_elements: 0,
            min_size,
        }
    }

    /// The declared map key type (a string of declared size 0).
    pub(crate) fn map_key() -> Decl {
        Decl::simple(Kind::String, MIN_STRING_SIZE)
    }
}

fn int(s: &Value, key: &str) -> Option<i64> {
    s.get(key).and_then(Value::as_i64)
}

fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

fn embedded(s: &Value) -> bool {
    flag(s, "x-kubernetes-embedded-resource")
}

/// SchemaDeclType: the type of schema node `s` (`resource_root` for the root of a resource or
/// an embedded resource, where `kind`, `apiVersion` and `metadata.name` are always readable).
/// `None` when the node declares no type CEL can see (its field is left out).
pub(crate) fn decl(s: &Value, resource_root: bool) -> Option<Decl> {
    if flag(s, "x-kubernetes-int-or-string") {
        let max = match int(s, "maxLength") {
            Some(m) => m.max(0).saturating_mul(4),
            None => max_string_length_per_request(s),
        };
        return Some(Decl {
            kind: Kind::Dyn,
            max_elements: max,
            min_size: 1,
        });
    }
    let with_meta;
    let s = if resource_root {
        with_meta = with_type_and_object_meta(s);
        with_meta.as_ref().unwrap_or(s)
    } else {
        s
    };
    match s.get("type").and_then(Value::as_str).unwrap_or("") {
        "array" => {
            let items_schema = s.get("items").filter(|i| i.is_object())?;
            let items = decl(items_schema, embedded(items_schema))?;
            let max = match int(s, "maxItems") {
                Some(m) => m.max(0),
                None => (MAX_REQUEST_SIZE_BYTES - 2) / (items.min_size + 1),
            };
            Some(Decl {
                kind: Kind::List(Box::new(items)),
                max_elements: max,
                min_size: 2,
            })
        }
        "object" => {
            if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
                let values = decl(ap, embedded(ap))?;
                let max = match int(s, "maxProperties") {
                    Some(m) => m.max(0),
                    None => (MAX_REQUEST_SIZE_BYTES - 2) / (values.min_size + 6),
                };
                return Some(Decl {
                    kind: Kind::Map(Box::new(values)),
                    max_elements: max,
                    min_size: 2,
                });
            }
            let required: Vec<&str> = s
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            let mut fields = BTreeMap::new();
            let mut min_size = 2;
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                for (name, prop) in props {
                    let Some(field) = decl(prop, embedded(prop)) else {
                        continue;
                    };
                    if required.contains(&name.as_str()) && prop.get("default").is_none() {
                        min_size += name.len() as i64 + field.min_size + 4;
                    }
                    if let Some(escaped) = escape(name) {
                        fields.insert(escaped, field);
                    }
                }
            }
            Some(Decl {
                kind: Kind::Object(fields),
                max_elements: 0,
                min_size,
            })
        }
        "string" => Some(string(s)),
        "boolean" => Some(Decl::simple(Kind::Bool, MIN_BOOL_SIZE)),
        "number" => Some(Decl::simple(Kind::Double, MIN_NUMBER_SIZE)),
        "integer" => Some(Decl::simple(Kind::Int, MIN_NUMBER_SIZE)),
        _ => None,
    }
}

fn string(s: &Value) -> Decl {
    let max_length = int(s, "maxLength").map(|m| m.max(0));
    let per_request = max_string_length_per_request(s);
    let (kind, min_size, max) = match s.get("format").and_then(Value::as_str).unwrap_or("") {
        "byte" => (
            Kind::Bytes,
            MIN_STRING_SIZE,
            max_length.unwrap_or(per_request),
        ),
        "duration" => (Kind::Duration, MIN_DURATION_SIZE_JSON, per_request),
        "date" => (Kind::Timestamp, JSON_DATE_SIZE, per_request),
        "date-time" => (Kind::Timestamp, MIN_DATETIME_SIZE_JSON, per_request),
        _ => {
            let max = match max_length {
                // maxLength counts code points; a code point takes up to 4 bytes.
                Some(m) => m.saturating_mul(4),
                None => match s.get("enum").and_then(Value::as_array) {
                    Some(e) if !e.is_empty() => e
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|v| v.len() as i64)
                        .max()
                        .unwrap_or(0),
                    _ => per_request,
                },
            };
            (Kind::String, MIN_STRING_SIZE, max)
        }
    };
    Decl {
        kind,
        max_elements: max,
        min_size,
    }
}

fn max_string_length_per_request(s: &Value) -> i64 {
    if flag(s, "x-kubernetes-int-or-string") {
        return MAX_REQUEST_SIZE_BYTES - 2;
    }
    match s.get("format").and_then(Value::as_str).unwrap_or("") {
        "duration" => MAX_DURATION_SIZE_JSON,
        "date" => JSON_DATE_SIZE,
        "date-time" => MAX_DATETIME_SIZE_JSON,
        _ => MAX_REQUEST_SIZE_BYTES - 2,
    }
}

fn typed(s: Option<&Value>, ty: &str) -> bool {
    s.and_then(|s| s.get("type")).and_then(Value::as_str) == Some(ty)
}

/// WithTypeAndObjectMeta: `s` with string `kind` and `apiVersion` and a `metadata` of `name`
/// (at most 253 characters unless the schema says fewer) and `generateName` (252), unless
/// it declares them all already (`None`: `s` as it is).
pub(crate) fn with_type_and_object_meta(s: &Value) -> Option<Value> {
    let props = s.get("properties").and_then(Value::as_object);
    let prop = |name: &str| props.and_then(|p| p.get(name));
    let meta_props = prop("metadata")
        .and_then(|m| m.get("properties"))
        .and_then(Value::as_object);
    let meta_prop = |name: &str| meta_props.and_then(|p| p.get(name));
    if typed(prop("kind"), "string")
        && typed(prop("apiVersion"), "string")
        && typed(prop("metadata"), "object")
        && typed(meta_prop("name"), "string")
        && typed(meta_prop("generateName"), "string")
    {
        return None;
    }
    let capped = |existing: Option<&Value>, cap: i64| {
        let max = existing
            .and_then(|e| int(e, "maxLength"))
            .map_or(cap, |m| m.min(cap));
        serde_json::json!({"type": "string", "maxLength": max})
    };
    let mut out = s.clone();
    let obj = out.as_object_mut()?;
    let mut new_props = props.cloned().unwrap_or_default();
    new_props.insert("kind".into(), serde_json::json!({"type": "string"}));
    new_props.insert("apiVersion".into(), serde_json::json!({"type": "string"}));
    new_props.insert(
        "metadata".into(),
        serde_json::json!({"type": "object", "properties": {
            "name": capped(meta_prop("name"), NAME_MAX_LENGTH),
            "generateName": capped(meta_prop("generateName"), NAME_MAX_LENGTH - 1),
        }}),
    );
    obj.insert("properties".into(), Value::Object(new_props));
    Some(out)
}

/// Escape (k8s.io/apiserver pkg/cel/escaping.go): the name CEL reads property `name` by, or
/// `None` when it cannot be read.
pub(crate) fn escape(name: &str) -> Option<String> {
    let first = name.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    // A reserved word is read as `__<name>__`.
    if super::RESERVED_WORDS.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}
