//! Create-only review resources, answered from the request and the server's authorizer;
//! nothing is stored. authentication.k8s.io/v1: SelfSubjectReview (`kubectl auth whoami`).
//! authorization.k8s.io/v1: SubjectAccessReview, LocalSubjectAccessReview and
//! SelfSubjectAccessReview (`kubectl auth can-i`, with `--as`), SelfSubjectRulesReview
//! (`kubectl auth can-i --list`). May use: registry, api.

mod access;
pub(crate) mod protobuf;

use crate::api::authorizer::{Authorizer, TokenReviewer};
use crate::api::UserInfo;
use crate::registry::error::{Error, Result};
use crate::registry::strategy::{schema_of, text, KindSchema, Names};
use crate::registry::strategy::{typed_roundtrip, Input, ResourceInfo};
use k8s_openapi::api::{authentication::v1 as authn, authorization::v1 as authz};
use serde_json::{json, Value};

/// The ResourceInfo of a create-only review kind.
macro_rules! review_info {
    ($group:literal, $resource:literal, $singular:literal, $kind:literal, $namespaced:literal,
     $ty:ty, $protobuf:expr) => {
        ResourceInfo {
            group: text($group),
            version: text("v1"),
            resource: text($resource),
            singular: text($singular),
            kind: text($kind),
            namespaced: $namespaced,
            short_names: Names::Static(&[]),
            categories: Names::Static(&[]),
            verbs: &["create"],
            subresources: &[],
            schema: KindSchema::Typed(schema_of::<$ty>),
            protobuf: Some($protobuf),
        }
    };
}

/// What discovery reports for selfsubjectreviews.
pub(crate) static SELF_SUBJECT_REVIEW: ResourceInfo = review_info!(
    "authentication.k8s.io",
    "selfsubjectreviews",
    "selfsubjectreview",
    "SelfSubjectReview",
    false,
    authn::SelfSubjectReview,
    protobuf::ssr_from_protobuf
);

/// What discovery reports for tokenreviews.
pub(crate) static TOKEN_REVIEW: ResourceInfo = review_info!(
    "authentication.k8s.io",
    "tokenreviews",
    "tokenreview",
    "TokenReview",
    false,
    authn::TokenReview,
    protobuf::token_review_from_protobuf
);

/// What discovery reports for localsubjectaccessreviews.
pub(crate) static LOCAL_SUBJECT_ACCESS_REVIEW: ResourceInfo = review_info!(
    "authorization.k8s.io",
    "localsubjectaccessreviews",
    "localsubjectaccessreview",
    "LocalSubjectAccessReview",
    true,
    authz::LocalSubjectAccessReview,
    protobuf::lsar_from_protobuf
);

/// What discovery reports for selfsubjectaccessreviews.
pub(crate) static SELF_SUBJECT_ACCESS_REVIEW: ResourceInfo = review_info!(
    "authorization.k8s.io",
    "selfsubjectaccessreviews",
    "selfsubjectaccessreview",
    "SelfSubjectAccessReview",
    false,
    authz::SelfSubjectAccessReview,
    protobuf::ssar_from_protobuf
);

/// What discovery reports for selfsubjectrulesreviews.
pub(crate) static SELF_SUBJECT_RULES_REVIEW: ResourceInfo = review_info!(
    "authorization.k8s.io",
    "selfsubjectrulesreviews",
    "selfsubjectrulesreview",
    "SelfSubjectRulesReview",
    false,
    authz::SelfSubjectRulesReview,
    protobuf::ssrr_from_protobuf
);

/// What discovery reports for subjectaccessreviews.
pub(crate) static SUBJECT_ACCESS_REVIEW: ResourceInfo = review_info!(
    "authorization.k8s.io",
    "subjectaccessreviews",
    "subjectaccessreview",
    "SubjectAccessReview",
    false,
    authz::SubjectAccessReview,
    protobuf::sar_from_protobuf
);

/// Which review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Review {
    /// SelfSubjectReview.
    Subject,
    /// LocalSubjectAccessReview.
    LocalAccess,
    /// SelfSubjectAccessReview.
    Access,
    /// SelfSubjectRulesReview.
    Rules,
    /// SubjectAccessReview.
    SubjectAccess,
    /// TokenReview.
    Token,
}

/// Who asks a review, in which namespace, and the authorizer that answers.
pub(crate) struct Asker<'a> {
    /// The requesting user.
    pub user: &'a UserInfo,
    /// The namespace of the request path (LocalSubjectAccessReview).
    pub namespace: &'a str,
    /// The server's authorizer.
    pub authorizer: &'a dyn Authorizer,
    /// The server's token authenticator (TokenReview).
    pub tokens: Option<&'a dyn TokenReviewer>,
}

impl Review {
    /// Discovery info.
    pub(crate) fn info(self) -> &'static ResourceInfo {
        match self {
            Review::Subject => &SELF_SUBJECT_REVIEW,
            Review::LocalAccess => &LOCAL_SUBJECT_ACCESS_REVIEW,
            Review::Access => &SELF_SUBJECT_ACCESS_REVIEW,
            Review::Rules => &SELF_SUBJECT_RULES_REVIEW,
            Review::SubjectAccess => &SUBJECT_ACCESS_REVIEW,
            Review::Token => &TOKEN_REVIEW,
        }
    }

    /// Answers a review; `obj` was decoded already (apiVersion/kind checked).
    pub(crate) fn create(self, obj: Value, asker: &Asker<'_>) -> Result<Value> {
        let kind = &*self.info().kind;
        let bad = |e: String| {
            Error::BadRequest(format!(
                "{kind} in version \"v1\" cannot be handled as a {kind}: {e}"
            ))
        };
        let roundtrip = match self {
            Review::Subject => typed_roundtrip::<authn::SelfSubjectReview>,
            Review::LocalAccess => typed_roundtrip::<authz::LocalSubjectAccessReview>,
            Review::Access => typed_roundtrip::<authz::SelfSubjectAccessReview>,
            Review::Rules => typed_roundtrip::<authz::SelfSubjectRulesReview>,
            Review::SubjectAccess => typed_roundtrip::<authz::SubjectAccessReview>,
            Review::Token => typed_roundtrip::<authn::TokenReview>,
        };
        let mut obj = roundtrip(Input::Value(obj)).map_err(bad)?.0;
        let Some(map) = obj.as_object_mut() else {
            return Err(Error::BadRequest("the body is not a JSON object".into()));
        };
        let mut meta = map.get("metadata").cloned().unwrap_or_else(|| json!({}));
        if let Some(m) = meta.as_object_mut() {
            m.insert("creationTimestamp".into(), Value::Null);
        }
        map.insert("metadata".into(), meta);
        match self {
            Review::Subject => {
                map.insert(
                    "status".into(),
                    json!({ "userInfo": user_info(asker.user) }),
                );
                Ok(obj)
            }
            Review::Rules => access::rules_review(&obj, asker),
            Review::Token => token_review(obj, asker),
            Review::Access | Review::LocalAccess | Review::SubjectAccess => {
                access::access_review(self, obj, asker)
            }
        }
    }
}

/// A UserInfo as authentication.k8s.io/v1 writes it (empty uid and extra left out).
fn user_info(user: &UserInfo) -> Value {
    let mut info = json!({ "username": user.name, "groups": user.groups });
    if !user.uid.is_empty() {
        info["uid"] = Value::from(user.uid.clone());
    }
    if !user.extra.is_empty() {
        info["extra"] = json!(user.extra);
    }
    info
}

/// The TokenReview answer (pkg/registry/authentication/tokenreview): whether the token
/// authenticates for the requested audiences (the API's when none), and as whom.
fn token_review(mut obj: Value, asker: &Asker<'_>) -> Result<Value> {
    let token = obj
        .pointer("/spec/token")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if token.is_empty() {
        return Err(Error::BadRequest(
            "token is required for TokenReview in authentication".into(),
        ));
    }
    let audiences: Vec<String> = obj
        .pointer("/spec/audiences")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    // No audiences: the API's.
    let status = match asker.tokens.map(|t| t.review(&token, &audiences)) {
        Some(Ok((user, valid_for))) => {
            let mut status = json!({ "authenticated": true, "user": user_info(&user) });
            if !valid_for.is_empty() {
                status["audiences"] = json!(valid_for);
            }
            status
        }
        Some(Err(error)) => json!({ "user": {}, "error": error }),
        None => json!({ "user": {} }),
    };
    if let Some(m) = obj.as_object_mut() {
        m.insert("status".into(), status);
    }
    Ok(obj)
}

#[cfg(test)]
mod tests;
