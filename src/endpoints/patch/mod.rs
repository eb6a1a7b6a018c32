//! PATCH bodies (k8s.io/apiserver pkg/endpoints/handlers/patch.go): the four patch media types
//! and applying JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch to
//! the current object. Server-side apply lives in `endpoints::apply`.
//! May use: api.

pub(crate) mod meta;
mod strategic;

use crate::api::GroupVersionKind;
use serde_json::Value;

/// The most operations a JSON patch may carry (maxJSONPatchOperations in patch.go).
const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// The PATCH media types kube-apiserver accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`.
    StrategicMerge,
    /// `application/apply-patch+yaml` (server-side apply).
    Apply,
}

impl PatchType {
    /// Every accepted media type, in the order kube-apiserver lists them in its 415 message.
    pub(crate) const MEDIA_TYPES: [&'static str; 4] = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ];

    /// The media types a custom resource accepts (no strategic merge patch), in
    /// apiextensions-apiserver's order.
    pub(crate) const CUSTOM_MEDIA_TYPES: [&'static str; 3] = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/apply-patch+yaml",
    ];

    /// The patch type of a Content-Type header value; parameters such as `;charset=utf-8` are
    /// ignored. `None` for anything else ([`PatchError::UnsupportedMediaType`]).
    pub(crate) fn from_content_type(content_type: &str) -> Option<PatchType> {
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase();
        match essence.as_str() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::StrategicMerge),
            "application/apply-patch+yaml" => Some(PatchType::Apply),
            _ => None,
        }
    }
}

/// A patch that could not be applied. The message is the Status message; the Status code
/// and reason of each variant are chosen in endpoints/status.rs.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum PatchError {
    /// The patch itself is malformed (BadRequest).
    #[error("{0}")]
    BadRequest(String),
    /// The patch is well-formed but cannot be applied, or its result is invalid (Invalid).
    #[error("{0}")]
    Invalid(String),
    /// A JSON patch with more operations than allowed (RequestEntityTooLarge).
    #[error("The allowed maximum operations in a JSON patch is {max}, got {got}")]
    TooManyOperations {
        /// The limit.
        max: usize,
        /// The number of operations sent.
        got: usize,
    },
    /// A Content-Type that is no patch type (UnsupportedMediaType; the message of
    /// apimachinery's NewUnsupportedMediaTypeError, listing the accepted types).
    #[error("the body of the request was in an unknown format - accepted media types include: {}", PatchType::MEDIA_TYPES.join(", "))]
    UnsupportedMediaType,
    /// A strategic merge patch of a custom resource, which has no patch strategies
    /// (UnsupportedMediaType, listing the types custom resources accept).
    #[error("the body of the request was in an unknown format - accepted media types include: {}", PatchType::CUSTOM_MEDIA_TYPES.join(", "))]
    UnsupportedMediaTypeForCustom,
}

impl PatchError {
    /// [`PatchError::BadRequest`].
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        PatchError::BadRequest(message.into())
    }

    /// [`PatchError::Invalid`].
    pub(crate) fn invalid(message: impl Into<String>) -> Self {
        PatchError::Invalid(message.into())
    }

    /// [`PatchError::UnsupportedMediaType`].
    pub(crate) fn unsupported_media_type() -> Self {
        PatchError::UnsupportedMediaType
    }
}

/// Applies `patch` of `patch_type` to `current` (an object of kind `gvk`) and returns the
/// patched object. [`PatchType::Apply`] is not a patch in this sense: use
/// `endpoints::apply::server_side_apply`; passing it here is
/// [`PatchError::UnsupportedMediaType`].
///
/// # Errors
/// [`PatchError::BadRequest`] for malformed patch bodies, [`PatchError::TooManyOperations`]
/// for JSON patches over 10,000 operations, [`PatchError::Invalid`] when the operations cannot
/// be applied (a failed `test`, a missing path) or the result is no object.
pub(crate) fn apply_patch(
    patch_type: PatchType,
    current: &Value,
    patch: &[u8],
    gvk: &GroupVersionKind,
) -> Result<Value, PatchError> {
    let patched = match patch_type {
        PatchType::Json => apply_json_patch(current, patch)?,
        PatchType::Merge => {
            let patch: Value = parse_json(patch)?;
            let mut doc = current.clone();
            json_patch::merge(&mut doc, &patch);
            doc
        }
        PatchType::StrategicMerge => {
            let patch = match parse_json(patch)? {
                Value::Object(m) => m,
                other => {
                    return Err(PatchError::bad_request(format!(
                        "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
                        json_type_name(&other)
                    )))
                }
            };
            strategic::apply(current, patch, gvk)?
        }
        PatchType::Apply => return Err(PatchError::unsupported_media_type()),
    };
    if !patched.is_object() {
        return Err(PatchError::invalid(format!(
            "the patched object is a {}, not an object",
            json_type_name(&patched)
        )));
    }
    Ok(patched)
}

fn apply_json_patch(current: &Value, patch: &[u8]) -> Result<Value, PatchError> {
    let raw = parse_json(patch)?;
    let ops_len = raw.as_array().map(Vec::len).unwrap_or(0);
    let ops: json_patch::Patch =
        serde_json::from_value(raw).map_err(|e| PatchError::bad_request(e.to_string()))?;
    if ops_len > MAX_JSON_PATCH_OPERATIONS {
        return Err(PatchError::TooManyOperations {
            max: MAX_JSON_PATCH_OPERATIONS,
            got: ops_len,
        });
    }
    let mut doc = current.clone();
    json_patch::patch(&mut doc, &ops).map_err(|e| PatchError::invalid(e.to_string()))?;
    Ok(doc)
}

fn parse_json(bytes: &[u8]) -> Result<Value, PatchError> {
    serde_json::from_slice(bytes).map_err(|e| PatchError::bad_request(e.to_string()))
}

fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests;
