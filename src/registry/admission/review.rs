//! AdmissionReview (admission.k8s.io/v1, and v1beta1 for webhooks that accept only it): the
//! request a webhook receives and the checks of its answer (VerifyAdmissionResponse), with
//! upstream's messages.

use super::{Attributes, Request};
use crate::registry::codec::memo::Encoded;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::OnceLock;

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
    /// `auditAnnotations` (key, value), keys as the webhook wrote them.
    pub audit_annotations: Vec<(String, String)>,
}

/// `group`, `version` and `kind` or `resource`.
#[derive(Serialize)]
struct Gvk<'a> {
    group: &'a str,
    version: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    kind: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    resource: &'a str,
}

/// The request's user (authentication.k8s.io UserInfo).
#[derive(Serialize)]
struct User<'a> {
    username: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    uid: &'a str,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    groups: &'a [String],
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    extra: &'a std::collections::BTreeMap<String, Vec<String>>,
}

/// An AdmissionRequest, borrowing the objects so a call copies none of them.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AdmissionRequest<'a> {
    uid: &'a str,
    kind: &'a Gvk<'a>,
    resource: &'a Gvk<'a>,
    #[serde(skip_serializing_if = "str::is_empty")]
    sub_resource: &'a str,
    request_kind: &'a Gvk<'a>,
    request_resource: &'a Gvk<'a>,
    #[serde(skip_serializing_if = "str::is_empty")]
    request_sub_resource: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    name: &'a str,
    #[serde(skip_serializing_if = "str::is_empty")]
    namespace: &'a str,
    operation: &'a str,
    user_info: User<'a>,
    dry_run: bool,
    options: Value,
    /// Last, with `old_object`, so that JSON already made can be appended instead
    /// ([`request`]): None when it is (Some(None): `null`).
    #[serde(skip_serializing_if = "Option::is_none")]
    object: Option<Option<&'a Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    old_object: Option<&'a Value>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Review<'a> {
    kind: &'a str,
    api_version: &'a str,
    request: AdmissionRequest<'a>,
}

/// The AdmissionReview (JSON) sent for `attrs` with `object`, under review `uid`.
pub(super) fn request(
    version: &str,
    uid: &str,
    req: &Request,
    attrs: &Attributes<'_>,
    object: Option<&Value>,
) -> Vec<u8> {
    let kind = Gvk {
        group: attrs.group,
        version: attrs.version,
        kind: attrs.kind,
        resource: "",
    };
    let resource = Gvk {
        group: attrs.group,
        version: attrs.version,
        kind: "",
        resource: attrs.resource,
    };
    // The version written, when the webhook sees the write converted to another.
    let request_version = attrs.request_version.unwrap_or(attrs.version);
    let request_kind = Gvk {
        version: request_version,
        ..kind
    };
    let request_resource = Gvk {
        version: request_version,
        ..resource
    };
    let user = &req.user;
    let object_json = stored_json(attrs, object);
    let review = Review {
        kind: "AdmissionReview",
        api_version: if version == "v1" {
            "admission.k8s.io/v1"
        } else {
            "admission.k8s.io/v1beta1"
        },
        request: AdmissionRequest {
            uid,
            kind: &kind,
            resource: &resource,
            sub_resource: &req.subresource,
            request_kind: &request_kind,
            request_resource: &request_resource,
            request_sub_resource: &req.subresource,
            name: attrs.name,
            namespace: attrs.namespace,
            operation: attrs.operation.as_str(),
            user_info: User {
                username: &user.name,
                uid: &user.uid,
                groups: &user.groups,
                extra: &user.extra,
            },
            object: object_json.is_none().then_some(object),
            old_object: attrs.old_object.filter(|_| attrs.old_json.is_none()),
            dry_run: attrs.dry_run,
            options: req.options(attrs.operation, attrs.dry_run),
        },
    };
    // Values and plain strings always serialize.
    let mut out = serde_json::to_vec(&review).unwrap_or_default();
    // The objects' JSON already made (encoding them again cost as much as the rest of the
    // review): the last fields of the request, before the request's and the review's closing
    // braces (always there: both are structs).
    let made = [
        ("object", object_json.as_deref()),
        ("oldObject", attrs.old_json),
    ];
    if made.iter().any(|(_, json)| json.is_some()) && out.ends_with(b"}}") {
        out.truncate(out.len() - 2);
        for (field, json) in made {
            if let Some(json) = json {
                out.extend_from_slice(b",\"");
                out.extend_from_slice(field.as_bytes());
                out.extend_from_slice(b"\":");
                out.extend_from_slice(json);
            }
        }
        out.extend_from_slice(b"}}");
    }
    out
}

/// The JSON of `object` from its stored encoding, the store's cell for it given: made there
/// once (for the review and the write alike), the resourceVersion spliced back in. None (so
/// the review encodes the object) without a cell, or with a resourceVersion that is not a
/// string or a selfLink (which the stored form leaves out).
fn stored_json(attrs: &Attributes<'_>, object: Option<&Value>) -> Option<bytes::Bytes> {
    let (cell, object) = (attrs.object_stored?, object?);
    let meta = object.get("metadata").and_then(Value::as_object);
    if meta.is_some_and(|m| m.contains_key("selfLink")) {
        return None;
    }
    let version = match meta.and_then(|m| m.get("resourceVersion")) {
        None => None,
        Some(Value::String(v)) => Some(v),
        Some(_) => return None,
    };
    let encoded = cell.get_or_init(|| Encoded::of_stored(object));
    Some(match version {
        Some(v) => encoded.with_version(v).bytes,
        None => encoded.bytes.clone(),
    })
}

/// The fields of an AdmissionReview answer that are read, as the JSON has them (read into
/// values only when asked: an answer is mostly read for `allowed`, and building a map of every
/// field cost more than the rest of its checks).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ReviewFields<'a> {
    #[serde(rename = "apiVersion", borrow)]
    api_version: Option<&'a RawValue>,
    #[serde(borrow)]
    kind: Option<&'a RawValue>,
    #[serde(borrow)]
    response: Option<&'a RawValue>,
}

/// The fields of `response` that are read, as [`ReviewFields`].
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", default)]
struct ResponseFields<'a> {
    #[serde(borrow)]
    uid: Option<&'a RawValue>,
    #[serde(borrow)]
    allowed: Option<&'a RawValue>,
    #[serde(borrow)]
    status: Option<&'a RawValue>,
    #[serde(borrow)]
    patch: Option<&'a RawValue>,
    #[serde(borrow)]
    patch_type: Option<&'a RawValue>,
    #[serde(borrow)]
    warnings: Option<&'a RawValue>,
    #[serde(borrow)]
    audit_annotations: Option<&'a RawValue>,
}

/// The object `json` read into `T`: None when it is not an object. What the fields cannot
/// be read from straight (a field given twice) is read through a [`Value`] (the last one
/// counts, as with Go's decoder), kept in `scratch`.
///
/// # Errors
///
/// `json` is not JSON (serde_json's message).
fn fields<'a, T: Deserialize<'a>>(
    json: &'a [u8],
    scratch: &'a OnceLock<String>,
) -> Result<Option<T>, String> {
    // A struct reads an array too, by position: objects only.
    if json.trim_ascii_start().starts_with(b"{") {
        if let Ok(fields) = serde_json::from_slice(json) {
            return Ok(Some(fields));
        }
    }
    let value: Value = serde_json::from_slice(json).map_err(|e| e.to_string())?;
    if !value.is_object() {
        return Ok(None);
    }
    Ok(serde_json::from_str(scratch.get_or_init(|| value.to_string())).ok())
}

/// A field that is a string ("" when absent or of another type).
fn text(raw: Option<&RawValue>) -> Cow<'_, str> {
    let Some(raw) = raw else {
        return Cow::Borrowed("");
    };
    match serde_json::from_str::<&str>(raw.get()) {
        Ok(s) => Cow::Borrowed(s),
        // Escapes in it, or not a string.
        Err(_) => serde_json::from_str::<String>(raw.get()).map_or(Cow::Borrowed(""), Cow::Owned),
    }
}

/// A field read as `T` (None when absent or of another type).
fn read<'a, T: Deserialize<'a>>(raw: Option<&'a RawValue>) -> Option<T> {
    serde_json::from_str(raw?.get()).ok()
}

/// Checks a webhook's answer (VerifyAdmissionResponse); errors read as upstream's.
pub(super) fn answer(
    version: &str,
    uid: &str,
    mutating: bool,
    body: &[u8],
) -> Result<Answer, String> {
    let scratch = OnceLock::new();
    let review: ReviewFields<'_> = fields(body, &scratch)?.unwrap_or_default();
    let got_version = text(review.api_version);
    let got_kind = text(review.kind);
    if version == "v1" && (got_version != "admission.k8s.io/v1" || got_kind != "AdmissionReview") {
        let (group, v) = got_version.split_once('/').unwrap_or(("", &got_version));
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {group}/{v}, Kind={got_kind}"
        ));
    }
    let scratch = OnceLock::new();
    let response = review.response.map(|r| r.get().as_bytes());
    let Some(response) = response
        .map(|r| fields::<ResponseFields<'_>>(r, &scratch))
        .transpose()?
        .flatten()
    else {
        return Err("webhook response was absent".into());
    };
    let got_uid = text(response.uid);
    if version == "v1" && got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let patch = match text(response.patch) {
        p if !p.is_empty() => Some(
            base64::engine::general_purpose::STANDARD
                .decode(p.as_bytes())
                .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?,
        ),
        _ => None,
    };
    let patch_type = text(response.patch_type);
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
        allowed: read(response.allowed).unwrap_or(false),
        status: read::<Value>(response.status).filter(Value::is_object),
        patch,
        warnings: read::<Vec<Value>>(response.warnings)
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        audit_annotations: read::<serde_json::Map<String, Value>>(response.audit_annotations)
            .map(|a| {
                a.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

/// The code of a webhook's refusal: its status's code when it is an error code, else 400.
pub(super) fn denied_code(status: Option<&Value>) -> u16 {
    status
        .and_then(|s| s.get("code"))
        .and_then(Value::as_u64)
        .filter(|c| (400..600).contains(c))
        .unwrap_or(400) as u16
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
    let code = denied_code(status);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::admission::Operation;

    #[test]
    fn the_old_objects_json_is_sent_as_made() {
        let req = Request::for_tests(crate::api::test_user("alice", &["devs"]), Some("kubectl"));
        let old = serde_json::json!({"metadata": {"name": "cm", "resourceVersion": "7"},
                                     "data": {"a": "quote \" and \\ backslash"}});
        let new = serde_json::json!({"metadata": {"name": "cm"}, "data": {"a": "b"}});
        let old_json = serde_json::to_vec(&old).unwrap();
        let attrs = |old_json| Attributes {
            old_object: Some(&old),
            old_json,
            ..Attributes::for_tests(Operation::Update)
        };
        let spliced: Value = serde_json::from_slice(&request(
            "v1",
            "uid-1",
            &req,
            &attrs(Some(&old_json)),
            Some(&new),
        ))
        .unwrap();
        let encoded: Value =
            serde_json::from_slice(&request("v1", "uid-1", &req, &attrs(None), Some(&new)))
                .unwrap();
        assert_eq!(spliced, encoded);
        assert_eq!(spliced["request"]["oldObject"], old);
        assert_eq!(spliced["request"]["object"], new);
        assert_eq!(spliced["request"]["options"]["fieldManager"], "kubectl");
        assert_eq!(spliced["kind"], "AdmissionReview");
    }

    #[test]
    fn the_objects_stored_encoding_is_made_once_and_sent_with_its_version() {
        let req = Request::for_tests(crate::api::test_user("alice", &[]), None);
        let old = serde_json::json!({"metadata": {"name": "cm", "resourceVersion": "7"}});
        let old_json = serde_json::to_vec(&old).unwrap();
        let new = serde_json::json!({"metadata": {"name": "cm", "resourceVersion": "7",
                                                  "labels": {"a": "b"}}, "data": {"k": "\n"}});
        let review = |old_json, cell| {
            let attrs = Attributes {
                old_object: Some(&old),
                old_json,
                object_stored: cell,
                ..Attributes::for_tests(Operation::Update)
            };
            let body = request("v1", "uid-1", &req, &attrs, Some(&new));
            serde_json::from_slice::<Value>(&body).unwrap()
        };
        let cell = std::sync::OnceLock::new();
        let made = review(Some(&old_json), Some(&cell));
        assert_eq!(made, review(None, None));
        assert_eq!(made["request"]["object"], new);
        assert_eq!(made["request"]["oldObject"], old);
        // Kept for the write: the stored form, without the resourceVersion.
        assert_eq!(
            &cell.get().unwrap().bytes[..],
            br#"{"metadata":{"name":"cm","labels":{"a":"b"}},"data":{"k":"\n"}}"#
        );
        // The old object encoded, the new one made: both there still.
        assert_eq!(review(None, Some(&cell)), made);
        // A delete's review has a null object.
        let attrs = Attributes {
            old_object: Some(&old),
            old_json: Some(&old_json),
            object_stored: Some(&cell),
            ..Attributes::for_tests(Operation::Delete)
        };
        let body: Value = serde_json::from_slice(&request("v1", "u", &req, &attrs, None)).unwrap();
        assert_eq!(body["request"]["object"], Value::Null);
        assert!(body["request"].as_object().unwrap().contains_key("object"));
    }

    #[test]
    fn answers_are_read_and_checked_as_upstream_reads_them() {
        let check = |version: &str, mutating: bool, body: &str| {
            answer(version, "u1", mutating, body.as_bytes())
        };
        let ok = |body: &str| check("v1", true, body).unwrap();
        let head = r#""apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview""#;
        let a = ok(&format!(
            r#"{{{head},"response":{{"uid":"u1","allowed":true,"warnings":["w\"1",2,"w2"],
                "auditAnnotations":{{"k":"v","n":1}},"extra":{{"deep":[1]}}}}}}"#
        ));
        assert!(a.allowed);
        assert_eq!(a.warnings, ["w\"1", "w2"]);
        assert_eq!(a.audit_annotations, [("k".to_string(), "v".to_string())]);
        let a = ok(&format!(
            r#"{{{head},"response":{{"uid":"u1","allowed":"yes","status":{{"code":403,"message":"no"}},
                "patch":"W10=","patchType":"JSONPatch"}}}}"#
        ));
        assert!(!a.allowed, "a string is not true");
        assert_eq!(a.status.unwrap()["code"], 403);
        assert_eq!(a.patch.as_deref(), Some(&b"[]"[..]));
        // A field given twice: the last counts, as with Go's decoder.
        let a = ok(&format!(
            r#"{{{head},"response":{{"uid":"u1","allowed":false,"allowed":true}}}}"#
        ));
        assert!(a.allowed);
        // Escapes in the checked strings.
        let a = ok(
            r#"{"apiVersion":"admission.k8s.io\/v1","kind":"AdmissionReview",
                       "response":{"uid":"\u0075\u0031","allowed":true}}"#,
        );
        assert!(a.allowed);
        for (version, mutating, body, error) in [
            ("v1", false, "{", "EOF while parsing an object at line 1 column 1"),
            ("v1", false, "[]", "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="),
            ("v1", false, r#"{"apiVersion":"v1","kind":null}"#, "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /v1, Kind="),
            ("v1", false, r#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":null}"#, "webhook response was absent"),
            ("v1beta1", false, r#"{"response":[1]}"#, "webhook response was absent"),
            ("v1", false, r#"["admission.k8s.io/v1","AdmissionReview"]"#, "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got /, Kind="),
            ("v1", false, &format!(r#"{{{head},"response":{{"uid":"u2"}}}}"#), r#"expected response.uid="u1", got "u2""#),
            ("v1", false, &format!(r#"{{{head},"response":{{"uid":"u1","patch":"W10="}}}}"#), "validating webhook may not return response.patch"),
            ("v1", true, &format!(r#"{{{head},"response":{{"uid":"u1","patch":"W10="}}}}"#), "webhook returned response.patch but not response.patchType"),
            ("v1", true, &format!(r#"{{{head},"response":{{"uid":"u1","patch":"W10=","patchType":"Merge"}}}}"#), r#"webhook returned invalid response.patchType of "Merge""#),
            ("v1", true, &format!(r#"{{{head},"response":{{"uid":"u1","patch":"%%"}}}}"#), "illegal base64 data in response.patch: Invalid symbol 37, offset 0."),
        ] {
            assert_eq!(check(version, mutating, body).err().as_deref(), Some(error), "{body}");
        }
        // v1beta1 answers carry no uid or kind to check.
        assert!(
            check("v1beta1", false, r#"{"response":{"allowed":true}}"#)
                .unwrap()
                .allowed
        );
    }
}
