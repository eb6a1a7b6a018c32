//! The store's codec: stored bytes ↔ the served object (through the memo, so each revision
//! is decoded once), and request bodies → canonical objects (apiVersion/kind checks, the typed
//! round trip, fieldValidation). May use: storage, api.

use super::{GenericStore, MAX_OBJECT_BYTES};
use crate::registry::codec::memo::{stamp_resource_version, Decoded, Encoded};
use crate::registry::error::{Error, Result};
use crate::registry::strategy::{name_of, Input};
use crate::registry::{Context, FieldValidation};
use crate::storage::KeyValue;
use bytes::Bytes;
use serde_json::Value;
use std::sync::Arc;

impl GenericStore {
    /// Decodes a stored value and stamps its resourceVersion.
    pub(crate) fn decode_kv(&self, kv: &KeyValue) -> Result<Value> {
        Ok(self.decode_shared(kv)?.obj.clone())
    }

    /// The served object of a stored value, from the memo when this revision was seen before.
    pub(crate) fn decode_shared(&self, kv: &KeyValue) -> Result<Arc<Decoded>> {
        if let Some(d) = self.memo.get(&kv.key, kv.mod_revision) {
            return Ok(d);
        }
        if let Some(d) = self.memo.take_pending(&kv.key, kv.mod_revision, &kv.value) {
            return Ok(d);
        }
        let d = Arc::new(Decoded::new(self.decode_fresh(kv)?));
        self.memo
            .put(&kv.key, kv.mod_revision, d.clone(), kv.value.len());
        Ok(d)
    }

    /// An object's apiVersion, kind and metadata, as served, for a resource that serves what
    /// it stores: the rest of the stored value is skipped unparsed and nothing is memoized, so
    /// a metadata-only LIST of large objects (the garbage collector's passes over every kind)
    /// builds no tree of their contents. The memo's decoded object serves when it has one.
    pub(crate) fn decode_metadata(&self, kv: &KeyValue) -> Result<Arc<Decoded>> {
        #[derive(serde::Deserialize)]
        struct Head {
            #[serde(rename = "apiVersion")]
            api_version: Option<Value>,
            kind: Option<Value>,
            metadata: Option<Value>,
        }
        if let Some(d) = self.memo.get(&kv.key, kv.mod_revision) {
            return Ok(d);
        }
        let head: Head = serde_json::from_slice(&kv.value).map_err(|e| not_json(kv, &e))?;
        let mut obj = serde_json::Map::new();
        for (k, v) in [
            ("apiVersion", head.api_version),
            ("kind", head.kind),
            ("metadata", head.metadata),
        ] {
            if let Some(v) = v {
                obj.insert(k.into(), v);
            }
        }
        let mut obj = Value::Object(obj);
        stamp_resource_version(&mut obj, kv.mod_revision);
        Ok(Arc::new(Decoded::new(obj)))
    }

    /// The object a deletion at `revision` reports: its last state `prev`, stamped with the
    /// deletion's revision. Memoized under that revision like any other, so every watcher of
    /// the deletion shares one copy and one encoding (as upstream's cacher shares one object
    /// per event) instead of each cloning and encoding the object.
    pub(crate) fn decode_deleted(&self, prev: &KeyValue, revision: i64) -> Result<Arc<Decoded>> {
        if let Some(d) = self.memo.get(&prev.key, revision) {
            return Ok(d);
        }
        let mut obj = self.decode_shared(prev)?.obj.clone();
        stamp_resource_version(&mut obj, revision);
        let d = Arc::new(Decoded::new(obj));
        self.memo
            .put(&prev.key, revision, d.clone(), prev.value.len());
        Ok(d)
    }

    pub(crate) fn decode_fresh(&self, kv: &KeyValue) -> Result<Value> {
        let mut obj: Value = serde_json::from_slice(&kv.value).map_err(|e| not_json(kv, &e))?;
        stamp_resource_version(&mut obj, kv.mod_revision);
        self.strategy.to_served(obj)
    }

    /// The stored form of a served object: storage conversion, no resourceVersion or selfLink,
    /// within the object size limit.
    pub(crate) fn encode(&self, obj: Value) -> Result<Bytes> {
        Ok(self.stored_form(obj)?.0.bytes)
    }

    /// [`Self::encode`] for a write under `key`: when the object is served as stored, the
    /// memo keeps it pending, so whoever sees the write first (the writer's response or a
    /// watch event) gets it without decoding the stored bytes.
    pub(crate) fn encode_for_write(&self, key: &str, obj: Value) -> Result<Bytes> {
        self.encode_for_write_from(key, obj, None)
    }

    /// [`Self::encode_for_write`] with the stored encoding made already, when a webhook's
    /// review made it ([`Encoded::of_stored`]): `obj` must not have changed since.
    pub(crate) fn encode_for_write_from(
        &self,
        key: &str,
        obj: Value,
        made: Option<Encoded>,
    ) -> Result<Bytes> {
        let (encoded, stored) = match made.filter(|_| self.strategy.stores_served_form()) {
            Some(encoded) => (within_limit(encoded)?, without_version(obj)),
            None => self.stored_form(obj)?,
        };
        let bytes = encoded.bytes.clone();
        if self.strategy.stores_served_form() {
            self.memo.pend(key, encoded, stored);
        }
        Ok(bytes)
    }

    /// The stored encoding and the stored object it encodes.
    fn stored_form(&self, obj: Value) -> Result<(Encoded, Value)> {
        let stored = without_version(self.strategy.to_storage(obj)?);
        Ok((within_limit(Encoded::of(&stored))?, stored))
    }

    /// Decodes a request object: apiVersion/kind must match (missing ones are filled in),
    /// then the typed round trip drops unknown fields per fieldValidation.
    pub(crate) fn decode_request(
        &self,
        ctx: &Context,
        mut obj: Value,
    ) -> Result<(Value, Vec<String>)> {
        let i = self.strategy.info();
        let api_version = i.api_version();
        let Some(map) = obj.as_object_mut() else {
            return Err(Error::BadRequest(format!(
                "{} in version \"{}\" cannot be handled as a {}: the body is not a JSON object",
                i.kind, i.version, i.kind
            )));
        };
        match map.get("apiVersion").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("apiVersion".into(), Value::from(api_version.clone()));
            }
            Some(v) if v != api_version => {
                return Err(Error::BadRequest(format!(
                    "the API version in the data ({v}) does not match the expected API version ({api_version})"
                )));
            }
            Some(_) => {}
        }
        match map.get("kind").and_then(Value::as_str) {
            None | Some("") => {
                map.insert("kind".into(), Value::from(&*i.kind));
            }
            Some(k) if k != i.kind => {
                return Err(Error::BadRequest(format!(
                    "{} in version \"{}\" cannot be handled as a {}: the kind in the data ({k}) does not match the expected kind ({})",
                    i.kind, i.version, i.kind, i.kind
                )));
            }
            Some(_) => {}
        }
        let (obj, unknown) = self.strategy.canonicalize(Input::Value(obj)).map_err(|e| {
            Error::BadRequest(format!(
                "{} in version \"{}\" cannot be handled as a {}: {e}",
                i.kind, i.version, i.kind
            ))
        })?;
        self.field_validation(ctx, obj, &unknown)
    }

    /// [`Self::decode_request`] of a JSON body still in bytes, decoded straight into the typed
    /// struct; `name` is the name a request's URL gives (None for a create, which names none).
    /// None when that does not give the same result as decoding the tree: the body is not
    /// the type's JSON (a wrong apiVersion or kind, a parse error, wrong field types: the tree
    /// path names the cause) or does not carry the URL's name (the tree path inserts or
    /// rejects it before the round trip).
    pub(crate) fn decode_json_request(
        &self,
        ctx: &Context,
        body: &[u8],
        name: Option<&str>,
    ) -> Option<Result<(Value, Vec<String>)>> {
        let (obj, unknown) = self.strategy.canonicalize(Input::Json(body)).ok()?;
        if name.is_some_and(|name| name_of(&obj) != name) {
            return None;
        }
        Some(self.field_validation(ctx, obj, &unknown))
    }

    /// Applies fieldValidation to the unknown fields a decode found: Strict fails, Warn
    /// returns them as warnings, Ignore drops them.
    fn field_validation(
        &self,
        ctx: &Context,
        obj: Value,
        unknown: &[String],
    ) -> Result<(Value, Vec<String>)> {
        let i = self.strategy.info();
        let texts: Vec<String> = unknown
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect();
        match ctx.field_validation {
            FieldValidation::Strict if !texts.is_empty() => Err(Error::BadRequest(format!(
                "{} in version \"{}\" cannot be handled as a {}: strict decoding error: {}",
                i.kind,
                i.version,
                i.kind,
                texts.join(", ")
            ))),
            FieldValidation::Warn => Ok((obj, texts)),
            _ => Ok((obj, Vec::new())),
        }
    }
}

/// A stored value that does not decode: the store's data is damaged, not the request.
fn not_json(kv: &KeyValue, e: &serde_json::Error) -> Error {
    Error::Internal(format!("stored object {} is not JSON: {e}", kv.key))
}

/// `encoded`, when within the object size limit.
fn within_limit(encoded: Encoded) -> Result<Encoded> {
    if encoded.bytes.len() > MAX_OBJECT_BYTES {
        return Err(Error::TooLarge(format!("limit is {MAX_OBJECT_BYTES}")));
    }
    Ok(encoded)
}

/// `obj` without `metadata.resourceVersion` and `metadata.selfLink` (the stored form keeps
/// neither), its other fields in their order.
fn without_version(mut obj: Value) -> Value {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.shift_remove("resourceVersion");
        meta.shift_remove("selfLink");
    }
    obj
}
