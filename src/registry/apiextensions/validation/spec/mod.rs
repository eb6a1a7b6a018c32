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

mod parts;
mod predicates;

use parts::*;
pub(super) use predicates::*;

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &str = "byte,date,date-time,double,float,int32,int64,password";
const ACCEPTED_REVIEW_VERSIONS: [&str; 2] = ["v1", "v1beta1"];

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
        spec.version,
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
