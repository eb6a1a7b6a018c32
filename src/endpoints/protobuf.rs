//! `application/vnd.kubernetes.protobuf` request bodies (k8s.io/apimachinery
//! pkg/runtime/serializer/protobuf): the `k8s\0` magic, the runtime.Unknown envelope, and the
//! object in `raw` decoded with the k8s-pb message of its kind, then turned into the JSON object
//! kube would produce from the same Go value (camelCase names, empty optionals omitted, times
//! as RFC 3339, bytes as base64). client-go typed clients send these bodies for built-in kinds
//! (kubectl create configmap, auth whoami, auth can-i). Only request bodies are decoded;
//! responses stay JSON, which those clients accept as their second choice.
//! May use: api.

use crate::api::GroupVersionKind;
use base64::Engine as _;
use k8s_pb::api::{authentication, authorization, coordination, core, events};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The four bytes every kube protobuf body starts with.
const MAGIC: &[u8; 4] = b"k8s\0";

/// A protobuf body that could not be decoded; the caller answers BadRequest with the message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum ProtobufError {
    /// The body does not start with `k8s\0`.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    MissingMagic,
    /// The runtime.Unknown envelope or the object inside it is not valid protobuf.
    #[error("unable to decode {what} from protobuf: {detail}")]
    Malformed {
        /// What was being decoded (`runtime.Unknown`, or the kind).
        what: String,
        /// The decoder's explanation.
        detail: String,
    },
    /// The envelope names a kind kapi does not serve.
    #[error("no kind \"{kind}\" is registered for version \"{api_version}\" in scheme")]
    UnknownKind {
        /// The envelope's apiVersion.
        api_version: String,
        /// The envelope's kind.
        kind: String,
    },
    /// The envelope declares an encoding other than protobuf.
    #[error("unsupported content type {0:?} inside the protobuf envelope")]
    UnsupportedContentType(String),
}

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
    fn msg<M: Message + Default>(raw: &[u8], kind: &str) -> Result<M, ProtobufError> {
        M::decode(raw).map_err(|e| ProtobufError::Malformed {
            what: kind.into(),
            detail: e.to_string(),
        })
    }
    let k = gvk.kind.as_str();
    let fields = match (gvk.group.as_str(), gvk.version.as_str(), k) {
        ("", "v1", "ConfigMap") => config_map(msg(raw, k)?),
        ("", "v1", "Secret") => secret(msg(raw, k)?),
        ("", "v1", "Namespace") => namespace(msg(raw, k)?),
        ("", "v1", "ServiceAccount") => service_account(msg(raw, k)?),
        ("", "v1", "Event") => core_event(msg(raw, k)?),
        ("events.k8s.io", "v1", "Event") => events_event(msg(raw, k)?),
        ("coordination.k8s.io", "v1", "Lease") => lease(msg(raw, k)?),
        ("coordination.k8s.io", "v1beta1", "LeaseCandidate") => lease_candidate(msg(raw, k)?),
        ("authentication.k8s.io", "v1", "SelfSubjectReview") => self_subject_review(msg(raw, k)?),
        ("authorization.k8s.io", "v1", "SelfSubjectAccessReview") => ssar(msg(raw, k)?),
        ("authorization.k8s.io", "v1", "SelfSubjectRulesReview") => ssrr(msg(raw, k)?),
        (_, "v1", "DeleteOptions") => delete_options(msg(raw, k)?),
        _ => {
            return Err(ProtobufError::UnknownKind {
                api_version: gvk.api_version(),
                kind: gvk.kind.clone(),
            })
        }
    };
    Ok(fields.0)
}

/// A JSON object built in Go field order, leaving out what `omitempty` would.
#[derive(Default)]
struct Obj(Map<String, Value>);

impl Obj {
    fn put(mut self, key: &str, value: Value) -> Self {
        self.0.insert(key.into(), value);
        self
    }
    /// A non-pointer `string` with omitempty.
    fn str(self, key: &str, v: &Option<String>) -> Self {
        match v.as_deref() {
            Some(s) if !s.is_empty() => self.put(key, Value::String(s.into())),
            _ => self,
        }
    }
    /// A `*string`: present even when empty.
    fn opt_str(self, key: &str, v: &Option<String>) -> Self {
        match v {
            Some(s) => self.put(key, Value::String(s.clone())),
            None => self,
        }
    }
    /// A non-pointer integer with omitempty.
    fn int(self, key: &str, v: Option<i64>) -> Self {
        match v {
            Some(n) if n != 0 => self.put(key, n.into()),
            _ => self,
        }
    }
    /// A `*int32`/`*int64`: present even when zero.
    fn opt_int(self, key: &str, v: Option<i64>) -> Self {
        match v {
            Some(n) => self.put(key, n.into()),
            None => self,
        }
    }
    /// A non-pointer bool with omitempty.
    fn bool(self, key: &str, v: Option<bool>) -> Self {
        match v {
            Some(true) => self.put(key, true.into()),
            _ => self,
        }
    }
    /// A `*bool`: present even when false.
    fn opt_bool(self, key: &str, v: Option<bool>) -> Self {
        match v {
            Some(b) => self.put(key, b.into()),
            None => self,
        }
    }
    fn strs(self, key: &str, v: &[String]) -> Self {
        if v.is_empty() {
            return self;
        }
        self.put(key, v.iter().cloned().map(Value::String).collect())
    }
    fn str_map(self, key: &str, v: &BTreeMap<String, String>) -> Self {
        if v.is_empty() {
            return self;
        }
        let m = v
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        self.put(key, Value::Object(m))
    }
    fn obj(self, key: &str, v: Option<Obj>) -> Self {
        match v {
            Some(o) => self.put(key, Value::Object(o.0)),
            None => self,
        }
    }
    fn list<T>(self, key: &str, v: &[T], f: impl Fn(&T) -> Obj) -> Self {
        if v.is_empty() {
            return self;
        }
        self.put(key, v.iter().map(|t| Value::Object(f(t).0)).collect())
    }
    fn time(self, key: &str, v: &Option<meta::Time>) -> Self {
        let formatted = v
            .as_ref()
            .and_then(|t| format_time(t.seconds, t.nanos, false));
        match formatted {
            Some(s) => self.put(key, Value::String(s)),
            None => self,
        }
    }
    fn micro_time(self, key: &str, v: &Option<meta::MicroTime>) -> Self {
        let formatted = v
            .as_ref()
            .and_then(|t| format_time(t.seconds, t.nanos, true));
        match formatted {
            Some(s) => self.put(key, Value::String(s)),
            None => self,
        }
    }
}

/// metav1.Time (RFC 3339, seconds) and MicroTime (RFC 3339 with microseconds) in UTC; an
/// empty message is Go's zero time, which kube serializes as null (left out here).
fn format_time(seconds: Option<i64>, nanos: Option<i32>, micro: bool) -> Option<String> {
    if seconds.is_none() && nanos.is_none() {
        return None;
    }
    let t =
        chrono::DateTime::from_timestamp(seconds.unwrap_or(0), nanos.unwrap_or(0).max(0) as u32)?;
    let format = if micro {
        "%Y-%m-%dT%H:%M:%S%.6fZ"
    } else {
        "%Y-%m-%dT%H:%M:%SZ"
    };
    Some(t.format(format).to_string())
}

fn object_meta(m: &meta::ObjectMeta) -> Obj {
    Obj::default()
        .str("name", &m.name)
        .str("generateName", &m.generate_name)
        .str("namespace", &m.namespace)
        .str("selfLink", &m.self_link)
        .str("uid", &m.uid)
        .str("resourceVersion", &m.resource_version)
        .int("generation", m.generation)
        .time("creationTimestamp", &m.creation_timestamp)
        .time("deletionTimestamp", &m.deletion_timestamp)
        .opt_int(
            "deletionGracePeriodSeconds",
            m.deletion_grace_period_seconds,
        )
        .str_map("labels", &m.labels)
        .str_map("annotations", &m.annotations)
        .list("ownerReferences", &m.owner_references, |o| {
            Obj::default()
                .str("apiVersion", &o.api_version)
                .str("kind", &o.kind)
                .str("name", &o.name)
                .str("uid", &o.uid)
                .opt_bool("controller", o.controller)
                .opt_bool("blockOwnerDeletion", o.block_owner_deletion)
        })
        .strs("finalizers", &m.finalizers)
        .list("managedFields", &m.managed_fields, |e| {
            let fields = e
                .fields_v1
                .as_ref()
                .and_then(|f| f.raw.as_deref())
                .and_then(|raw| serde_json::from_slice::<Value>(raw).ok());
            let o = Obj::default()
                .str("manager", &e.manager)
                .str("operation", &e.operation)
                .str("apiVersion", &e.api_version)
                .time("time", &e.time)
                .str("fieldsType", &e.fields_type);
            let o = match fields {
                Some(f) => o.put("fieldsV1", f),
                None => o,
            };
            o.str("subresource", &e.subresource)
        })
}

fn metadata(m: &Option<meta::ObjectMeta>) -> Obj {
    let meta = m.as_ref().map(object_meta).unwrap_or_default();
    Obj::default().put("metadata", Value::Object(meta.0))
}

fn object_reference(r: &core::v1::ObjectReference) -> Obj {
    Obj::default()
        .str("kind", &r.kind)
        .str("namespace", &r.namespace)
        .str("name", &r.name)
        .str("uid", &r.uid)
        .str("apiVersion", &r.api_version)
        .str("resourceVersion", &r.resource_version)
        .str("fieldPath", &r.field_path)
}

fn event_source(s: &core::v1::EventSource) -> Obj {
    Obj::default()
        .str("component", &s.component)
        .str("host", &s.host)
}

/// Byte values as JSON carries them (ConfigMap.binaryData, Secret.data): standard base64.
fn base64_values<V: AsRef<[u8]>>(map: &BTreeMap<String, V>) -> BTreeMap<String, String> {
    map.iter()
        .map(|(k, v)| {
            (
                k.clone(),
                base64::engine::general_purpose::STANDARD.encode(v),
            )
        })
        .collect()
}

fn config_map(c: core::v1::ConfigMap) -> Obj {
    let binary = base64_values(&c.binary_data);
    metadata(&c.metadata)
        .opt_bool("immutable", c.immutable)
        .str_map("data", &c.data)
        .str_map("binaryData", &binary)
}

fn secret(s: core::v1::Secret) -> Obj {
    let data = base64_values(&s.data);
    metadata(&s.metadata)
        .opt_bool("immutable", s.immutable)
        .str_map("data", &data)
        .str_map("stringData", &s.string_data)
        .str("type", &s.r#type)
}

fn namespace(n: core::v1::Namespace) -> Obj {
    let spec = n
        .spec
        .as_ref()
        .map(|s| Obj::default().strs("finalizers", &s.finalizers));
    let status = n.status.as_ref().map(|s| {
        Obj::default()
            .str("phase", &s.phase)
            .list("conditions", &s.conditions, |c| {
                Obj::default()
                    .str("type", &c.r#type)
                    .str("status", &c.status)
                    .time("lastTransitionTime", &c.last_transition_time)
                    .str("reason", &c.reason)
                    .str("message", &c.message)
            })
    });
    metadata(&n.metadata)
        .obj("spec", spec)
        .obj("status", status)
}

fn service_account(s: core::v1::ServiceAccount) -> Obj {
    metadata(&s.metadata)
        .list("secrets", &s.secrets, object_reference)
        .list("imagePullSecrets", &s.image_pull_secrets, |r| {
            Obj::default().str("name", &r.name)
        })
        .opt_bool(
            "automountServiceAccountToken",
            s.automount_service_account_token,
        )
}

fn core_event(e: core::v1::Event) -> Obj {
    let series = e.series.as_ref().map(|s| {
        Obj::default()
            .int("count", s.count.map(i64::from))
            .micro_time("lastObservedTime", &s.last_observed_time)
    });
    metadata(&e.metadata)
        .obj(
            "involvedObject",
            Some(
                e.involved_object
                    .as_ref()
                    .map(object_reference)
                    .unwrap_or_default(),
            ),
        )
        .str("reason", &e.reason)
        .str("message", &e.message)
        .obj("source", e.source.as_ref().map(event_source))
        .time("firstTimestamp", &e.first_timestamp)
        .time("lastTimestamp", &e.last_timestamp)
        .int("count", e.count.map(i64::from))
        .str("type", &e.r#type)
        .micro_time("eventTime", &e.event_time)
        .obj("series", series)
        .str("action", &e.action)
        .obj("related", e.related.as_ref().map(object_reference))
        .str("reportingComponent", &e.reporting_component)
        .str("reportingInstance", &e.reporting_instance)
}

fn events_event(e: events::v1::Event) -> Obj {
    let series = e.series.as_ref().map(|s| {
        Obj::default()
            .int("count", s.count.map(i64::from))
            .micro_time("lastObservedTime", &s.last_observed_time)
    });
    metadata(&e.metadata)
        .micro_time("eventTime", &e.event_time)
        .obj("series", series)
        .str("reportingController", &e.reporting_controller)
        .str("reportingInstance", &e.reporting_instance)
        .str("action", &e.action)
        .str("reason", &e.reason)
        .obj("regarding", e.regarding.as_ref().map(object_reference))
        .obj("related", e.related.as_ref().map(object_reference))
        .str("note", &e.note)
        .str("type", &e.r#type)
        .obj(
            "deprecatedSource",
            e.deprecated_source.as_ref().map(event_source),
        )
        .time("deprecatedFirstTimestamp", &e.deprecated_first_timestamp)
        .time("deprecatedLastTimestamp", &e.deprecated_last_timestamp)
        .int("deprecatedCount", e.deprecated_count.map(i64::from))
}

fn lease(l: coordination::v1::Lease) -> Obj {
    let spec = l.spec.as_ref().map(|s| {
        Obj::default()
            .opt_str("holderIdentity", &s.holder_identity)
            .opt_int(
                "leaseDurationSeconds",
                s.lease_duration_seconds.map(i64::from),
            )
            .micro_time("acquireTime", &s.acquire_time)
            .micro_time("renewTime", &s.renew_time)
            .opt_int("leaseTransitions", s.lease_transitions.map(i64::from))
            .opt_str("strategy", &s.strategy)
            .opt_str("preferredHolder", &s.preferred_holder)
    });
    metadata(&l.metadata).obj("spec", spec)
}

fn lease_candidate(l: coordination::v1beta1::LeaseCandidate) -> Obj {
    let spec = l.spec.as_ref().map(|s| {
        Obj::default()
            .str("leaseName", &s.lease_name)
            .micro_time("pingTime", &s.ping_time)
            .micro_time("renewTime", &s.renew_time)
            .str("binaryVersion", &s.binary_version)
            .str("emulationVersion", &s.emulation_version)
            .str("strategy", &s.strategy)
    });
    metadata(&l.metadata).obj("spec", spec)
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

fn ssrr(r: authorization::v1::SelfSubjectRulesReview) -> Obj {
    let spec = r
        .spec
        .as_ref()
        .map(|s| Obj::default().str("namespace", &s.namespace));
    metadata(&r.metadata).obj("spec", spec)
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
                        .0,
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
                        .0,
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

fn delete_options(d: meta::DeleteOptions) -> Obj {
    let pre = d.preconditions.as_ref().map(|p| {
        Obj::default()
            .opt_str("uid", &p.uid)
            .opt_str("resourceVersion", &p.resource_version)
    });
    Obj::default()
        .opt_int("gracePeriodSeconds", d.grace_period_seconds)
        .obj("preconditions", pre)
        .opt_bool("orphanDependents", d.orphan_dependents)
        .opt_str("propagationPolicy", &d.propagation_policy)
        .strs("dryRun", &d.dry_run)
        .opt_bool(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            d.ignore_store_read_error_with_cluster_breaking_potential,
        )
}

#[cfg(test)]
mod tests;
