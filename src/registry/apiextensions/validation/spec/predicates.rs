//! Predicates over schemas and over an old spec: what relaxes a check on update
//! (upstream's ValidationOptions), and which ConversionReview versions are accepted.

use super::*;

/// A ConversionReview version this server understands.
pub(crate) fn is_accepted_review_version(v: &str) -> bool {
    ACCEPTED_REVIEW_VERSIONS.contains(&v)
}

/// SchemaHas: `pred` holds for the schema or any schema inside it.
pub(super) fn schema_has(s: &JSONSchemaProps, pred: &dyn Fn(&JSONSchemaProps) -> bool) -> bool {
    if pred(s) {
        return true;
    }
    let any = |l: &Option<Vec<JSONSchemaProps>>| l.iter().flatten().any(|x| schema_has(x, pred));
    let any_map = |m: &Option<std::collections::BTreeMap<String, JSONSchemaProps>>| {
        m.iter().flatten().any(|(_, x)| schema_has(x, pred))
    };
    let or_bool = |b: &Option<JSONSchemaPropsOrBool>| matches!(b, Some(JSONSchemaPropsOrBool::Schema(x)) if schema_has(x, pred));
    let items = match &s.items {
        Some(JSONSchemaPropsOrArray::Schema(x)) => schema_has(x, pred),
        Some(JSONSchemaPropsOrArray::Schemas(l)) => l.iter().any(|x| schema_has(x, pred)),
        None => false,
    };
    items
        || any(&s.all_of)
        || any(&s.any_of)
        || any(&s.one_of)
        || s.not.as_deref().is_some_and(|x| schema_has(x, pred))
        || any_map(&s.properties)
        || or_bool(&s.additional_properties)
        || any_map(&s.pattern_properties)
        || or_bool(&s.additional_items)
        || any_map(&s.definitions)
        || s.dependencies.iter().flatten().any(
            |(_, d)| matches!(d, JSONSchemaPropsOrStringArray::Schema(x) if schema_has(x, pred)),
        )
}

/// SchemaHasInvalidTypes.
pub(crate) fn has_invalid_types(s: &JSONSchemaProps) -> bool {
    const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
    schema_has(s, &|s| {
        s.type_
            .as_deref()
            .is_some_and(|t| !t.is_empty() && !TYPES.contains(&t))
    })
}

/// hasNonAtomicSetType.
pub(crate) fn has_non_atomic_set_type(s: &JSONSchemaProps) -> bool {
    schema_has(s, &|s| {
        let Some(JSONSchemaPropsOrArray::Schema(is)) = &s.items else {
            return false;
        };
        if s.x_kubernetes_list_type.as_deref() != Some("set") {
            return false;
        }
        match is.type_.as_deref() {
            Some("array") => is
                .x_kubernetes_list_type
                .as_deref()
                .is_some_and(|t| t != "atomic"),
            Some("object") => is.x_kubernetes_map_type.as_deref() != Some("atomic"),
            _ => false,
        }
    })
}

/// hasInvalidMapListKeysMapSet.
pub(crate) fn has_invalid_map_list_keys_map_set(s: &JSONSchemaProps) -> bool {
    schema_has(s, &|s| {
        let mut errs = Vec::new();
        map_list_keys_map_set(s, "", &mut errs);
        !errs.is_empty()
    })
}

pub(super) fn has_defaults(s: &JSONSchemaProps) -> bool {
    schema_has(s, &|s| s.default.is_some())
}

pub(super) fn has_kubernetes_extensions(s: &JSONSchemaProps) -> bool {
    schema_has(s, &|s| {
        s.x_kubernetes_embedded_resource == Some(true)
            || s.x_kubernetes_preserve_unknown_fields.is_some()
            || s.x_kubernetes_int_or_string == Some(true)
            || s.x_kubernetes_list_map_keys
                .as_ref()
                .is_some_and(|k| !k.is_empty())
            || s.x_kubernetes_list_type.is_some()
            || s.x_kubernetes_validations
                .as_ref()
                .is_some_and(|v| !v.is_empty())
    })
}

/// allVersionsSpecifyOpenAPISchema.
pub(crate) fn all_versions_have_schema(spec: &Spec<'_>) -> bool {
    let has = |v: Option<&k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceValidation>| {
        v.is_some_and(|v| v.open_api_v3_schema.is_some())
    };
    has(spec.validation) || spec.versions.iter().all(|v| has(v.schema))
}

/// Whether the old conversion webhook's CA bundle is set but unusable (allowInvalidCABundle).
pub(crate) fn conversion_ca_bundle_invalid(old: &Spec<'_>) -> bool {
    old.conversion
        .as_ref()
        .and_then(|c| c.webhook_client_config)
        .and_then(|c| c.ca_bundle.as_ref())
        .is_some_and(|b| !b.0.is_empty() && webhook::ca_bundle_error(&b.0).is_some())
}

/// findTooManySelectableFieldsAllowed: lists already over the limit may stay as they are.
pub(crate) fn too_many_selectable_fields_allowed(new: &Spec<'_>, old: &Spec<'_>) -> Vec<String> {
    let mut allowed = Vec::new();
    let same = |a: Option<&[_]>, b: Option<&[_]>| a.unwrap_or(&[]) == b.unwrap_or(&[]);
    let old_top = old.selectable_fields.unwrap_or(&[]);
    if old_top.len() > MAX_SELECTABLE_FIELDS && same(new.selectable_fields, old.selectable_fields) {
        allowed.push(String::new());
    }
    for v in &new.versions {
        if let Some(o) = old.versions.iter().rev().find(|o| o.name == v.name) {
            let n = o.selectable_fields.map_or(0, <[_]>::len);
            if n > MAX_SELECTABLE_FIELDS && same(v.selectable_fields, o.selectable_fields) {
                allowed.push(v.name.to_string());
            }
        }
    }
    allowed
}

/// findVersionsWithUnchangedSchemas: the versions whose schema (the top-level one, else their
/// own) an update leaves as it was.
pub(crate) fn unchanged_schemas(new: &Spec<'_>, old: &Spec<'_>) -> Vec<String> {
    fn schema_of<'a>(s: &Spec<'a>, name: &str) -> Option<&'a k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceValidation>{
        s.validation.or_else(|| {
            s.versions
                .iter()
                .find(|v| v.name == name)
                .and_then(|v| v.schema)
        })
    }
    new.versions
        .iter()
        .filter(|v| schema_of(new, v.name) == schema_of(old, v.name))
        .map(|v| v.name.to_string())
        .collect()
}
