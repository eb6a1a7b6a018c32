//! Group/version/kind and group/version/resource identifiers (k8s.io/apimachinery
//! pkg/runtime/schema). May use: nothing internal.

use std::fmt;

/// A kind in an API group version, e.g. `coordination.k8s.io/v1, Kind=Lease`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub(crate) struct GroupVersionKind {
    /// API group, empty for the core group.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Kind, e.g. `Lease`.
    pub kind: String,
}

impl GroupVersionKind {
    /// Builds a GVK from its parts.
    pub(crate) fn new(group: &str, version: &str, kind: &str) -> Self {
        GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// The `apiVersion` string: `v1` for the core group, `<group>/<version>` otherwise.
    pub(crate) fn api_version(&self) -> String {
        api_version(&self.group, &self.version)
    }

    /// Parses an `apiVersion` + `kind` pair as found in an object.
    pub(crate) fn from_api_version_kind(api_version: &str, kind: &str) -> Self {
        let (group, version) = split_api_version(api_version);
        GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }
}

impl fmt::Display for GroupVersionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, Kind={}", self.api_version(), self.kind)
    }
}

/// `v1` for the core group, `<group>/<version>` otherwise.
pub(crate) fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// `<resource>.<group>`, or `<resource>` for the core group (schema.GroupResource.String).
pub(crate) fn group_resource(group: &str, resource: &str) -> String {
    if group.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}.{group}")
    }
}

/// Splits an `apiVersion` into (group, version); `v1` → ("", "v1").
pub(crate) fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_like_apimachinery() {
        let gvk = GroupVersionKind::new("coordination.k8s.io", "v1", "Lease");
        assert_eq!(gvk.api_version(), "coordination.k8s.io/v1");
        assert_eq!(gvk.to_string(), "coordination.k8s.io/v1, Kind=Lease");
        assert_eq!(
            GroupVersionKind::from_api_version_kind("v1", "ConfigMap").group,
            ""
        );
        assert_eq!(group_resource("", "configmaps"), "configmaps");
        assert_eq!(
            group_resource("coordination.k8s.io", "leases"),
            "leases.coordination.k8s.io"
        );
    }
}
