//! What upstream validates: the *internal* CustomResourceDefinition that kube-apiserver makes
//! from a v1 object by defaulting it (SetObjectDefaults_CustomResourceDefinition) and converting
//! it (Convert_v1_CustomResourceDefinitionSpec_To_apiextensions_CustomResourceDefinitionSpec).
//! The conversion matters for the messages: `spec.version` is copied from `versions[0]`, a
//! per-version schema, subresources, column list or selectable-field list that is identical in
//! every version moves to the top level (so its errors say `spec.validation.openAPIV3Schema...`,
//! not `spec.versions[0].schema...`), and `conversion.webhook.clientConfig` becomes
//! `conversion.webhookClientConfig`. [`Spec`] borrows the v1 object in that shape.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceConversion, CustomResourceDefinition,
    CustomResourceDefinitionCondition, CustomResourceDefinitionNames,
    CustomResourceDefinitionStatus, CustomResourceSubresources, CustomResourceValidation,
    JSONSchemaProps, SelectableField, WebhookClientConfig,
};

use super::gojson;

/// SetObjectDefaults_CustomResourceDefinition (v1): singular and listKind from kind, conversion
/// strategy None, the webhook service port 443, and status.storedVersions from the storage
/// version when empty. Idempotent.
pub(crate) fn set_defaults(crd: &mut CustomResourceDefinition) {
    let spec = &mut crd.spec;
    if spec.names.singular.as_deref().unwrap_or("").is_empty() {
        let singular = spec.names.kind.to_lowercase();
        spec.names.singular = (!singular.is_empty()).then_some(singular);
    }
    if spec.names.list_kind.as_deref().unwrap_or("").is_empty() && !spec.names.kind.is_empty() {
        spec.names.list_kind = Some(format!("{}List", spec.names.kind));
    }
    let conversion = spec
        .conversion
        .get_or_insert_with(|| CustomResourceConversion {
            strategy: "None".into(),
            webhook: None,
        });
    if let Some(service) = conversion
        .webhook
        .as_mut()
        .and_then(|w| w.client_config.as_mut())
        .and_then(|c| c.service.as_mut())
    {
        service.port.get_or_insert(443);
    }
    let stored_empty = crd
        .status
        .as_ref()
        .and_then(|s| s.stored_versions.as_ref())
        .is_none_or(Vec::is_empty);
    if stored_empty {
        if let Some(v) = crd.spec.versions.iter().find(|v| v.storage) {
            let status = crd
                .status
                .get_or_insert_with(CustomResourceDefinitionStatus::default);
            status
                .stored_versions
                .get_or_insert_with(Vec::new)
                .push(v.name.clone());
        }
    }
}

/// The internal CustomResourceDefinitionSpec, borrowed from a (defaulted) v1 spec.
pub(super) struct Spec<'a> {
    pub(super) group: &'a str,
    /// `spec.version`: the first version's name.
    pub(super) version: &'a str,
    pub(super) names: &'a CustomResourceDefinitionNames,
    pub(super) scope: &'a str,
    /// `spec.validation`: the schema when every version has the same one.
    pub(super) validation: Option<&'a CustomResourceValidation>,
    pub(super) subresources: Option<&'a CustomResourceSubresources>,
    pub(super) versions: Vec<Version<'a>>,
    pub(super) columns: Option<&'a [CustomResourceColumnDefinition]>,
    pub(super) selectable_fields: Option<&'a [SelectableField]>,
    pub(super) conversion: Option<Conversion<'a>>,
    pub(super) preserve_unknown_fields: Option<bool>,
}

/// The internal CustomResourceDefinitionVersion; shared fields moved to [`Spec`] are `None`.
pub(super) struct Version<'a> {
    pub(super) name: &'a str,
    pub(super) served: bool,
    pub(super) storage: bool,
    pub(super) deprecated: bool,
    pub(super) deprecation_warning: Option<&'a str>,
    pub(super) schema: Option<&'a CustomResourceValidation>,
    pub(super) subresources: Option<&'a CustomResourceSubresources>,
    pub(super) columns: Option<&'a [CustomResourceColumnDefinition]>,
    pub(super) selectable_fields: Option<&'a [SelectableField]>,
}

/// The internal CustomResourceConversion (webhook settings flattened).
pub(super) struct Conversion<'a> {
    pub(super) strategy: &'a str,
    pub(super) webhook_client_config: Option<&'a WebhookClientConfig>,
    pub(super) conversion_review_versions: &'a [String],
}

/// All equal under apimachinery's semantic equality (nil and empty lists are equal).
fn all_same<T: PartialEq>(items: &[T]) -> bool {
    items.windows(2).all(|w| w[0] == w[1])
}

impl<'a> Spec<'a> {
    /// The conversion of a v1 spec (Convert_v1_CustomResourceDefinitionSpec_To_...).
    pub(super) fn new(crd: &'a CustomResourceDefinition) -> Self {
        let s = &crd.spec;
        let vs = &s.versions;
        let schemas: Vec<_> = vs.iter().map(|v| v.schema.as_ref()).collect();
        let subs: Vec<_> = vs.iter().map(|v| v.subresources.as_ref()).collect();
        let cols: Vec<&[CustomResourceColumnDefinition]> = vs
            .iter()
            .map(|v| v.additional_printer_columns.as_deref().unwrap_or(&[]))
            .collect();
        let sels: Vec<&[SelectableField]> = vs
            .iter()
            .map(|v| v.selectable_fields.as_deref().unwrap_or(&[]))
            .collect();
        // With no versions nothing moves (the Go code returns early).
        let any = !vs.is_empty();
        let (same_schema, same_subs, same_cols, same_sels) = (
            any && all_same(&schemas),
            any && all_same(&subs),
            any && all_same(&cols),
            any && all_same(&sels),
        );
        let first = vs.first();
        let versions = vs
            .iter()
            .map(|v| Version {
                name: &v.name,
                served: v.served,
                storage: v.storage,
                deprecated: v.deprecated.unwrap_or(false),
                deprecation_warning: v.deprecation_warning.as_deref(),
                schema: if same_schema { None } else { v.schema.as_ref() },
                subresources: if same_subs {
                    None
                } else {
                    v.subresources.as_ref()
                },
                columns: if same_cols {
                    None
                } else {
                    v.additional_printer_columns.as_deref()
                },
                selectable_fields: if same_sels {
                    None
                } else {
                    v.selectable_fields.as_deref()
                },
            })
            .collect();
        Spec {
            group: &s.group,
            version: first.map_or("", |v| v.name.as_str()),
            names: &s.names,
            scope: &s.scope,
            validation: first
                .filter(|_| same_schema)
                .and_then(|v| v.schema.as_ref()),
            subresources: first
                .filter(|_| same_subs)
                .and_then(|v| v.subresources.as_ref()),
            versions,
            columns: first
                .filter(|_| same_cols)
                .and_then(|v| v.additional_printer_columns.as_deref()),
            selectable_fields: first
                .filter(|_| same_sels)
                .and_then(|v| v.selectable_fields.as_deref()),
            conversion: s.conversion.as_ref().map(|c| Conversion {
                strategy: &c.strategy,
                webhook_client_config: c.webhook.as_ref().and_then(|w| w.client_config.as_ref()),
                conversion_review_versions: c
                    .webhook
                    .as_ref()
                    .map_or(&[][..], |w| w.conversion_review_versions.as_slice()),
            }),
            preserve_unknown_fields: s.preserve_unknown_fields,
        }
    }

    /// Every schema of the spec: the top-level one, then each version's (HasSchemaWith).
    pub(super) fn schemas(&self) -> impl Iterator<Item = &'a JSONSchemaProps> + '_ {
        self.validation
            .into_iter()
            .chain(self.versions.iter().filter_map(|v| v.schema))
            .filter_map(|v| v.open_api_v3_schema.as_ref())
    }

    /// `spec.versions` as field.Invalid prints it (Go JSON of the internal versions).
    pub(super) fn versions_json(&self) -> String {
        if self.versions.is_empty() {
            // A missing list decodes to nil in Go; k8s-openapi cannot tell it from `[]`.
            return "null".into();
        }
        let list: Vec<String> = self
            .versions
            .iter()
            .map(|v| {
                gojson::object(&[
                    ("Name", gojson::string(v.name)),
                    ("Served", gojson::boolean(v.served)),
                    ("Storage", gojson::boolean(v.storage)),
                    ("Deprecated", gojson::boolean(v.deprecated)),
                    (
                        "DeprecationWarning",
                        gojson::opt_string(v.deprecation_warning),
                    ),
                    ("Schema", gojson::validation(v.schema)),
                    ("Subresources", gojson::subresources(v.subresources)),
                    ("AdditionalPrinterColumns", gojson::columns(v.columns)),
                    (
                        "SelectableFields",
                        gojson::selectable_fields(v.selectable_fields),
                    ),
                ])
            })
            .collect();
        format!("[{}]", list.join(","))
    }
}

/// Whether a condition of the type is present with status True (IsCRDConditionTrue).
pub(super) fn condition_true(crd: &CustomResourceDefinition, type_: &str) -> bool {
    conditions(crd)
        .iter()
        .find(|c| c.type_ == type_)
        .is_some_and(|c| c.status == "True")
}

fn conditions(crd: &CustomResourceDefinition) -> &[CustomResourceDefinitionCondition] {
    crd.status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or(&[])
}
