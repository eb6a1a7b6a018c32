//! RequestInfo: what a request is about, parsed once from method + path + query
//! (k8s.io/apiserver pkg/endpoints/request/requestinfo.go). May use: nothing internal.

/// Parsed request attributes (RequestInfo in k8s).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct RequestInfo {
    /// True for /api and /apis paths (resource requests or discovery under them).
    pub is_resource_request: bool,
    /// The path as requested (without query).
    pub path: String,
    /// k8s verb: get, list, watch, create, update, patch, delete, deletecollection,
    /// or the lower-cased HTTP method for non-resource requests.
    pub verb: String,
    /// `api` or `apis` (empty for non-resource requests).
    pub api_prefix: String,
    /// API group ("" for the core group).
    pub api_group: String,
    /// API version, e.g. `v1`.
    pub api_version: String,
    /// Namespace, empty for cluster-scoped requests.
    pub namespace: String,
    /// Resource, e.g. `leases`.
    pub resource: String,
    /// Subresource, e.g. `status`.
    pub subresource: String,
    /// Object name, empty for collections.
    pub name: String,
    /// Path parts after the version.
    pub parts: Vec<String>,
}

impl RequestInfo {
    /// Whether the verb mutates state (counts against the mutating in-flight limit).
    pub(crate) fn is_mutating(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection" | "post" | "put"
        )
    }

    /// Whether the request is long-running (watch), exempt from the request timeout.
    pub(crate) fn is_long_running(&self) -> bool {
        self.verb == "watch" || self.subresource == "proxy" || self.subresource == "log"
    }
}

/// Subresources of a namespace object (`/api/v1/namespaces/<ns>/status`).
const NAMESPACE_SUBRESOURCES: [&str; 2] = ["status", "finalize"];

impl RequestInfo {
    /// Parses a request the way k8s's RequestInfoFactory does. `query` is the raw query string.
    pub(crate) fn parse(method: &http::Method, path: &str, query: Option<&str>) -> RequestInfo {
        let non_resource = || RequestInfo {
            is_resource_request: false,
            path: path.to_string(),
            verb: method.as_str().to_ascii_lowercase(),
            ..RequestInfo::default()
        };
        let mut parts: Vec<String> = path
            .trim_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        if parts.len() < 3 || (parts[0] != "api" && parts[0] != "apis") {
            return non_resource();
        }
        let mut info = RequestInfo {
            path: path.to_string(),
            ..RequestInfo::default()
        };
        info.api_prefix = parts.remove(0);
        if info.api_prefix == "apis" {
            if parts.len() < 3 {
                return non_resource();
            }
            info.api_group = parts.remove(0);
        }
        info.is_resource_request = true;
        info.api_version = parts.remove(0);

        let mut verb_set = false;
        if parts.first().map(String::as_str) == Some("watch") {
            info.verb = "watch".into();
            verb_set = true;
            parts.remove(0);
        }
        if !verb_set {
            info.verb = match *method {
                http::Method::POST => "create",
                http::Method::GET | http::Method::HEAD => "get",
                http::Method::PUT => "update",
                http::Method::PATCH => "patch",
                http::Method::DELETE => "delete",
                _ => "",
            }
            .to_string();
        }
        if parts.first().map(String::as_str) == Some("namespaces") && parts.len() > 1 {
            info.namespace = parts[1].clone();
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2].as_str()) {
                parts.drain(0..2);
            }
        }
        if parts.len() >= 3 {
            info.subresource = parts[2].clone();
        }
        if parts.len() >= 2 {
            info.name = parts[1].clone();
        }
        if let Some(resource) = parts.first() {
            info.resource = resource.clone();
        }
        info.parts = parts;

        if info.name.is_empty() && info.verb == "get" {
            let mut watch = false;
            for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
                if k == "watch" {
                    watch = matches!(v.as_ref(), "true" | "1" | "True" | "TRUE" | "t" | "T");
                }
                if k == "fieldSelector" {
                    if let Some(name) = exact_name(&v) {
                        info.name = name;
                    }
                }
            }
            info.verb = if watch { "watch" } else { "list" }.into();
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".into();
        }
        info
    }
}

/// `metadata.name=x` (or `==`) as the only requirement of a field selector.
fn exact_name(selector: &str) -> Option<String> {
    if selector.contains(',') {
        return None;
    }
    let (key, value) = selector
        .split_once("==")
        .or_else(|| selector.split_once('='))
        .filter(|(k, _)| !k.ends_with('!'))?;
    (key.trim() == "metadata.name" && !value.is_empty() && !value.contains('/'))
        .then(|| value.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    #[test]
    fn parses_namespaced_resources() {
        let i = RequestInfo::parse(
            &Method::GET,
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/x",
            None,
        );
        assert!(i.is_resource_request);
        assert_eq!(
            (
                i.verb.as_str(),
                i.api_group.as_str(),
                i.api_version.as_str()
            ),
            ("get", "coordination.k8s.io", "v1")
        );
        assert_eq!(
            (i.namespace.as_str(), i.resource.as_str(), i.name.as_str()),
            ("kube-system", "leases", "x")
        );
    }

    #[test]
    fn list_watch_and_deletecollection() {
        let i = RequestInfo::parse(
            &Method::GET,
            "/api/v1/namespaces/default/configmaps",
            Some("watch=true"),
        );
        assert_eq!(i.verb, "watch");
        let i = RequestInfo::parse(&Method::GET, "/api/v1/configmaps", None);
        assert_eq!((i.verb.as_str(), i.namespace.as_str()), ("list", ""));
        let i = RequestInfo::parse(
            &Method::GET,
            "/api/v1/watch/namespaces/default/configmaps",
            None,
        );
        assert_eq!(
            (i.verb.as_str(), i.resource.as_str()),
            ("watch", "configmaps")
        );
        let i = RequestInfo::parse(
            &Method::DELETE,
            "/api/v1/namespaces/default/configmaps",
            None,
        );
        assert_eq!(i.verb, "deletecollection");
        let i = RequestInfo::parse(
            &Method::GET,
            "/api/v1/namespaces/a/configmaps",
            Some("fieldSelector=metadata.name%3Dfoo"),
        );
        assert_eq!((i.verb.as_str(), i.name.as_str()), ("list", "foo"));
    }

    #[test]
    fn namespace_objects_and_subresources() {
        let i = RequestInfo::parse(&Method::PUT, "/api/v1/namespaces/foo/finalize", None);
        assert_eq!(
            (i.resource.as_str(), i.name.as_str(), i.subresource.as_str()),
            ("namespaces", "foo", "finalize")
        );
        assert_eq!(i.namespace, "foo");
        let i = RequestInfo::parse(&Method::GET, "/api/v1/namespaces", None);
        assert_eq!(
            (i.resource.as_str(), i.verb.as_str()),
            ("namespaces", "list")
        );
    }

    #[test]
    fn discovery_is_non_resource() {
        for p in [
            "/api",
            "/api/v1",
            "/apis",
            "/apis/coordination.k8s.io",
            "/apis/coordination.k8s.io/v1",
            "/readyz",
            "/version",
        ] {
            let i = RequestInfo::parse(&Method::GET, p, None);
            assert!(!i.is_resource_request, "{p}");
            assert_eq!(i.verb, "get");
        }
    }
}
