//! The OpenAPI v2 documents of the remote APIServices (kube-aggregator's
//! controllers/openapi: the `apiservice-openapi-controller` hook and its Downloader). On every
//! change of the APIServices and every resync, each available remote APIService's backend is
//! asked for `/openapi/v2` in JSON as `system:kube-aggregator`, with the ETag of the document
//! it gave last in If-None-Match; the document is kept per APIService until the APIService goes
//! away, turns unavailable or its backend answers 404. A failed download keeps the last
//! document, as upstream's `cached.LastSuccess` does. The documents are handed out in merge
//! order (upstream's sortByPriority), with a generation that changes whenever they do, so the
//! merged /openapi/v2 is built again only then.

use super::available::{each_change, CHECK_TIMEOUT};
use super::{Aggregator, ApiService, Remote};
use crate::registry::services::ResolveError;
use serde_json::Value;
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use tokio_util::sync::CancellationToken;

/// The remote documents, in merge order: each APIService's path prefix
/// (`/apis/<group>/<version>/`, the only paths taken from its document) and document.
#[derive(Debug, Default)]
pub(crate) struct RemoteSpecs {
    /// Changes whenever the documents or their order change.
    pub generation: u64,
    /// Path prefix and document of each APIService.
    pub specs: Vec<(String, Arc<Value>)>,
}

/// One APIService's last downloaded document.
struct Entry {
    api: ApiService,
    /// The ETag the backend sent with it, for If-None-Match.
    etag: Option<String>,
    spec: Arc<Value>,
}

#[derive(Default)]
struct State {
    entries: BTreeMap<String, Entry>,
    current: Arc<RemoteSpecs>,
}

impl State {
    /// Hands out the entries anew, under the next generation.
    fn publish(&mut self) {
        let mut group_priority: BTreeMap<&str, i64> = BTreeMap::new();
        for e in self.entries.values() {
            let p = group_priority.entry(&e.api.group).or_insert(i64::MIN);
            *p = (*p).max(e.api.group_priority_minimum);
        }
        let mut order: Vec<&Entry> = self.entries.values().collect();
        // Higher group priority first, a group's versions by versionPriority, then by name.
        order.sort_by_key(|e| {
            let api = &e.api;
            let group = group_priority.get(api.group.as_str()).copied();
            (
                Reverse(group),
                &api.group,
                Reverse(api.version_priority),
                &api.name,
            )
        });
        let specs = order
            .into_iter()
            .map(|e| (path_prefix(&e.api), e.spec.clone()))
            .collect();
        self.current = Arc::new(RemoteSpecs {
            generation: self.current.generation + 1,
            specs,
        });
    }
}

/// The paths of an APIService's group/version, as upstream filters its document by.
fn path_prefix(api: &ApiService) -> String {
    format!("/apis/{}/{}/", api.group, api.version)
}

/// The last document of each available remote APIService.
#[derive(Default)]
pub(super) struct Specs {
    state: RwLock<State>,
}

impl Specs {
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|e| e.into_inner())
    }

    /// The documents, in merge order.
    pub(super) fn current(&self) -> Arc<RemoteSpecs> {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        state.current.clone()
    }

    fn etag(&self, name: &str) -> Option<String> {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        state.entries.get(name).and_then(|e| e.etag.clone())
    }

    /// Forgets the documents of the APIServices `keep` refuses.
    fn retain(&self, keep: impl Fn(&str) -> bool) {
        let mut state = self.write();
        let before = state.entries.len();
        state.entries.retain(|name, _| keep(name));
        if state.entries.len() != before {
            state.publish();
        }
    }

    /// Records a downloaded document of `api`.
    fn store(&self, api: &ApiService, etag: Option<String>, spec: Value) {
        let mut state = self.write();
        if let Some(e) = state.entries.get_mut(&api.name) {
            if e.api == *api && *e.spec == spec {
                e.etag = etag;
                return;
            }
        }
        let spec = Arc::new(spec);
        let entry = Entry {
            api: api.clone(),
            etag,
            spec,
        };
        state.entries.insert(api.name.clone(), entry);
        state.publish();
    }

    /// Records that the document of `api` did not change (its priorities may have).
    fn unchanged(&self, api: &ApiService) {
        let mut state = self.write();
        let Some(e) = state.entries.get_mut(&api.name) else {
            return;
        };
        if e.api != *api {
            e.api = api.clone();
            state.publish();
        }
    }

    /// Forgets the document of `name`.
    fn remove(&self, name: &str) {
        let mut state = self.write();
        if state.entries.remove(name).is_some() {
            state.publish();
        }
    }
}

/// Why a backend's document could not be downloaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DownloadError {
    #[error("no client for the backend: {0}")]
    NoClient(String),
    #[error("the APIService is Local")]
    Local,
    #[error("cannot resolve the APIService's service")]
    Unresolved(#[source] ResolveError),
    #[error("GET /openapi/v2 failed: {0}")]
    Unreachable(String),
    #[error("GET /openapi/v2 answered {0}")]
    Status(u16),
    #[error("GET /openapi/v2 answered 304 to a request without an ETag")]
    NotModifiedWithoutEtag,
    #[error("the OpenAPI v2 document is not JSON")]
    Decode(#[source] serde_json::Error),
    #[error("the OpenAPI v2 document is not a JSON object")]
    NotAnObject,
}

/// What a download found.
#[derive(Debug)]
enum Downloaded {
    /// A document (200), with the backend's ETag if it sent one.
    Fresh { spec: Value, etag: Option<String> },
    /// The document of the ETag sent (304).
    NotModified,
    /// The backend serves no document (404).
    NotFound,
}

/// Downloads `/openapi/v2` of `r`'s backend (upstream's Downloader.Download).
async fn download(
    agg: &Aggregator,
    r: &Remote,
    etag: Option<&str>,
) -> Result<Downloaded, DownloadError> {
    let client = r
        .client
        .as_ref()
        .map_err(|e| DownloadError::NoClient(e.clone()))?;
    let svc = r.api.service.as_ref().ok_or(DownloadError::Local)?;
    let target = agg
        .services
        .resolve(svc)
        .map_err(DownloadError::Unresolved)?;
    let mut headers = vec![(http::header::ACCEPT, "application/json")];
    if let Some(etag) = etag {
        headers.push((http::header::IF_NONE_MATCH, etag));
    }
    let resp = client
        .get_with(&target, "/openapi/v2", &headers, CHECK_TIMEOUT)
        .await
        .map_err(DownloadError::Unreachable)?;
    classify(resp, etag.is_some())
}

/// Reads a response to a download.
fn classify(
    resp: http::Response<bytes::Bytes>,
    sent_etag: bool,
) -> Result<Downloaded, DownloadError> {
    match resp.status() {
        http::StatusCode::OK => {
            let spec: Value = serde_json::from_slice(resp.body()).map_err(DownloadError::Decode)?;
            if !spec.is_object() {
                return Err(DownloadError::NotAnObject);
            }
            let etag = resp
                .headers()
                .get(http::header::ETAG)
                .and_then(|v| v.to_str().ok())
                .map(str::to_string);
            Ok(Downloaded::Fresh { spec, etag })
        }
        http::StatusCode::NOT_MODIFIED if sent_etag => Ok(Downloaded::NotModified),
        http::StatusCode::NOT_MODIFIED => Err(DownloadError::NotModifiedWithoutEtag),
        http::StatusCode::NOT_FOUND => Ok(Downloaded::NotFound),
        other => Err(DownloadError::Status(other.as_u16())),
    }
}

/// Whether `name` is a remote APIService whose Available condition is True.
fn wanted(agg: &Aggregator, name: &str) -> bool {
    agg.table()
        .all
        .get(name)
        .is_some_and(|a| a.service.is_some() && a.available)
}

/// Downloads the document of `r` and records what was found.
async fn sync(agg: &Aggregator, r: &Remote) {
    let name = &r.api.name;
    let found = download(agg, r, agg.openapi.etag(name).as_deref()).await;
    if !wanted(agg, name) {
        // Gone or unavailable while downloading: the next run forgets it.
        return;
    }
    match found {
        Ok(Downloaded::Fresh { spec, etag }) => agg.openapi.store(&r.api, etag, spec),
        Ok(Downloaded::NotModified) => agg.openapi.unchanged(&r.api),
        Ok(Downloaded::NotFound) => {
            tracing::debug!(apiservice = %name, "the backend serves no OpenAPI v2 document");
            agg.openapi.remove(name);
        }
        Err(e) => {
            let error = crate::api::error_chain(&e);
            tracing::warn!(apiservice = %name, %error, "cannot download the OpenAPI v2 document");
        }
    }
}

/// `apiservice-openapi-controller`: keeps the OpenAPI v2 document of each available remote
/// APIService, until `cancel`.
pub(crate) async fn run(agg: Arc<Aggregator>, cancel: CancellationToken) {
    each_change(&agg, &cancel, || async {
        agg.openapi.retain(|name| wanted(&agg, name));
        let syncs = agg
            .remotes()
            .into_iter()
            .filter(|r| r.api.available)
            .map(|r| {
                let agg = agg.clone();
                async move { sync(&agg, &r).await }
            });
        futures::future::join_all(syncs).await;
        true
    })
    .await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn api(name: &str, group: &str, group_priority: i64, version_priority: i64) -> ApiService {
        let version = name.split('.').next().unwrap_or_default().to_string();
        ApiService {
            name: name.into(),
            group: group.into(),
            version,
            service: None,
            ca_bundle: Vec::new(),
            insecure_skip_tls_verify: false,
            group_priority_minimum: group_priority,
            version_priority,
            available: true,
            automanaged: false,
            crd: false,
        }
    }

    fn prefixes(specs: &Specs) -> Vec<String> {
        specs
            .current()
            .specs
            .iter()
            .map(|(p, _)| p.clone())
            .collect()
    }

    #[test]
    fn documents_are_handed_out_by_priority() {
        let specs = Specs::default();
        specs.store(&api("v1.b.io", "b.io", 100, 10), None, json!({}));
        specs.store(&api("v1.a.io", "a.io", 100, 10), None, json!({}));
        specs.store(&api("v1beta1.c.io", "c.io", 50, 10), None, json!({}));
        specs.store(&api("v1.c.io", "c.io", 2000, 5), None, json!({}));
        specs.store(&api("v2.c.io", "c.io", 10, 20), None, json!({}));
        assert_eq!(
            prefixes(&specs),
            [
                "/apis/c.io/v2/",
                "/apis/c.io/v1beta1/",
                "/apis/c.io/v1/",
                "/apis/a.io/v1/",
                "/apis/b.io/v1/",
            ],
            "a group at its highest priority, its versions by versionPriority, ties by name"
        );
    }

    #[test]
    fn the_generation_changes_only_with_the_documents() {
        let specs = Specs::default();
        assert_eq!(specs.current().generation, 0);
        let a = api("v1.a.io", "a.io", 100, 10);
        specs.store(&a, Some("\"1\"".into()), json!({"paths": {}}));
        let first = specs.current().generation;
        assert_eq!(specs.etag("v1.a.io").as_deref(), Some("\"1\""));

        // The same document again (a backend without ETags): same generation, new ETag.
        specs.store(&a, Some("\"2\"".into()), json!({"paths": {}}));
        assert_eq!(specs.current().generation, first);
        assert_eq!(specs.etag("v1.a.io").as_deref(), Some("\"2\""));
        specs.unchanged(&a);
        assert_eq!(specs.current().generation, first);

        // A new priority reorders: a new generation.
        specs.unchanged(&api("v1.a.io", "a.io", 200, 10));
        let second = specs.current().generation;
        assert!(second > first);
        specs.store(&a, None, json!({"paths": {"/x": {}}}));
        assert!(specs.current().generation > second);

        specs.retain(|name| name == "v1.a.io");
        let kept = specs.current().generation;
        specs.retain(|_| false);
        assert!(specs.current().generation > kept);
        assert!(specs.current().specs.is_empty());
        specs.remove("v1.a.io");
        assert!(specs.etag("v1.a.io").is_none());
    }

    fn response(status: u16, etag: Option<&str>, body: &str) -> http::Response<bytes::Bytes> {
        let mut b = http::Response::builder().status(status);
        if let Some(etag) = etag {
            b = b.header("etag", etag);
        }
        b.body(bytes::Bytes::from(body.to_string())).unwrap()
    }

    #[test]
    fn responses_are_read_as_upstreams_downloader_reads_them() {
        let fresh = classify(response(200, Some("\"E\""), r#"{"paths":{}}"#), false);
        assert!(
            matches!(&fresh, Ok(Downloaded::Fresh { etag: Some(e), .. }) if e == "\"E\""),
            "{fresh:?}"
        );
        let no_etag = classify(response(200, None, r#"{"paths":{}}"#), true);
        assert!(matches!(no_etag, Ok(Downloaded::Fresh { etag: None, .. })));
        assert!(matches!(
            classify(response(304, None, ""), true),
            Ok(Downloaded::NotModified)
        ));
        assert!(matches!(
            classify(response(304, None, ""), false),
            Err(DownloadError::NotModifiedWithoutEtag)
        ));
        assert!(matches!(
            classify(response(404, None, ""), false),
            Ok(Downloaded::NotFound)
        ));
        assert!(matches!(
            classify(response(503, None, ""), false),
            Err(DownloadError::Status(503))
        ));
        assert!(matches!(
            classify(response(200, None, "not json"), false),
            Err(DownloadError::Decode(_))
        ));
        assert!(matches!(
            classify(response(200, None, "[1]"), false),
            Err(DownloadError::NotAnObject)
        ));
    }
}
