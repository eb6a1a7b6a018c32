//! JSON paths into a structural schema: cel.ValidFieldPath (used by selectableFields and by the
//! `fieldPath` of x-kubernetes-validations rules) and ValidateCustomResourceSelectableFields.

use std::collections::BTreeSet;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::SelectableField;

use super::path;
use super::structural::Structural;
use crate::registry::error::{FieldError, FieldErrorKind};

/// At most this many selectable fields per version (MaxSelectableFields).
pub(super) const MAX_SELECTABLE_FIELDS: usize = 8;

/// The tokens of Go's bufio.Scanner split function in ValidFieldPath: `.`, `[` and `]` alone,
/// a single-quoted string as one token, anything else up to the next delimiter.
fn tokens(s: &str) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    while start < b.len() {
        let data = &b[start..];
        let mut len = data.len();
        if data[0] == b'\'' {
            if let Some(i) = (1..data.len()).find(|&i| data[i] == b'\'' && data[i - 1] != b'\\') {
                len = i + 1;
            }
        } else if let Some(i) = data.iter().position(|c| matches!(c, b'.' | b'[' | b']')) {
            len = i.max(1);
        }
        out.push(&s[start..start + len]);
        start += len;
    }
    out
}

/// unescapeSingleQuote: the escapes of a CEL single-quoted string.
fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let Some(d) = chars.next() else {
            out.push(c);
            break;
        };
        out.push(match d {
            'a' => '\u{7}',
            'b' => '\u{8}',
            'f' => '\u{c}',
            'n' => '\n',
            'r' => '\r',
            't' => '\t',
            'v' => '\u{b}',
            '\'' => '\'',
            '\\' => '\\',
            _ => return Err(format!("invalid escape char \\{d}")),
        });
    }
    Ok(out)
}

/// A valid field path: its field.Path text and the schema it points at.
pub(super) struct Found<'s> {
    pub(super) path: String,
    /// The first element of the path (field.Path.Root()).
    pub(super) root: String,
    pub(super) schema: Option<&'s Structural>,
}

/// ValidFieldPath: `json_path` must name fields (`.a`, `['a.b']`) that the schema declares,
/// or keys of maps; the error is upstream's text.
pub(super) fn valid_field_path<'s>(
    json_path: &str,
    schema: Option<&'s Structural>,
    allow_array_notation: bool,
) -> Result<Found<'s>, String> {
    const NO_FIELD: &str = "does not refer to a valid field";
    let mut found = Found {
        path: String::new(),
        root: String::new(),
        schema,
    };
    let append = |found: &mut Found<'s>, name: &str| -> Result<(), String> {
        let s = found.schema.ok_or(NO_FIELD)?;
        let first = found.path.is_empty();
        if s.properties.is_some() {
            found.path = path::child(&found.path, name);
            found.schema = Some(s.property(name).ok_or(NO_FIELD)?);
        } else if let Some(a) = &s.additional_properties {
            found.path = path::key(&found.path, name);
            found.schema = a.structural.as_deref();
        } else {
            return Err(NO_FIELD.into());
        }
        if first {
            found.root = found.path.clone();
        }
        Ok(())
    };
    let toks = tokens(json_path);
    let mut it = toks.into_iter();
    let end = || "unexpected end of JSON path".to_string();
    while let Some(tok) = it.next() {
        match tok {
            "[" => {
                if !allow_array_notation {
                    return Err("array notation is not allowed".into());
                }
                let tok = it.next().ok_or_else(end)?;
                if tok.len() < 2 || !tok.starts_with('\'') || !tok.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {tok}"));
                }
                let name = unescape(&tok[1..tok.len() - 1])
                    .map_err(|e| format!("invalid string literal: {e}"))?;
                append(&mut found, &name)?;
                let tok = it.next().ok_or_else(end)?;
                if tok != "]" {
                    return Err(format!("expected ] but got {tok}"));
                }
            }
            "." => {
                let tok = it.next().ok_or_else(end)?;
                append(&mut found, tok)?;
            }
            tok => return Err(format!("expected [ or . but got: {tok}")),
        }
    }
    Ok(found)
}

/// ValidateCustomResourceSelectableFields (`version` is "" for the top-level list).
pub(super) fn validate_selectable_fields(
    fields: &[SelectableField],
    schema: Option<&Structural>,
    fld: &str,
    allow_too_many: bool,
    errs: &mut Vec<FieldError>,
) {
    let mut unique = BTreeSet::new();
    for (i, f) in fields.iter().enumerate() {
        let at = path::child(&path::index(fld, i), "jsonPath");
        if f.json_path.is_empty() {
            errs.push(FieldError::required(at, ""));
            continue;
        }
        let found = match valid_field_path(&f.json_path, schema, false) {
            Ok(found) => found,
            Err(e) => {
                errs.push(FieldError::invalid(
                    at,
                    &f.json_path,
                    format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if found.root == "metadata" {
            errs.push(FieldError::invalid(
                &at,
                &f.json_path,
                "must not point to fields in metadata",
            ));
        }
        let allowed = found
            .schema
            .is_some_and(|s| matches!(s.generic.type_.as_str(), "string" | "boolean" | "integer"));
        if !allowed {
            errs.push(FieldError::invalid(
                &at,
                &f.json_path,
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if !unique.insert(found.path) {
            errs.push(FieldError {
                kind: FieldErrorKind::Duplicate,
                field: at,
                value: Some(crate::registry::error::quote(&f.json_path)),
                detail: String::new(),
            });
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS && !allow_too_many {
        errs.push(FieldError {
            kind: FieldErrorKind::TooMany,
            field: fld.to_string(),
            value: Some(unique.len().to_string()),
            detail: format!("must have at most {MAX_SELECTABLE_FIELDS} items"),
        });
    }
}
