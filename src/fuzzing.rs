//! Entry points of the fuzz targets in `fuzz/` (cargo feature `fuzzing`; not an API). Each
//! function takes the raw bytes libFuzzer made and feeds them to the code a request from the
//! network reaches: the selector and query parsers directly, everything else through
//! [`ApiServer::handle`] (below the panic-recovering chain, so a panic is a crash) over a
//! real registry on the embedded store. The store holds one object of every kind; fuzzed
//! writes are dry runs, so it never changes and every input behaves the same on a rerun.
//!
//! Inputs with variants start with selector bytes (documented per function); the seed corpora
//! in `fuzz/corpus/` are written by `fuzz/seed_corpus.rs`.

use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::api::{GroupVersionKind, RequestContext, RequestInfo, UserInfo};
use crate::endpoints::query::Query;
use crate::endpoints::ApiServer;
use crate::registry::Registry;
use crate::storage::{self, BackendConfig, Config};
use bytes::Bytes;
use futures::FutureExt;
use http_body_util::BodyExt;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Label and field selectors (`labelSelector=`, `fieldSelector=`): the input parses as both,
/// and whatever parses is matched against a few label sets and field values.
pub fn selectors(data: &[u8]) {
    let Ok(s) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(sel) = LabelSelector::parse(s) {
        let sets: [&[(&str, &str)]; 3] = [
            &[],
            &[("app", "a"), ("tier", "web")],
            &[("app.kubernetes.io/name", "x"), ("x", ""), ("n", "10")],
        ];
        for set in sets {
            let labels: BTreeMap<String, String> = set
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            sel.matches(&labels);
        }
        sel.is_empty();
    }
    if let Ok(sel) = FieldSelector::parse(s) {
        sel.matches(|f| (f == "metadata.name").then(|| "cm".to_string()));
        sel.matches(|_| None);
        sel.exact("metadata.name");
        sel.is_empty();
    }
}

/// A query string of a list or a watch: parsed into ListOptions and every options kind's
/// context, then sent as a LIST of core events and a WATCH of configmaps (resourceVersion,
/// resourceVersionMatch, sendInitialEvents/allowWatchBookmarks of watch-list, limit,
/// continue, selectors, timeoutSeconds, includeObject...). The input's length picks the
/// Accept header (JSON, Table, PartialObjectMetadata).
pub fn query(data: &[u8]) {
    let Ok(raw) = std::str::from_utf8(data) else {
        return;
    };
    let q = Query::parse(Some(raw));
    let _ = q.list_options();
    for kind in [
        "ListOptions",
        "CreateOptions",
        "UpdateOptions",
        "PatchOptions",
    ] {
        let _ = q.context("default", kind);
    }
    let accept = ACCEPTS[raw.len() % ACCEPTS.len()];
    let s = server();
    s.request(
        "GET",
        "/api/v1/namespaces/default/events",
        raw,
        accept,
        None,
        b"",
    );
    s.request(
        "GET",
        "/api/v1/namespaces/default/configmaps",
        &format!("watch=true&{raw}"),
        accept,
        None,
        b"",
    );
}

const ACCEPTS: [&str; 3] = [
    "application/json",
    "application/json;as=Table;v=v1;g=meta.k8s.io",
    "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
];

/// A create or update body. Byte 0 picks the Content-Type (JSON, YAML, protobuf, none);
/// byte 1 the resource and the verb (POST to the collection, PUT of the stored object); the
/// rest is the body.
pub fn body(data: &[u8]) {
    let [ct, target, body @ ..] = data else {
        return;
    };
    let content_type = CONTENT_TYPES[usize::from(*ct) % CONTENT_TYPES.len()];
    let target = usize::from(*target);
    let r = &RESOURCES[target % RESOURCES.len()];
    let update = (target / RESOURCES.len()) % 2 == 1 && !r.name.is_empty();
    let (method, path) = if update {
        ("PUT", format!("{}/{}", r.path, r.name))
    } else {
        ("POST", r.path.to_string())
    };
    server().request(
        method,
        &path,
        "dryRun=All",
        "application/json",
        content_type,
        body,
    );
}

const CONTENT_TYPES: [Option<&str>; 5] = [
    Some("application/json"),
    Some("application/yaml"),
    Some("application/vnd.kubernetes.protobuf"),
    None,
    Some("application/json; charset=utf-8"),
];

/// A protobuf body (`k8s\0` + runtime.Unknown). Byte 0 picks the URL's kind (used when the
/// envelope names none); the rest is decoded, and a body that decodes is also sent as a
/// create of that resource, as client-go's typed clients send it.
pub fn protobuf(data: &[u8]) {
    let [target, body @ ..] = data else {
        return;
    };
    let r = &RESOURCES[usize::from(*target) % RESOURCES.len()];
    let (group, version) = r.group_version();
    let gvk = GroupVersionKind::new(group, version, r.kind);
    if crate::endpoints::protobuf::decode(body, &gvk).is_ok() {
        server().request(
            "POST",
            r.path,
            "dryRun=All",
            "application/json",
            Some("application/vnd.kubernetes.protobuf"),
            body,
        );
    }
}

/// A JSON, merge or strategic-merge patch of a stored object. Byte 0 picks the patch type
/// and the subresource (none, or status where the resource has one); byte 1 the resource;
/// the rest is the patch.
pub fn patch(data: &[u8]) {
    let [kind, target, body @ ..] = data else {
        return;
    };
    const TYPES: [&str; 3] = [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
    ];
    let content_type = TYPES[usize::from(*kind) % TYPES.len()];
    let status = (usize::from(*kind) / TYPES.len()) % 2 == 1;
    let r = patchable(*target);
    let path = match status {
        true if r.status => format!("{}/{}/status", r.path, r.name),
        _ => format!("{}/{}", r.path, r.name),
    };
    server().request(
        "PATCH",
        &path,
        "dryRun=All&fieldManager=fuzz",
        "application/json",
        Some(content_type),
        body,
    );
}

/// A server-side apply body (`application/apply-patch+yaml`, YAML or JSON). Byte 0 picks the
/// field manager (the one that owns the stored object's fields, another one, kubectl's
/// server-side manager with its last-applied annotation), `force`, and whether the object
/// exists (apply onto the stored object, or apply-create of a new name); byte 1 the resource;
/// the rest is the configuration.
pub fn apply(data: &[u8]) {
    let [mode, target, body @ ..] = data else {
        return;
    };
    const MANAGERS: [&str; 3] = ["seed", "fuzz", "kubectl"];
    let mode = usize::from(*mode);
    let manager = MANAGERS[mode % MANAGERS.len()];
    let force = (mode / 3) % 2 == 1;
    let create = (mode / 6) % 2 == 1;
    let r = patchable(*target);
    let name = if create { "new" } else { r.name };
    server().request(
        "PATCH",
        &format!("{}/{name}", r.path),
        &format!("dryRun=All&fieldManager={manager}&force={force}"),
        "application/json",
        Some("application/apply-patch+yaml"),
        body,
    );
}

/// One served resource: its collection path, the stored object's name (none for the
/// create-only reviews) and whether it has a status subresource.
struct Target {
    path: &'static str,
    kind: &'static str,
    name: &'static str,
    status: bool,
    seed: &'static str,
}

impl Target {
    fn group_version(&self) -> (&'static str, &'static str) {
        let rest = self.path.trim_start_matches('/');
        let mut parts = rest.split('/');
        match parts.next() {
            Some("apis") => (parts.next().unwrap_or(""), parts.next().unwrap_or("")),
            _ => ("", parts.next().unwrap_or("")),
        }
    }
}

const RESOURCES: [Target; 13] = [
    Target {
        path: "/api/v1/namespaces/default/configmaps",
        kind: "ConfigMap",
        name: "cm",
        status: false,
        seed: r#"{"metadata":{"name":"cm","labels":{"app":"a"}},"data":{"k":"v","x":"y"},"binaryData":{"b":"AAE="}}"#,
    },
    Target {
        path: "/api/v1/namespaces/default/secrets",
        kind: "Secret",
        name: "secret",
        status: false,
        seed: r#"{"metadata":{"name":"secret"},"type":"Opaque","data":{"k":"dg=="},"stringData":{"s":"t"}}"#,
    },
    Target {
        path: "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        kind: "Lease",
        name: "lease",
        status: false,
        seed: r#"{"metadata":{"name":"lease"},"spec":{"holderIdentity":"a","leaseDurationSeconds":15,"acquireTime":"2024-01-01T00:00:00.000000Z","renewTime":"2024-01-01T00:00:10.000000Z","leaseTransitions":1}}"#,
    },
    Target {
        path: "/apis/coordination.k8s.io/v1beta1/namespaces/default/leasecandidates",
        kind: "LeaseCandidate",
        name: "lc",
        status: false,
        seed: r#"{"metadata":{"name":"lc"},"spec":{"leaseName":"lease","binaryVersion":"1.37.0","emulationVersion":"1.37.0","strategy":"OldestEmulationVersion","renewTime":"2024-01-01T00:00:10.000000Z"}}"#,
    },
    Target {
        path: "/api/v1/namespaces/default/events",
        kind: "Event",
        name: "ev",
        status: false,
        seed: r#"{"metadata":{"name":"ev"},"involvedObject":{"kind":"Pod","namespace":"default","name":"p"},"reason":"Started","message":"m","type":"Normal","source":{"component":"kubelet"},"count":1,"firstTimestamp":"2024-01-01T00:00:00Z","lastTimestamp":"2024-01-01T00:00:00Z"}"#,
    },
    Target {
        path: "/apis/events.k8s.io/v1/namespaces/default/events",
        kind: "Event",
        name: "ev2",
        status: false,
        seed: r#"{"metadata":{"name":"ev2"},"eventTime":"2024-01-01T00:00:00.000000Z","reportingController":"c/x","reportingInstance":"i","action":"Act","reason":"Why","regarding":{"kind":"Pod","namespace":"default","name":"p"},"note":"n","type":"Warning"}"#,
    },
    Target {
        path: "/api/v1/namespaces/default/serviceaccounts",
        kind: "ServiceAccount",
        name: "sa",
        status: false,
        seed: r#"{"metadata":{"name":"sa"},"secrets":[{"name":"s"}],"imagePullSecrets":[{"name":"p"}],"automountServiceAccountToken":false}"#,
    },
    Target {
        path: "/api/v1/namespaces",
        kind: "Namespace",
        name: "fuzz",
        status: true,
        seed: r#"{"metadata":{"name":"fuzz","labels":{"team":"x"}}}"#,
    },
    Target {
        path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        kind: "CustomResourceDefinition",
        name: "crontabs.stable.example.com",
        status: true,
        seed: CRD,
    },
    Target {
        path: "/apis/stable.example.com/v1/namespaces/default/crontabs",
        kind: "CronTab",
        name: "ct",
        status: true,
        seed: r#"{"apiVersion":"stable.example.com/v1","kind":"CronTab","metadata":{"name":"ct"},"spec":{"cronSpec":"* * * * *","image":"i","ports":[{"name":"http","port":80}],"tags":["a"]}}"#,
    },
    Target {
        path: "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        kind: "SelfSubjectAccessReview",
        name: "",
        status: false,
        seed: "",
    },
    Target {
        path: "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        kind: "SelfSubjectRulesReview",
        name: "",
        status: false,
        seed: "",
    },
    Target {
        path: "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        kind: "SelfSubjectReview",
        name: "",
        status: false,
        seed: "",
    },
];

/// A CRD whose schema has most of what structural schemas can say (bounds, patterns, enums,
/// defaults, formats, list types, int-or-string, embedded resources, preserved fields), with
/// the status and scale subresources; its CronTabs are fuzzed like the built-in kinds.
const CRD: &str = r#"{"metadata":{"name":"crontabs.stable.example.com"},"spec":{"group":"stable.example.com","scope":"Namespaced","names":{"plural":"crontabs","singular":"crontab","kind":"CronTab","shortNames":["ct"]},"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},"selectableFields":[{"jsonPath":".spec.image"}],"additionalPrinterColumns":[{"name":"Spec","type":"string","jsonPath":".spec.cronSpec"},{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}],"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","required":["cronSpec"],"properties":{"cronSpec":{"type":"string","pattern":"^(\\S+\\s+){4}\\S+$","maxLength":64},"image":{"type":"string","minLength":1},"replicas":{"type":"integer","minimum":0,"maximum":10,"default":1},"policy":{"type":"string","enum":["Allow","Forbid"],"default":"Allow"},"started":{"type":"string","format":"date-time","nullable":true},"port":{"x-kubernetes-int-or-string":true},"ports":{"type":"array","maxItems":8,"x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"integer","format":"int32"}}}},"tags":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},"labels":{"type":"object","additionalProperties":{"type":"string"}},"template":{"type":"object","x-kubernetes-embedded-resource":true,"x-kubernetes-preserve-unknown-fields":true},"extra":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},"status":{"type":"object","properties":{"replicas":{"type":"integer"},"ready":{"type":"boolean"}}}}}}}]}}"#;

/// The resources with a stored object (patch and apply targets).
fn patchable(byte: u8) -> &'static Target {
    let stored = RESOURCES.iter().filter(|r| !r.name.is_empty()).count();
    &RESOURCES[usize::from(byte) % stored]
}

/// The registry on a fresh embedded store, and the runtime requests run on.
struct Server {
    rt: tokio::runtime::Runtime,
    api: ApiServer,
    registry: Arc<Registry>,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(Server::start)
}

impl Server {
    fn start() -> Server {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let dir = std::env::temp_dir().join(format!("kapi-fuzz-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = rt
            .block_on(storage::open(Config {
                backend: BackendConfig::Embedded { dir: dir.clone() },
                prefix: "/registry".into(),
                compaction_interval: Duration::ZERO,
                watch_cache: true,
                healthcheck_timeout: Duration::from_secs(2),
                traced: false,
            }))
            .expect("the embedded store opens");
        let registry = Arc::new(Registry::with_prefix(store, "/registry"));
        let server = Server {
            rt,
            api: ApiServer::new(registry.clone()),
            registry,
        };
        server.seed();
        // The open file lives on; libFuzzer exits without running destructors.
        let _ = std::fs::remove_dir_all(&dir);
        server
    }

    /// One object of every stored kind, the configmap's fields owned by manager `seed`.
    fn seed(&self) {
        let ns = r#"{"metadata":{"name":"default"}}"#;
        let code = self.request("POST", "/api/v1/namespaces", "", "", None, ns.as_bytes());
        assert_eq!(code, 201, "seeding namespace default");
        for r in RESOURCES.iter().filter(|r| !r.seed.is_empty()) {
            if r.kind == "CronTab" {
                self.serve_crd();
            }
            let code = self.request(
                "PATCH",
                &format!("{}/{}", r.path, r.name),
                "fieldManager=seed",
                "",
                Some("application/apply-patch+yaml"),
                r.seed.as_bytes(),
            );
            assert!(code == 201 || code == 200, "seeding {}: {code}", r.path);
        }
    }

    /// Serves the seeded CRD as the server's hooks would once its names are accepted (no
    /// hooks run here): its names accepted in status, then installed.
    fn serve_crd(&self) {
        let path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/crontabs.stable.example.com/status";
        let status = r#"{"status":{"acceptedNames":{"plural":"crontabs","singular":"crontab","kind":"CronTab","listKind":"CronTabList","shortNames":["ct"]},"conditions":[{"type":"NamesAccepted","status":"True","reason":"NoConflicts","message":"no conflicts found","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}"#;
        let code = self.request(
            "PATCH",
            path,
            "",
            "",
            Some("application/merge-patch+json"),
            status.as_bytes(),
        );
        assert_eq!(code, 200, "accepting the CRD's names");
        let resources = self.registry.resources();
        let Some(crate::registry::Resource::Stored(crds)) = resources
            .lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
            .map(|r| r.as_ref())
        else {
            panic!("CRDs are served");
        };
        let crd = self
            .rt
            .block_on(crds.get_shared(&Default::default(), "crontabs.stable.example.com"))
            .expect("the seeded CRD");
        crate::registry::apiextensions::serving::Installer::new(self.registry.clone())
            .apply(&crd.obj);
    }

    /// Serves one request; a watch is read until it goes quiet, then the server's shutdown
    /// ends it. Returns the status code.
    fn request(
        &self,
        method: &str,
        path: &str,
        query: &str,
        accept: &str,
        content_type: Option<&str>,
        body: &[u8],
    ) -> u16 {
        // What hyper would refuse never reaches the API; clients escape what a URI cannot hold.
        let uri = format!("{path}?{query}");
        let uri = match uri.parse::<http::Uri>() {
            Ok(u) => u,
            Err(_) => {
                let escaped = percent_encoding::utf8_percent_encode(query, QUERY_ESCAPE);
                match format!("{path}?{escaped}").parse::<http::Uri>() {
                    Ok(u) => u,
                    Err(_) => return 400,
                }
            }
        };
        let method: http::Method = method.parse().unwrap_or(http::Method::GET);
        let mut req = http::Request::builder().method(method.clone()).uri(uri);
        if !accept.is_empty() {
            req = req.header(http::header::ACCEPT, accept);
        }
        if let Some(ct) = content_type {
            req = req.header(http::header::CONTENT_TYPE, ct);
        }
        let Ok(req) = req.body(Bytes::copy_from_slice(body)) else {
            return 400;
        };
        let info = RequestInfo::parse(&method, req.uri().path(), req.uri().query());
        let shutdown = CancellationToken::new();
        let ctx = RequestContext {
            info,
            user: UserInfo {
                name: "fuzz-admin".into(),
                groups: vec!["system:masters".into(), "system:authenticated".into()],
                ..UserInfo::default()
            },
            shutdown: shutdown.clone(),
        };
        self.rt.block_on(async {
            let resp = self.api.handle(req, ctx).await;
            let code = resp.status().as_u16();
            // Everything the stream has ready (the runtime gets some turns to produce it),
            // then the server's shutdown ends it, as it ends every watch.
            let mut body = resp.into_body();
            let mut idle = 0;
            loop {
                match body.frame().now_or_never() {
                    Some(Some(_)) => idle = 0,
                    Some(None) => break,
                    None if idle < 32 => {
                        idle += 1;
                        tokio::task::yield_now().await;
                    }
                    None => {
                        shutdown.cancel();
                        tokio::task::yield_now().await;
                    }
                }
            }
            if verbose() {
                crate::note!("{method} {path}: {code}");
            }
            code
        })
    }
}

/// `KAPI_FUZZ_VERBOSE=1`: each request's status on stderr (to check what seeds reach).
fn verbose() -> bool {
    static VERBOSE: OnceLock<bool> = OnceLock::new();
    *VERBOSE.get_or_init(|| std::env::var_os("KAPI_FUZZ_VERBOSE").is_some_and(|v| v == "1"))
}

/// Bytes a request line cannot carry in a query: controls, space, non-ASCII and the
/// delimiters RFC 3986 leaves out.
const QUERY_ESCAPE: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'<')
    .add(b'>')
    .add(b'`')
    .add(b'{')
    .add(b'}')
    .add(b'|')
    .add(b'\\')
    .add(b'^');
