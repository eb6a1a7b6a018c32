//! v1 ConfigMaps (pkg/registry/core/configmap): config-key validation, the 1 MiB data limit,
//! `immutable`, and the Name/Data/Age table. May use: registry (strategy), api.

use crate::api::protobuf::{base64_values, message, metadata, Obj, ProtobufError};
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, len_at, name_of, typed_roundtrip, Column, Input, ResourceInfo, Strategy,
    AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use crate::registry::strategy::{schema_of, text, KindSchema, Names};
use k8s_pb::api::core;
use serde_json::{Map, Value};

/// What discovery reports for configmaps.
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: text(""),
    version: text("v1"),
    resource: text("configmaps"),
    singular: text("configmap"),
    kind: text("ConfigMap"),
    namespaced: true,
    short_names: Names::Static(&["cm"]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<k8s_openapi::api::core::v1::ConfigMap>),
    protobuf: Some(from_protobuf),
};

/// MaxConfigMapSize / MaxSecretSize.
pub(crate) const MAX_DATA_BYTES: usize = 1024 * 1024;

const CONFIG_KEY_MSG: &str = "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";

/// IsConfigMapKey problems.
pub(crate) fn config_key_errors(key: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if key.len() > 253 {
        errs.push("must be no more than 253 characters".to_string());
    }
    if key.is_empty()
        || !key
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
    {
        errs.push(CONFIG_KEY_MSG.to_string());
    }
    if key == "." {
        errs.push("must not be '.'".into());
    } else if key == ".." {
        errs.push("must not be '..'".into());
    } else if key.starts_with("..") {
        errs.push("must not start with '..'".into());
    }
    errs
}

/// Validates the keys of `data` and `binaryData`-like maps and their total size.
pub(crate) fn validate_data_maps(obj: &Value, maps: &[&str], binary: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0;
    let mut seen = std::collections::BTreeSet::new();
    for m in maps.iter().chain(binary) {
        if let Some(Value::Object(map)) = obj.get(*m) {
            for (k, v) in map {
                for e in config_key_errors(k) {
                    errs.push(FieldError::invalid(format!("{m}[{k}]"), k, e));
                }
                if !seen.insert(k.clone()) {
                    errs.push(FieldError::invalid(
                        format!("{m}[{k}]"),
                        k,
                        format!("duplicate of key present in {}", maps[0]),
                    ));
                }
                total += v.as_str().map_or(0, str::len);
            }
        }
    }
    if total > MAX_DATA_BYTES {
        errs.push(FieldError::too_long("", MAX_DATA_BYTES));
    }
    errs
}

/// The immutable-object rule shared with secrets.
pub(crate) fn validate_immutable(new: &Value, old: &Value, fields: &[&str]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if old.get("immutable").and_then(Value::as_bool) == Some(true) {
        if new.get("immutable").and_then(Value::as_bool) != Some(true) {
            errs.push(FieldError::forbidden(
                "immutable",
                "field is immutable when `immutable` is set",
            ));
        }
        for f in fields {
            if new.get(*f) != old.get(*f) {
                errs.push(FieldError::forbidden(
                    *f,
                    "field is immutable when `immutable` is set",
                ));
            }
        }
    }
    errs
}

/// The configmap strategy.
pub(crate) struct ConfigMaps;

impl Strategy for ConfigMaps {
    fn info(&self) -> &ResourceInfo {
        &INFO
    }
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        typed_roundtrip::<k8s_openapi::api::core::v1::ConfigMap>(obj)
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_data_maps(obj, &["data"], &["binaryData"])
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_immutable(new, old, &["data", "binaryData"]);
        errs.extend(self.validate(new));
        errs
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            NAME_COLUMN,
            col("Data", "string", "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process."),
            AGE_COLUMN,
        ]
    }
    fn cells(&self, obj: &Value) -> Vec<Value> {
        let n = len_at(obj, "/data") + len_at(obj, "/binaryData");
        vec![name_of(obj).into(), Value::from(n as i64), age_of(obj)]
    }
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(config_map(message::<core::v1::ConfigMap>(raw, "ConfigMap")?).into_map())
}

fn config_map(c: core::v1::ConfigMap) -> Obj {
    let binary = base64_values(&c.binary_data);
    metadata(&c.metadata)
        .opt_bool("immutable", c.immutable)
        .str_map("data", &c.data)
        .str_map("binaryData", &binary)
}
