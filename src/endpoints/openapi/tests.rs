//! The documents answer what kubectl looks for: GVK-tagged schemas with descriptions and patch
//! strategies, PATCH operations with `fieldValidation`, a protobuf v2 that decodes, and kube's
//! content negotiation and hash/ETag caching.

use super::*;
use crate::registry::resources::built_in;
use http_body_util::BodyExt;

/// Documents of every resource kapi can serve, shared by the tests.
pub(super) fn handle(path: &str, headers: &HeaderMap) -> Option<Response<Body>> {
    static ALL: OnceLock<OpenApi> = OnceLock::new();
    ALL.get_or_init(|| OpenApi::new(built_in().iter().map(|b| b.info())))
        .handle(path, headers)
}

pub(super) fn get(path: &str, headers: &[(&str, &str)]) -> Response<Body> {
    let mut h = HeaderMap::new();
    for (k, v) in headers {
        h.insert(
            header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
            HeaderValue::from_str(v).unwrap(),
        );
    }
    handle(path, &h).unwrap_or_else(|| panic!("{path} not handled"))
}

pub(super) fn body(resp: Response<Body>) -> Vec<u8> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        tokio::time::timeout(
            std::time::Duration::from_secs(5),
            resp.into_body().collect(),
        )
        .await
        .expect("body within 5s")
        .unwrap()
        .to_bytes()
        .to_vec()
    })
}

pub(super) fn json_of(resp: Response<Body>) -> Value {
    serde_json::from_slice(&body(resp)).unwrap()
}

/// What kubectl's queryParamVerifierV3 does: find the PATCH operation tagged with the GVK and
/// look for the parameter among its parameters.
fn supports_query_param(doc: &Value, group: &str, version: &str, kind: &str, param: &str) -> bool {
    let want = json!({"group": group, "version": version, "kind": kind});
    for item in doc["paths"].as_object().unwrap().values() {
        let Some(op) = item.get("patch") else {
            continue;
        };
        if op["x-kubernetes-group-version-kind"] != want {
            continue;
        }
        return op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["name"] == param);
    }
    false
}

#[test]
fn routes() {
    assert!(handle("/api/v1", &HeaderMap::new()).is_none());
    assert!(handle("/openapi/v4", &HeaderMap::new()).is_none());
    assert_eq!(
        get("/openapi/v3/apis/apps/v1", &[]).status(),
        StatusCode::NOT_FOUND
    );
    assert_eq!(get("/openapi/v2", &[]).status(), StatusCode::OK);
    assert_eq!(get("/openapi/v3/", &[]).status(), StatusCode::OK);
}

#[test]
fn apiservices_are_named_after_kube_aggregators_package() {
    let doc = json_of(get("/openapi/v3/apis/apiregistration.k8s.io/v1", &[]));
    let schemas = &doc["components"]["schemas"];
    let name = "io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService";
    assert_eq!(
        schemas[name]["x-kubernetes-group-version-kind"],
        json!([{"group": "apiregistration.k8s.io", "kind": "APIService", "version": "v1"}])
    );
    let spec = &schemas["io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceSpec"];
    assert!(spec["properties"]["groupPriorityMinimum"]["description"].is_string());
    let conditions = &schemas
        ["io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus"]["properties"]
        ["conditions"];
    assert_eq!(conditions["x-kubernetes-patch-merge-key"], "type");
    assert!(supports_query_param(
        &doc,
        "apiregistration.k8s.io",
        "v1",
        "APIService",
        "fieldValidation"
    ));
    let v2 = json_of(get("/openapi/v2", &[]));
    assert!(v2["definitions"].get(name).is_some());
    assert!(v2["definitions"]
        .get("io.k8s.api.discovery.v1.EndpointSlice")
        .is_some());
}

#[test]
fn v3_index_and_hashes() {
    let index = json_of(get("/openapi/v3", &[]));
    let paths = index["paths"].as_object().unwrap();
    let want = [
        "api/v1",
        "apis/apiregistration.k8s.io/v1",
        "apis/events.k8s.io/v1",
        "apis/coordination.k8s.io/v1",
        "apis/coordination.k8s.io/v1beta1",
        "apis/rbac.authorization.k8s.io/v1",
        "apis/authentication.k8s.io/v1",
        "apis/authorization.k8s.io/v1",
        "apis/admissionregistration.k8s.io/v1",
        "apis/admissionregistration.k8s.io/v1beta1",
        "apis/apiextensions.k8s.io/v1",
        "apis/discovery.k8s.io/v1",
    ];
    assert_eq!(
        paths.keys().collect::<Vec<_>>(),
        want.iter().collect::<Vec<_>>()
    );
    let url = paths["apis/coordination.k8s.io/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap();
    let hash = url.split_once("?hash=").unwrap().1;
    assert_eq!(hash.len(), 128, "hex SHA-512");

    let fresh = get(url, &[]);
    assert_eq!(fresh.headers()[header::CACHE_CONTROL], "public, immutable");
    assert!(fresh.headers().contains_key(header::EXPIRES));
    let etag = fresh.headers()[header::ETAG].to_str().unwrap().to_string();
    assert_eq!(etag, format!("\"{hash}\""));
    let bytes = body(fresh);
    assert_eq!(
        etag_of(&bytes),
        hash,
        "the hash is the hash of the served bytes"
    );

    let stale = get("/openapi/v3/apis/coordination.k8s.io/v1?hash=0000", &[]);
    assert_eq!(stale.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(stale.headers()[header::LOCATION], url);

    let unchanged = get(
        "/openapi/v3/apis/coordination.k8s.io/v1",
        &[("if-none-match", &etag)],
    );
    assert_eq!(unchanged.status(), StatusCode::NOT_MODIFIED);
}

#[test]
fn v3_documents_serve_kubectl() {
    let core = json_of(get("/openapi/v3/api/v1", &[]));
    assert_eq!(core["openapi"], "3.0.0");
    for kind in [
        "Namespace",
        "ConfigMap",
        "Secret",
        "ServiceAccount",
        "Service",
        "Event",
    ] {
        assert!(
            supports_query_param(&core, "", "v1", kind, "fieldValidation"),
            "{kind}"
        );
        let schema = &core["components"]["schemas"][format!("io.k8s.api.core.v1.{kind}")];
        assert_eq!(
            schema["x-kubernetes-group-version-kind"],
            json!([{"group": "", "kind": kind, "version": "v1"}])
        );
    }
    assert!(!supports_query_param(
        &core,
        "",
        "v1",
        "Pod",
        "fieldValidation"
    ));
    let schemas = &core["components"]["schemas"];
    let om = &schemas["io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"]["properties"];
    assert_eq!(om["finalizers"]["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(om["finalizers"]["x-kubernetes-list-type"], "set");
    assert_eq!(om["ownerReferences"]["x-kubernetes-patch-merge-key"], "uid");
    assert_eq!(
        om["ownerReferences"]["x-kubernetes-list-map-keys"],
        json!(["uid"])
    );
    // serviceaccounts/token takes and gives an authentication.k8s.io/v1 TokenRequest.
    let token = &core["paths"]["/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token"];
    let post = &token["post"];
    assert_eq!(
        post["operationId"],
        "createCoreV1NamespacedServiceAccountToken"
    );
    assert_eq!(post["description"], "create token of a ServiceAccount");
    let tr = "#/components/schemas/io.k8s.api.authentication.v1.TokenRequest";
    assert_eq!(post["requestBody"]["content"]["*/*"]["schema"]["$ref"], tr);
    assert_eq!(
        post["responses"]["201"]["content"]["application/json"]["schema"]["$ref"],
        tr
    );
    assert_eq!(
        post["x-kubernetes-group-version-kind"],
        json!({"group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1"})
    );
    assert!(token.get("get").is_none() && token.get("put").is_none());
    assert_eq!(
        token["parameters"][0]["description"],
        "name of the TokenRequest"
    );
    let request = &schemas["io.k8s.api.authentication.v1.TokenRequest"];
    assert!(request["properties"]["spec"].is_object(), "{request}");
    assert_eq!(
        request["x-kubernetes-group-version-kind"],
        json!([{"group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1"}])
    );
    let sa = &schemas["io.k8s.api.core.v1.ServiceAccount"]["properties"]["secrets"];
    assert_eq!(sa["x-kubernetes-patch-merge-key"], "name");
    // kubectl apply merges a Service's ports by port, as the Go tags say.
    let ports = &schemas["io.k8s.api.core.v1.ServiceSpec"]["properties"]["ports"];
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "port");
    assert_eq!(
        ports["x-kubernetes-list-map-keys"],
        json!(["port", "protocol"])
    );
    let cm = &schemas["io.k8s.api.core.v1.ConfigMap"];
    assert!(
        cm.get("required").is_none(),
        "metadata is not required in kube's schema"
    );
    assert!(schemas.get("io.k8s.api.core.v1.ConfigMapList").is_some());
    // Every $ref resolves within the document.
    let text = core.to_string();
    for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
        let name = piece.split('"').next().unwrap();
        assert!(schemas.get(name).is_some(), "dangling $ref {name}");
    }

    // kubectl explain lease.spec: the Lease schema leads to LeaseSpec with descriptions.
    let coord = json_of(get("/openapi/v3/apis/coordination.k8s.io/v1", &[]));
    let schemas = &coord["components"]["schemas"];
    let spec = &schemas["io.k8s.api.coordination.v1.Lease"]["properties"]["spec"];
    let target = spec["allOf"][0]["$ref"]
        .as_str()
        .or(spec["$ref"].as_str())
        .unwrap();
    let name = target.strip_prefix("#/components/schemas/").unwrap();
    let lease_spec = &schemas[name];
    assert!(lease_spec["description"]
        .as_str()
        .unwrap()
        .starts_with("LeaseSpec is a specification"));
    assert!(lease_spec["properties"]["holderIdentity"]["description"].is_string());
    assert!(supports_query_param(
        &coord,
        "coordination.k8s.io",
        "v1",
        "Lease",
        "force"
    ));

    let authz = json_of(get("/openapi/v3/apis/authorization.k8s.io/v1", &[]));
    let ops: Vec<&String> = authz["paths"].as_object().unwrap().keys().collect();
    assert_eq!(
        ops,
        [
            "/apis/authorization.k8s.io/v1/namespaces/{namespace}/localsubjectaccessreviews",
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            "/apis/authorization.k8s.io/v1/subjectaccessreviews"
        ]
    );
    assert!(
        authz["paths"]["/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"]
            .get("get")
            .is_none()
    );
}

#[test]
fn v2_json_and_protobuf() {
    let json_resp = get("/openapi/v2", &[("accept", "application/json")]);
    assert_eq!(
        json_resp.headers()[header::CONTENT_TYPE],
        "application/json"
    );
    let v2 = json_of(json_resp);
    assert_eq!(v2["swagger"], "2.0");
    let defs = v2["definitions"].as_object().unwrap();
    assert!(defs.contains_key("io.k8s.api.coordination.v1beta1.LeaseCandidate"));
    let lease = &defs["io.k8s.api.coordination.v1.Lease"];
    assert_eq!(
        lease["properties"]["spec"]["$ref"],
        "#/definitions/io.k8s.api.coordination.v1.LeaseSpec"
    );

    for accept in [
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
        "application/json;q=0.9, application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    ] {
        let resp = get("/openapi/v2", &[("accept", accept)]);
        // The `.` form whatever was asked: Go's mime parser refuses `@` in a response.
        assert_eq!(
            resp.headers()[header::CONTENT_TYPE],
            "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
            "{accept}"
        );
        let doc = proto::decode_v2(&body(resp)).expect("decodes as openapi_v2.Document");
        assert_eq!(doc.swagger, "2.0");
        let defs = doc.definitions.unwrap().additional_properties;
        assert_eq!(defs.len(), v2["definitions"].as_object().unwrap().len());
        let cm = defs
            .iter()
            .find(|d| d.name == "io.k8s.api.core.v1.ConfigMap")
            .unwrap();
        let cm = cm.value.as_ref().unwrap();
        let gvk = cm
            .vendor_extension
            .iter()
            .find(|e| e.name == "x-kubernetes-group-version-kind")
            .unwrap();
        let yaml: Value = serde_yaml::from_str(&gvk.value.as_ref().unwrap().yaml).unwrap();
        assert_eq!(
            yaml,
            json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
        );
        let paths = doc.paths.unwrap().path;
        let item = paths
            .iter()
            .find(|p| p.name == "/api/v1/namespaces/{namespace}/configmaps/{name}")
            .unwrap();
        let patch = item.value.as_ref().unwrap().patch.as_ref().unwrap();
        assert_eq!(patch.operation_id, "patchCoreV1NamespacedConfigMap");
        assert!(patch.parameters.len() >= 4);
    }
}

/// /openapi/v2 is kept compressed: a client that accepts gzip (kubectl, through Go's
/// transport) gets it gzip-encoded, as gziphandler sends it upstream; any other the same
/// bytes inflated, with the same ETag.
#[test]
fn v2_is_gzip_encoded_for_clients_that_accept_it() {
    for accept in [
        "application/json",
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
    ] {
        let plain = get("/openapi/v2", &[("accept", accept)]);
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        let etag = plain.headers()[header::ETAG].clone();
        let plain = body(plain);

        let resp = get(
            "/openapi/v2",
            &[("accept", accept), ("accept-encoding", "gzip, deflate")],
        );
        assert_eq!(resp.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(resp.headers()[header::ETAG], etag);
        let vary: Vec<_> = resp.headers().get_all(header::VARY).iter().collect();
        assert_eq!(vary, ["Accept", "Accept-Encoding"]);
        let mut inflated = Vec::new();
        GzDecoder::new(&body(resp)[..])
            .read_to_end(&mut inflated)
            .unwrap();
        assert_eq!(inflated, plain, "{accept}");
        assert!(!plain.is_empty());
        if accept == "application/json" {
            // kube-openapi's ETag: the SHA-512 of the JSON document, quoted, in upper hex.
            let sha = data_encoding::HEXUPPER.encode(&sha2::Sha512::digest(&plain));
            assert_eq!(etag, format!("\"{sha}\""));
        }

        let refused = get(
            "/openapi/v2",
            &[("accept", accept), ("accept-encoding", "gzip;q=0")],
        );
        assert!(refused.headers().get(header::CONTENT_ENCODING).is_none());
        assert_eq!(body(refused), plain);
    }
    // The v3 documents are sent as they are (kube-openapi's handler3 has no gzip wrapper).
    let v3 = get(
        "/openapi/v3/api/v1",
        &[("accept", "application/json"), ("accept-encoding", "gzip")],
    );
    assert!(v3.headers().get(header::CONTENT_ENCODING).is_none());
}

/// The content type and status of /openapi/v3/api/v1 (or `path`) asked with `accept`.
fn answer(path: &str, accept: Option<&str>) -> (StatusCode, String) {
    let headers: Vec<(&str, &str)> = accept.map(|a| ("accept", a)).into_iter().collect();
    let resp = get(path, &headers);
    assert_eq!(resp.headers()[header::VARY], "Accept", "{accept:?}");
    let content_type = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .map(|v| v.to_str().unwrap().to_string())
        .unwrap_or_default();
    (resp.status(), content_type)
}

#[test]
fn v3_negotiates_like_handler3() {
    const PB: &str = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf";
    const PB_AT: &str = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf";
    let json = (StatusCode::OK, "application/json".to_string());
    let proto = (StatusCode::OK, PB.to_string());
    let gv = "/openapi/v3/api/v1";
    for (accept, want) in [
        (None, &json),
        (Some(""), &json),
        (Some("*/*"), &json),
        (Some("application/*"), &json),
        (Some("application/json"), &json),
        (Some(PB), &proto),
        // The deprecated `@` form is answered, labelled with the `.` form.
        (Some(PB_AT), &proto),
        (Some("application/json;q=0.5, application/com.github.proto-openapi.spec.v3@v1.0+protobuf"), &proto),
        (Some("text/html, application/com.github.proto-openapi.spec.v3.v1.0+protobuf;q=0.1"), &proto),
        (Some("text/html, */*;q=0.1"), &json),
        // q only orders the clauses: a q=0 clause still matches.
        (Some("application/json;q=0"), &json),
    ] {
        assert_eq!(&answer(gv, accept), want, "{accept:?}");
    }
    for accept in [
        "text/html",
        "application/yaml",
        "Application/JSON",
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf",
    ] {
        assert_eq!(
            answer(gv, Some(accept)),
            (StatusCode::NOT_ACCEPTABLE, String::new()),
            "{accept}"
        );
    }
    // No media range at all: kube-openapi answers 200 with nothing.
    let resp = get(gv, &[("accept", "bogus")]);
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(body(resp).is_empty());
    // A group version that is not served is not found, whatever the Accept.
    assert_eq!(
        get("/openapi/v3/apis/apps/v1", &[("accept", PB)]).status(),
        StatusCode::NOT_FOUND
    );

    // Both forms carry the hash of the JSON: the one the index links to.
    let index = json_of(get("/openapi/v3", &[]));
    let url = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    let hash = url.split_once("?hash=").unwrap().1;
    let json_resp = get(gv, &[("accept", "application/json")]);
    let etag = json_resp.headers()[header::ETAG].clone();
    assert_eq!(etag, format!("\"{hash}\"").as_str());
    assert_eq!(etag_of(&body(json_resp)), hash);
    let proto_resp = get(&url, &[("accept", PB)]);
    assert_eq!(proto_resp.status(), StatusCode::OK);
    assert_eq!(proto_resp.headers()[header::ETAG], etag);
    assert_eq!(proto_resp.headers()[header::CONTENT_TYPE], PB);
    assert_eq!(
        proto_resp.headers()[header::CACHE_CONTROL],
        "public, immutable"
    );
    let doc = proto3::decode_v3(&body(proto_resp)).expect("decodes as openapi_v3.Document");
    assert_eq!(doc.openapi, "3.0.0");
    let unchanged = get(
        gv,
        &[("accept", PB), ("if-none-match", etag.to_str().unwrap())],
    );
    assert_eq!(unchanged.status(), StatusCode::NOT_MODIFIED);
    let stale = get(&format!("{gv}?hash=00"), &[("accept", PB_AT)]);
    assert_eq!(stale.status(), StatusCode::MOVED_PERMANENTLY);
    assert_eq!(stale.headers()[header::LOCATION], url.as_str());
    assert_eq!(stale.headers()[header::CONTENT_TYPE], PB);
    // An empty hash is no hash.
    let plain = get(&format!("{gv}?hash="), &[]);
    assert_eq!(plain.status(), StatusCode::OK);
    assert_eq!(plain.headers()[header::CACHE_CONTROL], "no-cache, private");
}

#[test]
fn v2_negotiates_like_handler() {
    const PB: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
    let v2 = "/openapi/v2";
    for (accept, want) in [
        (None, "application/json"),
        (Some("*/*"), "application/json"),
        (Some("application/*"), "application/json"),
        (Some("text/html, application/*;q=0.5"), "application/json"),
        (Some(PB), PB),
        (Some("application/json;q=0.9, application/com.github.proto-openapi.spec.v2@v1.0+protobuf"), PB),
    ] {
        assert_eq!(
            answer(v2, accept),
            (StatusCode::OK, want.to_string()),
            "{accept:?}"
        );
    }
    // Unlike handler3, an Accept without a single media range is not acceptable either.
    for accept in [
        "text/html",
        "bogus",
        "application/com.github.proto-openapi.spec.v3.v1.0+protobuf",
    ] {
        assert_eq!(
            answer(v2, Some(accept)),
            (StatusCode::NOT_ACCEPTABLE, String::new()),
            "{accept}"
        );
    }
    // The protobuf answer carries the hash of the JSON, as kube-openapi's does.
    let json_resp = get(v2, &[]);
    let etag = json_resp.headers()[header::ETAG].clone();
    assert_eq!(etag, format!("\"{}\"", etag_of(&body(json_resp))).as_str());
    assert_eq!(get(v2, &[("accept", PB)]).headers()[header::ETAG], etag);
}

#[test]
fn documents_leave_out_what_the_registry_does_not_serve() {
    let api = OpenApi::new(
        built_in()
            .iter()
            .map(|b| b.info())
            .filter(|i| i.resource != "leasecandidates"),
    );
    let v2: Value =
        serde_json::from_slice(&body(api.handle("/openapi/v2", &HeaderMap::new()).unwrap()))
            .unwrap();
    let defs = v2["definitions"].as_object().unwrap();
    assert!(defs.contains_key("io.k8s.api.coordination.v1.Lease"));
    assert!(!defs.contains_key("io.k8s.api.coordination.v1beta1.LeaseCandidate"));
    assert!(!v2["paths"]
        .as_object()
        .unwrap()
        .keys()
        .any(|p| p.contains("leasecandidates")));
    let index: Value =
        serde_json::from_slice(&body(api.handle("/openapi/v3", &HeaderMap::new()).unwrap()))
            .unwrap();
    assert!(index["paths"].get("apis/coordination.k8s.io/v1").is_some());
    assert!(index["paths"]
        .get("apis/coordination.k8s.io/v1beta1")
        .is_none());
}

#[test]
fn remote_documents_are_merged_into_v2_once_per_generation() {
    let api = OpenApi::new(built_in().iter().map(|b| b.info()));
    let thing = "io.r.v1.Thing";
    let get_thing = json!({"get": {"responses": {"200": {"schema": {"$ref": format!("#/definitions/{thing}")}}}}});
    let remote = Arc::new(json!({
        "swagger": "2.0",
        "paths": {"/apis/r.io/v1/things": get_thing, "/apis/other.io/v1/things": get_thing},
        "definitions": {thing: {"type": "object", "description": "A remote thing.",
            "x-kubernetes-group-version-kind": [{"group": "r.io", "version": "v1", "kind": "Thing"}]}},
    }));
    let remotes = vec![("/apis/r.io/v1/".to_string(), remote)];
    let none = HeaderMap::new();
    let etag = |resp: &Response<Body>| resp.headers()[header::ETAG].clone();
    let local = etag(&api.handle("/openapi/v2", &none).unwrap());

    let resp = api.handle_v2_merged(&none, 1, &remotes);
    let merged_etag = etag(&resp);
    assert_ne!(merged_etag, local);
    let v2 = json_of(resp);
    let paths = v2["paths"].as_object().unwrap();
    assert!(paths.contains_key("/apis/r.io/v1/things"));
    assert!(!paths.contains_key("/apis/other.io/v1/things"));
    assert!(paths.contains_key("/api/v1/namespaces/{namespace}/configmaps"));
    assert_eq!(v2["definitions"][thing]["description"], "A remote thing.");

    let mut pb = HeaderMap::new();
    pb.insert(header::ACCEPT, HeaderValue::from_static(PROTO_V2));
    let resp = api.handle_v2_merged(&pb, 1, &remotes);
    assert_eq!(etag(&resp), merged_etag, "both forms carry the JSON's hash");
    let doc = proto::decode_v2(&body(resp)).expect("decodes as openapi_v2.Document");
    let defs = doc.definitions.unwrap().additional_properties;
    assert!(defs.iter().any(|d| d.name == thing));

    let mut cached = HeaderMap::new();
    cached.insert(header::IF_NONE_MATCH, merged_etag.clone());
    let resp = api.handle_v2_merged(&cached, 1, &remotes);
    assert_eq!(resp.status(), StatusCode::NOT_MODIFIED);

    // Built once per generation: the same generation answers the same document.
    assert_eq!(etag(&api.handle_v2_merged(&none, 1, &[])), merged_etag);
    assert_eq!(etag(&api.handle_v2_merged(&none, 2, &[])), local);
}
