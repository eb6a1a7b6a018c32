//! Authorization (WithAuthorization in k8s): an [`Authorizer`] decides per request. For now
//! every authenticated user is allowed; the anonymous user may reach only the public
//! health and version endpoints (RBAC's `system:public-info-viewer`). May use: api.

use crate::api::{RequestInfo, UserInfo};

/// An authorization decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Go on.
    Allow,
    /// Refuse, with the reason.
    Deny(String),
}

/// Decides whether a user may do what a request asks.
pub(crate) trait Authorizer: Send + Sync {
    /// The decision for `user` doing `info`.
    fn authorize(&self, user: &UserInfo, info: &RequestInfo) -> Decision;
}

/// Allows every authenticated user; anonymous users only get the public info paths.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct AllowAuthenticated;

/// Whether a path is readable without credentials (health probes and /version).
pub(crate) fn is_public_path(path: &str) -> bool {
    ["/healthz", "/livez", "/readyz"].iter().any(|p| {
        path == *p
            || path
                .strip_prefix(p)
                .is_some_and(|rest| rest.starts_with('/'))
    }) || path == "/version"
        || path == "/version/"
}

impl Authorizer for AllowAuthenticated {
    fn authorize(&self, user: &UserInfo, info: &RequestInfo) -> Decision {
        if !user.is_anonymous() || (!info.is_resource_request && is_public_path(&info.path)) {
            Decision::Allow
        } else {
            Decision::Deny(format!(
                "user {:?} may not {} {:?}",
                user.name, info.verb, info.path
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anonymous_gets_public_paths_only() {
        let anon = UserInfo::anonymous();
        let get = |p: &str| RequestInfo::parse(&http::Method::GET, p, None);
        for ok in ["/livez", "/readyz/shutdown", "/healthz", "/version"] {
            assert_eq!(
                AllowAuthenticated.authorize(&anon, &get(ok)),
                Decision::Allow,
                "{ok}"
            );
        }
        for no in ["/api", "/api/v1/namespaces", "/livezz", "/metrics"] {
            assert_ne!(
                AllowAuthenticated.authorize(&anon, &get(no)),
                Decision::Allow,
                "{no}"
            );
        }
        let user = UserInfo {
            name: "alice".into(),
            ..Default::default()
        };
        assert_eq!(
            AllowAuthenticated.authorize(&user, &get("/api")),
            Decision::Allow
        );
    }
}
