//! Patch metadata of the served types: which lists merge (and on which key), which are sets,
//! which are atomic. This is the `patchStrategy`/`patchMergeKey`/`listType`/`listMapKey` tags of
//! the Go types (k8s.io/api, k8s.io/apimachinery meta/v1) for every kind kapi serves, read by
//! the strategic merge patch, by server-side apply and by the OpenAPI extensions.
//! May use: api.

use crate::api::GroupVersionKind;

/// How a list field is merged (`x-kubernetes-list-type` and the SMP patch strategy).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ListType {
    /// Replaced as a whole (the default; `listType=atomic`).
    Atomic,
    /// A set of scalars merged by value (`patchStrategy=merge`, `listType=set`).
    Set,
    /// A list of objects keyed by the given fields (`patchStrategy=merge`, `listType=map`).
    Map(&'static [&'static str]),
}

/// The metadata of one field, as Go struct tags declare it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FieldMeta {
    /// The list semantics when the field is a list.
    pub(crate) list: ListType,
}

impl FieldMeta {
    const ATOMIC: FieldMeta = FieldMeta {
        list: ListType::Atomic,
    };

    /// The SMP merge key, when the list merges by key.
    pub(crate) fn merge_key(&self) -> Option<&'static str> {
        match self.list {
            ListType::Map(keys) => keys.first().copied(),
            _ => None,
        }
    }

    /// Whether the SMP patch strategy of the field is `merge`.
    pub(crate) fn merges(&self) -> bool {
        !matches!(self.list, ListType::Atomic)
    }
}

/// One tagged field: the kinds it applies to (empty = every kind), its path from the object
/// root (list elements are transparent) and its metadata.
struct Entry {
    kinds: &'static [(&'static str, &'static str)],
    path: &'static [&'static str],
    list: ListType,
}

const ANY: &[(&str, &str)] = &[];

/// The tagged fields of the served types. Lists not named here are atomic (the default).
const ENTRIES: &[Entry] = &[
    // k8s.io/apimachinery/pkg/apis/meta/v1 ObjectMeta
    Entry {
        kinds: ANY,
        path: &["metadata", "finalizers"],
        list: ListType::Set,
    },
    Entry {
        kinds: ANY,
        path: &["metadata", "ownerReferences"],
        list: ListType::Map(&["uid"]),
    },
    // core/v1 ServiceAccount
    Entry {
        kinds: &[("", "ServiceAccount")],
        path: &["secrets"],
        list: ListType::Map(&["name"]),
    },
    // core/v1 Namespace
    Entry {
        kinds: &[("", "Namespace")],
        path: &["status", "conditions"],
        list: ListType::Map(&["type"]),
    },
    // core/v1 Service
    Entry {
        kinds: &[("", "Service")],
        path: &["spec", "ports"],
        list: ListType::Map(&["port", "protocol"]),
    },
    // core/v1 Service; apiregistration.k8s.io/v1 APIService
    Entry {
        kinds: &[("", "Service"), ("apiregistration.k8s.io", "APIService")],
        path: &["status", "conditions"],
        list: ListType::Map(&["type"]),
    },
];

/// The default of a list-map key field, from the OpenAPI `default` of the key: what
/// structured-merge-diff takes for a key an item omits.
struct KeyDefault {
    kinds: &'static [(&'static str, &'static str)],
    /// The keyed list.
    path: &'static [&'static str],
    key: &'static str,
    default: &'static str,
}

const KEY_DEFAULTS: &[KeyDefault] = &[
    // core/v1 ServicePort.protocol
    KeyDefault {
        kinds: &[("", "Service")],
        path: &["spec", "ports"],
        key: "protocol",
        default: "TCP",
    },
];

/// The default of key field `key` of the keyed list at `path` in objects of `gvk`, if it has one.
pub(crate) fn key_default(
    gvk: &GroupVersionKind,
    path: &[&str],
    key: &str,
) -> Option<&'static str> {
    KEY_DEFAULTS
        .iter()
        .find(|d| {
            d.path == path
                && d.key == key
                && d.kinds
                    .iter()
                    .any(|(g, k)| *g == gvk.group && *k == gvk.kind)
        })
        .map(|d| d.default)
}

/// The metadata of the field at `path` (field names from the object root) in objects of `gvk`.
pub(crate) fn field_meta(gvk: &GroupVersionKind, path: &[&str]) -> FieldMeta {
    ENTRIES
        .iter()
        .find(|e| {
            e.path == path
                && (e.kinds.is_empty()
                    || e.kinds
                        .iter()
                        .any(|(g, k)| *g == gvk.group && *k == gvk.kind))
        })
        .map(|e| FieldMeta { list: e.list })
        .unwrap_or(FieldMeta::ATOMIC)
}

/// Every tagged field of `gvk`, for the OpenAPI extensions: (path, list type).
pub(crate) fn tagged_fields(
    gvk: &GroupVersionKind,
) -> impl Iterator<Item = (&'static [&'static str], ListType)> + '_ {
    ENTRIES
        .iter()
        .filter(move |e| {
            e.kinds.is_empty()
                || e.kinds
                    .iter()
                    .any(|(g, k)| *g == gvk.group && *k == gvk.kind)
        })
        .map(|e| (e.path, e.list))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_of_served_types() {
        let sa = GroupVersionKind::new("", "v1", "ServiceAccount");
        let cm = GroupVersionKind::new("", "v1", "ConfigMap");
        let ns = GroupVersionKind::new("", "v1", "Namespace");
        let svc = GroupVersionKind::new("", "v1", "Service");
        let apisvc = GroupVersionKind::new("apiregistration.k8s.io", "v1", "APIService");
        let cases: &[(&GroupVersionKind, &[&str], ListType)] = &[
            (&cm, &["metadata", "finalizers"], ListType::Set),
            (
                &cm,
                &["metadata", "ownerReferences"],
                ListType::Map(&["uid"]),
            ),
            (&cm, &["metadata", "managedFields"], ListType::Atomic),
            (&sa, &["secrets"], ListType::Map(&["name"])),
            (&cm, &["secrets"], ListType::Atomic),
            (&sa, &["imagePullSecrets"], ListType::Atomic),
            (&ns, &["spec", "finalizers"], ListType::Atomic),
            (&ns, &["status", "conditions"], ListType::Map(&["type"])),
            (
                &svc,
                &["spec", "ports"],
                ListType::Map(&["port", "protocol"]),
            ),
            (&svc, &["spec", "clusterIPs"], ListType::Atomic),
            (&svc, &["status", "conditions"], ListType::Map(&["type"])),
            (&apisvc, &["status", "conditions"], ListType::Map(&["type"])),
        ];
        for (gvk, path, want) in cases {
            assert_eq!(field_meta(gvk, path).list, *want, "{gvk} {path:?}");
        }
        assert_eq!(field_meta(&sa, &["secrets"]).merge_key(), Some("name"));
        assert_eq!(
            key_default(&svc, &["spec", "ports"], "protocol"),
            Some("TCP")
        );
        assert_eq!(key_default(&svc, &["spec", "ports"], "port"), None);
        assert!(!field_meta(&cm, &["data"]).merges());
    }
}
