//! v1 Secrets (pkg/registry/core/secret): stringData folded into data, default type Opaque,
//! immutable type and `immutable`, the `type` field selector, the Name/Type/Data/Age table.
//! May use: registry (strategy), api.

use super::configmaps::{validate_data_maps, validate_immutable};
use crate::api::protobuf::{base64_values, message, metadata, Obj, ProtobufError};
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, len_at, name_of, str_at, typed_roundtrip, Column, Input, ResourceInfo, Strategy,
    AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use crate::registry::strategy::{schema_of, text, KindSchema, Names};
use crate::serviceaccount::legacy::{
    NAME_ANNOTATION as SERVICE_ACCOUNT_NAME, SECRET_TYPE as SERVICE_ACCOUNT_TOKEN,
};
use base64::Engine;
use k8s_pb::api::core;
use serde_json::{Map, Value};

/// What discovery reports for secrets.
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: text(""),
    version: text("v1"),
    resource: text("secrets"),
    singular: text("secret"),
    kind: text("Secret"),
    namespaced: true,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<k8s_openapi::api::core::v1::Secret>),
    protobuf: Some(from_protobuf),
};

/// The secret strategy.
pub(crate) struct Secrets;

/// Moves `stringData` into `data` (base64) and defaults `type`, as the v1 conversion does.
fn fold_string_data(obj: &mut Value) {
    let Some(map) = obj.as_object_mut() else {
        return;
    };
    if let Some(Value::Object(sd)) = map.remove("stringData") {
        let data = map
            .entry("data")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(data) = data.as_object_mut() {
            for (k, v) in sd {
                let s = v.as_str().unwrap_or("");
                data.insert(
                    k,
                    Value::from(base64::engine::general_purpose::STANDARD.encode(s)),
                );
            }
        }
    }
    if map
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        map.insert("type".into(), Value::from("Opaque"));
    }
}

impl Strategy for Secrets {
    fn info(&self) -> &ResourceInfo {
        &INFO
    }
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        typed_roundtrip::<k8s_openapi::api::core::v1::Secret>(obj)
    }
    fn prepare_for_create(&self, obj: &mut Value) {
        fold_string_data(obj);
    }
    fn prepare_for_update(&self, new: &mut Value, _old: &Value) {
        fold_string_data(new);
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = validate_data_maps(obj, &["data"], &[]);
        errs.extend(validate_type(obj));
        errs
    }
    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = validate_immutable(new, old, &["data"]);
        let (nt, ot) = (str_at(new, "/type"), str_at(old, "/type"));
        if nt != ot {
            errs.push(FieldError::invalid("type", nt, "field is immutable"));
        }
        errs.extend(self.validate(new));
        errs
    }
    fn supports_field(&self, field: &str) -> bool {
        field == "type"
    }
    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        (field == "type").then(|| str_at(obj, "/type").to_string())
    }
    fn columns(&self) -> Vec<Column> {
        vec![
            NAME_COLUMN,
            col("Type", "string", "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"),
            col("Data", "string", "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"),
            AGE_COLUMN,
        ]
    }
    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_of(obj).into(),
            str_at(obj, "/type").into(),
            Value::from(len_at(obj, "/data") as i64),
            age_of(obj),
        ]
    }
}

/// The keys each well-known secret type requires (ValidateSecret's switch on the type).
fn validate_type(obj: &Value) -> Vec<FieldError> {
    let data = obj.get("data").and_then(Value::as_object);
    let has = |key: &str| data.is_some_and(|d| d.contains_key(key));
    let bytes = |key: &str| {
        data.and_then(|d| d.get(key))
            .and_then(Value::as_str)
            .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
            .unwrap_or_default()
    };
    let required = |key: &str| FieldError::required(format!("data[{key}]"), "");
    let json_object = |key: &str| -> Vec<FieldError> {
        if !has(key) {
            return vec![required(key)];
        }
        match serde_json::from_slice::<Map<String, Value>>(&bytes(key)) {
            Ok(_) => Vec::new(),
            Err(e) => vec![FieldError::invalid(
                format!("data[{key}]"),
                "<secret contents redacted>",
                e.to_string(),
            )],
        }
    };
    match str_at(obj, "/type") {
        SERVICE_ACCOUNT_TOKEN => {
            let named = obj
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(SERVICE_ACCOUNT_NAME))
                .and_then(Value::as_str)
                .is_some_and(|n| !n.is_empty());
            if named {
                Vec::new()
            } else {
                vec![FieldError::required(
                    format!("metadata.annotations[{SERVICE_ACCOUNT_NAME}]"),
                    "",
                )]
            }
        }
        "kubernetes.io/dockercfg" => json_object(".dockercfg"),
        "kubernetes.io/dockerconfigjson" => json_object(".dockerconfigjson"),
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => {
            vec![required("username"), required("password")]
        }
        "kubernetes.io/ssh-auth" if bytes("ssh-privatekey").is_empty() => {
            vec![required("ssh-privatekey")]
        }
        "kubernetes.io/tls" => ["tls.crt", "tls.key"]
            .into_iter()
            .filter(|k| !has(k))
            .map(required)
            .collect(),
        _ => Vec::new(),
    }
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(secret(message::<core::v1::Secret>(raw, "Secret")?).into_map())
}

fn secret(s: core::v1::Secret) -> Obj {
    let data = base64_values(&s.data);
    metadata(&s.metadata)
        .opt_bool("immutable", s.immutable)
        .str_map("data", &data)
        .str_map("stringData", &s.string_data)
        .str("type", &s.r#type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn messages(obj: Value) -> Vec<String> {
        Secrets
            .validate(&obj)
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn well_known_types_require_their_keys() {
        assert_eq!(
            messages(
                json!({"metadata": {"name": "t"}, "type": "kubernetes.io/service-account-token"})
            ),
            ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]
        );
        assert!(messages(json!({"metadata": {"name": "t", "annotations": {
            "kubernetes.io/service-account.name": "builder"}},
            "type": "kubernetes.io/service-account-token"}))
        .is_empty());
        assert_eq!(
            messages(json!({"type": "kubernetes.io/tls", "data": {"tls.crt": ""}})),
            ["data[tls.key]: Required value"]
        );
        assert_eq!(
            messages(json!({"type": "kubernetes.io/basic-auth"})),
            [
                "data[username]: Required value",
                "data[password]: Required value"
            ]
        );
        assert!(
            messages(json!({"type": "kubernetes.io/basic-auth", "data": {"password": ""}}))
                .is_empty()
        );
        assert_eq!(
            messages(json!({"type": "kubernetes.io/ssh-auth"})),
            ["data[ssh-privatekey]: Required value"]
        );
        let not_json = base64::engine::general_purpose::STANDARD.encode("nope");
        let errs = messages(json!({"type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": not_json}}));
        assert_eq!(errs.len(), 1);
        assert!(errs[0].starts_with(
            "data[.dockerconfigjson]: Invalid value: \"<secret contents redacted>\": "
        ));
        assert!(messages(json!({"type": "Opaque"})).is_empty());
    }
}
