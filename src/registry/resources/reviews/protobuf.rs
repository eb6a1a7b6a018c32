//! The protobuf forms of the review kinds (client-go's typed clients send them).

use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use k8s_pb::api::{authentication, authorization};
use serde_json::{Map, Value};

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
    let spec = r.spec.as_ref().map(|s| {
        attributes(
            s.resource_attributes.as_ref(),
            s.non_resource_attributes.as_ref(),
        )
    });
    metadata(&r.metadata)
        .obj("spec", Some(spec.unwrap_or_default()))
        .obj("status", r.status.as_ref().map(access_status))
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn sar_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    let r = message::<authorization::v1::SubjectAccessReview>(raw, "SubjectAccessReview")?;
    Ok(metadata(&r.metadata)
        .obj("spec", Some(subject_spec(r.spec.as_ref())))
        .obj("status", r.status.as_ref().map(access_status))
        .into_map())
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn lsar_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    let r =
        message::<authorization::v1::LocalSubjectAccessReview>(raw, "LocalSubjectAccessReview")?;
    Ok(metadata(&r.metadata)
        .obj("spec", Some(subject_spec(r.spec.as_ref())))
        .obj("status", r.status.as_ref().map(access_status))
        .into_map())
}

/// A SubjectAccessReviewSpec: the attributes, and whose.
fn subject_spec(spec: Option<&authorization::v1::SubjectAccessReviewSpec>) -> Obj {
    let Some(s) = spec else {
        return Obj::default();
    };
    let extra: Map<String, Value> = s
        .extra
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                v.items.iter().cloned().map(Value::String).collect(),
            )
        })
        .collect();
    let o = attributes(
        s.resource_attributes.as_ref(),
        s.non_resource_attributes.as_ref(),
    )
    .str("user", &s.user)
    .strs("groups", &s.groups)
    .str("uid", &s.uid);
    if extra.is_empty() {
        o
    } else {
        o.put("extra", Value::Object(extra))
    }
}

/// resourceAttributes and nonResourceAttributes.
fn attributes(
    ra: Option<&authorization::v1::ResourceAttributes>,
    nra: Option<&authorization::v1::NonResourceAttributes>,
) -> Obj {
    fn requirements<'a>(
        reqs: impl Iterator<Item = (&'a Option<String>, &'a Option<String>, &'a [String])>,
    ) -> Vec<Value> {
        reqs.map(|(key, operator, values)| {
            Value::Object(
                Obj::default()
                    .str("key", key)
                    .str("operator", operator)
                    .strs("values", values)
                    .into_map(),
            )
        })
        .collect()
    }
    let selector = |raw: &Option<String>, reqs: Vec<Value>| {
        let o = Obj::default().str("rawSelector", raw);
        if reqs.is_empty() {
            o
        } else {
            o.put("requirements", reqs.into())
        }
    };
    let ra = ra.map(|a| {
        let fs = a.field_selector.as_ref().map(|f| {
            let reqs = requirements(
                f.requirements
                    .iter()
                    .map(|q| (&q.key, &q.operator, q.values.as_slice())),
            );
            selector(&f.raw_selector, reqs)
        });
        let ls = a.label_selector.as_ref().map(|l| {
            let reqs = requirements(
                l.requirements
                    .iter()
                    .map(|q| (&q.key, &q.operator, q.values.as_slice())),
            );
            selector(&l.raw_selector, reqs)
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
    let nra = nra.map(|a| Obj::default().str("path", &a.path).str("verb", &a.verb));
    Obj::default()
        .obj("resourceAttributes", ra)
        .obj("nonResourceAttributes", nra)
}

fn access_status(s: &authorization::v1::SubjectAccessReviewStatus) -> Obj {
    Obj::default()
        .put("allowed", s.allowed.unwrap_or(false).into())
        .bool("denied", s.denied)
        .str("reason", &s.reason)
        .str("evaluationError", &s.evaluation_error)
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn token_review_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    let r = message::<authentication::v1::TokenReview>(raw, "TokenReview")?;
    let spec = r.spec.as_ref().map(|s| {
        Obj::default()
            .str("token", &s.token)
            .strs("audiences", &s.audiences)
    });
    Ok(metadata(&r.metadata)
        .obj("spec", Some(spec.unwrap_or_default()))
        .into_map())
}
