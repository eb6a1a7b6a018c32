//! A version's OpenAPI v3 schema: validateCustomResourceDefinitionValidation and the walk of
//! ValidateCustomResourceDefinitionOpenAPISchema with its specStandardValidatorV3, i.e. the
//! unsupported keywords, where defaults may appear, and the consistency of the
//! x-kubernetes-* extensions. Properties are visited in name order (Go visits a map in random
//! order, so upstream's order between sibling properties is not fixed either).
//! Then, on a structural schema, the cost budget of its x-kubernetes-validations rules
//! (`cost`); each node's rules are compiled against its declared type (`rules`). Left out:
//! checking `default` values against the schema (structuraldefaulting.ValidateDefaults).

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceValidation, JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
    JSONSchemaPropsOrStringArray,
};

use super::fieldpath::valid_field_path;
use super::structural::{validate_structural, Structural};
use super::{gojson, path, Options};
use crate::registry::error::FieldError;

mod cost;
mod rules;

use rules::validation_rules;

const OPENAPI_V3_TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
const VALIDATION_REASONS: [&str; 4] = [
    "FieldValueDuplicate",
    "FieldValueForbidden",
    "FieldValueInvalid",
    "FieldValueRequired",
];
const ALLOWED_AT_ROOT: [&str; 22] = [
    "Description",
    "Type",
    "Format",
    "Title",
    "Maximum",
    "ExclusiveMaximum",
    "Minimum",
    "ExclusiveMinimum",
    "MaxLength",
    "MinLength",
    "Pattern",
    "MaxItems",
    "MinItems",
    "UniqueItems",
    "MultipleOf",
    "Required",
    "Items",
    "Properties",
    "ExternalDocs",
    "Example",
    "XPreserveUnknownFields",
    "XValidations",
];

/// specStandardValidatorV3: what the walk carries down the schema.
#[derive(Clone)]
struct Ssv {
    allow_defaults: bool,
    disallow_defaults_reason: String,
    inside_resource_meta: bool,
    require_valid_property_type: bool,
    /// The highest ancestor whose children cannot be matched with their old values (the items
    /// of a list that is not a map list, the properties of an atomic map): rules below it may
    /// not name `oldSelf`.
    uncorrelatable: Option<String>,
}

impl Ssv {
    /// withForbidOldSelfValidations: children of `fld` cannot be correlated.
    fn with_uncorrelatable(&self, fld: &str) -> Ssv {
        Ssv {
            uncorrelatable: self
                .uncorrelatable
                .clone()
                .or_else(|| Some(fld.to_string())),
            ..self.clone()
        }
    }

    fn with_forbidden_defaults(&self, reason: &str) -> Ssv {
        Ssv {
            allow_defaults: false,
            disallow_defaults_reason: reason.to_string(),
            ..self.clone()
        }
    }

    /// validate: the keywords CRDs do not support.
    fn validate(&self, s: &JSONSchemaProps, fld: &str, errs: &mut Vec<FieldError>) {
        let ty = s.type_.as_deref().unwrap_or("");
        let at = |f: &str| path::child(fld, f);
        if self.require_valid_property_type && !ty.is_empty() && !OPENAPI_V3_TYPES.contains(&ty) {
            errs.push(FieldError::not_supported(at("type"), ty, &OPENAPI_V3_TYPES));
        }
        if s.default.is_some() && !self.allow_defaults {
            let mut detail = "must not be set".to_string();
            if !self.disallow_defaults_reason.is_empty() {
                detail.push(' ');
                detail.push_str(&self.disallow_defaults_reason);
            }
            errs.push(FieldError::forbidden(at("default"), detail));
        }
        if s.id.as_deref().is_some_and(|i| !i.is_empty()) {
            errs.push(FieldError::forbidden(at("id"), "id is not supported"));
        }
        if s.additional_items.is_some() {
            errs.push(FieldError::forbidden(
                at("additionalItems"),
                "additionalItems is not supported",
            ));
        }
        if s.pattern_properties.as_ref().is_some_and(|m| !m.is_empty()) {
            errs.push(FieldError::forbidden(
                at("patternProperties"),
                "patternProperties is not supported",
            ));
        }
        if s.definitions.as_ref().is_some_and(|m| !m.is_empty()) {
            errs.push(FieldError::forbidden(
                at("definitions"),
                "definitions is not supported",
            ));
        }
        if s.dependencies.is_some() {
            errs.push(FieldError::forbidden(
                at("dependencies"),
                "dependencies is not supported",
            ));
        }
        if s.ref_path.is_some() {
            errs.push(FieldError::forbidden(at("$ref"), "$ref is not supported"));
        }
        if ty == "null" {
            errs.push(FieldError::forbidden(
                at("type"),
                "type cannot be set to null, use nullable as an alternative",
            ));
        }
        if matches!(&s.items, Some(JSONSchemaPropsOrArray::Schemas(l)) if !l.is_empty()) {
            errs.push(FieldError::forbidden(
                at("items"),
                "items must be a schema object and not an array",
            ));
        }
        if self.inside_resource_meta && s.x_kubernetes_embedded_resource == Some(true) {
            errs.push(FieldError::forbidden(
                at("x-kubernetes-embedded-resource"),
                "must not be used inside of resource meta",
            ));
        }
    }
}

/// The fields of the internal JSONSchemaProps in Go order, and whether each is non-zero
/// (reflect.DeepEqual with the zero value: an empty but present list counts as set).
fn root_fields(s: &JSONSchemaProps) -> [(&'static str, bool); 44] {
    let text = |v: &Option<String>| v.as_deref().is_some_and(|t| !t.is_empty());
    let yes = |v: Option<bool>| v == Some(true);
    [
        ("ID", text(&s.id)),
        ("Schema", text(&s.schema)),
        ("Ref", s.ref_path.is_some()),
        ("Description", text(&s.description)),
        ("Type", text(&s.type_)),
        ("Nullable", yes(s.nullable)),
        ("Format", text(&s.format)),
        ("Title", text(&s.title)),
        ("Default", s.default.is_some()),
        ("Maximum", s.maximum.is_some()),
        ("ExclusiveMaximum", yes(s.exclusive_maximum)),
        ("Minimum", s.minimum.is_some()),
        ("ExclusiveMinimum", yes(s.exclusive_minimum)),
        ("MaxLength", s.max_length.is_some()),
        ("MinLength", s.min_length.is_some()),
        ("Pattern", text(&s.pattern)),
        ("MaxItems", s.max_items.is_some()),
        ("MinItems", s.min_items.is_some()),
        ("UniqueItems", yes(s.unique_items)),
        ("MultipleOf", s.multiple_of.is_some()),
        ("Enum", s.enum_.is_some()),
        ("MaxProperties", s.max_properties.is_some()),
        ("MinProperties", s.min_properties.is_some()),
        ("Required", s.required.is_some()),
        ("Items", s.items.is_some()),
        ("AllOf", s.all_of.is_some()),
        ("OneOf", s.one_of.is_some()),
        ("AnyOf", s.any_of.is_some()),
        ("Not", s.not.is_some()),
        ("Properties", s.properties.is_some()),
        ("AdditionalProperties", s.additional_properties.is_some()),
        ("PatternProperties", s.pattern_properties.is_some()),
        ("Dependencies", s.dependencies.is_some()),
        ("AdditionalItems", s.additional_items.is_some()),
        ("Definitions", s.definitions.is_some()),
        ("ExternalDocs", s.external_docs.is_some()),
        ("Example", s.example.is_some()),
        (
            "XPreserveUnknownFields",
            s.x_kubernetes_preserve_unknown_fields.is_some(),
        ),
        ("XEmbeddedResource", yes(s.x_kubernetes_embedded_resource)),
        ("XIntOrString", yes(s.x_kubernetes_int_or_string)),
        ("XListMapKeys", s.x_kubernetes_list_map_keys.is_some()),
        ("XListType", s.x_kubernetes_list_type.is_some()),
        ("XMapType", s.x_kubernetes_map_type.is_some()),
        ("XValidations", s.x_kubernetes_validations.is_some()),
    ]
}

/// validateCustomResourceDefinitionValidation: `fld` is `spec.validation` or
/// `spec.versions[i].schema`, the schema of `version`.
pub(super) fn validate_validation(
    v: Option<&CustomResourceValidation>,
    version: &str,
    status_enabled: bool,
    opts: &Options,
    fld: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(schema) = v.and_then(|v| v.open_api_v3_schema.as_ref()) else {
        return errs;
    };
    let root = path::child(fld, "openAPIV3Schema");
    if status_enabled {
        for (name, set) in root_fields(schema) {
            if !set {
                continue;
            }
            if name == "Type" {
                let ty = schema.type_.as_deref().unwrap_or("");
                if ty != "object" {
                    errs.push(FieldError::invalid(
                        path::child(fld, "openAPIV3Schema.type"),
                        ty,
                        "only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled",
                    ));
                    break;
                }
                continue;
            }
            if !ALLOWED_AT_ROOT.contains(&name) {
                errs.push(FieldError::invalid_raw(
                    &root,
                    gojson::schema(schema),
                    format!(
                        "only [{}] fields are allowed at the root of the schema if the status subresource is enabled",
                        ALLOWED_AT_ROOT.join(" ")
                    ),
                ));
                break;
            }
        }
    }
    if schema.nullable == Some(true) {
        errs.push(FieldError::forbidden(
            path::child(fld, "openAPIV3Schema.nullable"),
            "nullable cannot be true at the root",
        ));
    }
    let ssv = Ssv {
        allow_defaults: opts.allow_defaults,
        disallow_defaults_reason: String::new(),
        inside_resource_meta: false,
        require_valid_property_type: opts.require_valid_property_type,
        uncorrelatable: None,
    };
    let mut init_errs = Vec::new();
    // Rules are costed only on a valid structural schema (upstream's CEL context).
    let mut costed = false;
    if opts.require_structural_schema {
        match Structural::new(schema) {
            // These overlap with the walk's errors, so they only show when it finds none.
            Err(e) => init_errs.push(FieldError::invalid(&root, "", e)),
            Ok(ss) => {
                let structural = validate_structural(&root, &ss);
                costed = structural.is_empty();
                errs.extend(structural);
            } // Upstream goes on with structuraldefaulting.ValidateDefaults here; that is left
              // to the object-schema validator.
        }
    }
    walk(schema, &root, &ssv, true, opts, &mut errs);
    if errs.is_empty() {
        errs.extend(init_errs);
    }
    if costed {
        if let Ok(json) = serde_json::to_value(schema) {
            let unchanged = opts.unchanged_schemas.iter().any(|v| v == version);
            errs.extend(cost::cost_errors(&json, &root, unchanged));
        }
    }
    errs
}

/// ValidateCustomResourceDefinitionOpenAPISchema (without the CEL part).
fn walk(
    s: &JSONSchemaProps,
    fld: &str,
    ssv: &Ssv,
    is_root: bool,
    opts: &Options,
    errs: &mut Vec<FieldError>,
) {
    ssv.validate(s, fld, errs);
    let at = |f: &str| path::child(fld, f);
    if s.unique_items == Some(true) {
        errs.push(FieldError::forbidden(
            at("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    let props = s.properties.as_ref().filter(|p| !p.is_empty());
    if let Some(ap) = &s.additional_properties {
        if props.is_some() && !matches!(ap, JSONSchemaPropsOrBool::Bool(true)) {
            errs.push(FieldError::forbidden(
                at("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        let sub = if ssv.inside_resource_meta {
            ssv.with_forbidden_defaults("inside additionalProperties applying to object metadata")
        } else {
            ssv.clone()
        };
        if let JSONSchemaPropsOrBool::Schema(a) = ap {
            walk(a, &at("additionalProperties"), &sub, false, opts, errs);
        }
    }
    let embedded = s.x_kubernetes_embedded_resource == Some(true);
    // MapIsCorrelatable: only an atomic map's properties are not.
    let atomic_map = s.x_kubernetes_map_type.as_deref() == Some("atomic");
    for (name, p) in props.into_iter().flatten() {
        let mut sub = if atomic_map {
            ssv.with_uncorrelatable(fld)
        } else {
            ssv.clone()
        };
        if (is_root || embedded) && matches!(name.as_str(), "metadata" | "kind" | "apiVersion") {
            sub.inside_resource_meta = true;
            if is_root {
                sub = sub.with_forbidden_defaults(&format!("in top-level {name}"));
            }
        }
        walk(
            p,
            &path::key(&at("properties"), name),
            &sub,
            false,
            opts,
            errs,
        );
    }
    if let Some(n) = &s.not {
        walk(n, &at("not"), ssv, false, opts, errs);
    }
    for (name, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        for (i, x) in list.iter().flatten().enumerate() {
            walk(x, &path::index(&at(name), i), ssv, false, opts, errs);
        }
    }
    for (name, d) in s.definitions.iter().flatten() {
        walk(
            d,
            &path::key(&at("definitions"), name),
            ssv,
            false,
            opts,
            errs,
        );
    }
    // Old items are matched with new ones only in map lists (by their keys).
    let items_ssv = if s.x_kubernetes_list_type.as_deref() == Some("map") {
        ssv.clone()
    } else {
        ssv.with_uncorrelatable(fld)
    };
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(i)) => {
            walk(i, &at("items"), &items_ssv, false, opts, errs)
        }
        Some(JSONSchemaPropsOrArray::Schemas(l)) => {
            for (i, x) in l.iter().enumerate() {
                walk(
                    x,
                    &path::index(&at("items"), i),
                    &items_ssv,
                    false,
                    opts,
                    errs,
                );
            }
        }
        None => {}
    }
    for (name, d) in s.dependencies.iter().flatten() {
        if let JSONSchemaPropsOrStringArray::Schema(d) = d {
            walk(
                d,
                &path::key(&at("dependencies"), name),
                ssv,
                false,
                opts,
                errs,
            );
        }
    }
    extensions(s, fld, opts, errs);
    validation_rules(s, fld, is_root, ssv.uncorrelatable.as_deref(), errs);
}

/// The schema of `items` when it is a single schema.
fn item(s: &JSONSchemaProps) -> Option<&JSONSchemaProps> {
    match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(i)) => Some(i),
        _ => None,
    }
}

/// The x-kubernetes-* consistency rules of one schema node.
fn extensions(s: &JSONSchemaProps, fld: &str, opts: &Options, errs: &mut Vec<FieldError>) {
    let at = |f: &str| path::child(fld, f);
    let ty = s.type_.as_deref().unwrap_or("");
    if s.x_kubernetes_preserve_unknown_fields == Some(false) {
        errs.push(FieldError::invalid_raw(
            at("x-kubernetes-preserve-unknown-fields"),
            false,
            "must be true or undefined",
        ));
    }
    let map_type = s.x_kubernetes_map_type.as_deref();
    if map_type.is_some() && ty != "object" {
        let detail = "must be object if x-kubernetes-map-type is specified";
        errs.push(if ty.is_empty() {
            FieldError::required(at("type"), detail)
        } else {
            FieldError::invalid(at("type"), ty, detail)
        });
    }
    if let Some(m) = map_type.filter(|m| *m != "atomic" && *m != "granular") {
        errs.push(FieldError::not_supported(
            at("x-kubernetes-map-type"),
            m,
            &["atomic", "granular"],
        ));
    }
    let list_type = s.x_kubernetes_list_type.as_deref();
    if list_type.is_some() && ty != "array" {
        let detail = "must be array if x-kubernetes-list-type is specified";
        errs.push(if ty.is_empty() {
            FieldError::required(at("type"), detail)
        } else {
            FieldError::invalid(at("type"), ty, detail)
        });
    } else if let (true, Some("set"), Some(is)) = (opts.require_atomic_set_type, list_type, item(s))
    {
        let items_at = at("items");
        let detail = "must be atomic as item of a list with x-kubernetes-list-type=set";
        let list_type = gojson::opt_string(is.x_kubernetes_list_type.as_deref());
        match is.type_.as_deref() {
            Some("array")
                if is
                    .x_kubernetes_list_type
                    .as_deref()
                    .is_some_and(|t| t != "atomic") =>
            {
                errs.push(FieldError::invalid_raw(
                    path::child(&items_at, "x-kubernetes-list-type"),
                    list_type,
                    detail,
                ));
            }
            // Upstream prints the item's list type here too, not its map type.
            Some("object") if is.x_kubernetes_map_type.as_deref() != Some("atomic") => {
                errs.push(FieldError::invalid_raw(
                    path::child(&items_at, "x-kubernetes-map-type"),
                    list_type,
                    detail,
                ));
            }
            _ => {}
        }
    }
    if let Some(l) = list_type.filter(|l| !matches!(*l, "atomic" | "set" | "map")) {
        errs.push(FieldError::not_supported(
            at("x-kubernetes-list-type"),
            l,
            &["atomic", "set", "map"],
        ));
    }
    let keys = s.x_kubernetes_list_map_keys.as_deref().unwrap_or(&[]);
    if !keys.is_empty() {
        let detail = "must be map if x-kubernetes-list-map-keys is non-empty";
        match list_type {
            None => errs.push(FieldError::required(at("x-kubernetes-list-type"), detail)),
            Some(l) if l != "map" => {
                errs.push(FieldError::invalid(at("x-kubernetes-list-type"), l, detail));
            }
            _ => {}
        }
    }
    if list_type == Some("map") {
        list_map(s, keys, fld, errs);
    }
    if opts.require_map_list_keys_map_set_validation {
        map_list_keys_map_set(s, fld, errs);
    }
}

/// The rules of `x-kubernetes-list-type: map`.
fn list_map(s: &JSONSchemaProps, keys: &[String], fld: &str, errs: &mut Vec<FieldError>) {
    let at = |f: &str| path::child(fld, f);
    let keys_json = gojson::strings(s.x_kubernetes_list_map_keys.as_deref());
    if keys.is_empty() {
        errs.push(FieldError::required(
            at("x-kubernetes-list-map-keys"),
            "must not be empty if x-kubernetes-list-type is map",
        ));
    }
    let Some(items) = &s.items else {
        errs.push(FieldError::required(
            at("items"),
            "must have a schema if x-kubernetes-list-type is map",
        ));
        return;
    };
    let JSONSchemaPropsOrArray::Schema(is) = items else {
        errs.push(FieldError::invalid_raw(
            at("items"),
            gojson::items(items),
            "must only have a single schema if x-kubernetes-list-type is map",
        ));
        return;
    };
    let item_type = is.type_.as_deref().unwrap_or("");
    if item_type != "object" {
        errs.push(FieldError::invalid(
            path::child(&at("items"), "type"),
            item_type,
            "must be object if parent array's x-kubernetes-list-type is map",
        ));
        return;
    }
    let mut seen = std::collections::BTreeSet::new();
    for k in keys {
        match is.properties.as_ref().and_then(|p| p.get(k)) {
            Some(p) => {
                if matches!(p.type_.as_deref(), Some("array" | "object")) {
                    // Upstream prints the item's type ("object"), not the key's.
                    errs.push(FieldError::invalid(
                        path::child(
                            &path::key(&path::child(&at("items"), "properties"), k),
                            "type",
                        ),
                        item_type,
                        "must be a scalar type if parent array's x-kubernetes-list-type is map",
                    ));
                }
            }
            None => errs.push(FieldError::invalid_raw(
                at("x-kubernetes-list-map-keys"),
                &keys_json,
                "entries must all be names of item properties",
            )),
        }
        if !seen.insert(k) {
            errs.push(FieldError::invalid_raw(
                at("x-kubernetes-list-map-keys"),
                &keys_json,
                "must not contain duplicate entries",
            ));
        }
    }
}

/// validateMapListKeysMapSet: items of set and map lists are not nullable, and map keys are
/// required or defaulted and not nullable.
pub(super) fn map_list_keys_map_set(s: &JSONSchemaProps, fld: &str, errs: &mut Vec<FieldError>) {
    let (Some(is), Some(list_type)) = (item(s), s.x_kubernetes_list_type.as_deref()) else {
        return;
    };
    if list_type != "set" && list_type != "map" {
        return;
    }
    let items_at = path::child(fld, "items");
    if is.nullable == Some(true) {
        errs.push(FieldError::forbidden(
            path::child(&items_at, "nullable"),
            format!("cannot be nullable when x-kubernetes-list-type is {list_type}"),
        ));
    }
    if list_type != "map" {
        return;
    }
    let required = is.required.as_deref().unwrap_or(&[]);
    for k in s.x_kubernetes_list_map_keys.iter().flatten() {
        let Some(p) = is.properties.as_ref().and_then(|p| p.get(k)) else {
            continue;
        };
        let key_at = path::key(&path::child(&items_at, "properties"), k);
        if !required.contains(k) && p.default.is_none() {
            errs.push(FieldError::required(
                path::child(&key_at, "default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
        if p.nullable == Some(true) {
            errs.push(FieldError::forbidden(
                path::child(&key_at, "nullable"),
                "this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
            ));
        }
    }
}
