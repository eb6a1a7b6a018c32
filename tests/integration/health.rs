//! Health endpoints, /version and kubectl against a real `kapi serve`.

use crate::support::{get_text, TestServer};

#[tokio::test]
async fn kubectl_version_and_readyz_verbose() {
    let server = TestServer::start().await;
    let out = server.kubectl(&["version", "-o", "json"]).await;
    assert!(
        out.status.success(),
        "kubectl version: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["serverVersion"]["major"], "1");
    assert!(v["serverVersion"]["gitVersion"]
        .as_str()
        .unwrap()
        .starts_with("v1."));

    let out = server.kubectl(&["get", "--raw", "/readyz?verbose"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let body = String::from_utf8(out.stdout).unwrap();
    assert!(
        body.starts_with("[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n"),
        "{body}"
    );
    assert!(
        body.ends_with("[+]shutdown ok\nreadyz check passed\n"),
        "{body}"
    );
}

#[tokio::test]
async fn anonymous_livez_is_plain_ok() {
    let server = TestServer::start().await;
    let anon = server.anonymous_http();
    for path in ["/livez", "/healthz", "/readyz"] {
        let resp = anon.get(server.url(path)).send().await.unwrap();
        assert_eq!(resp.status(), 200, "{path}");
        assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
        assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
        assert_eq!(resp.text().await.unwrap(), "ok", "{path}");
    }
    let (code, body) = get_text(&anon, &server.url("/version")).await;
    assert_eq!(code, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let minor = v["minor"].as_str().unwrap();
    assert!(minor.parse::<u32>().is_ok(), "{body}");
    assert!(
        v["gitVersion"]
            .as_str()
            .unwrap()
            .starts_with(&format!("v1.{minor}.")),
        "{body}"
    );
}

#[tokio::test]
async fn verbose_exclude_and_subpath_formats() {
    let server = TestServer::start().await;
    let anon = server.anonymous_http();
    let (code, body) = get_text(&anon, &server.url("/livez?verbose")).await;
    assert_eq!(code, 200);
    // ping, log, etcd, then one line per post-start hook and boot-sequence check; no
    // readiness-only checks.
    assert!(
        body.starts_with("[+]ping ok\n[+]log ok\n[+]etcd ok\n"),
        "{body}"
    );
    assert!(body.ends_with("livez check passed\n"), "{body}");
    let lines: Vec<&str> = body.lines().collect();
    for line in &lines[3..lines.len() - 1] {
        assert!(
            (line.starts_with("[+]poststarthook/") || *line == "[+]autoregister-completion ok")
                && line.ends_with(" ok"),
            "{line}"
        );
    }
    assert!(
        !body.contains("shutdown") && !body.contains("etcd-readiness"),
        "{body}"
    );

    let (code, body) = get_text(
        &anon,
        &server.url("/readyz?exclude=etcd&exclude=nope&exclude=log&verbose"),
    )
    .await;
    assert_eq!(code, 200);
    assert!(
        body.starts_with(
            "[+]ping ok\n[+]log excluded: ok\n[+]etcd excluded: ok\n[+]etcd-readiness ok\n"
        ),
        "{body}"
    );
    assert!(
        body.ends_with(
            "[+]shutdown ok\n\
             warn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check passed\n"
        ),
        "{body}"
    );
    // Not verbose: warnings are not shown.
    assert_eq!(
        get_text(&anon, &server.url("/readyz?exclude=nope")).await,
        (200, "ok".into())
    );

    // A check's own path is for system:monitoring, not for anonymous users (as upstream).
    let admin = server.admin_http();
    assert_eq!(get_text(&anon, &server.url("/readyz/etcd")).await.0, 403);
    assert_eq!(
        get_text(&admin, &server.url("/readyz/etcd")).await,
        (200, "ok".into())
    );
    assert_eq!(
        get_text(&admin, &server.url("/livez/ping")).await,
        (200, "ok".into())
    );
    assert_eq!(
        get_text(&admin, &server.url("/readyz/shutdown")).await,
        (200, "ok".into())
    );
    // Unknown sub-paths fall through to the not-found handler; livez has no shutdown check.
    let (code, body) = get_text(&server.admin_http(), &server.url("/livez/shutdown")).await;
    assert_eq!(code, 404, "{body}");
    let (code, _) = get_text(&server.admin_http(), &server.url("/readyz/")).await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn oversized_body_is_413() {
    let server = TestServer::start().await;
    let body = vec![b' '; 3 * 1024 * 1024 + 1];
    let resp = server
        .admin_http()
        .post(server.url("/api/v1/namespaces"))
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    let status: serde_json::Value = resp.json().await.unwrap();
    assert_eq!(status["reason"], "RequestEntityTooLarge");
    // The server keeps serving.
    assert_eq!(
        get_text(&server.anonymous_http(), &server.url("/livez"))
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn alpn_offers_h2_unless_disabled() {
    let server = TestServer::start().await;
    let resp = server
        .anonymous_http()
        .get(server.url("/livez"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_2);
    let http1 = TestServer::start_with(
        crate::support::Options::default().args(["--disable-http2-serving"]),
    )
    .await;
    let resp = http1
        .anonymous_http()
        .get(http1.url("/livez"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.version(), reqwest::Version::HTTP_11);
}
