//! kube-openapi's SchemaValidator (k8s.io/kube-openapi pkg/validation/validate) over a
//! compiled node: per value the type, junction (allOf/anyOf/oneOf/not), string, format,
//! number, slice, enum and object checks in upstream's order, with its messages, paths and
//! MatchCount (which decides whose errors a failed anyOf/oneOf reports). With an old value it
//! ratchets as apiextensions-apiserver's RatchetingSchemaValidator does: properties, map keys
//! and list-map items correlate, junction branches never do.
//!
//! The walk keeps its path on the stack and builds text only for errors, so a valid object is
//! checked without allocating. May use: nothing internal.

use super::super::gofmt::{self, deep_equal, go_number, is_float_json_integer, GoNumber};
use super::compile::{Node, Types};
use super::formats::Format;
use super::path::{Path, Seg};
use super::ratchet;
use super::result::{Acc, Raw, RawError};
use serde_json::Value;

/// Validates `data` against `node` at `path` into `acc`; `old` is the correlated old value
/// when ratcheting.
pub(super) fn validate(
    node: &Node,
    data: &Value,
    path: &Path<'_>,
    old: Option<&Value>,
    acc: &mut Acc,
) {
    let (added_before, len_before) = (acc.added, acc.errors.len());
    if data.is_null() {
        // Only the type and enum checks see a nil, and there is no final Inc.
        if node.has_type && !node.types.contains(Types::NULL) && !node.nullable {
            push_type(acc, path, &node.type_text, "null");
        } else {
            acc.count += 1;
        }
        check_enum(node, data, path, acc);
    } else {
        validate_value(node, data, path, old, acc);
    }
    // Ratcheting: an unchanged value's errors become warnings (dropped), its count stays.
    if let Some(old) = old {
        if acc.added > added_before && ratchet::unchanged(node, data, old) {
            acc.errors.truncate(len_before);
            acc.added = added_before;
        }
    }
}

fn validate_value(node: &Node, data: &Value, path: &Path<'_>, old: Option<&Value>, acc: &mut Acc) {
    let mut applied = 0;
    // typeValidator
    if node.has_type || node.format.is_some() {
        applied += 1;
        check_type(node, data, path, acc);
    }
    // schemaPropsValidator: always applies.
    applied += 1;
    check_junctions(node, data, path, acc);
    if let Value::String(s) = data {
        // stringValidator
        applied += 1;
        check_string(node, s, path, acc);
        // formatValidator
        if let Some((format, name)) = &node.format {
            applied += 1;
            check_format(*format, name, s, path, acc);
        }
    }
    if let Value::Number(n) = data {
        // numberValidator
        applied += 1;
        check_number(node, go_number(n), path, acc);
    }
    if let Value::Array(items) = data {
        // schemaSliceValidator
        applied += 1;
        check_slice(node, items, path, old, acc);
    }
    // basicCommonValidator: always applies.
    applied += 1;
    check_enum(node, data, path, acc);
    if let Value::Object(map) = data {
        // objectValidator
        applied += 1;
        check_object(node, map, path, old, acc);
    }
    acc.count += applied + 1;
}

fn go_type_of(data: &Value) -> (Types, &'static str, &'static str) {
    match data {
        Value::Null => (Types::NULL, "null", ""),
        Value::Bool(_) => (Types::BOOLEAN, "boolean", ""),
        Value::String(_) => (Types::STRING, "string", ""),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(_) => (Types::INTEGER, "integer", "int64"),
            GoNumber::Float(_) => (Types::NUMBER, "number", "float64"),
        },
        Value::Array(_) => (Types::ARRAY, "array", ""),
        Value::Object(_) => (Types::OBJECT, "object", ""),
    }
}

/// typeValidator.Validate on a non-nil value.
fn check_type(node: &Node, data: &Value, path: &Path<'_>, acc: &mut Acc) {
    let (sch, sch_name, data_format) = go_type_of(data);
    let is_float_int = match data {
        Value::Number(n) => match go_number(n) {
            GoNumber::Float(f) => is_float_json_integer(f) && node.types.contains(Types::INTEGER),
            GoNumber::Int(_) => false,
        },
        _ => false,
    };
    let is_int_float = sch == Types::INTEGER && node.types.contains(Types::NUMBER);
    let stringish = matches!(data, Value::String(_) | Value::Array(_));
    let format = node.format.as_ref().map_or("", |(_, name)| &**name);
    let type_matches = node.types.contains(sch) || is_float_int || is_int_float;
    if !(stringish || format.is_empty() || type_matches) {
        push_type(acc, path, format, data_format);
        return;
    }
    let numeric = node.types.contains(Types::NUMBER) || node.types.contains(Types::INTEGER);
    if !numeric && !format.is_empty() && stringish {
        acc.count += 1;
        return;
    }
    if !type_matches {
        push_type(acc, path, &node.type_text, sch_name);
        return;
    }
    acc.count += 1;
}

/// errors.InvalidType with a string value.
fn push_type(acc: &mut Acc, path: &Path<'_>, type_name: &str, value: &str) {
    let name = path.openapi();
    acc.push(RawError {
        message: format!(
            "{name} in body must be of type {type_name}: {}",
            gofmt::quote(value)
        ),
        name,
        raw: Raw::TypeInvalid {
            value: gofmt::quote(value),
        },
    });
}

fn push_invalid(acc: &mut Acc, name: String, message: String, value: String) {
    acc.push(RawError {
        name,
        message,
        raw: Raw::Invalid { value },
    });
}

fn push_composite(acc: &mut Acc, message: String) {
    acc.push(RawError {
        name: String::new(),
        message,
        raw: Raw::Composite,
    });
}

/// schemaPropsValidator: anyOf, oneOf, allOf, not, with MatchCount choosing what to report.
fn check_junctions(node: &Node, data: &Value, path: &Path<'_>, acc: &mut Acc) {
    let Some(j) = node.junctions.as_deref() else {
        acc.count += 1;
        return;
    };
    let mut main = Acc::default();
    let branch = |b: &Node| {
        let mut r = Acc::default();
        validate(b, data, path, None, &mut r);
        r
    };
    if !j.any_of.is_empty() {
        let mut best: Option<Acc> = None;
        let mut success: Option<Acc> = None;
        for b in j.any_of.iter() {
            let r = branch(b);
            if r.is_valid() {
                best = None;
                success = Some(r);
                break;
            }
            if best.as_ref().is_none_or(|x| r.count > x.count) {
                best = Some(r);
            }
        }
        if success.is_none() {
            let q = gofmt::quote(&path.openapi());
            push_composite(
                &mut main,
                format!("{q} must validate at least one schema (anyOf)"),
            );
        }
        if let Some(r) = best.or(success) {
            main.merge(r);
        }
    }
    if !j.one_of.is_empty() {
        let mut best: Option<Acc> = None;
        let mut first_success: Option<Acc> = None;
        let mut validated = 0;
        for b in j.one_of.iter() {
            let r = branch(b);
            if r.is_valid() {
                validated += 1;
                best = None;
                if first_success.is_none() {
                    first_success = Some(r);
                }
                continue;
            }
            if validated == 0 && best.as_ref().is_none_or(|x| r.count > x.count) {
                best = Some(r);
            }
        }
        if validated != 1 {
            let more = if validated == 0 {
                "Found none valid".to_string()
            } else {
                format!("Found {validated} valid alternatives")
            };
            let q = gofmt::quote(&path.openapi());
            push_composite(
                &mut main,
                format!("{q} must validate one and only one schema (oneOf). {more}"),
            );
            if let Some(r) = best {
                main.merge(r);
            }
        } else if let Some(r) = first_success {
            main.merge(r);
        }
    }
    if !j.all_of.is_empty() {
        let mut validated = 0;
        for b in j.all_of.iter() {
            let r = branch(b);
            if r.is_valid() {
                validated += 1;
            }
            main.merge(r);
        }
        if validated != j.all_of.len() {
            let more = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            let q = gofmt::quote(&path.openapi());
            push_composite(
                &mut main,
                format!("{q} must validate all the schemas (allOf){more}"),
            );
        }
    }
    if let Some(not) = &j.not {
        if branch(not).is_valid() {
            let q = gofmt::quote(&path.openapi());
            push_composite(&mut main, format!("{q} must not validate the schema (not)"));
        }
    }
    main.count += 1;
    acc.merge(main);
}

/// stringValidator: the first failing of maxLength, minLength, pattern.
fn check_string(node: &Node, s: &str, path: &Path<'_>, acc: &mut Acc) {
    let Some(rules) = node.string.as_deref() else {
        return;
    };
    if rules.max_length.is_some() || rules.min_length.is_some() {
        let len = s.chars().count() as i64;
        if let Some(max) = rules.max_length.filter(|m| len > *m) {
            let name = path.openapi();
            acc.push(RawError {
                message: format!("{name} in body should be at most {max} chars long"),
                name,
                raw: Raw::TooLong { max },
            });
            return;
        }
        if let Some(min) = rules.min_length.filter(|m| len < *m) {
            let name = path.openapi();
            let message = format!("{name} in body should be at least {min} chars long");
            push_invalid(acc, name, message, gofmt::quote(s));
            return;
        }
    }
    if let Some(p) = &rules.pattern {
        let failed = match &p.regex {
            Ok(re) if re.is_match(s) => None,
            Ok(_) => Some(p.source.to_string()),
            Err(e) => Some(format!("{}, but pattern is invalid: {e}", p.source)),
        };
        if let Some(pattern) = failed {
            let name = path.openapi();
            let message = format!("{name} in body should match '{pattern}'");
            push_invalid(acc, name, message, gofmt::quote(s));
        }
    }
}

/// formatValidator: FormatOf.
fn check_format(format: Format, name: &str, s: &str, path: &Path<'_>, acc: &mut Acc) {
    if !format.validates(s) {
        push_type(acc, path, name, s);
    }
}

/// numberValidator: multipleOf, minimum, maximum, each in int64 when the value is one.
fn check_number(node: &Node, n: GoNumber, path: &Path<'_>, acc: &mut Acc) {
    acc.count += 1;
    let Some(rules) = node.number.as_deref() else {
        return;
    };
    if let Some(factor) = rules.multiple_of {
        // MultipleOfNativeType: an int64 value takes the factor as int64.
        let (positive, factor_text, multiple) = match n {
            GoNumber::Int(v) => {
                let f = factor as i64;
                (f > 0, f.to_string(), f > 0 && v / f * f == v)
            }
            GoNumber::Float(v) => {
                let mult = if factor < 1.0 {
                    1.0 / factor * v
                } else {
                    v / factor
                };
                (
                    factor > 0.0,
                    gofmt::format_g(factor),
                    is_float_json_integer(mult),
                )
            }
        };
        if !positive {
            let name = path.openapi();
            let message =
                format!("factor MultipleOf declared for {name} must be positive: {factor_text}");
            push_invalid(acc, name, message, factor_text);
        } else if !multiple {
            let name = path.openapi();
            let message = format!("{name} in body should be a multiple of {factor_text}");
            push_invalid(acc, name, message, n.to_go_string());
        }
    }
    let bound = |b: f64| match n {
        GoNumber::Int(_) => (b as i64).to_string(),
        GoNumber::Float(_) => gofmt::format_g(b),
    };
    let cmp = |b: f64| match n {
        GoNumber::Int(v) => v.cmp(&(b as i64)),
        GoNumber::Float(v) => v.partial_cmp(&b).unwrap_or(std::cmp::Ordering::Equal),
    };
    if let Some(min) = rules.minimum {
        let c = cmp(min);
        if c.is_lt() || (rules.exclusive_minimum && c.is_eq()) {
            let name = path.openapi();
            let rel = if rules.exclusive_minimum {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let message = format!("{name} in body should be {rel} {}", bound(min));
            push_invalid(acc, name, message, n.to_go_string());
        }
    }
    if let Some(max) = rules.maximum {
        let c = cmp(max);
        if c.is_gt() || (rules.exclusive_maximum && c.is_eq()) {
            let name = path.openapi();
            let rel = if rules.exclusive_maximum {
                "less than"
            } else {
                "less than or equal to"
            };
            let message = format!("{name} in body should be {rel} {}", bound(max));
            push_invalid(acc, name, message, n.to_go_string());
        }
    }
}

/// schemaSliceValidator: items, minItems, maxItems, uniqueItems.
fn check_slice(node: &Node, items: &[Value], path: &Path<'_>, old: Option<&Value>, acc: &mut Acc) {
    if let Some(item_schema) = node.items.as_deref() {
        for (i, v) in items.iter().enumerate() {
            let old_v = old.and_then(|o| ratchet::old_item(node, o, v));
            validate(item_schema, v, &path.child(Seg::Index(i)), old_v, acc);
        }
    }
    if let Some(rules) = node.sizes.as_deref() {
        let size = items.len() as i64;
        if let Some(min) = rules.min_items.filter(|m| size < *m) {
            let name = path.openapi();
            let message = format!("{name} in body should have at least {min} items");
            push_invalid(acc, name, message, size.to_string());
        }
        if let Some(max) = rules.max_items.filter(|m| size > *m) {
            let name = path.openapi();
            acc.push(RawError {
                message: format!("{name} in body should have at most {max} items"),
                name,
                raw: Raw::TooMany { actual: size, max },
            });
        }
        if rules.unique_items
            && items
                .iter()
                .enumerate()
                .any(|(i, a)| items[..i].iter().any(|b| deep_equal(a, b)))
        {
            let name = path.openapi();
            let message = format!("{name} in body shouldn't contain duplicates");
            push_invalid(acc, name, message, gofmt::quote(""));
        }
    }
    acc.count += 1;
}

/// basicCommonValidator: enum, compared as Go converts the value to each enum value's type.
fn check_enum(node: &Node, data: &Value, path: &Path<'_>, acc: &mut Acc) {
    if node.enum_values.is_empty() || node.enum_values.iter().any(|e| enum_matches(data, e)) {
        return;
    }
    let name = path.openapi();
    let listed: Vec<String> = node
        .enum_values
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => gofmt::json(other),
        })
        .collect();
    let detail = if listed.is_empty() {
        String::new()
    } else {
        let quoted: Vec<String> = listed.iter().map(|s| gofmt::quote(s)).collect();
        format!("supported values: {}", quoted.join(", "))
    };
    acc.push(RawError {
        message: format!("{name} in body should be one of [{}]", listed.join(" ")),
        name,
        raw: Raw::Enum {
            value: gofmt::bad_value(data),
            detail,
        },
    });
}

/// Whether `data`, converted to the type of `e` as reflect allows, deep-equals `e`.
fn enum_matches(data: &Value, e: &Value) -> bool {
    match (data, e) {
        (_, Value::Null) | (Value::Null, _) => false,
        (Value::Number(d), Value::Number(e)) => match (go_number(d), go_number(e)) {
            (GoNumber::Int(d), GoNumber::Int(e)) => d == e,
            (GoNumber::Float(d), GoNumber::Int(e)) => d as i64 == e,
            (d, GoNumber::Float(e)) => d.as_f64() == e,
        },
        // int64 converts to string as a rune.
        (Value::Number(d), Value::String(e)) => match go_number(d) {
            GoNumber::Int(i) => {
                let c = u32::try_from(i)
                    .ok()
                    .and_then(char::from_u32)
                    .unwrap_or('\u{fffd}');
                let mut buf = [0u8; 4];
                c.encode_utf8(&mut buf) == e
            }
            GoNumber::Float(_) => false,
        },
        _ => deep_equal(data, e),
    }
}

/// objectValidator: min/maxProperties, additionalProperties, properties, required.
fn check_object(
    node: &Node,
    map: &serde_json::Map<String, Value>,
    path: &Path<'_>,
    old: Option<&Value>,
    acc: &mut Acc,
) {
    let sizes = node.sizes.as_deref();
    let n = map.len() as i64;
    if let Some(min) = sizes.and_then(|s| s.min_properties).filter(|m| n < *m) {
        let name = path.openapi();
        let message = format!("{name} in body should have at least {min} properties");
        push_invalid(acc, name, message, n.to_string());
    }
    if let Some(max) = sizes.and_then(|s| s.max_properties).filter(|m| n > *m) {
        let name = path.openapi();
        acc.push(RawError {
            message: format!("{name} in body should have at most {max} properties"),
            name,
            raw: Raw::TooMany { actual: n, max },
        });
    }
    let additional = node.additional.as_deref();
    let forbid_unknown = additional.is_some_and(|a| !a.allows);
    // The root's kind and apiVersion are never ratcheted.
    let correlate = |k: &str| {
        let type_meta = path.is_root() && (k == "kind" || k == "apiVersion");
        old.filter(|_| !type_meta)
            .and_then(|o| ratchet::old_field(node, o, k))
    };
    // Upstream first goes over the keys that are not properties (forbidden, or validated
    // against additionalProperties), then over the properties.
    if let Some(additional) = additional {
        for (k, v) in map.iter().filter(|(k, _)| node.property(k).is_none()) {
            if forbid_unknown {
                let name = path.openapi();
                let message = format!("{name}.{k} in body is a forbidden property");
                push_invalid(acc, name, message, gofmt::quote(k));
            } else if let Some(schema) = &additional.schema {
                validate(schema, v, &path.child(Seg::Key(k)), correlate(k), acc);
            }
        }
    }
    if !node.properties.is_empty() {
        for (k, v) in map {
            if let Some(prop) = node.property(k) {
                validate(prop, v, &path.child(Seg::Prop(k)), correlate(k), acc);
            }
        }
    }
    for k in sizes.map_or(&[][..], |s| &s.required) {
        if !map.contains_key(&**k) {
            let name = path.openapi_key(k);
            acc.push(RawError {
                message: format!("{name} in body is required"),
                name,
                raw: Raw::Required,
            });
        }
    }
}
