//! Discovery (endpoints/discovery in k8s): `/api`, `/api/v1`, `/apis`, `/apis/<g>`, `/apis/<g>/<v>` in
//! the legacy form, and aggregated discovery (apidiscovery.k8s.io/v2) for /api and /apis when
//! the Accept header asks for it. Built once from the registry. May use: registry, api.

use super::negotiate::{
    respond, respond_typed, wants_aggregated_discovery, Output, AGGREGATED_DISCOVERY,
};
use crate::api::Body;
use crate::registry::{ResourceInfo, Resources};
use base64::Engine;
use http::{HeaderMap, Response};
use serde_json::{json, Value};
use sha2::Digest;

/// Precomputed discovery documents.
pub(crate) struct Discovery {
    /// (group, versions in preference order, resources per version).
    groups: Vec<(String, Versions)>,
}

/// Versions of a group in preference order, each with its resources.
type Versions = Vec<(String, Vec<ResourceInfo>)>;

/// discovery.StorageVersionHash.
fn storage_version_hash(i: &ResourceInfo) -> String {
    let digest = sha2::Sha256::digest(format!("{}/{}/{}", i.group, i.version, i.kind).as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn legacy_resources(infos: &[ResourceInfo]) -> Vec<Value> {
    let mut out = Vec::new();
    for i in infos {
        let mut r = json!({
            "name": i.resource,
            "singularName": i.singular,
            "namespaced": i.namespaced,
            "kind": i.kind,
            "verbs": i.verbs,
        });
        if !i.short_names.is_empty() {
            r["shortNames"] = json!(i.short_names);
        }
        if !i.categories.is_empty() {
            r["categories"] = json!(i.categories);
        }
        if i.verbs.contains(&"get") {
            r["storageVersionHash"] = Value::from(storage_version_hash(i));
        }
        out.push(r);
        for (sub, verbs) in i.subresources {
            let mut r = json!({
                "name": format!("{}/{sub}", i.resource),
                "singularName": "",
                "namespaced": i.namespaced,
                "kind": i.kind,
                "verbs": verbs,
            });
            if let Some((group, version, kind)) = foreign_kind(sub) {
                r["group"] = Value::from(group);
                r["version"] = Value::from(version);
                r["kind"] = Value::from(kind);
            }
            out.push(r);
        }
    }
    out
}

/// The kind a subresource takes when it is not its resource's own: (group, version, kind).
fn foreign_kind(sub: &str) -> Option<(&'static str, &'static str, &'static str)> {
    match sub {
        "scale" => Some(("autoscaling", "v1", "Scale")),
        "token" => Some(("authentication.k8s.io", "v1", "TokenRequest")),
        _ => None,
    }
}

fn aggregated_resource(i: &ResourceInfo) -> Value {
    let kind = json!({ "group": i.group, "version": i.version, "kind": i.kind });
    let mut r = json!({
        "resource": i.resource,
        "responseKind": kind,
        "scope": if i.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": i.singular,
        "verbs": i.verbs,
    });
    if !i.short_names.is_empty() {
        r["shortNames"] = json!(i.short_names);
    }
    if !i.categories.is_empty() {
        r["categories"] = json!(i.categories);
    }
    if !i.subresources.is_empty() {
        r["subresources"] = Value::Array(
            i.subresources
                .iter()
                .map(|(sub, verbs)| {
                    let kind = match foreign_kind(sub) {
                        Some((group, version, kind)) => {
                            json!({ "group": group, "version": version, "kind": kind })
                        }
                        None => kind.clone(),
                    };
                    json!({ "subresource": sub, "responseKind": kind, "verbs": verbs })
                })
                .collect(),
        );
    }
    r
}

fn group_version(group: &str, version: &str) -> String {
    crate::api::gvk::api_version(group, version)
}

impl Discovery {
    /// Builds the documents from the registry's resources.
    pub(crate) fn new(resources: &Resources) -> Self {
        let mut groups: Vec<(String, Versions)> = Vec::new();
        for r in resources.iter() {
            let i = r.info();
            let gi = match groups.iter().position(|(g, _)| *g == i.group) {
                Some(p) => p,
                None => {
                    groups.push((i.group.to_string(), Vec::new()));
                    groups.len() - 1
                }
            };
            let versions = &mut groups[gi].1;
            match versions.iter_mut().find(|(v, _)| *v == i.version) {
                Some((_, list)) => list.push(i.clone()),
                None => versions.push((i.version.to_string(), vec![i.clone()])),
            }
        }
        Discovery { groups }
    }

    fn group_json(&self, group: &str, versions: &Versions) -> Value {
        let vs: Vec<Value> = versions
            .iter()
            .map(|(v, _)| json!({ "groupVersion": group_version(group, v), "version": v }))
            .collect();
        let preferred = vs.first().cloned().unwrap_or(Value::Null);
        json!({ "name": group, "versions": vs, "preferredVersion": preferred })
    }

    fn aggregated(&self, core: bool) -> Value {
        let items: Vec<Value> = self
            .groups
            .iter()
            .filter(|(g, _)| g.is_empty() == core)
            .map(|(g, versions)| {
                let vs: Vec<Value> = versions
                    .iter()
                    .map(|(v, infos)| {
                        json!({
                            "version": v,
                            "resources": infos.iter().map(aggregated_resource).collect::<Vec<_>>(),
                            "freshness": "Current",
                        })
                    })
                    .collect();
                json!({ "metadata": { "name": g, "creationTimestamp": null }, "versions": vs })
            })
            .collect();
        json!({ "kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items })
    }

    /// Serves a discovery path, `None` when the path is not a discovery document.
    pub(crate) fn serve(&self, path: &str, headers: &HeaderMap) -> Option<Response<Body>> {
        let parts: Vec<&str> = path
            .trim_matches('/')
            .split('/')
            .filter(|s| !s.is_empty())
            .collect();
        let aggregated = wants_aggregated_discovery(headers);
        let doc = match parts.as_slice() {
            ["api"] if aggregated => return Some(self.aggregated_response(true)),
            ["apis"] if aggregated => return Some(self.aggregated_response(false)),
            ["api"] => {
                let host = headers
                    .get(http::header::HOST)
                    .and_then(|h| h.to_str().ok())
                    .unwrap_or("");
                json!({
                    "kind": "APIVersions",
                    "versions": ["v1"],
                    "serverAddressByClientCIDRs": [{ "clientCIDR": "0.0.0.0/0", "serverAddress": host }],
                })
            }
            ["api", version] => self.resource_list("", version)?,
            ["apis"] => {
                let groups: Vec<Value> = self
                    .groups
                    .iter()
                    .filter(|(g, _)| !g.is_empty())
                    .map(|(g, vs)| self.group_json(g, vs))
                    .collect();
                json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups })
            }
            ["apis", group] => {
                let (g, vs) = self
                    .groups
                    .iter()
                    .find(|(g, _)| g == group && !g.is_empty())?;
                let mut doc = self.group_json(g, vs);
                if let Some(m) = doc.as_object_mut() {
                    let mut out = serde_json::Map::new();
                    out.insert("kind".into(), Value::from("APIGroup"));
                    out.insert("apiVersion".into(), Value::from("v1"));
                    out.extend(std::mem::take(m));
                    doc = Value::Object(out);
                }
                doc
            }
            ["apis", group, version] => self.resource_list(group, version)?,
            _ => return None,
        };
        Some(respond(200, &doc, Output::Json, &[]))
    }

    fn resource_list(&self, group: &str, version: &str) -> Option<Value> {
        let (_, versions) = self.groups.iter().find(|(g, _)| g == group)?;
        let (_, infos) = versions.iter().find(|(v, _)| v == version)?;
        Some(json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version(group, version),
            "resources": legacy_resources(infos),
        }))
    }

    fn aggregated_response(&self, core: bool) -> Response<Body> {
        let doc = self.aggregated(core);
        let mut resp = respond_typed(&doc, AGGREGATED_DISCOVERY);
        let etag = hex_sha512(&serde_json::to_vec(&doc).unwrap_or_default());
        if let Ok(v) = http::HeaderValue::from_str(&format!("\"{etag}\"")) {
            resp.headers_mut().insert(http::header::ETAG, v);
        }
        resp.headers_mut()
            .insert(http::header::VARY, http::HeaderValue::from_static("Accept"));
        resp
    }
}

fn hex_sha512(bytes: &[u8]) -> String {
    sha2::Sha512::digest(bytes)
        .iter()
        .map(|b| format!("{b:02X}"))
        .collect()
}
