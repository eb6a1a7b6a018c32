//! /openapi/v3/<group version> over the real server, negotiated as kube-openapi's handler3
//! does: JSON, the protobuf media type in both its forms (answered with the `.` form), the
//! wildcards, 406 for anything else, one ETag for both forms; and `kubectl explain`, which
//! reads the JSON documents.

use crate::support::{within, TestServer};
use std::time::Duration;

const PB: &str = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf";
const PB_AT: &str = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf";

/// Status, content type, ETag and body of a GET of `path` with `accept`.
async fn fetch(server: &TestServer, path: &str, accept: &str) -> (u16, String, String, Vec<u8>) {
    let req = server
        .admin_http()
        .get(server.url(path))
        .header("accept", accept)
        .send();
    let resp = within(Duration::from_secs(30), path, req).await.unwrap();
    let status = resp.status().as_u16();
    assert_eq!(resp.headers()["vary"], "Accept", "{accept}");
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default()
    };
    let (content_type, etag) = (header("content-type"), header("etag"));
    let body = within(Duration::from_secs(30), path, resp.bytes())
        .await
        .unwrap();
    (status, content_type, etag, body.to_vec())
}

#[tokio::test]
async fn openapi_v3_group_version_negotiates_json_and_protobuf() {
    let server = TestServer::start().await;
    let gv = "/openapi/v3/api/v1";
    let (status, content_type, json_etag, json) = fetch(&server, gv, "application/json").await;
    assert_eq!((status, content_type.as_str()), (200, "application/json"));
    let doc: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(doc["openapi"], "3.0.0");
    assert!(doc["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"].is_object());
    assert_eq!(json_etag.len(), 130, "a quoted hex SHA-512: {json_etag}");

    for accept in ["*/*", "application/*", "text/html, */*;q=0.1"] {
        let (status, content_type, etag, body) = fetch(&server, gv, accept).await;
        assert_eq!((status, content_type.as_str()), (200, "application/json"));
        assert_eq!((etag, body), (json_etag.clone(), json.clone()), "{accept}");
    }

    let mut proto = None;
    for accept in [
        PB,
        PB_AT,
        "application/json;q=0.5, application/com.github.proto-openapi.spec.v3@v1.0+protobuf",
    ] {
        let (status, content_type, etag, body) = fetch(&server, gv, accept).await;
        assert_eq!((status, content_type.as_str()), (200, PB), "{accept}");
        // The ETag is the hash of the JSON, whichever form is served.
        assert_eq!(etag, json_etag, "{accept}");
        assert_ne!(body, json);
        let text = String::from_utf8_lossy(&body);
        assert!(text.contains("io.k8s.api.core.v1.ConfigMap"), "{accept}");
        assert!(text.contains("x-kubernetes-group-version-kind"), "{accept}");
        assert!(proto.is_none() || proto.as_ref() == Some(&body));
        proto = Some(body);
    }

    for accept in [
        "text/html",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
    ] {
        let (status, _, _, body) = fetch(&server, gv, accept).await;
        assert_eq!(status, 406, "{accept}");
        assert!(body.is_empty());
    }

    // The index links each group version by the hash of its JSON; that link serves either
    // form immutably, a stale one redirects to it.
    let (status, _, _, index) = fetch(&server, "/openapi/v3", "application/json").await;
    assert_eq!(status, 200);
    let index: serde_json::Value = serde_json::from_slice(&index).unwrap();
    let url = index["paths"]["api/v1"]["serverRelativeURL"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        format!("\"{}\"", url.split_once("?hash=").unwrap().1),
        json_etag
    );
    let (status, content_type, _, body) = fetch(&server, &url, PB).await;
    assert_eq!((status, content_type.as_str()), (200, PB));
    assert_eq!(Some(body), proto);
    // A stale hash is redirected (the client follows) to the current one.
    let stale = within(
        Duration::from_secs(30),
        "stale hash",
        server
            .admin_http()
            .get(server.url(&format!("{gv}?hash=00")))
            .header("accept", PB_AT)
            .send(),
    )
    .await
    .unwrap();
    assert_eq!(stale.status().as_u16(), 200);
    assert_eq!(stale.url().as_str(), server.url(&url));
    assert_eq!(stale.headers()["content-type"], PB);
    assert_eq!(stale.headers()["cache-control"], "public, immutable");
}

#[tokio::test]
async fn openapi_v3_serves_kubectl_explain() {
    let server = TestServer::start().await;
    let o = server.kubectl(&["explain", "configmaps.data"]).await;
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains("KIND:       ConfigMap"), "{text}");
    assert!(text.contains("VERSION:    v1"), "{text}");
    assert!(text.contains("FIELD: data <map[string]string>"), "{text}");
    assert!(
        text.contains("Data contains the configuration data."),
        "{text}"
    );
}
