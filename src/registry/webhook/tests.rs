use super::*;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ServiceReference;
use k8s_openapi::ByteString;

use super::testing::{
    self_signed, serve as serve_with, serve_closing, serve_counting, serve_http2,
};

/// A webhook answering every request with `status`, `content_type` and `body` after `delay`.
async fn serve(
    cert_pem: &str,
    key_pem: &str,
    status: u16,
    content_type: &'static str,
    body: &'static str,
    delay: Duration,
) -> u16 {
    serve_with((cert_pem, key_pem), delay, move |_| {
        (status, content_type, body.as_bytes().to_vec())
    })
    .await
}

/// Posts `{"call":i}` to a webhook that echoes it and checks that this call's own body came
/// back (not another call's answer left on a kept connection).
async fn call_echoed(endpoint: &Endpoint, i: u32) {
    let body = format!("{{\"call\":{i}}}").into_bytes();
    let answer = endpoint.post_json(body.clone(), SECOND).await.unwrap();
    assert_eq!(&answer[..], &body[..]);
}

fn config(port: u16, ca: &str) -> WebhookClientConfig {
    WebhookClientConfig {
        url: Some(format!("https://127.0.0.1:{port}/convert")),
        ca_bundle: Some(ByteString(ca.as_bytes().to_vec())),
        service: None,
    }
}

const SECOND: Duration = Duration::from_secs(1);

#[tokio::test]
async fn posts_over_tls_trusting_the_ca_bundle() {
    let (cert, key) = self_signed();
    let port = serve(
        &cert,
        &key,
        200,
        "application/json",
        "{\"ok\":true}",
        Duration::ZERO,
    )
    .await;
    let endpoint = Endpoint::new(&config(port, &cert)).unwrap();
    let body = endpoint.post_json(b"{}".to_vec(), SECOND).await.unwrap();
    assert_eq!(&body[..], b"{\"ok\":true}");
}

#[tokio::test]
async fn refuses_a_server_the_ca_bundle_does_not_sign() {
    let (cert, key) = self_signed();
    let (other, _) = self_signed();
    let port = serve(&cert, &key, 200, "application/json", "{}", Duration::ZERO).await;
    let endpoint = Endpoint::new(&config(port, &other)).unwrap();
    let err = endpoint
        .post_json(b"{}".to_vec(), SECOND)
        .await
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with(&format!("Post \"https://127.0.0.1:{port}/convert\": tls: ")),
        "{text}"
    );
}

#[tokio::test]
async fn error_answers_read_as_client_go_words_them() {
    let (cert, key) = self_signed();
    let cases = [
        (
            400,
            "text/plain",
            "bad",
            "the server rejected our request for an unknown reason",
        ),
        (
            500,
            "text/plain",
            "boom\n",
            "an error on the server (\"boom\") has prevented the request from succeeding",
        ),
        (
            500,
            "application/json",
            "{\"kind\":\"Status\",\"message\":\"from a Status\"}",
            "from a Status",
        ),
        (
            502,
            "application/octet-stream",
            "x",
            "an error on the server (\"unknown\") has prevented the request from succeeding",
        ),
    ];
    for (status, content_type, body, want) in cases {
        let port = serve(&cert, &key, status, content_type, body, Duration::ZERO).await;
        let endpoint = Endpoint::new(&config(port, &cert)).unwrap();
        // Time enough for a new connection on a loaded machine: the answer is what is tested.
        let err = endpoint
            .post_json(b"{}".to_vec(), 10 * SECOND)
            .await
            .unwrap_err();
        assert_eq!(err.to_string(), want, "status {status}");
    }
}

#[tokio::test]
async fn a_slow_webhook_runs_out_of_time() {
    let (cert, key) = self_signed();
    let port = serve(&cert, &key, 200, "application/json", "{}", 5 * SECOND).await;
    let endpoint = Endpoint::new(&config(port, &cert)).unwrap();
    let err = endpoint
        .post_json(b"{}".to_vec(), Duration::from_millis(200))
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("Post \"https://127.0.0.1:{port}/convert\": context deadline exceeded")
    );
}

#[tokio::test]
async fn a_webhook_that_is_down_is_named_with_its_url() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let (cert, _) = self_signed();
    let endpoint = Endpoint::new(&config(port, &cert)).unwrap();
    let err = endpoint
        .post_json(b"{}".to_vec(), SECOND)
        .await
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "Post \"https://127.0.0.1:{port}/convert\": dial tcp 127.0.0.1:{port}: connect: connection refused"
        )
    );
}

#[test]
fn a_service_is_reached_by_its_cluster_dns_name() {
    let (cert, _) = self_signed();
    let endpoint = Endpoint::new(&WebhookClientConfig {
        url: None,
        ca_bundle: Some(ByteString(cert.into_bytes())),
        service: Some(ServiceReference {
            name: "conv".into(),
            namespace: "system".into(),
            path: Some("/crd".into()),
            port: None,
        }),
    })
    .unwrap();
    assert_eq!(endpoint.url, "https://conv.system.svc:443/crd");
    assert_eq!(&*endpoint.address, "conv.system.svc:443");
    assert_eq!(endpoint.path, "/crd");
}

#[test]
fn unusable_configurations_are_refused() {
    let none = WebhookClientConfig::default();
    assert_eq!(
        Endpoint::new(&none).err().unwrap().to_string(),
        "webhook configuration must have either service or URL"
    );
    let bad_ca = WebhookClientConfig {
        url: Some("https://127.0.0.1/x".into()),
        ca_bundle: Some(ByteString(b"not a certificate".to_vec())),
        service: None,
    };
    assert_eq!(
        Endpoint::new(&bad_ca).err().unwrap().to_string(),
        "unable to load root certificates: unable to parse bytes as PEM block"
    );
}

#[test]
fn wait_runs_a_call_outside_any_runtime_and_inside_one() {
    let answer = wait(async { Ok::<_, WebhookError>(7) }).unwrap();
    assert_eq!(answer, 7);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let inside = rt.block_on(async {
        tokio::spawn(async { wait(async { Ok::<_, WebhookError>(8) }).unwrap() })
            .await
            .unwrap()
    });
    assert_eq!(inside, 8);
}

#[tokio::test]
async fn calls_share_a_kept_connection() {
    let (cert, key) = self_signed();
    let (port, accepted) = serve_counting((&cert, &key), Duration::ZERO, |body| {
        (200, "application/json", body.to_vec())
    })
    .await;
    let endpoint = Endpoint::new(&config(port, &cert)).unwrap();
    for i in 0..5 {
        call_echoed(&endpoint, i).await;
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A webhook that offers HTTP/2 is called over a few multiplexed connections: 200 concurrent
/// calls, each answered with its own body, over at most 4 connections.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_webhook_offering_http2_is_called_over_a_few_connections() {
    let (cert, key) = self_signed();
    let (port, accepted) = serve_http2((&cert, &key), |body| {
        (200, "application/json", body.to_vec())
    })
    .await;
    let endpoint = Arc::new(Endpoint::new(&config(port, &cert)).unwrap());
    let calls: Vec<_> = (0..200)
        .map(|i| {
            let endpoint = Arc::clone(&endpoint);
            tokio::spawn(async move {
                let body = format!("{{\"call\":{i}}}").into_bytes();
                let answer = endpoint.post_json(body.clone(), 10 * SECOND).await.unwrap();
                assert_eq!(&answer[..], &body[..]);
            })
        })
        .collect();
    for call in calls {
        call.await.unwrap();
    }
    let accepted = accepted.load(std::sync::atomic::Ordering::SeqCst);
    assert!((1..=4).contains(&accepted), "{accepted} connections");
}

/// A connection dialed from another runtime (a controller's) runs on the endpoint's: it is
/// still kept for the next call once that runtime is gone.
#[test]
fn a_kept_connection_runs_on_the_endpoints_runtime() {
    let serving = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let (cert, key) = self_signed();
    let (port, accepted) = serving.block_on(serve_counting((&cert, &key), Duration::ZERO, |b| {
        (200, "application/json", b.to_vec())
    }));
    let endpoint = Endpoint::new(&config(port, &cert))
        .unwrap()
        .on(Some(serving.handle()));
    let other = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let body = b"{\"call\":1}".to_vec();
    let answer = other.block_on(endpoint.post_json(body.clone(), SECOND));
    assert_eq!(&answer.unwrap()[..], &body[..]);
    other.shutdown_timeout(SECOND);
    let answer = serving.block_on(endpoint.post_json(body.clone(), SECOND));
    assert_eq!(&answer.unwrap()[..], &body[..]);
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 1);
}

/// A kept connection the webhook has closed since (its idle timeout) costs the call nothing
/// but a new connection.
#[tokio::test]
async fn a_connection_the_webhook_closed_is_replaced() {
    let (cert, key) = self_signed();
    let lifetime = Duration::from_millis(100);
    let (port, accepted) = serve_closing((&cert, &key), Duration::ZERO, lifetime, |body| {
        (200, "application/json", body.to_vec())
    })
    .await;
    let endpoint = Endpoint::new(&config(port, &cert)).unwrap();
    for i in 0..3 {
        call_echoed(&endpoint, i).await;
        tokio::time::sleep(3 * lifetime).await;
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 3);
}

/// A call cut short by its timeout drops its connection in the middle of an exchange: the
/// next call gets a new one, and its own answer.
#[tokio::test]
async fn a_call_cut_short_leaves_no_connection_behind() {
    let (cert, key) = self_signed();
    let delay = Duration::from_millis(200);
    let (port, accepted) = serve_counting((&cert, &key), delay, |body| {
        (200, "application/json", body.to_vec())
    })
    .await;
    let endpoint = Endpoint::new(&config(port, &cert)).unwrap();
    let cut = endpoint
        .post_json(b"{\"call\":1}".to_vec(), delay / 4)
        .await
        .unwrap_err();
    assert!(
        cut.to_string().ends_with("context deadline exceeded"),
        "{cut}"
    );
    for i in 2..4 {
        call_echoed(&endpoint, i).await;
    }
    assert_eq!(accepted.load(std::sync::atomic::Ordering::SeqCst), 2);
}
