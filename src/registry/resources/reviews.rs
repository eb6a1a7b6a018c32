//! Create-only review resources: authentication.k8s.io/v1 SelfSubjectReview (returns the
//! requesting user, `kubectl auth whoami`) and authorization.k8s.io/v1
//! SelfSubjectAccessReview (`kubectl auth can-i`; allowed for authenticated users, matching
//! kapi's allow-all authorizer) and SelfSubjectRulesReview (`kubectl auth can-i --list`; the
//! same authorizer as rules: everything, like cluster-admin). Nothing is stored.
//! May use: registry, api.

use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use crate::api::UserInfo;
use crate::registry::error::{Error, Result};
use crate::registry::strategy::{schema_of, text, KindSchema, Names};
use crate::registry::strategy::{typed_roundtrip, Input, ResourceInfo};
use k8s_pb::api::{authentication, authorization};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use serde_json::{json, Map, Value};

/// What discovery reports for selfsubjectreviews.
pub(crate) static SELF_SUBJECT_REVIEW: ResourceInfo = ResourceInfo {
    group: text("authentication.k8s.io"),
    version: text("v1"),
    resource: text("selfsubjectreviews"),
    singular: text("selfsubjectreview"),
    kind: text("SelfSubjectReview"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: &["create"],
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<k8s_openapi::api::authentication::v1::SelfSubjectReview>),
    protobuf: Some(ssr_from_protobuf),
};

/// What discovery reports for selfsubjectaccessreviews.
pub(crate) static SELF_SUBJECT_ACCESS_REVIEW: ResourceInfo = ResourceInfo {
    group: text("authorization.k8s.io"),
    version: text("v1"),
    resource: text("selfsubjectaccessreviews"),
    singular: text("selfsubjectaccessreview"),
    kind: text("SelfSubjectAccessReview"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: &["create"],
    subresources: &[],
    schema: KindSchema::Typed(
        schema_of::<k8s_openapi::api::authorization::v1::SelfSubjectAccessReview>,
    ),
    protobuf: Some(ssar_from_protobuf),
};

/// What discovery reports for selfsubjectrulesreviews.
pub(crate) static SELF_SUBJECT_RULES_REVIEW: ResourceInfo = ResourceInfo {
    group: text("authorization.k8s.io"),
    version: text("v1"),
    resource: text("selfsubjectrulesreviews"),
    singular: text("selfsubjectrulesreview"),
    kind: text("SelfSubjectRulesReview"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&[]),
    verbs: &["create"],
    subresources: &[],
    schema: KindSchema::Typed(
        schema_of::<k8s_openapi::api::authorization::v1::SelfSubjectRulesReview>,
    ),
    protobuf: Some(ssrr_from_protobuf),
};

/// Which review.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Review {
    /// SelfSubjectReview.
    Subject,
    /// SelfSubjectAccessReview.
    Access,
    /// SelfSubjectRulesReview.
    Rules,
}

impl Review {
    /// Discovery info.
    pub(crate) fn info(self) -> &'static ResourceInfo {
        match self {
            Review::Subject => &SELF_SUBJECT_REVIEW,
            Review::Access => &SELF_SUBJECT_ACCESS_REVIEW,
            Review::Rules => &SELF_SUBJECT_RULES_REVIEW,
        }
    }

    /// Answers a review for `user`; `obj` was decoded already (apiVersion/kind checked).
    pub(crate) fn create(self, obj: Value, user: &UserInfo) -> Result<Value> {
        let kind = &*self.info().kind;
        let bad = |e: String| {
            Error::BadRequest(format!(
                "{kind} in version \"v1\" cannot be handled as a {kind}: {e}"
            ))
        };
        let mut obj = match self {
            Review::Subject => {
                typed_roundtrip::<k8s_openapi::api::authentication::v1::SelfSubjectReview>(
                    Input::Value(obj),
                )
                .map_err(bad)?
                .0
            }
            Review::Access => {
                typed_roundtrip::<k8s_openapi::api::authorization::v1::SelfSubjectAccessReview>(
                    Input::Value(obj),
                )
                .map_err(bad)?
                .0
            }
            Review::Rules => {
                typed_roundtrip::<k8s_openapi::api::authorization::v1::SelfSubjectRulesReview>(
                    Input::Value(obj),
                )
                .map_err(bad)?
                .0
            }
        };
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
                let mut info = json!({ "username": user.name, "groups": user.groups });
                if !user.uid.is_empty() {
                    info["uid"] = Value::from(user.uid.clone());
                }
                if !user.extra.is_empty() {
                    info["extra"] = json!(user.extra);
                }
                map.insert("status".into(), json!({ "userInfo": info }));
            }
            Review::Access => {
                let spec = map.get("spec").cloned().unwrap_or(Value::Null);
                let has_attrs = spec.get("resourceAttributes").is_some_and(|v| !v.is_null())
                    || spec
                        .get("nonResourceAttributes")
                        .is_some_and(|v| !v.is_null());
                if !has_attrs {
                    return Err(Error::invalid(
                        "authorization.k8s.io",
                        "SelfSubjectAccessReview",
                        "",
                        vec![crate::registry::error::FieldError::invalid_raw(
                            "spec.resourceAttributes",
                            "null",
                            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
                        )],
                    ));
                }
                let allowed = !user.is_anonymous();
                let mut status = json!({ "allowed": allowed });
                if !allowed {
                    status["reason"] = Value::from("anonymous requests are not allowed");
                }
                map.insert("status".into(), status);
            }
            Review::Rules => return rules_review(&obj),
        }
        Ok(obj)
    }
}

/// The SelfSubjectRulesReview answer (pkg/registry/authorization/selfsubjectrulesreview): a
/// fresh object with only the rules in its status. Anonymous users never get here (the
/// authorization filter stops them), so the rules are the authorizer's for every other user.
fn rules_review(obj: &Value) -> Result<Value> {
    let namespace = obj
        .pointer("/spec/namespace")
        .and_then(Value::as_str)
        .unwrap_or("");
    if namespace.is_empty() {
        return Err(Error::BadRequest("no namespace on request".into()));
    }
    Ok(json!({
        "kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": { "creationTimestamp": null },
        "spec": {},
        "status": {
            "resourceRules": [{ "verbs": ["*"], "apiGroups": ["*"], "resources": ["*"] }],
            "nonResourceRules": [{ "verbs": ["*"], "nonResourceURLs": ["*"] }],
            "incomplete": false,
        },
    }))
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn ssr_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(
        self_subject_review(message::<authentication::v1::SelfSubjectReview>(
            raw,
            "SelfSubjectReview",
        )?)
        .into_map(),
    )
}

fn self_subject_review(r: authentication::v1::SelfSubjectReview) -> Obj {
    let status = r.status.as_ref().map(|s| {
        let user = s.user_info.as_ref().map(|u| {
            let extra: Map<String, Value> = u
                .extra
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.items.iter().cloned().map(Value::String).collect(),
                    )
                })
                .collect();
            let o = Obj::default()
                .str("username", &u.username)
                .str("uid", &u.uid)
                .strs("groups", &u.groups);
            if extra.is_empty() {
                o
            } else {
                o.put("extra", Value::Object(extra))
            }
        });
        Obj::default().obj("userInfo", user)
    });
    metadata(&r.metadata).obj("status", status)
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn ssrr_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(ssrr(message::<authorization::v1::SelfSubjectRulesReview>(
        raw,
        "SelfSubjectRulesReview",
    )?)
    .into_map())
}

fn ssrr(r: authorization::v1::SelfSubjectRulesReview) -> Obj {
    let spec = r
        .spec
        .as_ref()
        .map(|s| Obj::default().str("namespace", &s.namespace));
    metadata(&r.metadata).obj("spec", spec)
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn ssar_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(ssar(message::<authorization::v1::SelfSubjectAccessReview>(
        raw,
        "SelfSubjectAccessReview",
    )?)
    .into_map())
}

fn ssar(r: authorization::v1::SelfSubjectAccessReview) -> Obj {
    let requirements = |reqs: &[meta::FieldSelectorRequirement]| {
        reqs.iter()
            .map(|q| {
                Value::Object(
                    Obj::default()
                        .str("key", &q.key)
                        .str("operator", &q.operator)
                        .strs("values", &q.values)
                        .into_map(),
                )
            })
            .collect::<Vec<_>>()
    };
    let label_requirements = |reqs: &[meta::LabelSelectorRequirement]| {
        reqs.iter()
            .map(|q| {
                Value::Object(
                    Obj::default()
                        .str("key", &q.key)
                        .str("operator", &q.operator)
                        .strs("values", &q.values)
                        .into_map(),
                )
            })
            .collect::<Vec<_>>()
    };
    let spec = r.spec.as_ref().map(|s| {
        let ra = s.resource_attributes.as_ref().map(|a| {
            let fs = a.field_selector.as_ref().map(|f| {
                let o = Obj::default().str("rawSelector", &f.raw_selector);
                if f.requirements.is_empty() {
                    o
                } else {
                    o.put("requirements", requirements(&f.requirements).into())
                }
            });
            let ls = a.label_selector.as_ref().map(|l| {
                let o = Obj::default().str("rawSelector", &l.raw_selector);
                if l.requirements.is_empty() {
                    o
                } else {
                    o.put("requirements", label_requirements(&l.requirements).into())
                }
            });
            Obj::default()
                .str("namespace", &a.namespace)
                .str("verb", &a.verb)
                .str("group", &a.group)
                .str("version", &a.version)
                .str("resource", &a.resource)
                .str("subresource", &a.subresource)
                .str("name", &a.name)
                .obj("fieldSelector", fs)
                .obj("labelSelector", ls)
        });
        let nra = s
            .non_resource_attributes
            .as_ref()
            .map(|a| Obj::default().str("path", &a.path).str("verb", &a.verb));
        Obj::default()
            .obj("resourceAttributes", ra)
            .obj("nonResourceAttributes", nra)
    });
    let status = r.status.as_ref().map(|s| {
        Obj::default()
            .put("allowed", s.allowed.unwrap_or(false).into())
            .bool("denied", s.denied)
            .str("reason", &s.reason)
            .str("evaluationError", &s.evaluation_error)
    });
    metadata(&r.metadata)
        .obj("spec", Some(spec.unwrap_or_default()))
        .obj("status", status)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alice() -> UserInfo {
        UserInfo {
            name: "alice".into(),
            ..Default::default()
        }
    }

    #[test]
    fn rules_review_grants_everything_and_needs_a_namespace() {
        let req = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                         "spec": {"namespace": "team-a"}});
        let got = Review::Rules.create(req, &alice()).unwrap();
        assert_eq!(got["spec"], json!({}));
        assert_eq!(got["status"]["resourceRules"][0]["verbs"], json!(["*"]));
        assert_eq!(
            got["status"]["nonResourceRules"][0]["nonResourceURLs"],
            json!(["*"])
        );
        assert_eq!(got["status"]["incomplete"], false);
        let no_ns = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                           "spec": {}});
        assert!(matches!(
            Review::Rules.create(no_ns, &alice()),
            Err(Error::BadRequest(m)) if m == "no namespace on request"
        ));
    }
}
