//! One served version of a CustomResourceDefinition as a [`Strategy`] over the generic store
//! (apiextensions-apiserver's customResourceStrategy and the codecs of its crdHandler):
//! decoding prunes and defaults by the version's structural schema, validation reports
//! the schema's violations, the status subresource splits writes as upstream's, objects are
//! stored at the storage version (conversion `None`: the apiVersion is rewritten), and the
//! Table has the version's additionalPrinterColumns.
//! May use: registry (strategy, error, codec), api.

use super::cel::Rules;
use super::conversion::Converter;
use super::schema::{CoerceOptions, Schema};
use super::serving::compare_versions;
use crate::api::At;
use crate::registry::admission::Equivalents;
use crate::registry::error::{Error, FieldError};
use crate::registry::strategy::{
    since, status_update, text, typed_roundtrip, Column, CustomSchema, Input, KindSchema, Names,
    ResourceInfo, ScalePaths, Strategy, Text, AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use crate::registry::Warnings;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionVersion, JSONSchemaProps,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::{Map, Value};
use std::sync::{Arc, LazyLock, OnceLock};

/// Subresource sets a custom resource can have.
const STATUS: &[(&str, &[&str])] = &[("status", &["get", "patch", "update"])];
const SCALE: &[(&str, &[&str])] = &[("scale", &["get", "patch", "update"])];
const STATUS_AND_SCALE: &[(&str, &[&str])] = &[
    ("status", &["get", "patch", "update"]),
    ("scale", &["get", "patch", "update"]),
];

/// The shape every custom object decodes into first: TypeMeta, ObjectMeta (canonicalized
/// as for every kind, with its unknown fields reported), and the rest left to the schema.
#[derive(serde::Deserialize, serde::Serialize)]
struct CustomObject {
    #[serde(rename = "apiVersion", skip_serializing_if = "Option::is_none")]
    api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    kind: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    metadata: Option<ObjectMeta>,
    #[serde(flatten)]
    rest: Map<String, Value>,
}

/// An additionalPrinterColumn: its header and where its value is.
struct PrinterColumn {
    column: Column,
    path: Option<Arc<serde_json_path::JsonPath>>,
}

/// The Age column's path, parsed once for every CRD that defines no columns.
static AGE_PATH: LazyLock<Option<Arc<serde_json_path::JsonPath>>> = LazyLock::new(|| {
    serde_json_path::JsonPath::parse("$.metadata.creationTimestamp")
        .ok()
        .map(Arc::new)
});

/// A version's schema, compiled on first use: a CRD's schema stays text until an object of
/// the kind is read or written (2,000 CRDs compiled up front held ~22 MB, most of them for
/// kinds nobody had used yet).
struct LazySchema {
    /// The schema as text; None for a version without one.
    source: Option<Arc<CustomSchema>>,
    compiled: OnceLock<Option<Schema>>,
}

impl LazySchema {
    fn new(source: Option<Arc<CustomSchema>>) -> LazySchema {
        LazySchema {
            source,
            compiled: OnceLock::new(),
        }
    }

    fn get(&self) -> Option<&Schema> {
        let compile = || {
            // The text is what serde wrote of these props when the CRD was read, so it reads
            // back; were it ever not to, the kind would go unvalidated, which must not pass
            // unnoticed.
            let text = self.source.as_ref()?.text();
            match serde_json::from_str::<JSONSchemaProps>(text) {
                Ok(props) => Some(Schema::compile(&props)),
                Err(e) => {
                    tracing::error!(error = %e, "a CRD schema kept as text does not read back; its objects are not validated");
                    None
                }
            }
        };
        self.compiled.get_or_init(compile).as_ref()
    }
}

/// One served version of a CRD.
pub(crate) struct CustomResource {
    info: ResourceInfo,
    /// `<group>/<storage version>`: what is written to storage.
    storage_api_version: String,
    /// `<group>/<this version>`.
    api_version: String,
    /// How objects change version (shared by the CRD's versions).
    converter: Arc<Converter>,
    /// The CRD's served versions, when it serves more than one (what admission webhooks'
    /// matchPolicy Equivalent matches).
    served: Vec<String>,
    schema: LazySchema,
    /// The storage version's schema, when that is another version: what a conversion to
    /// storage prunes by.
    storage_schema: LazySchema,
    /// The schema's CEL rules, if it has any.
    rules: Option<Rules>,
    status: bool,
    columns: Vec<PrinterColumn>,
    /// selectableFields, as field labels (`spec.color`).
    selectable: Vec<String>,
    /// The CRD is being deleted: creates are refused.
    terminating: bool,
    scale: Option<ScalePaths>,
    /// A deprecated version's Warning.
    deprecation: Option<String>,
}

impl CustomResource {
    /// The strategy of `version` of `crd`, named by the CRD's accepted names, converting
    /// with `converter` (the CRD's).
    pub(crate) fn new(
        crd: &CustomResourceDefinition,
        version: &CustomResourceDefinitionVersion,
        terminating: bool,
        converter: Arc<Converter>,
    ) -> CustomResource {
        let spec = &crd.spec;
        let names = crd
            .status
            .as_ref()
            .and_then(|s| s.accepted_names.clone())
            .filter(|n| !n.plural.is_empty())
            .unwrap_or_else(|| spec.names.clone());
        let subs = version.subresources.as_ref();
        let status = subs.is_some_and(|s| s.status.is_some());
        let scale = subs.is_some_and(|s| s.scale.is_some());
        let props = version
            .schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_ref());
        let schema_json = props
            .and_then(|p| serde_json::to_value(p).ok())
            .unwrap_or_else(|| serde_json::json!({"type": "object"}));
        let storage_version = spec.versions.iter().find(|v| v.storage);
        let storage = storage_version.map_or(version.name.as_str(), |v| v.name.as_str());
        let storage_schema = storage_version
            .filter(|v| v.name != version.name)
            .and_then(|v| v.schema.as_ref())
            .and_then(|s| s.open_api_v3_schema.as_ref())
            .and_then(|p| serde_json::to_value(p).ok())
            .map(|v| Arc::new(CustomSchema::new(&v)));
        let text = Arc::new(CustomSchema::new(&schema_json));
        let rules = Rules::compile(&schema_json);
        let served: Vec<String> = spec
            .versions
            .iter()
            .filter(|v| v.served)
            .map(|v| v.name.clone())
            .collect();
        let info = ResourceInfo {
            group: Text::Owned(spec.group.clone()),
            version: Text::Owned(version.name.clone()),
            resource: Text::Owned(names.plural.clone()),
            singular: Text::Owned(
                names
                    .singular
                    .clone()
                    .unwrap_or_else(|| names.kind.to_lowercase()),
            ),
            kind: Text::Owned(names.kind.clone()),
            namespaced: spec.scope == "Namespaced",
            short_names: Names::Owned(names.short_names.clone().unwrap_or_default()),
            categories: Names::Owned(names.categories.clone().unwrap_or_default()),
            verbs: STORED_VERBS,
            subresources: match (status, scale) {
                (false, false) => &[],
                (true, false) => STATUS,
                (false, true) => SCALE,
                (true, true) => STATUS_AND_SCALE,
            },
            schema: KindSchema::Custom(text.clone()),
            protobuf: None,
        };
        CustomResource {
            storage_api_version: format!("{}/{storage}", spec.group),
            api_version: format!("{}/{}", spec.group, version.name),
            converter,
            served: if served.len() > 1 { served } else { Vec::new() },
            schema: LazySchema::new(props.map(|_| text)),
            storage_schema: LazySchema::new(storage_schema),
            rules,
            status,
            columns: printer_columns(version),
            selectable: version
                .selectable_fields
                .iter()
                .flatten()
                .map(|f| f.json_path.trim_start_matches('.').to_string())
                .collect(),
            terminating,
            scale: subs.and_then(|s| s.scale.as_ref()).map(|s| ScalePaths {
                spec_replicas: ScalePaths::fields(&s.spec_replicas_path),
                status_replicas: ScalePaths::fields(&s.status_replicas_path),
                label_selector: s.label_selector_path.as_deref().map(ScalePaths::fields),
            }),
            deprecation: version
                .deprecated
                .unwrap_or(false)
                .then(|| deprecation_warning(crd, version)),
            info,
        }
    }
}

/// Prunes what `schema` does not know from a stored or converted object (which was valid
/// when written, so coercion errors are not reported), dropping an embedded resource's
/// metadata field of the wrong type when `drop_invalid_metadata`.
fn prune(schema: &Schema, obj: &mut Value, drop_invalid_metadata: bool) {
    let opts = CoerceOptions {
        track_unknown: false,
        drop_invalid_metadata,
    };
    let _ = schema.coerce(obj, opts);
}

/// The Warning of a deprecated version: its deprecationWarning, else upstream's default
/// (`<group>/<version> <Kind> is deprecated; use <group>/<newer> <Kind>`).
fn deprecation_warning(
    crd: &CustomResourceDefinition,
    version: &CustomResourceDefinitionVersion,
) -> String {
    if let Some(w) = &version.deprecation_warning {
        return w.clone();
    }
    let spec = &crd.spec;
    let kind = &spec.names.kind;
    let mut msg = format!("{}/{} {kind} is deprecated", spec.group, version.name);
    let newer = spec
        .versions
        .iter()
        .filter(|v| {
            v.served
                && !v.deprecated.unwrap_or(false)
                && compare_versions(&version.name, &v.name).is_gt()
        })
        .map(|v| v.name.as_str())
        .min_by(|a, b| compare_versions(a, b));
    if let Some(n) = newer {
        msg.push_str(&format!("; use {}/{n} {kind}", spec.group));
    }
    msg
}

/// The version's additionalPrinterColumns, or upstream's default (Age).
fn printer_columns(version: &CustomResourceDefinitionVersion) -> Vec<PrinterColumn> {
    let defined = version.additional_printer_columns.as_deref().unwrap_or(&[]);
    if defined.is_empty() {
        let mut age = AGE_COLUMN;
        age.type_ = text("date");
        return vec![PrinterColumn {
            column: age,
            path: AGE_PATH.clone(),
        }];
    }
    defined
        .iter()
        .map(|c| PrinterColumn {
            column: Column {
                name: Text::Owned(c.name.clone()),
                type_: Text::Owned(c.type_.clone()),
                format: Text::Owned(c.format.clone().unwrap_or_default()),
                description: Text::Owned(c.description.clone().unwrap_or_default()),
                priority: c.priority.unwrap_or(0),
            },
            path: serde_json_path::JsonPath::parse(&format!("${}", c.json_path))
                .ok()
                .map(Arc::new),
        })
        .collect()
}

/// A Table cell of a column's value (tableconvertor's cellForJSONValue).
fn cell(type_: &str, value: &Value) -> Value {
    match (type_, value) {
        ("date", Value::String(s)) => Value::from(since(s)),
        ("date", _) => Value::Null,
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("string", Value::String(s)) => Value::from(s.as_str()),
        ("string", Value::Null) => Value::Null,
        ("string", other) => Value::from(other.to_string()),
        (_, Value::String(s)) => Value::from(s.as_str()),
        _ => Value::Null,
    }
}

impl Equivalents for CustomResource {
    fn versions(&self) -> &[String] {
        &self.served
    }

    fn convert(&self, obj: Value, version: &str) -> Result<Value, String> {
        self.converter
            .convert(obj, &format!("{}/{version}", self.info.group))
    }
}

impl Strategy for CustomResource {
    fn info(&self) -> &ResourceInfo {
        &self.info
    }

    fn equivalents(&self) -> Option<&dyn Equivalents> {
        if self.served.is_empty() {
            None
        } else {
            Some(self)
        }
    }

    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        let (mut obj, mut unknown) = typed_roundtrip::<CustomObject>(obj)?;
        if let Some(schema) = self.schema.get() {
            let opts = CoerceOptions {
                track_unknown: true,
                drop_invalid_metadata: false,
            };
            unknown.extend(schema.coerce(&mut obj, opts).map_err(|e| e.to_string())?);
            schema.default(&mut obj);
        }
        Ok((obj, unknown))
    }

    fn prepare_for_create(&self, obj: &mut Value) {
        if self.status {
            if let Some(m) = obj.as_object_mut() {
                m.remove("status");
            }
        }
    }

    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if self.status {
            if let Some(m) = new.as_object_mut() {
                match old.get("status") {
                    Some(s) => m.insert("status".into(), s.clone()),
                    None => m.remove("status"),
                };
            }
        }
    }

    fn prepare_for_subresource_update(&self, sub: &str, new: &mut Value, old: &Value) -> bool {
        if sub == "status" && self.status {
            status_update(new, old);
            return true;
        }
        false
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = self.schema.get().map_or_else(Vec::new, |s| s.validate(obj));
        if let Some(rules) = &self.rules {
            errs.extend(rules.validate(obj, None).errors);
        }
        errs
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        self.validate_update_warning("", new, old, &Warnings::default())
    }

    fn validate_subresource_update(&self, sub: &str, new: &Value, old: &Value) -> Vec<FieldError> {
        self.validate_update_warning(sub, new, old, &Warnings::default())
    }

    fn warnings_on_create(&self, obj: &Value) -> Vec<String> {
        finalizers::warnings(obj, None)
    }

    fn warnings_on_update(&self, new: &Value, old: &Value) -> Vec<String> {
        finalizers::warnings(new, Some(old))
    }

    /// The schema's update validation (of the status subresource's part for `status`), then
    /// the rules, whose ratcheted failures become warnings as upstream's.
    fn validate_update_warning(
        &self,
        sub: &str,
        new: &Value,
        old: &Value,
        warnings: &Warnings,
    ) -> Vec<FieldError> {
        let mut errs = self.schema.get().map_or_else(Vec::new, |s| {
            if sub.is_empty() {
                s.validate_update(new, old)
            } else {
                s.validate_status_update(new, old)
            }
        });
        if let Some(rules) = &self.rules {
            let found = rules.validate(new, Some(old));
            errs.extend(found.errors);
            for r in found.ratcheted {
                warnings.add(r.to_string());
            }
        }
        errs
    }

    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        if !self.supports_field(field) {
            return None;
        }
        let pointer = format!("/{}", field.replace('.', "/"));
        Some(match obj.at(&pointer) {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        })
    }

    fn supports_field(&self, field: &str) -> bool {
        self.selectable.iter().any(|f| f == field)
    }

    fn columns(&self) -> Vec<Column> {
        std::iter::once(NAME_COLUMN)
            .chain(self.columns.iter().map(|c| c.column.clone()))
            .collect()
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        let mut cells = vec![Value::from(crate::registry::strategy::name_of(obj))];
        for c in &self.columns {
            let found = c.path.as_ref().and_then(|p| p.query(obj).first().cloned());
            cells.push(found.map_or(Value::Null, |v| cell(&c.column.type_, &v)));
        }
        cells
    }

    fn to_storage(&self, obj: Value) -> Result<Value, Error> {
        let mut obj = self
            .converter
            .convert(obj, &self.storage_api_version)
            .map_err(Error::Internal)?;
        if let Some(schema) = self.storage_schema.get() {
            // What the storage version does not know is pruned, as upstream's converter
            // coerces its output by the target version's schema.
            prune(schema, &mut obj, false);
        }
        Ok(obj)
    }

    fn to_served(&self, obj: Value) -> Result<Value, Error> {
        let mut obj = self
            .converter
            .convert(obj, &self.api_version)
            .map_err(Error::Internal)?;
        if let Some(schema) = self.schema.get() {
            // Stored objects were valid when written; what a schema change made unknown is
            // pruned and new defaults are filled in, as upstream's storage decoder does.
            prune(schema, &mut obj, true);
            schema.default(&mut obj);
        }
        Ok(obj)
    }

    fn stores_served_form(&self) -> bool {
        self.api_version == self.storage_api_version
    }

    fn uses_generation(&self) -> bool {
        true
    }

    fn deprecation_warning(&self) -> Option<&str> {
        self.deprecation.as_deref()
    }

    fn scale(&self) -> Option<&ScalePaths> {
        self.scale.as_ref()
    }

    fn admit_create(&self) -> Result<(), Error> {
        if self.terminating {
            return Err(Error::MethodNotAllowed {
                group: self.info.group.to_string(),
                resource: self.info.resource.to_string(),
                verb: "create".into(),
                message: Some(
                    "create not allowed while custom resource definition is terminating".into(),
                ),
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod conformance;
mod finalizers;
#[cfg(test)]
mod tests;
