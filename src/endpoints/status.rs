//! The one place errors become a metav1 Status, with kube-apiserver's reasons, codes,
//! messages and details (apimachinery pkg/api/errors): registry::Error, and the errors the
//! endpoints raise themselves before or around a registry call (query parameters, request
//! bodies, handler checks, patches, server-side apply). Handlers pick only the code of a
//! success (200, 201, 202). May use: registry, api.

use super::apply::ApplyError;
use super::handlers::error::Error as HandlerError;
use super::patch::PatchError;
use super::{negotiate, query};
use crate::api::{gvk::group_resource, Status, StatusCause, StatusDetails};
use crate::registry::admission::Error as AdmissionError;
use crate::registry::Error;

/// A policy's denial: `text` as the Status message, the policy's own `message` as its one
/// cause, and the object denied in the details.
/// apierrors.NewForbidden's message: `<resource> "<name>" is forbidden: <why>`.
fn forbidden_text(group: &str, resource: &str, name: &str, why: &str) -> String {
    let gr = group_resource(group, resource);
    if name.is_empty() {
        format!("{gr} is forbidden: {why}")
    } else {
        format!("{gr} {name:?} is forbidden: {why}")
    }
}

fn policy_denial(
    code: u16,
    reason: &str,
    text: String,
    message: &str,
    (group, resource, name): (&str, &str, &str),
) -> Status {
    Status::failure(code, reason, text).with_details(StatusDetails {
        name: name.to_string(),
        group: group.to_string(),
        kind: resource.to_string(),
        causes: vec![StatusCause {
            message: message.to_string(),
            ..Default::default()
        }],
        ..Default::default()
    })
}

/// The Status kube-apiserver answers for `err`.
pub(crate) fn to_status(err: &Error) -> Status {
    match err {
        Error::NotFound {
            group,
            resource,
            name,
        } => Status::failure(
            404,
            "NotFound",
            format!("{} \"{name}\" not found", group_resource(group, resource)),
        )
        .with_details(StatusDetails {
            name: name.clone(),
            group: group.clone(),
            kind: resource.clone(),
            ..Default::default()
        }),
        Error::AlreadyExists {
            group,
            resource,
            name,
            generated,
        } => {
            let gr = group_resource(group, resource);
            let (message, retry) = if *generated {
                (format!("{gr} \"{name}\" already exists, the server was not able to generate a unique name for the object"), Some(1))
            } else {
                (format!("{gr} \"{name}\" already exists"), None)
            };
            Status::failure(409, "AlreadyExists", message).with_details(StatusDetails {
                name: name.clone(),
                group: group.clone(),
                kind: resource.clone(),
                retry_after_seconds: retry,
                ..Default::default()
            })
        }
        Error::Conflict {
            group,
            resource,
            name,
            message,
        } => Status::failure(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} \"{name}\": {message}",
                group_resource(group, resource)
            ),
        )
        .with_details(StatusDetails {
            name: name.clone(),
            group: group.clone(),
            kind: resource.clone(),
            ..Default::default()
        }),
        Error::Invalid {
            group,
            kind,
            name,
            errors,
        } => {
            let texts: Vec<String> = errors.iter().map(ToString::to_string).collect();
            let joined = match texts.as_slice() {
                [one] => one.clone(),
                many => format!("[{}]", many.join(", ")),
            };
            let causes = errors
                .iter()
                .map(|e| StatusCause {
                    reason: e.kind.reason().into(),
                    message: e.message(),
                    field: e.field.clone(),
                })
                .collect();
            Status::failure(
                422,
                "Invalid",
                format!(
                    "{} \"{name}\" is invalid: {joined}",
                    group_resource(group, kind)
                ),
            )
            .with_details(StatusDetails {
                name: name.clone(),
                group: group.clone(),
                kind: kind.clone(),
                causes,
                ..Default::default()
            })
        }
        Error::BadRequest(message) => Status::failure(400, "BadRequest", message.clone()),
        Error::Forbidden {
            group,
            resource,
            name,
            message,
            causes,
        } => {
            let gr = group_resource(group, resource);
            let text = if name.is_empty() {
                format!("{gr} is forbidden: {message}")
            } else {
                format!("{gr} \"{name}\" is forbidden: {message}")
            };
            let causes = causes
                .iter()
                .map(|(reason, message, field)| StatusCause {
                    reason: reason.clone(),
                    message: message.clone(),
                    field: field.clone(),
                })
                .collect();
            Status::failure(403, "Forbidden", text).with_details(StatusDetails {
                name: name.clone(),
                group: group.clone(),
                kind: resource.clone(),
                causes,
                ..Default::default()
            })
        }
        Error::MethodNotAllowed {
            group,
            resource,
            verb,
            message,
        } => Status::failure(
            405,
            "MethodNotAllowed",
            message.clone().unwrap_or_else(|| {
                format!(
                    "{verb} is not supported on resources of kind \"{}\"",
                    group_resource(group, resource)
                )
            }),
        )
        .with_details(StatusDetails {
            group: group.clone(),
            kind: resource.clone(),
            ..Default::default()
        }),
        Error::Expired { message } => Status::failure(410, "Expired", message.clone()),
        Error::TooLarge(message) => Status::failure(
            413,
            "RequestEntityTooLarge",
            format!("Request entity too large: {message}"),
        ),
        Error::TooLargeResourceVersion { requested, current } => Status::failure(
            504,
            "Timeout",
            format!("Timeout: Too large resource version: {requested}, current: {current}"),
        )
        .with_details(StatusDetails {
            causes: vec![StatusCause {
                reason: "ResourceVersionTooLarge".into(),
                message: format!("Too large resource version: {requested}, current: {current}"),
                field: String::new(),
            }],
            retry_after_seconds: Some(1),
            ..Default::default()
        }),
        Error::Unavailable(message) => Status::failure(503, "ServiceUnavailable", message.clone()),
        Error::Internal(message) => Status::internal(format!("Internal error occurred: {message}"))
            .with_details(StatusDetails {
                causes: vec![StatusCause {
                    message: message.clone(),
                    ..Default::default()
                }],
                ..Default::default()
            }),
        Error::Admission(e) => match e.as_ref() {
            AdmissionError::Denied {
                code,
                reason,
                message,
            } => Status::failure(*code, reason, message.clone()),
            AdmissionError::Policy {
                code,
                reason,
                message,
                group,
                resource,
                name,
            } => {
                let text = forbidden_text(group, resource, name, message);
                policy_denial(*code, reason, text, message, (group, resource, name))
            }
            // The generic policy dispatcher replaces the Forbidden message whole.
            AdmissionError::MutatingPolicy {
                reason,
                message,
                group,
                resource,
                name,
            } => policy_denial(
                403,
                reason,
                message.clone(),
                message,
                (group, resource, name),
            ),
            AdmissionError::MatchConditions {
                message,
                group,
                resource,
                name,
            } => {
                let text = forbidden_text(group, resource, name, message);
                Status::failure(403, "Forbidden", text).with_details(StatusDetails {
                    name: name.clone(),
                    group: group.clone(),
                    kind: resource.clone(),
                    ..Default::default()
                })
            }
            AdmissionError::Call { .. } => to_status(&Error::Internal(e.to_string())),
            AdmissionError::DryRunUnsupported(_) => {
                Status::failure(400, "BadRequest", e.to_string())
            }
            #[allow(unreachable_patterns)]
            other => to_status(&Error::Internal(other.to_string())),
        },
        // The endpoints' own errors, raised in a transform (handlers/write.rs).
        Error::Transform(e) => {
            if let Some(e) = e.downcast_ref::<PatchError>() {
                Status::from(e)
            } else if let Some(e) = e.downcast_ref::<ApplyError>() {
                Status::from(e)
            } else {
                to_status(&Error::Internal(e.to_string()))
            }
        }
        #[allow(unreachable_patterns)]
        other => Status::internal(format!("Internal error occurred: {other}")),
    }
}

/// The response kube-apiserver answers for `err`.
pub(crate) fn error_response(err: &Error) -> http::Response<crate::api::Body> {
    to_status(err).into_response()
}

/// [`error_response`] with Warning headers (what admission webhooks said before refusing).
pub(crate) fn error_response_warning(
    err: &Error,
    warnings: &[String],
) -> http::Response<crate::api::Body> {
    let mut resp = error_response(err);
    for w in warnings {
        negotiate::add_warning(&mut resp, w);
    }
    resp
}

/// 400 BadRequest with `err`'s message.
fn bad_request(err: &impl ToString) -> Status {
    Status::failure(400, "BadRequest", err.to_string())
}

/// 422 Invalid with `err`'s message (an options kind that fails validation, without details).
fn invalid(err: &impl ToString) -> Status {
    Status::failure(422, "Invalid", err.to_string())
}

/// 415 UnsupportedMediaType with `err`'s message.
fn unsupported_media_type(err: &impl ToString) -> Status {
    Status::failure(415, "UnsupportedMediaType", err.to_string())
}

impl From<query::Error> for Status {
    fn from(err: query::Error) -> Status {
        match err {
            query::Error::UnsupportedDryRun { .. } => invalid(&err),
            query::Error::InvalidBool(_)
            | query::Error::InvalidInt(_)
            | query::Error::InvalidSelector(_)
            | query::Error::UnsupportedFieldValidation(_) => bad_request(&err),
        }
    }
}

impl From<negotiate::Error> for Status {
    fn from(err: negotiate::Error) -> Status {
        match err {
            negotiate::Error::UnsupportedMediaType => unsupported_media_type(&err),
            negotiate::Error::Json(_)
            | negotiate::Error::Yaml(_)
            | negotiate::Error::Protobuf(_)
            | negotiate::Error::NotAnObject { .. } => bad_request(&err),
        }
    }
}

impl From<HandlerError> for Status {
    fn from(err: HandlerError) -> Status {
        match err {
            HandlerError::InvalidFieldManager(_)
            | HandlerError::MissingFieldManager
            | HandlerError::ForceWithoutApply => invalid(&err),
            HandlerError::NameMismatch { .. }
            | HandlerError::AppliedNotObject
            | HandlerError::TypeMismatch { .. }
            | HandlerError::UnknownIncludeObject(_) => bad_request(&err),
        }
    }
}

impl From<&PatchError> for Status {
    fn from(err: &PatchError) -> Status {
        match err {
            PatchError::BadRequest(_) => bad_request(err),
            PatchError::Invalid(_) => invalid(err),
            PatchError::TooManyOperations { .. } => {
                Status::failure(413, "RequestEntityTooLarge", err.to_string())
            }
            PatchError::UnsupportedMediaType | PatchError::UnsupportedMediaTypeForCustom => {
                unsupported_media_type(err)
            }
        }
    }
}

impl From<&ApplyError> for Status {
    fn from(err: &ApplyError) -> Status {
        match err {
            ApplyError::Conflict { causes } => Status::failure(409, "Conflict", err.to_string())
                .with_details(StatusDetails {
                    causes: causes
                        .iter()
                        .map(|(field, manager)| StatusCause {
                            reason: "FieldManagerConflict".into(),
                            message: format!("conflict with {manager}"),
                            field: field.clone(),
                        })
                        .collect(),
                    ..Default::default()
                }),
            ApplyError::BadRequest(_) => bad_request(err),
            ApplyError::Invalid(_) => invalid(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::FieldError;

    fn json(err: &Error) -> String {
        String::from_utf8(to_status(err).to_json()).unwrap()
    }

    #[test]
    fn conflict_and_not_found_match_kube() {
        let e = Error::Conflict {
            group: "coordination.k8s.io".into(),
            resource: "leases".into(),
            name: "x".into(),
            message: crate::registry::OPTIMISTIC_LOCK_MSG.into(),
        };
        assert_eq!(
            json(&e),
            r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Operation cannot be fulfilled on leases.coordination.k8s.io \"x\": the object has been modified; please apply your changes to the latest version and try again","reason":"Conflict","details":{"name":"x","group":"coordination.k8s.io","kind":"leases"},"code":409}"#
        );
        let e = Error::NotFound {
            group: "".into(),
            resource: "configmaps".into(),
            name: "x".into(),
        };
        assert!(json(&e).contains(r#""message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404"#));
    }

    #[test]
    fn invalid_lists_causes() {
        let e = Error::invalid(
            "",
            "ConfigMap",
            "a",
            vec![
                FieldError::required("metadata.name", "name or generateName is required"),
                FieldError::invalid("data[a b]", "a b", "bad"),
            ],
        );
        let s = to_status(&e);
        assert_eq!(s.code, 422);
        assert_eq!(s.message, "ConfigMap \"a\" is invalid: [metadata.name: Required value: name or generateName is required, data[a b]: Invalid value: \"a b\": bad]");
        assert_eq!(s.details.causes[1].reason, "FieldValueInvalid");
        assert_eq!(s.details.causes[1].message, "Invalid value: \"a b\": bad");
    }

    #[test]
    fn request_errors_are_answered_as_kube_does() {
        let cases: Vec<(Status, &str)> = vec![
            (
                query::Error::UnsupportedDryRun {
                    options_kind: "CreateOptions",
                    value: "x".into(),
                }
                .into(),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"CreateOptions.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: \"x\": supported values: \"All\"","reason":"Invalid","code":422}"#,
            ),
            (
                query::Error::InvalidBool("yes".into()).into(),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"strconv.ParseBool: parsing \"yes\": invalid syntax","reason":"BadRequest","code":400}"#,
            ),
            (
                negotiate::Error::UnsupportedMediaType.into(),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf","reason":"UnsupportedMediaType","code":415}"#,
            ),
            (
                HandlerError::NameMismatch {
                    body: "a".into(),
                    url: "b".into(),
                }
                .into(),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the name of the object (a) does not match the name on the URL (b)","reason":"BadRequest","code":400}"#,
            ),
            (
                HandlerError::ForceWithoutApply.into(),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch","reason":"Invalid","code":422}"#,
            ),
            (
                (&ApplyError::Conflict {
                    causes: vec![(".data.a".into(), "\"m\"".into())],
                })
                    .into(),
                r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Apply failed with 1 conflict: conflict with \"m\": .data.a","reason":"Conflict","details":{"causes":[{"reason":"FieldManagerConflict","message":"conflict with \"m\"","field":".data.a"}]},"code":409}"#,
            ),
        ];
        for (status, want) in cases {
            assert_eq!(String::from_utf8(status.to_json()).unwrap(), want);
        }
    }

    #[test]
    fn a_transforms_own_error_is_answered_as_itself() {
        let too_many = Error::transform(PatchError::TooManyOperations {
            max: 10_000,
            got: 10_001,
        });
        let s = to_status(&too_many);
        assert_eq!((s.code, s.reason.as_str()), (413, "RequestEntityTooLarge"));
        let conflict = Error::transform(ApplyError::Conflict {
            causes: vec![(".spec.x".into(), "\"m\"".into())],
        });
        let s = to_status(&conflict);
        assert_eq!((s.code, s.details.causes.len()), (409, 1));
        #[derive(Debug, thiserror::Error)]
        #[error("unexpected")]
        struct Unknown;
        let s = to_status(&Error::transform(Unknown));
        assert_eq!(
            (s.code, s.message.as_str()),
            (500, "Internal error occurred: unexpected")
        );
    }
}
