//! AdmissionReview (admission.k8s.io/v1, and v1beta1 for webhooks that accept only it): the
//! request a webhook receives and the checks of its answer (VerifyAdmissionResponse), with
//! upstream's messages.

use super::{Attributes, Request};
use base64::Engine as _;
use serde_json::{json, Map, Value};

/// A webhook's answer, checked.
#[derive(Debug, Default)]
pub(super) struct Answer {
    /// Whether the write may go on.
    pub allowed: bool,
    /// The refusal's status (code, reason, message), when refused.
    pub status: Option<Value>,
    /// A JSON Patch to apply (mutating webhooks).
    pub patch: Option<Vec<u8>>,
    /// Warnings for the client.
    pub warnings: Vec<String>,
}

/// The AdmissionReview sent for `attrs` with `object`, under review `uid`.
pub(super) fn request(
    version: &str,
    uid: &str,
    req: &Request,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
) -> Value {
    let user = &req.user;
    let mut user_info = Map::new();
    user_info.insert("username".into(), user.name.clone().into());
    if !user.uid.is_empty() {
        user_info.insert("uid".into(), user.uid.clone().into());
    }
    if !user.groups.is_empty() {
        user_info.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        user_info.insert("extra".into(), json!(user.extra));
    }
    let kind = json!({"group": attrs.group, "version": attrs.version, "kind": attrs.kind});
    let resource =
        json!({"group": attrs.group, "version": attrs.version, "resource": attrs.resource});
    let mut r = Map::new();
    r.insert("uid".into(), uid.into());
    r.insert("kind".into(), kind.clone());
    r.insert("resource".into(), resource.clone());
    if !req.subresource.is_empty() {
        r.insert("subResource".into(), req.subresource.clone().into());
    }
    r.insert("requestKind".into(), kind);
    r.insert("requestResource".into(), resource);
    if !req.subresource.is_empty() {
        r.insert("requestSubResource".into(), req.subresource.clone().into());
    }
    if !attrs.name.is_empty() {
        r.insert("name".into(), attrs.name.into());
    }
    if !attrs.namespace.is_empty() {
        r.insert("namespace".into(), attrs.namespace.into());
    }
    r.insert("operation".into(), attrs.operation.as_str().into());
    r.insert("userInfo".into(), Value::Object(user_info));
    r.insert("object".into(), object.cloned().unwrap_or(Value::Null));
    r.insert(
        "oldObject".into(),
        attrs.old_object.cloned().unwrap_or(Value::Null),
    );
    r.insert("dryRun".into(), attrs.dry_run.into());
    r.insert(
        "options".into(),
        req.options(attrs.operation, attrs.dry_run),
    );
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": r,
    })
}

/// Checks a webhook's answer (VerifyAdmissionResponse); errors read as upstream's.
pub(super) fn answer(
    version: &str,
    uid: &str,
    mutating: bool,
    body: &[u8],
) -> Result<Answer, String> {
    let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let got_version = review
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let got_kind = review.get("kind").and_then(Value::as_str).unwrap_or("");
    let want = format!("admission.k8s.io/{version}");
    if version == "v1" && (got_version != want || got_kind != "AdmissionReview") {
        let (group, v) = got_version.split_once('/').unwrap_or(("", got_version));
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{v}, Kind={got_kind}"
        ));
    }
    let Some(response) = review.get("response").filter(|r| r.is_object()) else {
        return Err("webhook response was absent".into());
    };
    let got_uid = response.get("uid").and_then(Value::as_str).unwrap_or("");
    if version == "v1" && got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let patch = match response.get("patch").and_then(Value::as_str) {
        Some(p) if !p.is_empty() => Some(
            base64::engine::general_purpose::STANDARD
                .decode(p)
                .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?,
        ),
        _ => None,
    };
    let patch_type = response
        .get("patchType")
        .and_then(Value::as_str)
        .unwrap_or("");
    if patch.is_some() || !patch_type.is_empty() {
        if !mutating {
            return Err("validating webhook may not return response.patch".into());
        }
        if version == "v1" {
            if patch_type.is_empty() {
                return Err("webhook returned response.patch but not response.patchType".into());
            }
            if patch_type != "JSONPatch" {
                return Err(format!(
                    "webhook returned invalid response.patchType of {patch_type:?}"
                ));
            }
        }
    }
    Ok(Answer {
        allowed: response
            .get("allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        status: response.get("status").filter(|s| s.is_object()).cloned(),
        patch,
        warnings: response
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// The refusal of webhook `name` (webhookerrors.ToStatusErr): the webhook's code (at least
/// 400), reason, and message prefixed with who refused.
pub(super) fn denied(name: &str, status: Option<&Value>) -> super::Error {
    let field = |k: &str| {
        status
            .and_then(|s| s.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let code = status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_u64)
        .filter(|c| (400..600).contains(c))
        .unwrap_or(400) as u16;
    let (message, reason) = (field("message"), field("reason"));
    let denied_by = format!("admission webhook {name:?} denied the request");
    let message = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    super::Error::Denied {
        code,
        reason,
        message,
    }
}
