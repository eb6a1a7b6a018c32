//! The parts of a CRD spec validated on their own: subresources, printer columns, versions,
//! deprecation warnings, selectable fields and conversion.

use super::*;

/// validateEnumStrings.
pub(super) fn enum_string(fld: &str, v: &str, accepted: &[&str], errs: &mut Vec<FieldError>) {
    if v.is_empty() {
        errs.push(FieldError::required(fld, ""));
    } else if !accepted.contains(&v) {
        errs.push(FieldError::not_supported(fld, v, accepted));
    }
}

/// validateSimpleJSONPath.
pub(super) fn simple_json_path(s: &str, fld: &str) -> Option<FieldError> {
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
pub(super) fn validate_subresources(
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
pub(super) fn validate_column(
    c: &CustomResourceColumnDefinition,
    fld: &str,
    errs: &mut Vec<FieldError>,
) {
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
pub(super) fn is_print(c: char) -> bool {
    !c.is_control()
        && (c == ' ' || !c.is_whitespace())
        && !matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// validateDeprecationWarning.
pub(super) fn deprecation_warning_errors(deprecated: bool, warning: Option<&str>) -> Vec<String> {
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
pub(super) fn selectable_fields(
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
pub(super) fn validate_version(
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
        v.name,
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
pub(super) fn validate_review_versions(
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
pub(super) fn validate_conversion(
    c: &Conversion<'_>,
    opts: &Options,
    fld: &str,
    errs: &mut Vec<FieldError>,
) {
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
