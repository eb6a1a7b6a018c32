//! Validation of CustomResourceDefinitions, as apiextensions-apiserver's
//! pkg/apis/apiextensions/validation does it (ValidateCustomResourceDefinition,
//! ValidateCustomResourceDefinitionUpdate, ValidateCustomResourceDefinitionStatus and
//! ValidateUpdateCustomResourceDefinitionStatus), plus the structural-schema check behind the
//! NonStructuralSchema condition (pkg/apiserver/schema, pkg/controller/nonstructuralschema).
//!
//! Upstream validates the internal type, after v1 defaulting and conversion; so do we (see
//! [`view`]): a v1 object gets the field paths, texts and order that kube-apiserver 1.35 gives
//! for it, including paths such as `spec.validation.openAPIV3Schema...` when every version
//! shares one schema, and bad values printed as Go's JSON of the internal structs ([`gojson`]).
//!
//! Not done here, as they need pieces that live elsewhere: estimating the cost of
//! `x-kubernetes-validations` rules (they are parsed by the sibling module `cel`, not
//! type-checked), and checking `default` values against their schema (structuraldefaulting.ValidateDefaults, which needs the
//! object-schema validator and pruning of [`super::schema`]).
//!
//! May use: api, registry's error and validation helpers.

mod fieldpath;
mod gojson;
mod openapi;
mod spec;
mod structural;
mod view;
mod webhook;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_conversion;
#[cfg(test)]
mod tests_schema;
#[cfg(test)]
mod tests_update;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionNames,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{json, Value};

use crate::api::selectors::DNS1123_SUBDOMAIN_MSG;
use crate::registry::error::{quote, FieldError};
use crate::registry::validation::{validate_labels, validate_object_meta, NameRule};

pub(crate) use structural::is_structural;
pub(crate) use view::set_defaults;
pub(crate) use webhook::{
    validate_service as validate_webhook_service, validate_url as validate_webhook_url,
};

use view::Spec;

/// field.Path in text form: `a.b`, `a[k]`, `a[0]`; the empty string is the nil path.
mod path {
    /// `p.Child(name)`.
    pub(super) fn child(p: &str, name: &str) -> String {
        if p.is_empty() {
            name.to_string()
        } else {
            format!("{p}.{name}")
        }
    }

    /// `p.Key(key)`.
    pub(super) fn key(p: &str, key: &str) -> String {
        format!("{p}[{key}]")
    }

    /// `p.Index(i)`.
    pub(super) fn index(p: &str, i: usize) -> String {
        format!("{p}[{i}]")
    }
}

/// IsDNS1035Label (kept with the other name rules, in registry::validation).
pub(crate) use crate::registry::validation::dns1035_label_errors;

/// IsDNS1123Subdomain (labels are not limited to 63 characters by this check).
fn dns1123_subdomain_errors(v: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if v.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    let label_ok = |l: &str| {
        let b = l.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
    };
    if !v.split('.').all(label_ok) {
        errs.push(DNS1123_SUBDOMAIN_MSG.to_string());
    }
    errs
}

/// validationOptions: which checks apply. On update some are relaxed when the old object
/// already broke them, so that stored CRDs stay updatable.
#[derive(Clone)]
struct Options {
    allow_defaults: bool,
    require_recognized_conversion_review_version: bool,
    require_immutable_names: bool,
    require_open_api_schema: bool,
    require_valid_property_type: bool,
    require_structural_schema: bool,
    require_atomic_set_type: bool,
    require_map_list_keys_map_set_validation: bool,
    allow_invalid_ca_bundle: bool,
    /// Versions ("" for the top-level list) whose too many selectable fields are unchanged.
    allow_too_many_selectable_fields: Vec<String>,
    /// Versions whose schema an update leaves as it was: their rules are not held to the
    /// per-expression cost budget again (suppressPerExpressionCost).
    unchanged_schemas: Vec<String>,
}

impl Options {
    /// The options of ValidateCustomResourceDefinition (create).
    fn create() -> Self {
        Options {
            allow_defaults: true,
            require_recognized_conversion_review_version: true,
            require_immutable_names: false,
            require_open_api_schema: true,
            require_valid_property_type: true,
            require_structural_schema: true,
            require_atomic_set_type: true,
            require_map_list_keys_map_set_validation: true,
            // The CRD is not established yet.
            allow_invalid_ca_bundle: true,
            allow_too_many_selectable_fields: Vec::new(),
            unchanged_schemas: Vec::new(),
        }
    }

    /// The options of ValidateCustomResourceDefinitionUpdate: relaxed by what `old` has.
    fn update(new: &Spec<'_>, old_crd: &CustomResourceDefinition, old: &Spec<'_>) -> Self {
        let old_conversion_ok = old.conversion.as_ref().is_none_or(|c| {
            let v = c.conversion_review_versions;
            v.is_empty() || v.iter().any(|v| spec::is_accepted_review_version(v))
        });
        let established = view::condition_true(old_crd, "Established");
        Options {
            allow_defaults: true,
            require_recognized_conversion_review_version: old_conversion_ok,
            require_immutable_names: established,
            require_open_api_schema: spec::all_versions_have_schema(old),
            require_valid_property_type: !old.schemas().any(spec::has_invalid_types),
            require_structural_schema: !old.schemas().any(|s| !is_structural(s)),
            require_atomic_set_type: !old.schemas().any(spec::has_non_atomic_set_type),
            require_map_list_keys_map_set_validation: !old
                .schemas()
                .any(spec::has_invalid_map_list_keys_map_set),
            allow_invalid_ca_bundle: !established || spec::conversion_ca_bundle_invalid(old),
            allow_too_many_selectable_fields: spec::too_many_selectable_fields_allowed(new, old),
            unchanged_schemas: spec::unchanged_schemas(new, old),
        }
    }
}

/// The metadata for the generic ObjectMeta checks, as JSON.
fn meta_json(meta: &ObjectMeta) -> Value {
    json!({ "metadata": serde_json::to_value(meta).unwrap_or(Value::Null) })
}

/// ValidateObjectMeta with the CRD's name function: a DNS subdomain that is
/// `<spec.names.plural>.<spec.group>`.
fn validate_metadata(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    let meta = &crd.metadata;
    let required = format!("{}.{}", crd.spec.names.plural, crd.spec.group);
    let name_fn = |name: &str, prefix: bool| {
        // maskTrailingDash, as upstream writes it.
        let checked = if prefix && name.len() > 1 && name.ends_with('-') {
            // Byte-wise, as Go does; a split character fails the syntax check either way.
            let kept = &name.as_bytes()[..name.len() - 2];
            format!("{}a", String::from_utf8_lossy(kept))
        } else {
            name.to_string()
        };
        let mut errs = dns1123_subdomain_errors(&checked);
        if name != required {
            errs.push("must be spec.names.plural+\".\"+spec.group".to_string());
        }
        errs
    };
    let mut errs = Vec::new();
    let generate_name = meta.generate_name.as_deref().unwrap_or("");
    if !generate_name.is_empty() {
        for e in name_fn(generate_name, true) {
            errs.push(FieldError::invalid(
                "metadata.generateName",
                generate_name,
                e,
            ));
        }
    }
    let name = meta.name.as_deref().unwrap_or("");
    if name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else {
        for e in name_fn(name, false) {
            errs.push(FieldError::invalid("metadata.name", name, e));
        }
    }
    // The rest of ObjectMeta (namespace, labels, annotations, finalizers) as for any resource:
    // with a stand-in name, so that only the checks above speak about it.
    let mut rest = meta.clone();
    rest.name = Some("a".into());
    rest.generate_name = None;
    errs.extend(
        validate_object_meta(&meta_json(&rest), false, NameRule::Subdomain)
            .into_iter()
            .filter(|e| e.field != "metadata.name"),
    );
    errs
}

/// ValidateImmutableField.
fn immutable(field: &str, new: String, changed: bool, errs: &mut Vec<FieldError>) {
    if changed {
        errs.push(FieldError::invalid_raw(field, new, "field is immutable"));
    }
}

/// ValidateObjectMetaUpdate (without ownerReferences and managedFields).
fn validate_metadata_update(
    new: &CustomResourceDefinition,
    old: &CustomResourceDefinition,
) -> Vec<FieldError> {
    let (n, o) = (&new.metadata, &old.metadata);
    let (new_json, old_json) = (meta_json(n), meta_json(o));
    let mut errs = crate::registry::validation::validate_object_meta_update(&new_json, &old_json);
    let rv = n.resource_version.as_deref().unwrap_or("");
    if rv.is_empty() {
        errs.push(FieldError::invalid(
            "metadata.resourceVersion",
            rv,
            "must be specified for an update",
        ));
    }
    let (ng, og) = (n.generation.unwrap_or(0), o.generation.unwrap_or(0));
    if ng < og {
        errs.push(FieldError::invalid_raw(
            "metadata.generation",
            ng,
            "must not be decremented",
        ));
    }
    let text = |v: &Option<String>| quote(v.as_deref().unwrap_or(""));
    immutable("metadata.name", text(&n.name), n.name != o.name, &mut errs);
    immutable(
        "metadata.namespace",
        text(&n.namespace),
        n.namespace != o.namespace,
        &mut errs,
    );
    immutable("metadata.uid", text(&n.uid), n.uid != o.uid, &mut errs);
    let time = |t: &Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>| {
        gojson::value(&serde_json::to_value(t).unwrap_or(Value::Null))
    };
    immutable(
        "metadata.creationTimestamp",
        time(&n.creation_timestamp),
        n.creation_timestamp != o.creation_timestamp,
        &mut errs,
    );
    immutable(
        "metadata.deletionTimestamp",
        time(&n.deletion_timestamp),
        n.deletion_timestamp != o.deletion_timestamp,
        &mut errs,
    );
    immutable(
        "metadata.deletionGracePeriodSeconds",
        n.deletion_grace_period_seconds
            .map_or_else(|| "null".to_string(), |s| s.to_string()),
        n.deletion_grace_period_seconds != o.deletion_grace_period_seconds,
        &mut errs,
    );
    errs.extend(validate_labels(
        new_json.pointer("/metadata/labels"),
        "metadata.labels",
    ));
    errs.extend(
        validate_object_meta(&new_json, false, NameRule::Subdomain)
            .into_iter()
            .filter(|e| e.field.starts_with("metadata.annotations")),
    );
    errs
}

/// validateAPIApproval: groups under k8s.io and kubernetes.io need the
/// `api-approved.kubernetes.io` annotation, unless it is unchanged on update.
fn validate_api_approval(
    new: &CustomResourceDefinition,
    old: Option<&CustomResourceDefinition>,
) -> Vec<FieldError> {
    if !webhook::is_protected_group(&new.spec.group) {
        return Vec::new();
    }
    let annotation = |crd: &CustomResourceDefinition| {
        crd.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(webhook::API_APPROVED_ANNOTATION))
            .cloned()
            .unwrap_or_default()
    };
    let value = annotation(new);
    let (state, reason) = webhook::approval_state(&value);
    if old.is_some_and(|o| webhook::approval_state(&annotation(o)).0 == state) {
        return Vec::new();
    }
    let field = path::key("metadata.annotations", webhook::API_APPROVED_ANNOTATION);
    match state {
        webhook::Approval::Approved | webhook::Approval::Bypassed => Vec::new(),
        webhook::Approval::Missing => vec![FieldError::required(field, reason)],
        webhook::Approval::Invalid => vec![FieldError::invalid(field, &value, reason)],
    }
}

/// validatePreserveUnknownFields: spec.preserveUnknownFields may stay true, not become true.
fn validate_preserve_unknown_fields(
    new: &CustomResourceDefinition,
    old: Option<&CustomResourceDefinition>,
) -> Vec<FieldError> {
    if old.is_some_and(|o| o.spec.preserve_unknown_fields == Some(true)) {
        return Vec::new();
    }
    if new.spec.preserve_unknown_fields == Some(true) {
        return vec![FieldError::invalid_raw(
            "spec.preserveUnknownFields",
            true,
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        )];
    }
    Vec::new()
}

fn defaulted(crd: &CustomResourceDefinition) -> CustomResourceDefinition {
    let mut crd = crd.clone();
    set_defaults(&mut crd);
    crd
}

/// Status, stored versions, API approval and preserveUnknownFields: the tail shared by create
/// and update.
fn validate_tail(
    crd: &CustomResourceDefinition,
    spec: &Spec<'_>,
    old: Option<&CustomResourceDefinition>,
    errs: &mut Vec<FieldError>,
) {
    errs.extend(status_errors(crd));
    let stored = crd
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.as_deref());
    errs.extend(spec::validate_stored_versions(stored, spec));
    errs.extend(validate_api_approval(crd, old));
    errs.extend(validate_preserve_unknown_fields(crd, old));
}

/// ValidateCustomResourceDefinition: every problem of a CRD to be created, in upstream's order.
/// The v1 defaults are applied first (to a copy); `crd` may or may not have them. The
/// ObjectMeta checks common to all resources are included, as upstream does.
pub(crate) fn validate_crd(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    let crd = defaulted(crd);
    let spec = Spec::new(&crd);
    let mut errs = validate_metadata(&crd);
    errs.extend(spec::validate_spec(&spec, Options::create(), "spec"));
    validate_tail(&crd, &spec, None, &mut errs);
    errs
}

/// ValidateCustomResourceDefinitionUpdate: the problems of `new` replacing `old`. Checks that
/// `old` already failed are relaxed as upstream relaxes them, and scope and kind become
/// immutable once the CRD is Established, group and plural always are.
pub(crate) fn validate_crd_update(
    new: &CustomResourceDefinition,
    old: &CustomResourceDefinition,
) -> Vec<FieldError> {
    let (new, old) = (defaulted(new), defaulted(old));
    let (spec, old_spec) = (Spec::new(&new), Spec::new(&old));
    let opts = Options::update(&spec, &old, &old_spec);
    let mut errs = validate_metadata_update(&new, &old);
    errs.extend(spec::validate_spec_update(&spec, &old_spec, opts, "spec"));
    validate_tail(&new, &spec, Some(&old), &mut errs);
    errs
}

fn status_errors(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    let names = crd.status.as_ref().and_then(|s| s.accepted_names.as_ref());
    names.map_or_else(Vec::new, |n| validate_names(n, "status.acceptedNames"))
}

#[cfg(test)]
/// ValidateCustomResourceDefinitionStatus: the accepted names must be well-formed.
pub(crate) fn validate_crd_status(crd: &CustomResourceDefinition) -> Vec<FieldError> {
    status_errors(crd)
}

/// ValidateUpdateCustomResourceDefinitionStatus: an update of the status subresource.
pub(crate) fn validate_crd_status_update(
    new: &CustomResourceDefinition,
    old: &CustomResourceDefinition,
) -> Vec<FieldError> {
    let mut errs = validate_metadata_update(new, old);
    errs.extend(status_errors(new));
    errs
}

/// ValidateCustomResourceDefinitionNames.
fn validate_names(n: &CustomResourceDefinitionNames, fld: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let at = |f: &str| path::child(fld, f);
    let singular = n.singular.as_deref().unwrap_or("");
    let list_kind = n.list_kind.as_deref().unwrap_or("");
    for (f, v) in [("plural", n.plural.as_str()), ("singular", singular)] {
        let e = dns1035_label_errors(v);
        if !v.is_empty() && !e.is_empty() {
            errs.push(FieldError::invalid(at(f), v, e.join(",")));
        }
    }
    for (f, v) in [("kind", n.kind.as_str()), ("listKind", list_kind)] {
        let e = dns1035_label_errors(&v.to_lowercase());
        if !v.is_empty() && !e.is_empty() {
            errs.push(FieldError::invalid(
                at(f),
                v,
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    e.join(",")
                ),
            ));
        }
    }
    for (i, s) in n.short_names.iter().flatten().enumerate() {
        let e = dns1035_label_errors(s);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                path::index(&at("shortNames"), i),
                s,
                e.join(","),
            ));
        }
    }
    if !n.kind.is_empty() && n.kind == list_kind {
        errs.push(FieldError::invalid(
            at("listKind"),
            list_kind,
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in n.categories.iter().flatten().enumerate() {
        let e = dns1035_label_errors(c);
        if !e.is_empty() {
            errs.push(FieldError::invalid(
                path::index(&at("categories"), i),
                c,
                e.join(","),
            ));
        }
    }
    errs
}

/// The NonStructuralSchema condition the controller sets (calculateCondition in
/// pkg/controller/nonstructuralschema): `None` when every schema is structural.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NonStructuralCondition {
    /// `True` for violations, `Unknown` when a schema could not be read.
    pub(crate) status: &'static str,
    /// `Violations` or `StructuralError`.
    pub(crate) reason: &'static str,
    /// The aggregated error text, as upstream formats it.
    pub(crate) message: String,
}

/// calculateCondition: which NonStructuralSchema condition `crd` (a v1 object, not
/// converted) should carry.
pub(crate) fn non_structural_condition(
    crd: &CustomResourceDefinition,
) -> Option<NonStructuralCondition> {
    let mut errs = Vec::new();
    if crd.spec.preserve_unknown_fields == Some(true) {
        errs.push(FieldError::invalid_raw(
            "spec.preserveUnknownFields",
            true,
            "must be false",
        ));
    }
    for (i, v) in crd.spec.versions.iter().enumerate() {
        let Some(schema) = v
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref())
        else {
            continue;
        };
        match structural::Structural::new(schema) {
            Err(e) => {
                return Some(NonStructuralCondition {
                    status: "Unknown",
                    reason: "StructuralError",
                    message: format!(
                        "failed to check validation schema for version {}: {e}",
                        v.name
                    ),
                });
            }
            Ok(ss) => {
                let at = format!("spec.versions[{i}].schema.openAPIV3Schema");
                errs.extend(structural::validate_structural(&at, &ss));
            }
        }
    }
    if errs.is_empty() {
        return None;
    }
    Some(NonStructuralCondition {
        status: "True",
        reason: "Violations",
        message: aggregate(&errs),
    })
}

/// ErrorList.ToAggregate().Error(): duplicates dropped, one error bare, more in `[a, b]`.
fn aggregate(errs: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errs {
        let s = e.to_string();
        if !seen.contains(&s) {
            seen.push(s);
        }
    }
    if seen.len() == 1 {
        seen.remove(0)
    } else {
        format!("[{}]", seen.join(", "))
    }
}
