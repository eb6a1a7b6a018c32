//! The single registry::Error → metav1 Status mapping, with kube-apiserver's reasons, codes,
//! messages and details (apimachinery pkg/api/errors). May use: registry, api.

use crate::api::{gvk::group_resource, Status, StatusCause, StatusDetails};
use crate::registry::Error;

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
        } => Status::failure(
            405,
            "MethodNotAllowed",
            format!(
                "{verb} is not supported on resources of kind \"{}\"",
                group_resource(group, resource)
            ),
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
        #[allow(unreachable_patterns)]
        other => Status::internal(format!("Internal error occurred: {other}")),
    }
}

/// The response kube-apiserver answers for `err`.
pub(crate) fn error_response(err: &Error) -> http::Response<crate::api::Body> {
    to_status(err).into_response()
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
}
