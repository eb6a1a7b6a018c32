//! validateCustomResourceDefinitionSpec and its parts: group, scope, versions, names, printer
//! columns, subresources, selectable fields, conversion, and status.storedVersions; plus the
//! predicates over an old spec that relax checks on update.
//!
//! Upstream also forbids mixing top-level and per-version schemas, subresources and columns,
//! and per-version ones that are all identical; the v1 → internal conversion never produces
//! either shape, so those checks cannot fire for a v1 object and are not ported.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceSubresources, JSONSchemaProps,
    JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, JSONSchemaPropsOrStringArray,
};

use super::fieldpath::{validate_selectable_fields, MAX_SELECTABLE_FIELDS};
use super::openapi::{map_list_keys_map_set, validate_validation};
use super::structural::Structural;
use super::view::{Conversion, Spec, Version};
use super::{dns1035_label_errors, dns1123_subdomain_errors, gojson, path, validate_names};
use super::{webhook, Options};
use crate::registry::error::FieldError;

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
const ACCEPTED_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

/// A ConversionReview version this server understands.
pub(super) fn is_accepted_review_version(v: &str) -> bool {
    ACCEPTED_REVIEW_VERSIONS.contains(&v)
}

/// SchemaHas: `pred` holds for the schema or any schema inside it.
fn schema_has(s: &JSONSchemaProps, pred: &dyn Fn(&JSONSchemaProps) -> bool) -> bool {
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
pub(super) fn has_invalid_types(s: &JSONSchemaProps) -> bool {
    const TYPES: [&str; 6] = ["array", "boolean", "integer", "number", "object", "string"];
    schema_has(s, &|s| {
        s.type_
            .as_deref()
            .is_some_and(|t| !t.is_empty() && !TYPES.contains(&t))
    })
}

/// hasNonAtomicSetType.
pub(super) fn has_non_atomic_set_type(s: &JSONSchemaProps) -> bool {
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
pub(super) fn has_invalid_map_list_keys_map_set(s: &JSONSchemaProps) -> bool {
    schema_has(s, &|s| {
        let mut errs = Vec::new();
        map_list_keys_map_set(s, "", &mut errs);
        !errs.is_empty()
    })
}

fn has_defaults(s: &JSONSchemaProps) -> bool {
    schema_has(s, &|s| s.default.is_some())
}

fn has_kubernetes_extensions(s: &JSONSchemaProps) -> bool {
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
pub(super) fn all_versions_have_schema(spec: &Spec<'_>) -> bool {
    let has = |v: Option<&k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceValidation>| {
        v.is_some_and(|v| v.open_api_v3_schema.is_some())
    };
    has(spec.validation) || spec.versions.iter().all(|v| has(v.schema))
}

/// Whether the old conversion webhook's CA bundle is set but unusable (allowInvalidCABundle).
pub(super) fn conversion_ca_bundle_invalid(old: &Spec<'_>) -> bool {
    old.conversion
        .as_ref()
        .and_then(|c| c.webhook_client_config)
        .and_then(|c| c.ca_bundle.as_ref())
        .is_some_and(|b| !b.0.is_empty() && webhook::ca_bundle_error(&b.0).is_some())
}

/// findTooManySelectableFieldsAllowed: lists already over the limit may stay as they are.
pub(super) fn too_many_selectable_fields_allowed(new: &Spec<'_>, old: &Spec<'_>) -> Vec<String> {
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

/// validateEnumStrings.
fn enum_string(fld: &str, v: &str, accepted: &[&str], errs: &mut Vec<FieldError>) {
    if v.is_empty() {
        errs.push(FieldError::required(fld, ""));
    } else if !accepted.contains(&v) {
        errs.push(FieldError::not_supported(fld, v, accepted));
    }
}

/// validateSimpleJSONPath.
fn simple_json_path(s: &str, fld: &str) -> Option<FieldError> {
    if s.is_empty() {
        Some(FieldError::invalid(fld, s, "must not be empty"))
    } else if !s.starts_with('.') {
        Some(FieldError::invalid(
            fld,
            s,
            "must be a simple json path starting with .",
        ))
    } else {
        None
    }
}

/// ValidateCustomResourceDefinitionSubresources.
fn validate_subresources(
    s: Option<&CustomResourceSubresources>,
    fld: &str,
    errs: &mut Vec<FieldError>,
) {
    let Some(scale) = s.and_then(|s| s.scale.as_ref()) else {
        return;
    };
    for (name, v, prefix) in [
        (
            "scale.specReplicasPath",
            &scale.spec_replicas_path,
            ".spec.",
        ),
        (
            "scale.statusReplicasPath",
            &scale.status_replicas_path,
            ".status.",
        ),
    ] {
        let at = path::child(fld, name);
        if v.is_empty() {
            errs.push(FieldError::required(at, ""));
        } else if let Some(e) = simple_json_path(v, &at) {
            errs.push(e);
        } else if !v.starts_with(prefix) {
            errs.push(FieldError::invalid(
                at,
                v,
                format!(
                    "should be a json path under {}",
                    &prefix[..prefix.len() - 1]
                ),
            ));
        }
    }
    if let Some(v) = scale
        .label_selector_path
        .as_deref()
        .filter(|v| !v.is_empty())
    {
        let at = path::child(fld, "scale.labelSelectorPath");
        if let Some(e) = simple_json_path(v, &at) {
            errs.push(e);
        } else if !v.starts_with(".spec.") && !v.starts_with(".status.") {
            errs.push(FieldError::invalid_raw(
                at,
                gojson::string(v),
                "should be a json path under either .spec or .status",
            ));
        }
    }
}

/// ValidateCustomResourceColumnDefinition.
fn validate_column(c: &CustomResourceColumnDefinition, fld: &str, errs: &mut Vec<FieldError>) {
    let at = |f: &str| path::child(fld, f);
    if c.name.is_empty() {
        errs.push(FieldError::required(at("name"), ""));
    }
    let detail = format!("must be one of {COLUMN_TYPES}");
    if c.type_.is_empty() {
        errs.push(FieldError::required(at("type"), detail));
    } else if !COLUMN_TYPES.split(',').any(|t| t == c.type_) {
        errs.push(FieldError::invalid(at("type"), &c.type_, detail));
    }
    if let Some(f) = c.format.as_deref().filter(|f| !f.is_empty()) {
        if !COLUMN_FORMATS.split(',').any(|x| x == f) {
            errs.push(FieldError::invalid(
                at("format"),
                f,
                format!("must be one of {COLUMN_FORMATS}"),
            ));
        }
    }
    if c.json_path.is_empty() {
        errs.push(FieldError::required(at("JSONPath"), ""));
    } else if let Some(e) = simple_json_path(&c.json_path, &at("JSONPath")) {
        errs.push(e);
    }
}

/// Go's unicode.IsPrint, near enough: no controls, no spaces but ' ', no format characters.
fn is_print(c: char) -> bool {
    !c.is_control()
        && (c == ' ' || !c.is_whitespace())
        && !matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// validateDeprecationWarning.
fn deprecation_warning_errors(deprecated: bool, warning: Option<&str>) -> Vec<String> {
    let Some(w) = warning else {
        return Vec::new();
    };
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut errs = Vec::new();
    if w.len() > 256 {
        errs.push("must be <= 256 characters long".into());
    }
    if w.is_empty() {
        errs.push("must not be an empty string".into());
    }
    if let Some((i, _)) = w.char_indices().find(|(_, c)| !is_print(*c)) {
        errs.push(format!(
            "must only contain printable UTF-8 characters; non-printable character found at index {i}"
        ));
    }
    errs
}

/// selectableFields: they need a structural schema to point into.
fn selectable_fields(
    fields: &[k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::SelectableField],
    schema: Option<&JSONSchemaProps>,
    schema_at: &str,
    fld: &str,
    allow_too_many: bool,
    errs: &mut Vec<FieldError>,
) {
    let ss = match schema.map(Structural::new) {
        Some(Err(e)) => {
            errs.push(FieldError::invalid(schema_at, "", e));
            None
        }
        Some(Ok(ss)) => Some(ss),
        None => None,
    };
    validate_selectable_fields(fields, ss.as_ref(), fld, allow_too_many, errs);
}

/// validateCustomResourceDefinitionVersion.
fn validate_version(
    v: &Version<'_>,
    fld: &str,
    status_enabled: bool,
    opts: &Options,
    errs: &mut Vec<FieldError>,
) {
    for e in deprecation_warning_errors(v.deprecated, v.deprecation_warning) {
        errs.push(FieldError::invalid_raw(
            path::child(fld, "deprecationWarning"),
            gojson::opt_string(v.deprecation_warning),
            e,
        ));
    }
    errs.extend(validate_validation(
        v.schema,
        status_enabled,
        opts,
        &path::child(fld, "schema"),
    ));
    validate_subresources(v.subresources, &path::child(fld, "subresources"), errs);
    for (i, c) in v.columns.unwrap_or(&[]).iter().enumerate() {
        validate_column(
            c,
            &path::index(&path::child(fld, "additionalPrinterColumns"), i),
            errs,
        );
    }
    let fields = v.selectable_fields.unwrap_or(&[]);
    if !fields.is_empty() {
        let at = path::child(fld, "selectableFields");
        // Upstream looks at the version's own schema only: when all versions share one
        // schema (moved to spec.validation by the conversion), this fires.
        match v.schema.and_then(|s| s.open_api_v3_schema.as_ref()) {
            None => errs.push(FieldError::invalid(
                at,
                "",
                "may only be set when `version.schema.openAPIV3Schema` is not included",
            )),
            Some(s) => {
                let allow = opts
                    .allow_too_many_selectable_fields
                    .iter()
                    .any(|n| n == v.name);
                let schema_at = path::child(fld, "schema.openAPIV3Schema");
                selectable_fields(fields, Some(s), &schema_at, &at, allow, errs);
            }
        }
    }
}

/// validateConversionReviewVersions.
fn validate_review_versions(
    versions: &[String],
    require_recognized: bool,
    fld: &str,
    errs: &mut Vec<FieldError>,
) {
    if versions.is_empty() {
        errs.push(FieldError::required(fld, ""));
        return;
    }
    let mut seen = Vec::new();
    let mut accepted = false;
    for (i, v) in versions.iter().enumerate() {
        let at = path::index(fld, i);
        if seen.contains(&v) {
            errs.push(FieldError::invalid(at, v, "duplicate version"));
            continue;
        }
        seen.push(v);
        for e in dns1035_label_errors(v) {
            errs.push(FieldError::invalid(&at, v, e));
        }
        accepted |= is_accepted_review_version(v);
    }
    if require_recognized && !accepted {
        errs.push(FieldError::invalid_raw(
            fld,
            gojson::strings(Some(versions)),
            format!(
                "must include at least one of {}",
                ACCEPTED_REVIEW_VERSIONS.join(", ")
            ),
        ));
    }
}

/// validateCustomResourceConversion.
fn validate_conversion(c: &Conversion<'_>, opts: &Options, fld: &str, errs: &mut Vec<FieldError>) {
    let at = |f: &str| path::child(fld, f);
    enum_string(&at("strategy"), c.strategy, &["None", "Webhook"], errs);
    if c.strategy != "Webhook" {
        if c.webhook_client_config.is_some() {
            errs.push(FieldError::forbidden(
                at("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        if !c.conversion_review_versions.is_empty() {
            errs.push(FieldError::forbidden(
                at("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            ));
        }
        return;
    }
    let cc_at = at("webhookClientConfig");
    match c.webhook_client_config {
        None => errs.push(FieldError::required(
            &cc_at,
            "required when strategy is set to Webhook",
        )),
        Some(cc) => {
            match (&cc.url, &cc.service) {
                (Some(url), None) => webhook::validate_url(&path::child(&cc_at, "url"), url, errs),
                (None, Some(s)) => webhook::validate_service(
                    &path::child(&cc_at, "service"),
                    &s.namespace,
                    &s.name,
                    s.path.as_deref(),
                    s.port.unwrap_or(0),
                    errs,
                ),
                _ => errs.push(FieldError::required(
                    &cc_at,
                    "exactly one of url or service is required",
                )),
            }
            let bundle = cc.ca_bundle.as_ref().map_or(&[][..], |b| &b.0[..]);
            if !bundle.is_empty() && !opts.allow_invalid_ca_bundle {
                if let Some(e) = webhook::ca_bundle_error(bundle) {
                    errs.push(FieldError::invalid_raw(
                        path::child(&cc_at, "caBundle"),
                        gojson::bytes(bundle),
                        e,
                    ));
                }
            }
        }
    }
    validate_review_versions(
        c.conversion_review_versions,
        opts.require_recognized_conversion_review_version,
        &at("conversionReviewVersions"),
        errs,
    );
}

/// validateCustomResourceDefinitionSpec.
pub(super) fn validate_spec(spec: &Spec<'_>, mut opts: Options, fld: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let at = |f: &str| path::child(fld, f);
    if spec.group.is_empty() {
        errs.push(FieldError::required(at("group"), ""));
    } else {
        let e = dns1123_subdomain_errors(spec.group);
        if !e.is_empty() {
            errs.push(FieldError::invalid(at("group"), spec.group, e.join(",")));
        } else if spec.group.split('.').count() < 2 {
            errs.push(FieldError::invalid(
                at("group"),
                spec.group,
                "should be a domain with at least one dot",
            ));
        }
    }
    enum_string(
        &at("scope"),
        spec.scope,
        &["Cluster", "Namespaced"],
        &mut errs,
    );

    // v1 has a plain bool: absent is false.
    let preserve = spec.preserve_unknown_fields == Some(true);
    // Pruning needs structural schemas.
    if !preserve {
        opts.require_structural_schema = true;
    }
    let top_schema = spec
        .validation
        .is_some_and(|v| v.open_api_v3_schema.is_some());
    if !top_schema {
        for (i, v) in spec.versions.iter().enumerate() {
            let has = v.schema.is_some_and(|s| s.open_api_v3_schema.is_some());
            let schema_at = path::child(&path::index(&at("versions"), i), "schema.openAPIV3Schema");
            if opts.require_open_api_schema && !has {
                errs.push(FieldError::required(schema_at, ""));
            } else if !opts.require_open_api_schema && !preserve && v.served && !has {
                errs.push(FieldError::required(
                    schema_at,
                    "because otherwise all fields are pruned",
                ));
            }
        }
    }
    if opts.allow_defaults && spec.schemas().any(has_defaults) {
        opts.require_structural_schema = true;
        if preserve {
            errs.push(FieldError::invalid_raw(
                at("preserveUnknownFields"),
                true,
                "must be false in order to use defaults in the schema",
            ));
        }
    }
    if spec.schemas().any(has_kubernetes_extensions) {
        opts.require_structural_schema = true;
    }

    let mut storage = 0;
    let mut names: Vec<&str> = Vec::new();
    let mut unique = true;
    let per_version_subresources = spec.versions.iter().any(|v| v.subresources.is_some());
    for (i, v) in spec.versions.iter().enumerate() {
        let v_at = path::index(&at("versions"), i);
        storage += usize::from(v.storage);
        if names.contains(&v.name) {
            unique = false;
        } else {
            names.push(v.name);
        }
        let e = dns1035_label_errors(v.name);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                path::child(&v_at, "name"),
                v.name,
                e.join(","),
            ));
        }
        let subresources = if per_version_subresources {
            v.subresources
        } else {
            spec.subresources
        };
        let status_enabled = subresources.is_some_and(|s| s.status.is_some());
        validate_version(v, &v_at, status_enabled, &opts, &mut errs);
    }
    if !unique {
        errs.push(FieldError::invalid_raw(
            at("versions"),
            spec.versions_json(),
            "must contain unique version names",
        ));
    }
    if storage != 1 {
        errs.push(FieldError::invalid_raw(
            at("versions"),
            spec.versions_json(),
            "must have exactly one version marked as storage version",
        ));
    }
    if !spec.version.is_empty() {
        let e = dns1035_label_errors(spec.version);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                at("version"),
                spec.version,
                e.join(","),
            ));
        }
    }

    let n = spec.names;
    for (f, v) in [
        ("plural", n.plural.as_str()),
        ("singular", n.singular.as_deref().unwrap_or("")),
        ("kind", n.kind.as_str()),
        ("listKind", n.list_kind.as_deref().unwrap_or("")),
    ] {
        if v.is_empty() {
            errs.push(FieldError::required(path::child(&at("names"), f), ""));
        }
    }
    errs.extend(validate_names(n, &at("names")));

    let any_status = spec.subresources.is_some_and(|s| s.status.is_some())
        || spec
            .versions
            .iter()
            .any(|v| v.subresources.is_some_and(|s| s.status.is_some()));
    errs.extend(validate_validation(
        spec.validation,
        any_status,
        &opts,
        &at("validation"),
    ));
    validate_subresources(spec.subresources, &at("subresources"), &mut errs);
    for (i, c) in spec.columns.unwrap_or(&[]).iter().enumerate() {
        validate_column(
            c,
            &path::index(&at("additionalPrinterColumns"), i),
            &mut errs,
        );
    }
    let fields = spec.selectable_fields.unwrap_or(&[]);
    if !fields.is_empty() {
        match spec.validation {
            None => errs.push(FieldError::invalid(
                at("selectableFields"),
                "",
                "may only be set when validations.schema is included",
            )),
            Some(v) => {
                let allow = opts
                    .allow_too_many_selectable_fields
                    .iter()
                    .any(String::is_empty);
                let schema = v.open_api_v3_schema.as_ref();
                let schema_at = at("schema.openAPIV3Schema");
                selectable_fields(
                    fields,
                    schema,
                    &schema_at,
                    &at("selectableFields"),
                    allow,
                    &mut errs,
                );
            }
        }
    }

    if let Some(c) = &spec.conversion {
        if c.strategy != "None" && preserve {
            errs.push(FieldError::invalid(
                path::child(&at("conversion"), "strategy"),
                c.strategy,
                "must be None if spec.preserveUnknownFields is true",
            ));
        }
        validate_conversion(c, &opts, &at("conversion"), &mut errs);
    }
    errs
}

/// validateCustomResourceDefinitionSpecUpdate.
pub(super) fn validate_spec_update(
    spec: &Spec<'_>,
    old: &Spec<'_>,
    opts: Options,
    fld: &str,
) -> Vec<FieldError> {
    let immutable_names = opts.require_immutable_names;
    let mut errs = validate_spec(spec, opts, fld);
    let mut immutable = |f: &str, new: &str, old: &str| {
        if new != old {
            errs.push(FieldError::invalid(
                path::child(fld, f),
                new,
                "field is immutable",
            ));
        }
    };
    if immutable_names {
        immutable("scope", spec.scope, old.scope);
        immutable("names.kind", &spec.names.kind, &old.names.kind);
    }
    immutable("group", spec.group, old.group);
    immutable("names.plural", &spec.names.plural, &old.names.plural);
    errs
}

/// ValidateCustomResourceDefinitionStoredVersions.
pub(super) fn validate_stored_versions(
    stored: Option<&[String]>,
    spec: &Spec<'_>,
) -> Vec<FieldError> {
    let fld = "status.storedVersions";
    let list = stored.unwrap_or(&[]);
    let json = gojson::strings(stored);
    if list.is_empty() {
        return vec![FieldError::invalid_raw(
            fld,
            json,
            "must have at least one stored version",
        )];
    }
    let mut errs = Vec::new();
    let mut missing: Vec<(usize, &str)> = Vec::new();
    for (i, v) in list.iter().enumerate() {
        // A name listed twice counts at its last index, as in upstream's map.
        missing.retain(|(_, m)| m != v);
        missing.push((i, v));
    }
    for v in &spec.versions {
        let listed = missing.iter().any(|(_, m)| *m == v.name);
        if v.storage && !listed {
            errs.push(FieldError::invalid_raw(
                fld,
                &json,
                format!("must have the storage version {}", v.name),
            ));
        }
        missing.retain(|(_, m)| *m != v.name);
    }
    for (i, v) in missing {
        errs.push(FieldError::invalid(
            path::index(fld, i),
            v,
            format!("missing from spec.versions; {v} was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in {v} and removes {v} from status.storedVersions"),
        ));
    }
    errs
}
