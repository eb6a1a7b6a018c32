//! Discovery of the remote groups (kube-aggregator's apisHandler, apiGroupHandler and
//! aggregated discovery manager): `/apis` lists them after this server's groups, ordered by
//! groupPriorityMinimum; `/apis/<group>` of a remote-only group is answered from its
//! APIServices; the aggregated document carries each remote group/version's resources as
//! the backend last reported them (fetched by the `apiservice-discovery-controller` hook,
//! `freshness: Stale` once a fetch failed, absent until one succeeded).

use super::ApiService;
use crate::api::{full_body, Body};
use http_body_util::BodyExt;
use serde_json::{json, Value};
use sha2::Digest;
use std::collections::BTreeMap;
use std::sync::RwLock;

/// The media type of aggregated discovery.
pub(super) const AGGREGATED: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// What each remote APIService's backend reported for its group/version: an
/// APIVersionDiscovery, and whether the last fetch succeeded.
#[derive(Default)]
pub(super) struct Cache {
    versions: RwLock<BTreeMap<String, (Value, bool)>>,
    /// The `serverRelativeURL` of each APIService's group/version in its backend's OpenAPI v3
    /// index.
    openapi: RwLock<BTreeMap<String, String>>,
}

impl Cache {
    /// Records a successful fetch of `api_service`'s version document.
    pub(super) fn fresh(&self, api_service: &str, version: Value) {
        let mut map = self.versions.write().unwrap_or_else(|e| e.into_inner());
        map.insert(api_service.to_string(), (version, true));
    }

    /// Records a failed fetch: the last document stays, marked stale.
    pub(super) fn stale(&self, api_service: &str) {
        let mut map = self.versions.write().unwrap_or_else(|e| e.into_inner());
        if let Some(entry) = map.get_mut(api_service) {
            entry.1 = false;
        }
    }

    /// Records (or forgets) where the backend of `api_service` serves its OpenAPI v3 document.
    pub(super) fn openapi(&self, api_service: &str, url: Option<String>) {
        let mut map = self.openapi.write().unwrap_or_else(|e| e.into_inner());
        match url {
            Some(url) => map.insert(api_service.to_string(), url),
            None => map.remove(api_service),
        };
    }

    /// Forgets the APIServices not in `keep`.
    pub(super) fn retain(&self, keep: &BTreeMap<String, ApiService>) {
        let mut map = self.versions.write().unwrap_or_else(|e| e.into_inner());
        map.retain(|name, _| keep.contains_key(name));
        let mut urls = self.openapi.write().unwrap_or_else(|e| e.into_inner());
        urls.retain(|name, _| keep.contains_key(name));
    }

    fn get(&self, api_service: &str) -> Option<Value> {
        let map = self.versions.read().unwrap_or_else(|e| e.into_inner());
        let (doc, fresh) = map.get(api_service)?;
        let mut doc = doc.clone();
        doc["freshness"] = Value::from(if *fresh { "Current" } else { "Stale" });
        Some(doc)
    }
}

/// Kubernetes' version order (kube-aware: GA > beta > alpha, then by number), as
/// `version.CompareKubeAwareVersionStrings`.
fn version_rank(v: &str) -> (u8, u64, u64, String) {
    let Some(rest) = v.strip_prefix('v') else {
        return (0, 0, 0, v.to_string());
    };
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let Ok(major) = digits.parse::<u64>() else {
        return (0, 0, 0, v.to_string());
    };
    let tail = &rest[digits.len()..];
    let (stage, minor) = match tail {
        "" => (3, 0),
        t if t.starts_with("beta") => (2, t[4..].parse().unwrap_or(0)),
        t if t.starts_with("alpha") => (1, t[5..].parse().unwrap_or(0)),
        _ => return (0, 0, 0, v.to_string()),
    };
    (stage, major, minor, String::new())
}

/// The remote groups (those no Local APIService serves), each with its APIServices in
/// version order (versionPriority, then Kubernetes' version order), the groups ordered by
/// their highest groupPriorityMinimum, then name.
fn remote_groups(all: &BTreeMap<String, ApiService>) -> Vec<(String, Vec<&ApiService>)> {
    let mut groups: BTreeMap<&str, Vec<&ApiService>> = BTreeMap::new();
    for a in all.values() {
        groups.entry(&a.group).or_default().push(a);
    }
    let mut out: Vec<(String, Vec<&ApiService>)> = groups
        .into_iter()
        .filter(|(_, apis)| apis.iter().all(|a| a.service.is_some()))
        .map(|(g, mut apis)| {
            apis.sort_by(|a, b| {
                b.version_priority
                    .cmp(&a.version_priority)
                    .then_with(|| version_rank(&b.version).cmp(&version_rank(&a.version)))
            });
            (g.to_string(), apis)
        })
        .collect();
    let priority = |apis: &[&ApiService]| {
        apis.iter()
            .map(|a| a.group_priority_minimum)
            .max()
            .unwrap_or(0)
    };
    out.sort_by(|(ga, a), (gb, b)| priority(b).cmp(&priority(a)).then_with(|| ga.cmp(gb)));
    out
}

fn group_json(group: &str, apis: &[&ApiService]) -> Value {
    let versions: Vec<Value> = apis
        .iter()
        .map(|a| json!({ "groupVersion": format!("{group}/{}", a.version), "version": a.version }))
        .collect();
    let preferred = versions.first().cloned().unwrap_or(Value::Null);
    json!({ "name": group, "versions": versions, "preferredVersion": preferred })
}

/// `/apis/<group>` of a group only remote APIServices serve; None for other groups.
pub(super) fn group(
    all: &BTreeMap<String, ApiService>,
    group: &str,
) -> Option<http::Response<Body>> {
    let groups = remote_groups(all);
    let (g, apis) = groups.iter().find(|(g, _)| g == group)?;
    let mut doc = serde_json::Map::new();
    doc.insert("kind".into(), Value::from("APIGroup"));
    doc.insert("apiVersion".into(), Value::from("v1"));
    if let Value::Object(m) = group_json(g, apis) {
        doc.extend(m);
    }
    Some(json_response(
        &Value::Object(doc),
        "application/json",
        false,
    ))
}

/// `resp` with its JSON document changed by `edit`: status, content type and `Vary` kept, the
/// `ETag` (when it had one) made for the new content. A body that is not JSON (protobuf was
/// asked for) is served as this server made it.
pub(super) async fn edit_json(
    resp: http::Response<Body>,
    edit: impl FnOnce(&mut Value),
) -> http::Response<Body> {
    let (parts, body) = resp.into_parts();
    let bytes = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => return http::Response::from_parts(parts, full_body("")),
    };
    let Ok(mut doc) = serde_json::from_slice::<Value>(&bytes) else {
        return http::Response::from_parts(parts, full_body(bytes));
    };
    edit(&mut doc);
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let etag = parts.headers.contains_key(http::header::ETAG);
    let mut edited = json_response(&doc, content_type, etag);
    *edited.status_mut() = parts.status;
    edited
}

/// `resp` (this server's `/apis`, legacy or aggregated) with the remote groups added.
pub(super) async fn merge(
    resp: http::Response<Body>,
    all: &BTreeMap<String, ApiService>,
    cache: &Cache,
    aggregated: bool,
) -> http::Response<Body> {
    let groups = remote_groups(all);
    let list = if aggregated { "items" } else { "groups" };
    edit_json(resp, |doc| {
        let Some(items) = doc.get_mut(list).and_then(Value::as_array_mut) else {
            return;
        };
        for (g, apis) in &groups {
            let entry = if aggregated {
                aggregated_group(g, apis, cache)
            } else {
                Some(group_json(g, apis))
            };
            items.extend(entry);
        }
    })
    .await
}

/// `resp` (this server's OpenAPI v3 index) with the remote group/versions whose backend
/// published a document; their URLs are the backend's (the aggregator serves them).
pub(super) async fn merge_openapi_index(
    resp: http::Response<Body>,
    all: &BTreeMap<String, ApiService>,
    cache: &Cache,
) -> http::Response<Body> {
    let urls = cache
        .openapi
        .read()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    edit_json(resp, |doc| {
        let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) else {
            return;
        };
        for a in all.values().filter(|a| a.service.is_some()) {
            if let Some(url) = urls.get(&a.name) {
                paths.insert(
                    format!("apis/{}/{}", a.group, a.version),
                    json!({ "serverRelativeURL": url }),
                );
            }
        }
    })
    .await
}

/// The aggregated discovery entry of a remote group: the versions whose backend reported.
fn aggregated_group(group: &str, apis: &[&ApiService], cache: &Cache) -> Option<Value> {
    let versions: Vec<Value> = apis.iter().filter_map(|a| cache.get(&a.name)).collect();
    if versions.is_empty() {
        return None;
    }
    Some(json!({
        "metadata": { "name": group, "creationTimestamp": null },
        "versions": versions,
    }))
}

/// The version `version` of `group` in a backend's aggregated discovery document, or the
/// same made from its legacy APIResourceList.
pub(super) fn version_from_aggregated(doc: &Value, group: &str, version: &str) -> Option<Value> {
    doc.get("items")?
        .as_array()?
        .iter()
        .find(|i| i.pointer("/metadata/name").and_then(Value::as_str) == Some(group))?
        .get("versions")?
        .as_array()?
        .iter()
        .find(|v| v.get("version").and_then(Value::as_str) == Some(version))
        .cloned()
}

/// An APIVersionDiscovery made from a legacy APIResourceList (subresources folded into
/// their resource), for backends without aggregated discovery.
pub(super) fn version_from_legacy(list: &Value, version: &str) -> Option<Value> {
    let resources = list.get("resources")?.as_array()?;
    let mut out: Vec<Value> = Vec::new();
    for r in resources {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        let verbs = r.get("verbs").cloned().unwrap_or(json!([]));
        match name.split_once('/') {
            None => out.push(json!({
                "resource": name,
                "responseKind": { "group": "", "version": "", "kind": r.get("kind").cloned().unwrap_or(Value::Null) },
                "scope": if r.get("namespaced").and_then(Value::as_bool) == Some(true) { "Namespaced" } else { "Cluster" },
                "singularResource": r.get("singularName").cloned().unwrap_or(json!("")),
                "verbs": verbs,
                "shortNames": r.get("shortNames").cloned().unwrap_or(json!([])),
                "categories": r.get("categories").cloned().unwrap_or(json!([])),
            })),
            Some((parent, sub)) => {
                let Some(p) = out
                    .iter_mut()
                    .find(|p| p.get("resource").and_then(Value::as_str) == Some(parent))
                else {
                    continue;
                };
                let entry = json!({
                    "subresource": sub,
                    "responseKind": { "group": "", "version": "", "kind": r.get("kind").cloned().unwrap_or(Value::Null) },
                    "verbs": verbs,
                });
                match p.get_mut("subresources").and_then(Value::as_array_mut) {
                    Some(subs) => subs.push(entry),
                    None => p["subresources"] = json!([entry]),
                }
            }
        }
    }
    Some(json!({ "version": version, "resources": out }))
}

fn json_response(doc: &Value, content_type: &str, etag: bool) -> http::Response<Body> {
    let bytes = serde_json::to_vec(doc).unwrap_or_default();
    let mut builder = http::Response::builder()
        .status(200)
        .header(http::header::CONTENT_TYPE, content_type);
    if etag {
        let sum: String = sha2::Sha512::digest(&bytes)
            .iter()
            .map(|b| format!("{b:02X}"))
            .collect();
        builder = builder
            .header(http::header::ETAG, format!("\"{sum}\""))
            .header(http::header::VARY, "Accept");
    }
    builder.body(full_body(bytes)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::super::ServiceRef;
    use super::*;

    fn api(name: &str, group: &str, version: &str, remote: bool, gp: i64, vp: i64) -> ApiService {
        ApiService {
            name: name.into(),
            group: group.into(),
            version: version.into(),
            service: remote.then(|| ServiceRef {
                namespace: "ns".into(),
                name: "svc".into(),
                port: 443,
            }),
            ca_bundle: Vec::new(),
            insecure_skip_tls_verify: true,
            group_priority_minimum: gp,
            version_priority: vp,
            available: true,
            automanaged: false,
            crd: false,
        }
    }

    fn table(apis: Vec<ApiService>) -> BTreeMap<String, ApiService> {
        apis.into_iter().map(|a| (a.name.clone(), a)).collect()
    }

    #[test]
    fn remote_groups_are_ordered_by_priority_and_versions_by_kube_order() {
        let all = table(vec![
            api("v1.", "", "v1", false, 18000, 1),
            api("v1alpha1.b.io", "b.io", "v1alpha1", true, 100, 15),
            api("v1beta1.b.io", "b.io", "v1beta1", true, 100, 15),
            api("v1.a.io", "a.io", "v1", true, 100, 15),
            api("v2.z.io", "z.io", "v2", true, 2000, 15),
        ]);
        let groups = remote_groups(&all);
        let names: Vec<&str> = groups.iter().map(|(g, _)| g.as_str()).collect();
        assert_eq!(names, ["z.io", "a.io", "b.io"]);
        let b: Vec<&str> = groups[2].1.iter().map(|a| a.version.as_str()).collect();
        assert_eq!(b, ["v1beta1", "v1alpha1"]);
        let doc = group_json("b.io", &groups[2].1);
        assert_eq!(doc["preferredVersion"]["groupVersion"], "b.io/v1beta1");
    }

    #[test]
    fn legacy_resource_lists_become_aggregated_versions() {
        let list = json!({"resources": [
            {"name": "widgets", "singularName": "widget", "namespaced": true, "kind": "Widget",
             "verbs": ["get", "list"], "shortNames": ["wd"]},
            {"name": "widgets/status", "singularName": "", "namespaced": true, "kind": "Widget",
             "verbs": ["get", "patch"]},
        ]});
        let v = version_from_legacy(&list, "v1").unwrap();
        assert_eq!(v["resources"][0]["scope"], "Namespaced");
        assert_eq!(
            v["resources"][0]["subresources"][0]["subresource"],
            "status"
        );
        assert_eq!(v["resources"][0]["shortNames"], json!(["wd"]));
    }

    #[test]
    fn stale_documents_are_marked() {
        let cache = Cache::default();
        cache.fresh("v1.a.io", json!({"version": "v1", "resources": []}));
        assert_eq!(cache.get("v1.a.io").unwrap()["freshness"], "Current");
        cache.stale("v1.a.io");
        assert_eq!(cache.get("v1.a.io").unwrap()["freshness"], "Stale");
        cache.retain(&BTreeMap::new());
        assert!(cache.get("v1.a.io").is_none());
    }
}
