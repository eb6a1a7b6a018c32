//! [`MetaOnly`]: an object of any served kind as the in-process controllers watch it, decoded
//! only as far as the metadata they read (identity, resourceVersion, ownerReferences,
//! finalizers, deletionTimestamp). Everything else in a watch event (spec, data, and above all
//! `managedFields`) is skipped by the parser instead of being built into structs and freed
//! again: the garbage collector and the coordinated-leader-election controller watch every
//! lease, so each lease renewal used to be decoded in full twice. May use: nothing internal.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::api::ApiResource;
use kube::Resource;
use serde::{Deserialize, Deserializer};
use std::borrow::Cow;

/// An object's metadata, reduced to the fields listed in the module doc; the kind comes from
/// the watch's [`ApiResource`], like `DynamicObject`'s.
#[derive(Clone, Debug, Default)]
pub(crate) struct MetaOnly {
    pub metadata: ObjectMeta,
}

impl<'de> Deserialize<'de> for MetaOnly {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize, Default)]
        #[serde(rename_all = "camelCase", default)]
        struct Meta {
            name: Option<String>,
            namespace: Option<String>,
            uid: Option<String>,
            resource_version: Option<String>,
            deletion_timestamp: Option<Time>,
            finalizers: Option<Vec<String>>,
            owner_references: Option<Vec<OwnerReference>>,
        }
        #[derive(Deserialize)]
        struct Object {
            #[serde(default)]
            metadata: Meta,
        }
        let m = Object::deserialize(d)?.metadata;
        Ok(MetaOnly {
            metadata: ObjectMeta {
                name: m.name,
                namespace: m.namespace,
                uid: m.uid,
                resource_version: m.resource_version,
                deletion_timestamp: m.deletion_timestamp,
                finalizers: m.finalizers,
                owner_references: m.owner_references,
                ..ObjectMeta::default()
            },
        })
    }
}

impl Resource for MetaOnly {
    type DynamicType = ApiResource;
    type Scope = kube::core::DynamicResourceScope;

    fn kind(dt: &ApiResource) -> Cow<'_, str> {
        dt.kind.as_str().into()
    }
    fn group(dt: &ApiResource) -> Cow<'_, str> {
        dt.group.as_str().into()
    }
    fn version(dt: &ApiResource) -> Cow<'_, str> {
        dt.version.as_str().into()
    }
    fn api_version(dt: &ApiResource) -> Cow<'_, str> {
        dt.api_version.as_str().into()
    }
    fn plural(dt: &ApiResource) -> Cow<'_, str> {
        dt.plural.as_str().into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fields the controllers read survive; managedFields, labels and the body do not.
    #[test]
    fn keeps_the_watched_metadata_and_skips_the_rest() {
        let lease = serde_json::json!({
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": "l", "namespace": "ns", "uid": "u-1", "resourceVersion": "42",
                "labels": {"a": "b"},
                "deletionTimestamp": "2026-11-30T10:00:00Z",
                "finalizers": ["orphan"],
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u-0"}],
                "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
                                   "fieldsV1": {"f:spec": {"f:holderIdentity": {}}}}]
            },
            "spec": {"holderIdentity": "h", "renewTime": "2026-11-30T10:00:00.000000Z"}
        });
        let o: MetaOnly = serde_json::from_value(lease).unwrap();
        let m = &o.metadata;
        assert_eq!(m.name.as_deref(), Some("l"));
        assert_eq!(m.namespace.as_deref(), Some("ns"));
        assert_eq!(m.uid.as_deref(), Some("u-1"));
        assert_eq!(m.resource_version.as_deref(), Some("42"));
        assert!(m.deletion_timestamp.is_some());
        assert_eq!(m.finalizers.as_deref(), Some(&["orphan".to_string()][..]));
        assert_eq!(
            m.owner_references.as_ref().map(|r| r[0].uid.as_str()),
            Some("u-0")
        );
        assert!(m.labels.is_none() && m.managed_fields.is_none());
    }

    /// An object without metadata decodes to empty metadata rather than failing the watch.
    #[test]
    fn an_object_without_metadata_is_empty() {
        let o: MetaOnly = serde_json::from_str(r#"{"kind":"Lease","spec":{}}"#).unwrap();
        assert!(o.metadata.name.is_none());
    }
}
