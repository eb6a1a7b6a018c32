//! `application/vnd.kubernetes.protobuf` request bodies (k8s.io/apimachinery
//! pkg/runtime/serializer/protobuf): the `k8s\0` magic, the runtime.Unknown envelope, and the
//! object in `raw` decoded with the k8s-pb message of its kind, then turned into the JSON object
//! kube would produce from the same Go value (camelCase names, empty optionals omitted, times
//! as RFC 3339, bytes as base64). client-go typed clients send these bodies for built-in kinds
//! (kubectl create configmap, auth whoami, auth can-i). Only request bodies are decoded;
//! responses stay JSON, which those clients accept as their second choice.
//! May use: api.

use crate::api::protobuf::{delete_options_from_protobuf, ProtobufError, MAGIC};
use crate::api::GroupVersionKind;
use crate::registry::resources::protobuf_decoder;
use prost::Message;
use serde_json::{Map, Value};

/// Decodes a protobuf request body into the JSON object of its kind. The kind comes from the
/// envelope's typeMeta, or from `gvk_hint` (the URL's kind) when the envelope leaves it empty;
/// `apiVersion` and `kind` of the result are always set, so the caller can compare them with
/// the URL like it does for JSON bodies.
///
/// # Errors
/// [`ProtobufError`] for a missing magic prefix, malformed protobuf or an unserved kind.
pub(crate) fn decode(bytes: &[u8], gvk_hint: &GroupVersionKind) -> Result<Value, ProtobufError> {
    let body = bytes
        .strip_prefix(MAGIC.as_slice())
        .ok_or(ProtobufError::MissingMagic)?;
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(body).map_err(|e| {
        ProtobufError::Malformed {
            what: "runtime.Unknown".into(),
            detail: e.to_string(),
        }
    })?;
    if let Some(ct) = unknown.content_type.as_deref().filter(|ct| !ct.is_empty()) {
        if ct != "application/vnd.kubernetes.protobuf" {
            return Err(ProtobufError::UnsupportedContentType(ct.into()));
        }
    }
    let tm = unknown.type_meta.unwrap_or_default();
    let gvk = match (tm.api_version.as_deref(), tm.kind.as_deref()) {
        (Some(av), Some(kind)) if !av.is_empty() && !kind.is_empty() => {
            GroupVersionKind::from_api_version_kind(av, kind)
        }
        _ => gvk_hint.clone(),
    };
    let raw = unknown.raw.unwrap_or_default();
    let body = decode_kind(&gvk, &raw)?;
    let mut out = Map::new();
    out.insert("kind".into(), Value::String(gvk.kind.clone()));
    out.insert("apiVersion".into(), Value::String(gvk.api_version()));
    out.extend(body);
    Ok(Value::Object(out))
}

fn decode_kind(gvk: &GroupVersionKind, raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    if gvk.version == "v1" && gvk.kind == "DeleteOptions" {
        return delete_options_from_protobuf(raw);
    }
    let decoder = protobuf_decoder(gvk).ok_or_else(|| ProtobufError::UnknownKind {
        api_version: gvk.api_version(),
        kind: gvk.kind.clone(),
    })?;
    decoder(raw)
}

#[cfg(test)]
mod tests;
