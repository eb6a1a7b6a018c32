//! Graceful shutdown, restart with the same data dir, and flag validation.

use crate::support::etcd::free_port;
use crate::support::{get_text, kubectl_with, within, Options, TestServer};
use std::sync::Arc;
use std::time::Duration;

#[tokio::test]
async fn sigterm_fails_readyz_during_delay_then_exits_zero() {
    let mut server =
        TestServer::start_with(Options::default().args(["--shutdown-delay-duration", "5s"])).await;
    let anon = server.anonymous_http();
    server.signal(libc::SIGTERM);
    let body = within(Duration::from_secs(5), "readyz to fail", async {
        loop {
            let (code, body) = get_text(&anon, &server.url("/readyz")).await;
            if code == 500 {
                break body;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    assert!(
        body.contains("[-]shutdown failed: reason withheld\n"),
        "{body}"
    );
    assert_eq!(
        get_text(&server.admin_http(), &server.url("/readyz/shutdown")).await,
        (
            500,
            "internal server error: process is shutting down\n".into()
        )
    );
    assert_eq!(
        get_text(&anon, &server.url("/livez")).await,
        (200, "ok".into())
    );
    let status = server.wait_exit(Duration::from_secs(20)).await;
    assert_eq!(status.code(), Some(0), "{}", server.stderr());
    let log = server.stderr();
    for phase in [
        "shutdown initiated",
        "shutdown delay elapsed",
        "in-flight requests drained",
        "apiserver is exiting",
    ] {
        assert!(log.contains(phase), "missing {phase:?} in:\n{log}");
    }
}

#[tokio::test]
async fn sigterm_stops_a_server_whose_stderr_is_a_closed_pipe() {
    // Every log line after the pipe closed fails to write. tracing-subscriber used to report
    // that with eprintln!, which panicked in the task that logged, the signal watcher's
    // included: the server then ignored SIGTERM.
    let mut server = TestServer::start_with(Options::default().close_stderr()).await;
    let out = server
        .kubectl(&["create", "namespace", "after-stderr-closed"])
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    server.signal(libc::SIGTERM);
    let status = server.wait_exit(Duration::from_secs(20)).await;
    assert_eq!(status.code(), Some(0));
}

#[tokio::test]
async fn restart_with_same_data_dir_keeps_admin_kubeconfig_valid() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let port = free_port().to_string();
    let opts = Options::default()
        .args(["--secure-port", port.as_str()])
        .data_dir(dir.clone());
    let mut first = TestServer::start_with(opts.clone()).await;
    let old = dir.path().join("old.kubeconfig");
    std::fs::copy(first.kubeconfig(), &old).unwrap();
    // A write just before the stop, the server up for a few seconds (its controllers all
    // running): the clean stop checkpoints the write and empties the log. (Before the store
    // was closed explicitly, whether it was depended on which tasks still held it at exit.)
    tokio::time::sleep(Duration::from_secs(3)).await;
    first
        .kubectl_ok(&["create", "configmap", "last", "--from-literal=a=b"])
        .await;
    first.signal(libc::SIGTERM);
    assert_eq!(
        first.wait_exit(Duration::from_secs(20)).await.code(),
        Some(0)
    );
    drop(first);
    let wal = dir.path().join("store").join("kapi.wal");
    assert_eq!(
        std::fs::metadata(&wal).unwrap().len(),
        0,
        "{}",
        wal.display()
    );

    let second = TestServer::start_with(opts).await;
    second.kubectl_ok(&["get", "configmap", "last"]).await;
    assert!(
        !second.stderr().contains("replayed the write-ahead log"),
        "{}",
        second.stderr()
    );
    let out = kubectl_with(&old, &["get", "--raw", "/readyz"]).await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.stdout, b"ok");
    assert_eq!(
        std::fs::read(second.kubeconfig()).unwrap(),
        std::fs::read(&old).unwrap()
    );
}

#[tokio::test]
async fn invalid_flags_exit_2_before_binding() {
    let dir = tempfile::tempdir().unwrap();
    let out = within(
        Duration::from_secs(30),
        "kapi serve with bad flags",
        tokio::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
            .args([
                "serve",
                "--secure-port",
                "0",
                "--max-requests-inflight",
                "0",
                "--etcd-prefix",
                "nope",
            ])
            .arg("--data-dir")
            .arg(dir.path())
            .kill_on_drop(true)
            .output(),
    )
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(
        stderr,
        "kapi: error: --max-requests-inflight must be greater than 0\nkapi: error: --etcd-prefix: \"nope\" must start with /\n"
    );
    assert!(!dir.path().join("admin.kubeconfig").exists());
}
