//! The metav1 Status error object, byte-compatible with kube-apiserver's JSON (field order
//! kind, apiVersion, metadata, status, message, reason, details, code). The one builder of
//! Status bodies: filters use it directly, endpoints map registry errors onto it.

use serde::Serialize;

/// One cause of an error (metav1 StatusCause).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
pub(crate) struct StatusCause {
    /// Machine-readable cause, e.g. `FieldValueInvalid`.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub reason: String,
    /// Human message.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub message: String,
    /// The field, e.g. `metadata.name`.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub field: String,
}

/// metav1 StatusDetails.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StatusDetails {
    /// Object name.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub name: String,
    /// API group.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub group: String,
    /// Kind (kube-apiserver puts the resource here, e.g. `configmaps`).
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub kind: String,
    /// Object UID.
    #[serde(skip_serializing_if = "String::is_empty", default)]
    pub uid: String,
    /// Causes.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub causes: Vec<StatusCause>,
    /// Seconds a client should wait before retrying.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub retry_after_seconds: Option<i32>,
    /// Written even when every field is empty (`"details":{}`, as a Forbidden path has).
    #[serde(skip)]
    pub present: bool,
}

impl StatusDetails {
    /// Whether no field is set (then `details` is omitted).
    pub(crate) fn is_empty(&self) -> bool {
        *self == StatusDetails::default()
    }
}

#[derive(Serialize)]
struct EmptyMeta {}

/// A metav1 Status (failure or success).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Status {
    kind: &'static str,
    api_version: &'static str,
    #[serde(serialize_with = "empty_meta")]
    metadata: (),
    /// `Failure` or `Success`.
    pub status: &'static str,
    /// Human message.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// Machine-readable reason, e.g. `NotFound` (empty for 500s without a reason).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// Details.
    #[serde(skip_serializing_if = "StatusDetails::is_empty")]
    pub details: StatusDetails,
    /// HTTP status code.
    pub code: u16,
}

fn empty_meta<S: serde::Serializer>(_: &(), s: S) -> Result<S::Ok, S::Error> {
    EmptyMeta {}.serialize(s)
}

impl Status {
    /// A failure Status.
    pub(crate) fn failure(code: u16, reason: &str, message: impl Into<String>) -> Self {
        Status {
            kind: "Status",
            api_version: "v1",
            metadata: (),
            status: "Failure",
            message: message.into(),
            reason: reason.to_string(),
            details: StatusDetails::default(),
            code,
        }
    }

    /// A success Status (e.g. the body of a DELETE of a collection-less resource).
    pub(crate) fn success(details: StatusDetails) -> Self {
        Status {
            status: "Success",
            details,
            ..Status::failure(200, "", "")
        }
    }

    /// Adds details.
    pub(crate) fn with_details(mut self, details: StatusDetails) -> Self {
        self.details = details;
        self
    }

    /// 401, as kube-apiserver answers requests it cannot authenticate.
    pub(crate) fn unauthorized() -> Self {
        Status::failure(401, "Unauthorized", "Unauthorized")
    }

    /// 403 from the authorization filter (responsewriters.Forbidden): `User "bob" cannot list
    /// resource "configmaps" in API group "" in the namespace "a"`, prefixed as NewForbidden
    /// prefixes it and followed by the authorizers' reason when they gave one.
    pub(crate) fn forbidden(user: &str, info: &super::RequestInfo, reason: &str) -> Self {
        let quote = |s: &str| serde_json::to_string(s).unwrap_or_default();
        let what = if !info.is_resource_request {
            format!(
                "User {} cannot {} path {}",
                quote(user),
                info.verb,
                quote(&info.path)
            )
        } else {
            let mut resource = info.resource.clone();
            if !info.subresource.is_empty() {
                resource = format!("{resource}/{}", info.subresource);
            }
            let scope = if info.namespace.is_empty() {
                "at the cluster scope".to_string()
            } else {
                format!("in the namespace {}", quote(&info.namespace))
            };
            format!(
                "User {} cannot {} resource {} in API group {} {scope}",
                quote(user),
                info.verb,
                quote(&resource),
                quote(&info.api_group),
            )
        };
        let err = if reason.is_empty() {
            what
        } else {
            format!("{what}: {reason}")
        };
        let gr = super::gvk::group_resource(&info.api_group, &info.resource);
        let message = if !info.is_resource_request || info.resource.is_empty() {
            format!("forbidden: {err}")
        } else if info.name.is_empty() {
            format!("{gr} is forbidden: {err}")
        } else {
            format!("{gr} {} is forbidden: {err}", quote(&info.name))
        };
        let details = if info.is_resource_request {
            StatusDetails {
                name: info.name.clone(),
                group: info.api_group.clone(),
                kind: info.resource.clone(),
                present: true,
                ..StatusDetails::default()
            }
        } else {
            StatusDetails {
                present: true,
                ..StatusDetails::default()
            }
        };
        Status::failure(403, "Forbidden", message).with_details(details)
    }

    /// 404 for a path nothing serves.
    pub(crate) fn not_found_path() -> Self {
        Status::failure(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
        .with_details(StatusDetails::default())
    }

    /// 429 from the max-in-flight filter.
    pub(crate) fn too_many_requests() -> Self {
        Status::failure(
            429,
            "TooManyRequests",
            "Too many requests, please try again later.",
        )
        .with_details(StatusDetails {
            retry_after_seconds: Some(1),
            ..Default::default()
        })
    }

    /// 413 for a body over the limit.
    pub(crate) fn request_entity_too_large(limit: usize) -> Self {
        Status::failure(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 500 for a handler that panicked or failed unexpectedly.
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Status::failure(500, "InternalError", message)
    }

    /// 504 for a request that hit the request timeout.
    pub(crate) fn timeout() -> Self {
        Status::failure(
            504,
            "Timeout",
            "request did not complete within the allotted timeout",
        )
        .with_details(StatusDetails {
            retry_after_seconds: Some(0),
            ..Default::default()
        })
    }

    /// The compact JSON body.
    pub(crate) fn to_json(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("Status always serializes: plain strings and numbers")
    }

    /// A complete response with `Content-Type: application/json` and the status code.
    pub(crate) fn into_response(self) -> http::Response<super::Body> {
        let mut builder = http::Response::builder()
            .status(self.code)
            .header(http::header::CONTENT_TYPE, "application/json");
        if let Some(secs) = self.details.retry_after_seconds {
            if secs > 0 {
                builder = builder.header(http::header::RETRY_AFTER, secs.to_string());
            }
        }
        let body = super::full_body(self.to_json());
        let mut resp = builder
            .body(body)
            .expect("static header names and values are valid");
        // The audit filter records the Status fields from here, without parsing the body.
        resp.extensions_mut().insert(self);
        resp
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_kube_apiserver_bytes() {
        let s = Status::failure(404, "NotFound", "configmaps \"x\" not found").with_details(
            StatusDetails {
                name: "x".into(),
                kind: "configmaps".into(),
                ..Default::default()
            },
        );
        assert_eq!(
            String::from_utf8(s.to_json()).unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#
        );
        assert_eq!(
            String::from_utf8(Status::unauthorized().to_json()).unwrap(),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}"#
        );
    }
}
