//! kube-aggregator (staging/src/k8s.io/kube-aggregator): APIServices
//! (apiregistration.k8s.io/v1) say which server answers each group/version. A Local one
//! (no `spec.service`) is this server; a remote one is an extension API server behind a
//! Service, to which requests are proxied with the caller's identity in request headers over
//! the front-proxy client certificate ([`proxy`]). kapi has no cluster IPs: a Service of type
//! ExternalName resolves to `externalName:port`, a headless one to an address of its
//! EndpointSlices ([`resolve`]). Discovery merges the remote groups ([`discovery`]); the
//! Available condition is kept by probing each backend ([`available`]); the OpenAPI v2
//! document of each available backend is kept for the merged /openapi/v2 ([`openapi`]); every
//! group/version this server serves gets a Local APIService ([`register`]).
//! May use: registry, api.

pub(crate) mod available;
mod discovery;
pub(crate) mod openapi;
pub(crate) mod peers;
mod proxy;
pub(crate) mod register;

use crate::api::{Body, RequestContext};
use crate::registry::follow::{follow, Change, Synced};
use crate::registry::Registry;
use bytes::Bytes;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use tokio::sync::Notify;

/// The group of APIServices.
pub(crate) const GROUP: &str = "apiregistration.k8s.io";

/// APIServices, for the controllers' loopback clients.
fn api_resource() -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: format!("{GROUP}/v1"),
        kind: "APIService".into(),
        plural: "apiservices".into(),
    }
}

/// The client certificate the proxy presents to backends (`--proxy-client-cert-file`,
/// `--proxy-client-key-file`, or the generated front-proxy client), PEM.
#[derive(Clone)]
pub(crate) struct ProxyIdentity {
    pub cert_pem: String,
    pub key_pem: String,
}

pub(crate) use crate::registry::services::ServiceRef;
use crate::registry::services::Services;

/// One APIService, as the aggregator uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ApiService {
    pub name: String,
    pub group: String,
    pub version: String,
    /// None: Local.
    pub service: Option<ServiceRef>,
    /// PEM bundle that signs the backend's serving certificate (empty: the system's roots).
    pub ca_bundle: Vec<u8>,
    pub insecure_skip_tls_verify: bool,
    pub group_priority_minimum: i64,
    pub version_priority: i64,
    /// Whether the Available condition is True.
    pub available: bool,
    /// Whether it carries [`register::AUTOMANAGED_LABEL`] (`onstart` or `true`).
    pub automanaged: bool,
    /// Whether that label says `true`: a CRD's group/version.
    pub crd: bool,
}

impl ApiService {
    /// Reads the fields the aggregator uses from a stored APIService.
    pub(crate) fn from_object(o: &Value) -> ApiService {
        let s = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let spec = o.get("spec").unwrap_or(&Value::Null);
        let service = spec
            .get("service")
            .filter(|v| v.is_object())
            .map(|svc| ServiceRef {
                namespace: s(svc, "namespace"),
                name: s(svc, "name"),
                port: svc
                    .get("port")
                    .and_then(Value::as_u64)
                    .and_then(|p| u16::try_from(p).ok())
                    .unwrap_or(443),
            });
        let ca_bundle = spec
            .get("caBundle")
            .and_then(Value::as_str)
            .and_then(|b| {
                use base64::Engine;
                base64::engine::general_purpose::STANDARD.decode(b).ok()
            })
            .unwrap_or_default();
        let available = o
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some("Available")
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            });
        let managed = o
            .pointer("/metadata/labels")
            .and_then(|l| l.get(register::AUTOMANAGED_LABEL))
            .and_then(Value::as_str);
        ApiService {
            automanaged: matches!(managed, Some("onstart" | "true")),
            crd: managed == Some("true"),
            name: s(o.get("metadata").unwrap_or(&Value::Null), "name"),
            group: s(spec, "group"),
            version: s(spec, "version"),
            service,
            ca_bundle,
            insecure_skip_tls_verify: spec
                .get("insecureSkipTLSVerify")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            group_priority_minimum: spec
                .get("groupPriorityMinimum")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            version_priority: spec
                .get("versionPriority")
                .and_then(Value::as_i64)
                .unwrap_or(0),
            available,
        }
    }
}

/// A remote APIService with its client, built once per change of the APIService.
pub(crate) struct Remote {
    pub api: ApiService,
    client: Result<proxy::Client, String>,
}

/// Every APIService, by name, and the remote ones by `<group>/<version>` (a key a request's
/// path holds as it is, so finding it allocates nothing).
#[derive(Default)]
struct Table {
    all: BTreeMap<String, ApiService>,
    remote: BTreeMap<String, Arc<Remote>>,
}

/// The aggregator: follows APIServices, Services and EndpointSlices, routes requests.
pub(crate) struct Aggregator {
    table: RwLock<Arc<Table>>,
    services: Arc<Services>,
    identity: Option<ProxyIdentity>,
    /// The runtime that serves clients, where backend connections run.
    serving: tokio::runtime::Handle,
    discovery: discovery::Cache,
    /// The OpenAPI v2 documents of the available remote APIServices.
    openapi: openapi::Specs,
    /// Notified when the APIServices change.
    changed: Notify,
    synced: Synced,
}

/// The kinds the aggregator follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    ApiServices,
    Services,
    EndpointSlices,
}

impl Kind {
    pub(crate) const ALL: [Kind; 3] = [Kind::ApiServices, Kind::Services, Kind::EndpointSlices];

    fn gvr(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Kind::ApiServices => (GROUP, "v1", "apiservices"),
            Kind::Services => ("", "v1", "services"),
            Kind::EndpointSlices => ("discovery.k8s.io", "v1", "endpointslices"),
        }
    }
}

impl Aggregator {
    /// An aggregator presenting `identity` to backends (None: backends see no client
    /// certificate, and cannot trust the identity headers).
    /// Services resolve through `services` (the registry's); connections to backends run on
    /// `serving`, the runtime that serves clients.
    pub(crate) fn new(
        identity: Option<ProxyIdentity>,
        services: Arc<Services>,
        serving: tokio::runtime::Handle,
    ) -> Aggregator {
        Aggregator {
            table: RwLock::default(),
            services,
            identity,
            serving,
            discovery: discovery::Cache::default(),
            openapi: openapi::Specs::default(),
            changed: Notify::new(),
            synced: Synced::default(),
        }
    }

    /// The client certificate it presents to backends.
    pub(crate) fn identity(&self) -> Option<ProxyIdentity> {
        self.identity.clone()
    }

    /// The runtime that serves clients, where connections to backends run.
    pub(crate) fn serving(&self) -> tokio::runtime::Handle {
        self.serving.clone()
    }

    fn table(&self) -> Arc<Table> {
        self.table.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every APIService, by name.
    pub(crate) fn api_services(&self) -> Vec<ApiService> {
        self.table().all.values().cloned().collect()
    }

    /// The remote APIServices.
    pub(crate) fn remotes(&self) -> Vec<Arc<Remote>> {
        self.table().remote.values().cloned().collect()
    }

    /// Completes when the APIServices change after this call.
    pub(crate) fn changed(&self) -> tokio::sync::futures::Notified<'_> {
        self.changed.notified()
    }

    /// Waits until every followed kind has been listed once.
    pub(crate) async fn wait_synced(&self) {
        self.synced.wait(Kind::ALL.len()).await;
    }

    /// Follows one kind in `registry` until the future is dropped or storage fails.
    ///
    /// # Errors
    ///
    /// Reading it failed (the caller retries).
    pub(crate) async fn follow(
        &self,
        registry: &Arc<Registry>,
        kind: Kind,
    ) -> Result<(), crate::registry::Error> {
        let (group, version, resource) = kind.gvr();
        let served = registry.resources().stored(group, version, resource);
        let store = match served {
            Some(store) => store,
            None => {
                // Not served: nothing to follow.
                self.synced.mark(kind as usize);
                std::future::pending::<()>().await;
                return Ok(());
            }
        };
        follow(&store, &|change| {
            match kind {
                Kind::ApiServices => self.apply(change),
                Kind::Services => self.services.apply_service(change),
                Kind::EndpointSlices => self.services.apply_slice(change),
            }
            self.synced.mark(kind as usize);
        })
        .await
    }

    /// Applies a change of the APIServices: remote ones get a client built anew when their
    /// connection settings changed.
    fn apply(&self, change: Change<'_>) {
        let mut slot = self.table.write().unwrap_or_else(|e| e.into_inner());
        let mut all = slot.all.clone();
        let name = |o: &Value| {
            let name = o.get("metadata").and_then(|m| m.get("name"));
            name.and_then(Value::as_str).unwrap_or("").to_string()
        };
        change.mirror(&mut all, name, ApiService::from_object);
        let mut remote = BTreeMap::new();
        for a in all.values() {
            if a.service.is_none() {
                continue;
            }
            let key = format!("{}/{}", a.group, a.version);
            let previous = slot.remote.get(&key);
            let client = match previous {
                Some(p) if same_connection(&p.api, a) => p.client.clone(),
                _ => proxy::Client::new(a, self.identity.as_ref(), &self.serving),
            };
            remote.insert(
                key,
                Arc::new(Remote {
                    api: a.clone(),
                    client,
                }),
            );
        }
        *slot = Arc::new(Table { all, remote });
        drop(slot);
        self.changed.notify_waiters();
    }

    /// The remote APIService serving `group`/`version`, if any.
    fn remote(&self, group_version: &str) -> Option<Arc<Remote>> {
        let table = self.table();
        if table.remote.is_empty() {
            return None;
        }
        table.remote.get(group_version).cloned()
    }

    /// Serves the request when it belongs to a remote APIService: a request under
    /// `/apis/<group>/<version>` is proxied, `/apis/<group>` of a group only remote
    /// APIServices serve is answered from them. None: this server answers it.
    pub(crate) async fn serve(
        &self,
        req: &http::Request<Bytes>,
        ctx: &RequestContext,
        local_group: impl Fn(&str) -> bool,
    ) -> Option<http::Response<Body>> {
        let path = req.uri().path();
        let rest = path.strip_prefix("/apis/")?;
        let mut parts = rest.split('/');
        let group = parts.next().filter(|g| !g.is_empty())?;
        match parts.next().filter(|v| !v.is_empty()) {
            Some(version) => {
                let remote = self.remote(&rest[..group.len() + 1 + version.len()])?;
                Some(self.proxy(&remote, req, ctx).await)
            }
            None if !local_group(group) => discovery::group(&self.table().all, group),
            None => None,
        }
    }

    async fn proxy(
        &self,
        remote: &Remote,
        req: &http::Request<Bytes>,
        ctx: &RequestContext,
    ) -> http::Response<Body> {
        if !remote.api.available {
            return proxy::text_error(http::StatusCode::SERVICE_UNAVAILABLE, "service unavailable");
        }
        let client = match &remote.client {
            Ok(c) => c,
            Err(e) => return proxy::text_error(http::StatusCode::INTERNAL_SERVER_ERROR, e),
        };
        let Some(svc) = &remote.api.service else {
            return proxy::text_error(http::StatusCode::NOT_FOUND, "");
        };
        let target = match self.services.resolve(svc) {
            Ok(t) => t,
            Err(e) => {
                tracing::warn!(apiservice = %remote.api.name, error = %e, "cannot resolve the APIService's service");
                return proxy::text_error(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    "service unavailable",
                );
            }
        };
        client
            .forward(
                proxy::Via::ApiService(&remote.api.name),
                &target,
                req,
                &ctx.user,
            )
            .await
    }

    /// Serves `/openapi/v3/apis/<group>/<version>` of a remote APIService from its backend
    /// (fetched as the aggregator, as upstream's OpenAPI aggregation downloads it); None for
    /// other paths.
    pub(crate) async fn serve_openapi(
        &self,
        req: &http::Request<Bytes>,
    ) -> Option<http::Response<Body>> {
        let gv = req.uri().path().strip_prefix("/openapi/v3/apis/")?;
        // Keyed `<group>/<version>`: a path with more or fewer parts finds nothing.
        let remote = self.remote(gv.trim_end_matches('/'))?;
        let client = remote.client.as_ref().ok()?;
        let target = self.services.resolve(remote.api.service.as_ref()?).ok()?;
        let path = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str())
            .unwrap_or("/");
        let accept = req
            .headers()
            .get(http::header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("application/json");
        Some(
            match client
                .get(&target, path, accept, std::time::Duration::from_secs(10))
                .await
            {
                Ok(resp) => resp.map(crate::api::full_body),
                Err(e) => proxy::text_error(
                    http::StatusCode::SERVICE_UNAVAILABLE,
                    &format!("error trying to reach service: {}: {e}", remote.api.name),
                ),
            },
        )
    }

    /// Whether `group`/`version` belongs to a CRD or a remote APIService: never proxied to a
    /// peer (upstream's GV exclusion manager).
    pub(crate) fn excludes(&self, group: &str, version: &str) -> bool {
        let table = self.table();
        table
            .all
            .get(&format!("{version}.{group}"))
            .is_some_and(|a| a.service.is_some() || a.crd)
    }

    /// Whether any APIService is remote (discovery and OpenAPI documents need merging).
    pub(crate) fn has_remote(&self) -> bool {
        !self.table().remote.is_empty()
    }

    /// The OpenAPI v2 documents of the available remote APIServices, in merge order, for
    /// /openapi/v2.
    pub(crate) fn openapi_v2(&self) -> Arc<openapi::RemoteSpecs> {
        self.openapi.current()
    }

    /// Adds the remote group/versions to this server's OpenAPI v3 index.
    pub(crate) async fn merge_openapi_index(
        &self,
        resp: http::Response<Body>,
    ) -> http::Response<Body> {
        let table = self.table();
        if table.remote.is_empty() || resp.status() != http::StatusCode::OK {
            return resp;
        }
        discovery::merge_openapi_index(resp, &table.all, &self.discovery).await
    }

    /// Adds the remote groups to a discovery document of `/apis` (legacy or aggregated)
    /// this server answered.
    pub(crate) async fn merge_discovery(
        &self,
        resp: http::Response<Body>,
        aggregated: bool,
    ) -> http::Response<Body> {
        let table = self.table();
        if table.remote.is_empty() || resp.status() != http::StatusCode::OK {
            return resp;
        }
        discovery::merge(resp, &table.all, &self.discovery, aggregated).await
    }
}

/// Whether two APIServices connect to their backend the same way (the client can be kept).
fn same_connection(a: &ApiService, b: &ApiService) -> bool {
    a.service == b.service
        && a.ca_bundle == b.ca_bundle
        && a.insecure_skip_tls_verify == b.insecure_skip_tls_verify
}
