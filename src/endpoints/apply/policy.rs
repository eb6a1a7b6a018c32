//! Server-side apply's merge as MutatingAdmissionPolicy's ApplyConfiguration mutations use it
//! (policy/mutating/patch's ApplyStructuredMergeDiff): the configuration's keyed list items
//! must carry their keys, it must not set an atomic list, map or struct (a mutation would
//! otherwise drop what it did not mean to), and it is merged as an apply merges it. No field
//! ownership is recorded: the mutation's changes belong to the write. May use: registry's
//! admission interface, api.

use super::typed::Types;
use crate::api::GroupVersionKind;
use crate::registry::admission::Merge;
use serde_json::Value;

/// The merge the server gives admission ([`crate::registry::admission::Chain::set_merge`]).
#[derive(Debug, Default)]
pub(crate) struct PolicyMerge;

impl Merge for PolicyMerge {
    fn merge(
        &self,
        gvk: &GroupVersionKind,
        schema: Option<&Value>,
        object: &Value,
        patch: &Value,
    ) -> Result<Value, String> {
        let types = Types::new(gvk).with_schema(schema);
        types
            .apply_set(patch)
            .map_err(|e| format!("failed to convert patch object to typed object: {e}"))?;
        let atomics = types.atomics(patch);
        if !atomics.is_empty() {
            return Err(format!(
                "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
                atomics.join(", ")
            ));
        }
        Ok(types.merge(object, patch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn merge(gvk: &GroupVersionKind, object: Value, patch: Value) -> Result<Value, String> {
        PolicyMerge.merge(gvk, None, &object, &patch)
    }

    #[test]
    fn maps_merge_and_keyed_lists_merge_by_key() {
        let cm = GroupVersionKind::new("", "v1", "ConfigMap");
        let merged = merge(
            &cm,
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}}),
            json!({"metadata": {"labels": {"y": "2"}}, "data": {"k2": "v2"}}),
        )
        .unwrap();
        assert_eq!(
            merged,
            json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}},
                   "data": {"k": "v", "k2": "v2"}})
        );
        let svc = GroupVersionKind::new("", "v1", "Service");
        let merged = merge(
            &svc,
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP", "name": "http"}]}}),
            json!({"spec": {"ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080},
                                      {"port": 443, "protocol": "TCP"}]}}),
        )
        .unwrap();
        assert_eq!(
            merged["spec"]["ports"],
            json!([{"port": 80, "protocol": "TCP", "name": "http", "targetPort": 8080},
                   {"port": 443, "protocol": "TCP"}])
        );
    }

    #[test]
    fn atomic_values_are_refused() {
        let cm = GroupVersionKind::new("", "v1", "ConfigMap");
        let err = merge(
            &cm,
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"ownerReferences": [{"uid": "u", "name": "o", "kind": "K",
                                                     "apiVersion": "v1"}]}}),
        )
        .unwrap_err();
        assert_eq!(
            err,
            "invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .metadata.ownerReferences[0]"
        );
        // A custom resource's atomic list.
        let schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"args": {"type": "array", "items": {"type": "string"}}}}}});
        let gvk = GroupVersionKind::new("example.com", "v1", "Thing");
        let err = PolicyMerge
            .merge(
                &gvk,
                Some(&schema),
                &json!({}),
                &json!({"spec": {"args": ["a"]}}),
            )
            .unwrap_err();
        assert!(err.ends_with(": .spec.args"), "{err}");
    }
}
