//! Embedded resources (`x-kubernetes-embedded-resource`): their TypeMeta and ObjectMeta
//! checked (pkg/apiserver/schema/objectmeta Validate: apiVersion and kind required, metadata
//! validated as ObjectMeta with path-segment names) and coerced on decoding (CoerceWithOptions:
//! apiVersion and kind must be strings, metadata is read as ObjectMeta). The object's own
//! root is not an embedded resource here: the registry handles its metadata. May use: api,
//! registry's error types and validation helpers.

use super::super::super::error::{FieldError, FieldErrorKind};
use super::super::super::validation::{name_errors, validate_labels, NameRule};
use super::super::gofmt::{self, bad_value, json};
use super::compile::Node;
use super::objectmeta;
use super::path::{Path, Seg};
use crate::api::selectors::qualified_name_errors;
use serde_json::{Map, Value};

const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn invalid(field: String, value: String, detail: impl Into<String>) -> FieldError {
    FieldError {
        kind: FieldErrorKind::Invalid,
        field,
        value: Some(value),
        detail: detail.into(),
    }
}

/// objectmeta.Validate(nil, obj, schema, false): every embedded resource in `obj`.
pub(super) fn validate(node: &Node, obj: &Value, errs: &mut Vec<FieldError>) {
    walk(Some(node), obj, &Path::ROOT, errs);
}

fn walk(node: Option<&Node>, x: &Value, path: &Path<'_>, errs: &mut Vec<FieldError>) {
    let Some(node) = node else {
        return;
    };
    match x {
        Value::Object(m) => {
            if node.embedded {
                validate_resource(m, path, errs);
            }
            for (k, v) in m {
                if let Some(prop) = node.property(k) {
                    walk(Some(prop), v, &path.child(Seg::Prop(k)), errs);
                } else if let Some(a) = node.additional.as_deref() {
                    walk(a.schema.as_ref(), v, &path.child(Seg::Key(k)), errs);
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter().enumerate() {
                walk(node.items.as_deref(), v, &path.child(Seg::Index(i)), errs);
            }
        }
        _ => {}
    }
}

/// validateEmbeddedResource.
fn validate_resource(x: &Map<String, Value>, path: &Path<'_>, errs: &mut Vec<FieldError>) {
    for k in ["apiVersion", "kind"] {
        if !x.contains_key(k) {
            errs.push(FieldError::required(path.field_child(k), ""));
        }
    }
    for (k, v) in x {
        match (k.as_str(), v) {
            ("apiVersion" | "kind", v) if !v.is_string() => {
                errs.push(invalid(
                    path.field_child(k),
                    bad_value(v),
                    "must be a string",
                ));
            }
            ("apiVersion" | "kind", Value::String(s)) if s.is_empty() => {
                errs.push(invalid(
                    path.field_child(k),
                    gofmt::quote(s),
                    "must not be empty",
                ));
            }
            ("apiVersion", Value::String(s)) if s.matches('/').count() > 1 => {
                let detail = format!("unexpected GroupVersion string: {s}");
                errs.push(invalid(path.field_child(k), gofmt::quote(s), detail));
            }
            ("kind", Value::String(s)) => {
                let lower = s.to_lowercase();
                let mut problems = Vec::new();
                if lower.len() > 63 {
                    problems.push("must be no more than 63 characters");
                }
                if !is_dns1035_label(&lower) {
                    problems.push(DNS1035_LABEL_MSG);
                }
                if !problems.is_empty() {
                    let detail = format!(
                        "may have mixed case, but should otherwise match: {}",
                        problems.join(",")
                    );
                    errs.push(invalid(path.field_child(k), gofmt::quote(s), detail));
                }
            }
            ("metadata", v) => {
                let field = path.field_child("metadata");
                match objectmeta::coerce(v, false, &mut Vec::new()) {
                    Err(e) => errs.push(invalid(field, bad_value(v), e)),
                    Ok(Value::Object(meta)) => validate_meta(&meta, &field, errs),
                    Ok(_) => {}
                }
            }
            _ => {}
        }
    }
}

fn is_dns1035_label(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_lowercase()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
}

/// path.ValidatePathSegmentName.
fn path_segment_errors(name: &str, prefix: bool) -> Vec<String> {
    if !prefix {
        if let Some(bad) = [".", ".."].into_iter().find(|b| *b == name) {
            return vec![format!("may not be '{bad}'")];
        }
    }
    ["/", "%"]
        .into_iter()
        .filter(|c| name.contains(c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// ValidateObjectMeta with ValidatePathSegmentName, a namespace required only when set, and
/// an empty name taken as "fakename".
fn validate_meta(meta: &Map<String, Value>, at: &str, errs: &mut Vec<FieldError>) {
    let str_of = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("");
    let field = |k: &str| format!("{at}.{k}");
    let generate_name = str_of("generateName");
    if !generate_name.is_empty() {
        for e in path_segment_errors(generate_name, true) {
            errs.push(invalid(
                field("generateName"),
                gofmt::quote(generate_name),
                e,
            ));
        }
    }
    let name = match str_of("name") {
        "" => "fakename",
        n => n,
    };
    for e in path_segment_errors(name, false) {
        errs.push(invalid(field("name"), gofmt::quote(name), e));
    }
    let namespace = str_of("namespace");
    if !namespace.is_empty() {
        for e in name_errors(namespace, NameRule::Label) {
            errs.push(invalid(field("namespace"), gofmt::quote(namespace), e));
        }
    }
    if let Some(g) = meta
        .get("generation")
        .and_then(Value::as_i64)
        .filter(|g| *g < 0)
    {
        errs.push(invalid(
            field("generation"),
            g.to_string(),
            "must be greater than or equal to 0",
        ));
    }
    errs.extend(validate_labels(meta.get("labels"), &field("labels")));
    if let Some(Value::Object(annotations)) = meta.get("annotations") {
        let mut total = 0;
        for (k, v) in annotations {
            for e in qualified_name_errors(&k.to_lowercase()) {
                errs.push(invalid(field("annotations"), gofmt::quote(k), e));
            }
            total += k.len() + v.as_str().map_or(0, str::len);
        }
        if total > 256 * 1024 {
            errs.push(FieldError {
                kind: FieldErrorKind::TooLong,
                field: field("annotations"),
                value: None,
                detail: "may not be more than 262144 bytes".into(),
            });
        }
    }
    if let Some(Value::Array(refs)) = meta.get("ownerReferences") {
        validate_owner_references(refs, &field("ownerReferences"), errs);
    }
    if let Some(Value::Array(finalizers)) = meta.get("finalizers") {
        let at = field("finalizers");
        for f in finalizers.iter().filter_map(Value::as_str) {
            for e in qualified_name_errors(f) {
                errs.push(invalid(at.clone(), gofmt::quote(f), e));
            }
        }
        let has = |f: &str| finalizers.iter().any(|x| x == f);
        if has("orphan") && has("foregroundDeletion") {
            let list = json(&Value::Array(finalizers.clone()));
            errs.push(invalid(
                at,
                list,
                "finalizer orphan and foregroundDeletion cannot be both set",
            ));
        }
    }
}

/// An OwnerReference as json.Marshal writes the struct (declaration order).
fn owner_json(r: &Map<String, Value>) -> String {
    let mut out = Map::new();
    for k in ["apiVersion", "kind", "name", "uid"] {
        out.insert(
            k.into(),
            r.get(k).cloned().unwrap_or_else(|| Value::from("")),
        );
    }
    let mut text = String::from("{");
    for (i, (k, v)) in out.iter().enumerate() {
        if i > 0 {
            text.push(',');
        }
        text.push_str(&format!("{}:{}", json(&Value::from(k.as_str())), json(v)));
    }
    for k in ["controller", "blockOwnerDeletion"] {
        if let Some(v) = r.get(k) {
            text.push_str(&format!(",{}:{}", json(&Value::from(k)), json(v)));
        }
    }
    text.push('}');
    text
}

/// ValidateOwnerReferences.
fn validate_owner_references(refs: &[Value], at: &str, errs: &mut Vec<FieldError>) {
    let mut first_controller: Option<String> = None;
    for r in refs.iter().filter_map(Value::as_object) {
        let s = |k: &str| r.get(k).and_then(Value::as_str).unwrap_or("");
        let (api_version, kind) = (s("apiVersion"), s("kind"));
        let (group, version) = match api_version.matches('/').count() {
            0 => ("", api_version),
            1 => api_version.split_once('/').unwrap_or(("", "")),
            _ => ("", ""),
        };
        if version.is_empty() {
            let detail = "version must not be empty";
            errs.push(invalid(
                format!("{at}.apiVersion"),
                gofmt::quote(api_version),
                detail,
            ));
        }
        for k in ["kind", "name", "uid"] {
            if s(k).is_empty() {
                errs.push(invalid(
                    format!("{at}.{k}"),
                    gofmt::quote(""),
                    "must not be empty",
                ));
            }
        }
        if group.is_empty() && version == "v1" && kind == "Event" {
            let detail = "/v1, Kind=Event is disallowed from being an owner";
            errs.push(invalid(at.to_string(), owner_json(r), detail));
        }
        if r.get("controller") == Some(&Value::Bool(true)) {
            let this = format!("{kind}/{}", s("name"));
            match &first_controller {
                Some(first) => {
                    let list: Vec<String> = refs
                        .iter()
                        .filter_map(Value::as_object)
                        .map(owner_json)
                        .collect();
                    let detail = format!("Only one reference can have Controller set to true. Found \"true\" in references for {first} and {this}");
                    errs.push(invalid(
                        at.to_string(),
                        format!("[{}]", list.join(",")),
                        detail,
                    ));
                }
                None => first_controller = Some(this),
            }
        }
    }
}

/// CoerceWithOptions(nil, obj, schema, false, ...): each embedded resource's apiVersion and
/// kind must be strings and its metadata is read as ObjectMeta. Unknown metadata fields go to
/// `unknown` as field paths (`spec.template.metadata.foo`), unsorted.
pub(super) fn coerce(
    node: &Node,
    obj: &mut Value,
    drop_invalid: bool,
    unknown: &mut Vec<String>,
) -> Result<(), FieldError> {
    coerce_walk(Some(node), obj, &Path::ROOT, drop_invalid, unknown)
}

fn coerce_walk(
    node: Option<&Node>,
    x: &mut Value,
    path: &Path<'_>,
    drop_invalid: bool,
    unknown: &mut Vec<String>,
) -> Result<(), FieldError> {
    let Some(node) = node else {
        return Ok(());
    };
    match x {
        Value::Object(m) => {
            if node.embedded {
                coerce_resource(m, path, drop_invalid, unknown)?;
            }
            for (k, v) in m.iter_mut() {
                if let Some(prop) = node.property(k) {
                    coerce_walk(
                        Some(prop),
                        v,
                        &path.child(Seg::Prop(k)),
                        drop_invalid,
                        unknown,
                    )?;
                } else if let Some(a) = node.additional.as_deref() {
                    let at = path.child(Seg::Key(k));
                    coerce_walk(a.schema.as_ref(), v, &at, drop_invalid, unknown)?;
                }
            }
        }
        Value::Array(items) => {
            for (i, v) in items.iter_mut().enumerate() {
                let at = path.child(Seg::Index(i));
                coerce_walk(node.items.as_deref(), v, &at, drop_invalid, unknown)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn coerce_resource(
    m: &mut Map<String, Value>,
    path: &Path<'_>,
    drop_invalid: bool,
    unknown: &mut Vec<String>,
) -> Result<(), FieldError> {
    for k in ["apiVersion", "kind"] {
        match m.get(k) {
            Some(v) if !v.is_string() => {
                if !drop_invalid {
                    return Err(invalid(
                        path.field_child(k),
                        bad_value(v),
                        "must be a string",
                    ));
                }
                m.shift_remove(k);
            }
            _ => {}
        }
    }
    if let Some(v) = m.get_mut("metadata") {
        let at = path.field_child("metadata");
        let mut found = Vec::new();
        match objectmeta::coerce(v, drop_invalid, &mut found) {
            Ok(meta) => *v = meta,
            Err(e) => return Err(invalid(at, bad_value(v), e)),
        }
        unknown.extend(found.into_iter().map(|f| format!("{at}.{f}")));
    }
    Ok(())
}
