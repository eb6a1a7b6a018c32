use super::*;
use crate::registry::webhook::testing::{self_signed, server_config};
use crate::registry::webhook::tls_config;
use hyper_util::rt::{TokioExecutor, TokioIo};

/// What the test backend answers `/big` with.
const BIG: usize = 8 * 1024 * 1024;

/// An HTTPS backend on 127.0.0.1 offering `alpn`: `/big` answers BIG bytes, any other path
/// `<HTTP version> <path> <x-remote-user>`. Counts the connections it accepted; `close()`
/// cuts every open connection without a word, as a backend that restarts does.
struct TestBackend {
    port: u16,
    accepted: Arc<AtomicUsize>,
    connections: Arc<Mutex<tokio::task::JoinSet<()>>>,
    cert_pem: String,
    /// The TLS cipher suite each connection negotiated.
    suites: Arc<Mutex<Vec<rustls::CipherSuite>>>,
}

impl TestBackend {
    async fn start(alpn: &[&[u8]]) -> TestBackend {
        let (cert_pem, key_pem) = self_signed();
        let mut config = server_config(&cert_pem, &key_pem);
        config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let connections = Arc::new(Mutex::new(tokio::task::JoinSet::new()));
        let suites = Arc::new(Mutex::new(Vec::new()));
        let (counter, tasks) = (Arc::clone(&accepted), Arc::clone(&connections));
        let negotiated = Arc::clone(&suites);
        tokio::spawn(async move {
            while let Ok((tcp, _)) = listener.accept().await {
                counter.fetch_add(1, Ordering::SeqCst);
                let acceptor = acceptor.clone();
                let negotiated = Arc::clone(&negotiated);
                tasks.lock().unwrap().spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    if let Some(suite) = tls.get_ref().1.negotiated_cipher_suite() {
                        negotiated.lock().unwrap().push(suite.suite());
                    }
                    let service = hyper::service::service_fn(
                        |req: http::Request<hyper::body::Incoming>| async move {
                            let body = if req.uri().path() == "/big" {
                                Bytes::from(vec![b'x'; BIG])
                            } else {
                                let user = req
                                    .headers()
                                    .get("x-remote-user")
                                    .and_then(|v| v.to_str().ok())
                                    .unwrap_or("");
                                let line =
                                    format!("{:?} {} {user}", req.version(), req.uri().path());
                                Bytes::from(line)
                            };
                            Ok::<_, hyper::Error>(http::Response::new(Full::new(body)))
                        },
                    );
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        TestBackend {
            port,
            accepted,
            connections,
            cert_pem,
            suites,
        }
    }

    fn target(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    fn backend(&self) -> Backend {
        let tls = tls_config(Some(self.cert_pem.as_bytes())).unwrap();
        let name = ServerName::try_from("127.0.0.1").unwrap();
        Backend::new(tls, name, &tokio::runtime::Handle::current())
    }

    fn close(&self) {
        self.connections.lock().unwrap().abort_all();
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// GETs `path` from `target` as `alice`: the status and the whole body.
async fn get(backend: &Backend, target: &str, path: &str) -> Result<(u16, Bytes), SendError> {
    let req = http::Request::get(format!("https://{target}{path}"))
        .header("x-remote-user", "alice")
        .body(Bytes::new())
        .unwrap();
    let resp = backend.send(target, req).await?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    Ok((status, body))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_share_a_few_http2_connections() {
    let server = TestBackend::start(&[b"h2", b"http/1.1"]).await;
    let backend = Arc::new(server.backend());
    let target = server.target();
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..200 {
        let (backend, target) = (Arc::clone(&backend), target.clone());
        calls.spawn(async move { get(&backend, &target, &format!("/r{i}")).await });
    }
    let mut answered = 0;
    while let Some(call) = calls.join_next().await {
        let (status, body) = call.unwrap().unwrap();
        assert_eq!(status, 200);
        let body = String::from_utf8(body.to_vec()).unwrap();
        assert!(
            body.starts_with("HTTP/2.0 /r") && body.ends_with(" alice"),
            "{body}"
        );
        answered += 1;
    }
    assert_eq!(answered, 200);
    assert!(
        server.accepted() <= CONNECTIONS,
        "{} connections for 200 requests",
        server.accepted()
    );
}

#[tokio::test]
async fn a_backend_without_http2_is_reached_over_http1() {
    let server = TestBackend::start(&[b"http/1.1"]).await;
    let backend = server.backend();
    for _ in 0..3 {
        let (status, body) = get(&backend, &server.target(), "/one").await.unwrap();
        assert_eq!(status, 200);
        assert_eq!(&body[..], b"HTTP/1.1 /one alice");
    }
}

#[tokio::test]
async fn a_connection_the_backend_cut_is_replaced() {
    let server = TestBackend::start(&[b"h2"]).await;
    let backend = server.backend();
    // Fill every slot, so the request after the cut lands on a cut connection.
    for _ in 0..CONNECTIONS {
        assert_eq!(get(&backend, &server.target(), "/a").await.unwrap().0, 200);
    }
    let before = server.accepted();
    server.close();
    tokio::time::sleep(Duration::from_millis(100)).await;
    for _ in 0..CONNECTIONS {
        let (status, body) = get(&backend, &server.target(), "/b").await.unwrap();
        assert_eq!((status, &body[..]), (200, &b"HTTP/2.0 /b alice"[..]));
    }
    assert!(server.accepted() > before, "no new connection was dialed");
}

#[tokio::test]
async fn an_answer_larger_than_the_windows_arrives_whole() {
    let server = TestBackend::start(&[b"h2"]).await;
    let backend = server.backend();
    // Each is larger than a connection's window, and one connection carries two of them:
    // the window is given back as the answer is read.
    for _ in 0..=CONNECTIONS {
        let (status, body) = get(&backend, &server.target(), "/big").await.unwrap();
        assert_eq!((status, body.len()), (200, BIG));
    }
}

#[tokio::test]
async fn a_backend_that_is_down_is_named_as_go_names_it() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let target = listener.local_addr().unwrap().to_string();
    drop(listener);
    let server = TestBackend::start(&[b"h2"]).await;
    let err = get(&server.backend(), &target, "/x").await.unwrap_err();
    assert_eq!(
        crate::api::error_chain(&err),
        format!("dial tcp {target}: connect: connection refused")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_negotiate_aes_128_gcm_as_go_clients_do() {
    let server = TestBackend::start(&[b"h2"]).await;
    let backend = server.backend();
    let (status, _) = get(&backend, &server.target(), "/x").await.unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        *server.suites.lock().unwrap(),
        [rustls::CipherSuite::TLS13_AES_128_GCM_SHA256]
    );
}
