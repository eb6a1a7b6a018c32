//! Bad input against the real server: each a precise 4xx Status and nothing stored.

use crate::crud::{call, js, wait_default};
use crate::support::TestServer;
use reqwest::Method as M;
use serde_json::json;

#[tokio::test]
async fn bad_requests_are_precise_and_store_nothing() {
    let server = TestServer::start().await;
    wait_default(&server).await;
    let c = server.admin_http();
    let cms = server.url("/api/v1/namespaces/default/configmaps");
    let raw = |ct: &'static str, b: &[u8]| Some((ct, b.to_vec()));
    let big = "x".repeat(1_100_000);
    let huge_message = "y".repeat(1_700_000);
    type Case<'a> = (&'a str, M, String, Option<(&'a str, Vec<u8>)>, u16, &'a str);
    let cases: Vec<Case> = vec![
        (
            "malformed json",
            M::POST,
            cms.clone(),
            raw("application/json", b"{\"metadata\": "),
            400,
            "json parse error",
        ),
        (
            "malformed yaml",
            M::POST,
            cms.clone(),
            raw("application/yaml", b"metadata: [unclosed"),
            400,
            "error converting YAML to JSON",
        ),
        (
            "malformed protobuf",
            M::POST,
            cms.clone(),
            raw("application/vnd.kubernetes.protobuf", b"not protobuf"),
            400,
            "",
        ),
        (
            "unknown content type",
            M::POST,
            cms.clone(),
            raw("text/plain", b"hi"),
            415,
            "accepted media types include",
        ),
        (
            "kind mismatch",
            M::POST,
            cms.clone(),
            js(json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "k"}})),
            400,
            "does not match the expected kind",
        ),
        (
            "apiVersion mismatch",
            M::POST,
            cms.clone(),
            js(json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "k"}})),
            400,
            "the API version in the data (apps/v1) does not match the expected API version (v1)",
        ),
        (
            "namespace mismatch",
            M::POST,
            cms.clone(),
            js(json!({"metadata": {"name": "k", "namespace": "kube-system"}})),
            400,
            "does not match the namespace sent on the request",
        ),
        (
            "name mismatch",
            M::PUT,
            format!("{cms}/a"),
            js(json!({"metadata": {"name": "b"}})),
            400,
            "the name of the object (b) does not match the name on the URL (a)",
        ),
        (
            "strict unknown field",
            M::POST,
            format!("{cms}?fieldValidation=Strict"),
            js(json!({"metadata": {"name": "s"}, "spec": {"x": 1}})),
            400,
            "strict decoding error: unknown field \"spec\"",
        ),
        (
            "invalid name",
            M::POST,
            cms.clone(),
            js(json!({"metadata": {"name": "Not_Valid"}})),
            422,
            "metadata.name: Invalid value: \"Not_Valid\"",
        ),
        (
            "missing name",
            M::POST,
            cms.clone(),
            js(json!({"metadata": {}})),
            422,
            "metadata.name: Required value: name or generateName is required",
        ),
        (
            "bad label",
            M::POST,
            cms.clone(),
            js(json!({"metadata": {"name": "l", "labels": {"a": "b c"}}})),
            422,
            "metadata.labels: Invalid value: \"b c\"",
        ),
        (
            "bad config key",
            M::POST,
            cms.clone(),
            js(json!({"metadata": {"name": "d"}, "data": {"a b": "1"}})),
            422,
            "data[a b]: Invalid value",
        ),
        (
            "data too long",
            M::POST,
            cms.clone(),
            js(json!({"metadata": {"name": "big"}, "data": {"k": big}})),
            422,
            "Too long",
        ),
        (
            "object too large",
            M::POST,
            server.url("/api/v1/namespaces/default/events"),
            js(
                json!({"metadata": {"name": "huge"}, "involvedObject": {"kind": "X"}, "message": huge_message}),
            ),
            413,
            "Request entity too large",
        ),
        (
            "bad label selector",
            M::GET,
            format!("{cms}?labelSelector=a%20b"),
            None,
            400,
            "found 'b'",
        ),
        (
            "bad field selector",
            M::GET,
            format!("{cms}?fieldSelector=spec.nope%3D1"),
            None,
            400,
            "field label not supported: spec.nope",
        ),
        (
            "bad dryRun",
            M::POST,
            format!("{cms}?dryRun=Some"),
            js(json!({"metadata": {"name": "dr"}})),
            422,
            "dryRun: Unsupported value",
        ),
        (
            "bad patch type",
            M::PATCH,
            format!("{cms}/a"),
            raw("application/json", b"{}"),
            415,
            "accepted media types include",
        ),
        (
            "bad rvm",
            M::GET,
            format!("{cms}?resourceVersionMatch=Exact"),
            None,
            422,
            "resourceVersionMatch is forbidden unless resourceVersion is provided",
        ),
    ];
    for (what, method, url, body, code, text) in cases {
        let (got, status, _) = call(&c, method, &url, body).await;
        assert_eq!(got, code, "{what}: {status}");
        assert_eq!(status["kind"], "Status", "{what}: {status}");
        assert_eq!(status["code"], code, "{what}");
        let msg = status["message"].as_str().unwrap_or("");
        assert!(msg.contains(text), "{what}: {msg}");
    }
    let (_, list, _) = call(&c, M::GET, &cms, None).await;
    assert_eq!(list["items"], json!([]), "nothing stored");
    // The default fieldValidation (Warn) drops unknown fields with a Warning header.
    let (code, cm, headers) = call(
        &c,
        M::POST,
        &cms,
        js(json!({"metadata": {"name": "warned"}, "spec": {"x": 1}})),
    )
    .await;
    assert_eq!(code, 201, "{cm}");
    assert!(cm.get("spec").is_none());
    assert_eq!(headers["warning"], r#"299 - "unknown field \"spec\"""#);
    let (_, events, _) = call(
        &c,
        M::GET,
        &server.url("/api/v1/namespaces/default/events"),
        None,
    )
    .await;
    assert!(events["items"]
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["metadata"]["name"] != "huge"));
}
