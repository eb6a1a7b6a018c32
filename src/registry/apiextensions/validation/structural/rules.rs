//! ValidateStructural (validation.go + complete.go): the invariants a structural schema keeps,
//! value validations that need a structural twin, and what junctors may not say.

use super::*;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// ValidateStructural: the structural-schema rules, errors sorted by their text as upstream
/// does (`fld` is the path of the schema, empty for none).
pub(crate) fn validate_structural(fld: &str, s: &Structural) -> Vec<FieldError> {
    let mut errs = Vec::new();
    invariants(s, Level::Root, fld, &mut errs);
    if let Some(v) = &s.value_validation {
        completeness(v, s, fld, fld, &mut errs);
    }
    errs.sort_by_cached_key(ToString::to_string);
    errs
}

fn int_or_string_any_of() -> Vec<NestedValueValidation> {
    ["integer", "string"]
        .into_iter()
        .map(|t| NestedValueValidation {
            forbidden_generics: Generic {
                type_: t.into(),
                ..Generic::default()
            },
            ..NestedValueValidation::default()
        })
        .collect()
}

fn is_int_or_string(any_of: &Option<Vec<NestedValueValidation>>) -> bool {
    any_of
        .as_ref()
        .is_some_and(|a| *a == int_or_string_any_of())
}

/// validateStructuralInvariants.
fn invariants(s: &Structural, lvl: Level, fld: &str, errs: &mut Vec<FieldError>) {
    let ty = s.generic.type_.as_str();
    if ty == "array" && s.items.is_none() {
        errs.push(FieldError::required(
            path::child(fld, "items"),
            "must be specified",
        ));
    }
    if let Some(i) = &s.items {
        invariants(i, Level::Item, &path::child(fld, "items"), errs);
    }
    for (k, v) in s.properties.iter().flatten() {
        invariants(
            v,
            Level::Field,
            &path::key(&path::child(fld, "properties"), k),
            errs,
        );
    }
    if let Some(a) = &s.additional_properties {
        if lvl == Level::Root {
            errs.push(FieldError::forbidden(
                path::child(fld, "additionalProperties"),
                "must not be used at the root",
            ));
        }
        if let Some(a) = &a.structural {
            invariants(
                a,
                Level::Field,
                &path::child(fld, "additionalProperties"),
                errs,
            );
        }
    }
    let x = &s.extensions;
    if x.x_int_or_string && x.x_preserve_unknown_fields {
        errs.push(FieldError::invalid_raw(
            path::child(fld, "x-kubernetes-preserve-unknown-fields"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if x.x_int_or_string && x.x_embedded_resource {
        errs.push(FieldError::invalid_raw(
            path::child(fld, "x-kubernetes-embedded-resource"),
            true,
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if let Some(v) = &s.value_validation {
        let skip_any_of = is_int_or_string(&v.any_of);
        let skip_first_all_of_any_of = v
            .all_of
            .as_ref()
            .and_then(|a| a.first())
            .is_some_and(|first| is_int_or_string(&first.value_validation.any_of));
        value_validation(v, skip_any_of, skip_first_all_of_any_of, fld, errs);
    }

    let check_metadata = lvl == Level::Root || x.x_embedded_resource;
    if x.x_embedded_resource && ty != "object" {
        let detail = "must be object if x-kubernetes-embedded-resource is true";
        errs.push(if ty.is_empty() {
            FieldError::required(path::child(fld, "type"), detail)
        } else {
            FieldError::invalid(path::child(fld, "type"), ty, detail)
        });
    } else if ty.is_empty() && !x.x_int_or_string && !x.x_preserve_unknown_fields {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(FieldError::required(path::child(fld, "type"), detail));
    }
    if x.x_embedded_resource && s.additional_properties.is_some() {
        errs.push(FieldError::forbidden(
            path::child(fld, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(FieldError::invalid(
            path::child(fld, "type"),
            ty,
            "must be object at the root",
        ));
    }
    for meta in ["kind", "apiVersion"] {
        if let Some(p) = s.property(meta).filter(|_| check_metadata) {
            if p.generic.type_ != "string" {
                let at = path::child(&path::key(&path::child(fld, "properties"), meta), "type");
                errs.push(FieldError::invalid(at, &p.generic.type_, "must be string"));
            }
        }
    }
    if let Some(m) = s.property("metadata") {
        let at = path::key(&path::child(fld, "properties"), "metadata");
        metadata_invariants(m, check_metadata, lvl, &at, errs);
    }
    if x.x_embedded_resource
        && !x.x_preserve_unknown_fields
        && s.properties.as_ref().is_none_or(BTreeMap::is_empty)
    {
        errs.push(FieldError::required(
            path::child(fld, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// validateStructuralMetadataInvariants: at the root, metadata may only restrict name and
/// generateName.
fn metadata_invariants(
    s: &Structural,
    check_metadata: bool,
    lvl: Level,
    fld: &str,
    errs: &mut Vec<FieldError>,
) {
    if check_metadata && s.generic.type_ != "object" {
        errs.push(FieldError::invalid(
            path::child(fld, "type"),
            &s.generic.type_,
            "must be object",
        ));
    }
    if lvl == Level::Root {
        let mut m = s.clone();
        let props = m.properties.as_ref().map_or(0, BTreeMap::len);
        let name = m.property("name").is_some();
        let generate_name = m.property("generateName").is_some();
        if (name && generate_name && props == 2) || ((name || generate_name) && props == 1) {
            m.properties = None;
        }
        m.generic.type_.clear();
        m.generic.default = None;
        m.value_validation.get_or_insert_with(Box::default);
        let bare = Structural {
            value_validation: Some(Box::default()),
            ..Structural::default()
        };
        if m != bare {
            errs.push(FieldError::forbidden(
                fld,
                "must not specify anything other than name and generateName, but metadata is implicitly specified",
            ));
        }
    }
}

/// validateValueValidation.
fn value_validation(
    v: &ValueValidation,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    fld: &str,
    errs: &mut Vec<FieldError>,
) {
    if !skip_any_of {
        for (i, n) in v.any_of.iter().flatten().enumerate() {
            nested(n, false, &path::index(&path::child(fld, "anyOf"), i), errs);
        }
    }
    for (i, n) in v.all_of.iter().flatten().enumerate() {
        let skip = skip_first_all_of_any_of && i == 0;
        nested(n, skip, &path::index(&path::child(fld, "allOf"), i), errs);
    }
    for (i, n) in v.one_of.iter().flatten().enumerate() {
        nested(n, false, &path::index(&path::child(fld, "oneOf"), i), errs);
    }
    if let Some(n) = &v.not {
        nested(n, false, &path::child(fld, "not"), errs);
    }
    if !v.pattern.is_empty() {
        if let Err(e) = super::super::super::goregex::check(&v.pattern) {
            errs.push(FieldError::invalid(
                path::child(fld, "pattern"),
                &v.pattern,
                format!("must be a valid regular expression, but isn't: {e}"),
            ));
        }
    }
}

/// validateNestedValueValidation: what a schema under a junctor must leave out.
fn nested(v: &NestedValueValidation, skip_any_of: bool, fld: &str, errs: &mut Vec<FieldError>) {
    value_validation(&v.value_validation, skip_any_of, false, fld, errs);
    if let Some(i) = &v.items {
        nested(i, false, &path::child(fld, "items"), errs);
    }
    for (k, p) in v.properties.iter().flatten() {
        nested(
            p,
            false,
            &path::key(&path::child(fld, "properties"), k),
            errs,
        );
    }
    let forbid = |errs: &mut Vec<FieldError>, f: &str, d: &str| {
        errs.push(FieldError::forbidden(path::child(fld, f), d));
    };
    let g = &v.forbidden_generics;
    if !g.type_.is_empty() {
        forbid(errs, "type", "must be empty to be structural");
    }
    if v.additional_properties.is_some() {
        forbid(
            errs,
            "additionalProperties",
            "must be undefined to be structural",
        );
    }
    if g.default.is_some() {
        forbid(errs, "default", "must be undefined to be structural");
    }
    if !g.title.is_empty() {
        forbid(errs, "title", "must be empty to be structural");
    }
    if !g.description.is_empty() {
        forbid(errs, "description", "must be empty to be structural");
    }
    if g.nullable {
        forbid(errs, "nullable", "must be false to be structural");
    }
    let x = &v.forbidden_extensions;
    if x.x_preserve_unknown_fields {
        forbid(
            errs,
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        );
    }
    if x.x_embedded_resource {
        forbid(
            errs,
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        );
    }
    if x.x_int_or_string {
        forbid(
            errs,
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        );
    }
    if x.x_list_map_keys.as_ref().is_some_and(|k| !k.is_empty()) {
        forbid(
            errs,
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        );
    }
    if x.x_list_type.is_some() {
        forbid(
            errs,
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        );
    }
    if x.x_map_type.is_some() {
        forbid(
            errs,
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        );
    }
    if v.x_validations.as_ref().is_some_and(|x| !x.is_empty()) {
        forbid(
            errs,
            "x-kubernetes-validations",
            "must be empty to be structural",
        );
    }
    if v.properties
        .as_ref()
        .is_some_and(|p| p.contains_key("metadata"))
    {
        errs.push(FieldError::forbidden(
            path::key(&path::child(fld, "properties"), "metadata"),
            "must not be specified in a nested context",
        ));
    }
}

fn missing(s_path: &str, v_path: &str) -> FieldError {
    FieldError::required(s_path, format!("because it is defined in {v_path}"))
}

/// validateValueValidationCompleteness: every value validation needs a structural twin.
fn completeness(
    v: &ValueValidation,
    s: &Structural,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    if let Some(n) = &v.not {
        nested_completeness(n, Some(s), s_path, &path::child(v_path, "not"), errs);
    }
    for (name, list) in [
        ("allOf", &v.all_of),
        ("anyOf", &v.any_of),
        ("oneOf", &v.one_of),
    ] {
        for (i, n) in list.iter().flatten().enumerate() {
            let at = path::index(&path::child(v_path, name), i);
            nested_completeness(n, Some(s), s_path, &at, errs);
        }
    }
}

/// validateNestedValueValidationCompleteness.
fn nested_completeness(
    v: &NestedValueValidation,
    s: Option<&Structural>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(s) = s else {
        errs.push(missing(s_path, v_path));
        return;
    };
    completeness(&v.value_validation, s, s_path, v_path, errs);
    if let Some(i) = &v.items {
        let (sp, vp) = (path::child(s_path, "items"), path::child(v_path, "items"));
        nested_completeness(i, s.items.as_deref(), &sp, &vp, errs);
    }
    for (k, p) in v.properties.iter().flatten() {
        let sp = path::key(&path::child(s_path, "properties"), k);
        let vp = path::key(&path::child(v_path, "properties"), k);
        match s.property(k) {
            None => errs.push(missing(&sp, &vp)),
            Some(sf) => nested_completeness(p, Some(sf), &sp, &vp, errs),
        }
    }
}
