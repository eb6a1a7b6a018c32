//! The protobuf wire form of kube objects, shared by the layers that decode it: the
//! `k8s\0` magic, decoding errors, and a builder of the JSON object kube would produce from
//! the same Go value (camelCase names, empty optionals omitted, times as RFC 3339, bytes as
//! base64). Each resource decodes its own kind with these (registry/resources); the
//! runtime.Unknown envelope is opened in endpoints/protobuf.rs.
//! May use: nothing internal.

use base64::Engine as _;
use k8s_pb::api::core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use prost::Message;
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// The four bytes every kube protobuf body starts with.
pub(crate) const MAGIC: &[u8; 4] = b"k8s\0";

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

/// Decodes the protobuf message `M` of kind `kind`.
pub(crate) fn message<M: Message + Default>(raw: &[u8], kind: &str) -> Result<M, ProtobufError> {
    M::decode(raw).map_err(|e| ProtobufError::Malformed {
        what: kind.into(),
        detail: e.to_string(),
    })
}

/// Decodes a DeleteOptions body (any group's version `v1`).
pub(crate) fn delete_options_from_protobuf(
    raw: &[u8],
) -> Result<Map<String, Value>, ProtobufError> {
    Ok(delete_options(message::<meta::DeleteOptions>(raw, "DeleteOptions")?).into_map())
}

/// A JSON object built in Go field order, leaving out what `omitempty` would.
#[derive(Default)]
pub(crate) struct Obj(Map<String, Value>);

impl Obj {
    /// The object built.
    pub(crate) fn into_map(self) -> Map<String, Value> {
        self.0
    }

    pub(crate) fn put(mut self, key: &str, value: Value) -> Self {
        self.0.insert(key.into(), value);
        self
    }
    /// A non-pointer `string` with omitempty.
    pub(crate) fn str(self, key: &str, v: &Option<String>) -> Self {
        match v.as_deref() {
            Some(s) if !s.is_empty() => self.put(key, Value::String(s.into())),
            _ => self,
        }
    }
    /// A `*string`: present even when empty.
    pub(crate) fn opt_str(self, key: &str, v: &Option<String>) -> Self {
        match v {
            Some(s) => self.put(key, Value::String(s.clone())),
            None => self,
        }
    }
    /// A non-pointer integer with omitempty.
    pub(crate) fn int(self, key: &str, v: Option<i64>) -> Self {
        match v {
            Some(n) if n != 0 => self.put(key, n.into()),
            _ => self,
        }
    }
    /// A `*int32`/`*int64`: present even when zero.
    pub(crate) fn opt_int(self, key: &str, v: Option<i64>) -> Self {
        match v {
            Some(n) => self.put(key, n.into()),
            None => self,
        }
    }
    /// A non-pointer bool with omitempty.
    pub(crate) fn bool(self, key: &str, v: Option<bool>) -> Self {
        match v {
            Some(true) => self.put(key, true.into()),
            _ => self,
        }
    }
    /// A `*bool`: present even when false.
    pub(crate) fn opt_bool(self, key: &str, v: Option<bool>) -> Self {
        match v {
            Some(b) => self.put(key, b.into()),
            None => self,
        }
    }
    pub(crate) fn strs(self, key: &str, v: &[String]) -> Self {
        if v.is_empty() {
            return self;
        }
        self.put(key, v.iter().cloned().map(Value::String).collect())
    }
    pub(crate) fn str_map(self, key: &str, v: &BTreeMap<String, String>) -> Self {
        if v.is_empty() {
            return self;
        }
        let m = v
            .iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect();
        self.put(key, Value::Object(m))
    }
    pub(crate) fn obj(self, key: &str, v: Option<Obj>) -> Self {
        match v {
            Some(o) => self.put(key, Value::Object(o.0)),
            None => self,
        }
    }
    pub(crate) fn list<T>(self, key: &str, v: &[T], f: impl Fn(&T) -> Obj) -> Self {
        if v.is_empty() {
            return self;
        }
        self.put(key, v.iter().map(|t| Value::Object(f(t).0)).collect())
    }
    pub(crate) fn time(self, key: &str, v: &Option<meta::Time>) -> Self {
        let formatted = v
            .as_ref()
            .and_then(|t| format_time(t.seconds, t.nanos, false));
        match formatted {
            Some(s) => self.put(key, Value::String(s)),
            None => self,
        }
    }
    pub(crate) fn micro_time(self, key: &str, v: &Option<meta::MicroTime>) -> Self {
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
pub(crate) fn format_time(seconds: Option<i64>, nanos: Option<i32>, micro: bool) -> Option<String> {
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

pub(crate) fn object_meta(m: &meta::ObjectMeta) -> Obj {
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

pub(crate) fn metadata(m: &Option<meta::ObjectMeta>) -> Obj {
    let meta = m.as_ref().map(object_meta).unwrap_or_default();
    Obj::default().put("metadata", Value::Object(meta.0))
}

pub(crate) fn object_reference(r: &core::v1::ObjectReference) -> Obj {
    Obj::default()
        .str("kind", &r.kind)
        .str("namespace", &r.namespace)
        .str("name", &r.name)
        .str("uid", &r.uid)
        .str("apiVersion", &r.api_version)
        .str("resourceVersion", &r.resource_version)
        .str("fieldPath", &r.field_path)
}

pub(crate) fn event_source(s: &core::v1::EventSource) -> Obj {
    Obj::default()
        .str("component", &s.component)
        .str("host", &s.host)
}

/// Byte values as JSON carries them (ConfigMap.binaryData, Secret.data): standard base64.
pub(crate) fn base64_values<V: AsRef<[u8]>>(map: &BTreeMap<String, V>) -> BTreeMap<String, String> {
    map.iter()
        .map(|(k, v)| {
            (
                k.clone(),
                base64::engine::general_purpose::STANDARD.encode(v),
            )
        })
        .collect()
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

/// Decodes one kind's protobuf message into its JSON object.
pub(crate) type Decoder = fn(&[u8]) -> Result<Map<String, Value>, ProtobufError>;
