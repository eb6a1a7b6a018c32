//! The operator commands (`kapi leases|candidates|hooks|health`) run as real processes against a
//! real `kapi serve`: output checked field by field against what the server itself reports (ages
//! normalised), and every documented exit code (0 ok, 1 problem, 2 usage, 3 no answer).

use crate::support::etcd::free_port;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::support::{get_text, within, Options, TestServer};

/// Result of one `kapi` run.
pub(crate) struct Run {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs `kapi <args>` with `KUBECONFIG` set to `kubeconfig` and a clean environment for colour.
pub(crate) async fn kapi_with(kubeconfig: &Path, args: &[&str]) -> Run {
    let fut = tokio::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = within(Duration::from_secs(90), &format!("kapi {args:?}"), fut)
        .await
        .expect("spawn kapi");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8(out.stdout).expect("utf-8 stdout"),
        stderr: String::from_utf8(out.stderr).expect("utf-8 stderr"),
    }
}

async fn kapi(server: &TestServer, args: &[&str]) -> Run {
    kapi_with(server.kubeconfig(), args).await
}

/// Splits a table into whitespace-separated fields per line (cells here never contain spaces,
/// except REASON, which callers check separately).
fn fields(table: &str) -> Vec<Vec<String>> {
    table
        .lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// The server's own verbose listing of an endpoint: (name, "ok"|"failed"|"excluded").
async fn server_checks(server: &TestServer, path: &str) -> (u16, Vec<(String, String)>) {
    let (code, body) = get_text(&server.admin_http(), &server.url(path)).await;
    let checks = body
        .lines()
        .filter_map(|l| {
            if let Some(r) = l.strip_prefix("[+]") {
                r.strip_suffix(" excluded: ok")
                    .map(|n| (n.to_string(), "excluded".to_string()))
                    .or_else(|| {
                        r.strip_suffix(" ok")
                            .map(|n| (n.to_string(), "ok".to_string()))
                    })
            } else {
                l.strip_prefix("[-]")
                    .and_then(|r| r.split_once(" failed"))
                    .map(|(n, _)| (n.to_string(), "failed".to_string()))
            }
        })
        .collect();
    (code, checks)
}

/// A kubeconfig copy with `edit` applied to its YAML.
fn edited_kubeconfig(
    server: &TestServer,
    dir: &Path,
    edit: impl FnOnce(&mut serde_yaml::Value),
) -> std::path::PathBuf {
    let mut doc: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(server.kubeconfig()).unwrap()).unwrap();
    edit(&mut doc);
    let path = dir.join("kubeconfig");
    std::fs::write(&path, serde_yaml::to_string(&doc).unwrap()).unwrap();
    path
}

fn assert_one_line_error(run: &Run, needle: &str) {
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        lines.len(),
        1,
        "expected one stderr line, got {:?}",
        run.stderr
    );
    assert!(lines[0].starts_with("kapi: error: "), "{:?}", run.stderr);
    assert!(
        lines[0].contains(needle),
        "{:?} lacks {needle:?}",
        run.stderr
    );
    assert!(
        run.stdout.is_empty(),
        "stdout must carry data only: {:?}",
        run.stdout
    );
}

#[tokio::test]
async fn health_outputs_match_the_server() {
    let server = TestServer::start().await;
    let (code, want) = server_checks(&server, "/readyz?verbose").await;
    assert_eq!(code, 200);
    assert!(!want.is_empty());

    let run = kapi(&server, &["health"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows = fields(&run.stdout);
    assert_eq!(rows[0], ["CHECK", "STATUS"]);
    let got: Vec<(String, String)> = rows[1..]
        .iter()
        .map(|r| (r[0].clone(), r[1].clone()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(run.stderr, "readyz: ok\n");
    assert!(
        !run.stdout.contains('\u{1b}'),
        "no colour when stdout is not a terminal"
    );

    let run = kapi(&server, &["health", "-o", "wide", "--no-headers"]).await;
    assert_eq!(run.code, 0);
    for (row, (name, _)) in fields(&run.stdout).iter().zip(&want) {
        assert_eq!(
            row,
            &[
                name.clone(),
                "ok".into(),
                "readyz".into(),
                server.url.clone()
            ]
        );
    }

    let run = kapi(&server, &["health", "-o", "json"]).await;
    assert_eq!(run.code, 0);
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(json["healthy"], true);
    assert_eq!(json["unreachable"], serde_json::json!([]));
    let r = &json["results"][0];
    assert_eq!(r["apiserver"], server.url.as_str());
    assert_eq!(r["identity"], Value::Null);
    assert_eq!(r["endpoint"], "readyz");
    assert_eq!(r["httpStatus"], 200);
    assert_eq!(r["healthy"], true);
    assert_eq!(r["warnings"], serde_json::json!([]));
    let checks: Vec<(String, String)> = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap().into(),
                c["status"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert_eq!(checks, want);

    let run = kapi(&server, &["health", "-o", "yaml"]).await;
    assert_eq!(run.code, 0);
    let yaml: Value = serde_yaml::from_str(&run.stdout).unwrap();
    assert_eq!(yaml, json);

    let run = kapi(&server, &["health", "--color", "always", "--no-headers"]).await;
    assert!(
        run.stdout.contains("\u{1b}[") && run.stdout.contains("ok"),
        "{:?}",
        run.stdout
    );
    let run = kapi(&server, &["health", "--color", "never", "--no-headers"]).await;
    assert!(!run.stdout.contains('\u{1b}'));

    let run = kapi(&server, &["health", "-o", "name"]).await;
    let names: Vec<String> = want
        .iter()
        .map(|(n, _)| format!("healthcheck/readyz/{n}"))
        .collect();
    assert_eq!(run.stdout.lines().collect::<Vec<_>>(), names);
}

#[tokio::test]
async fn health_all_and_exclude() {
    let server = TestServer::start().await;
    let run = kapi(&server, &["health", "all", "--no-headers"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut want = Vec::new();
    for ep in ["livez", "readyz", "healthz"] {
        for (name, status) in server_checks(&server, &format!("/{ep}?verbose")).await.1 {
            want.push(vec![ep.to_string(), name, status]);
        }
    }
    assert_eq!(fields(&run.stdout), want);
    assert_eq!(run.stderr, "livez: ok\nreadyz: ok\nhealthz: ok\n");

    let run = kapi(
        &server,
        &[
            "health",
            "--exclude",
            "etcd",
            "--exclude",
            "nope",
            "--no-headers",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        fields(&run.stdout).contains(&vec!["etcd".to_string(), "excluded".to_string()]),
        "{}",
        run.stdout
    );
    assert!(
        run.stderr.contains("no matches for \\\"nope\\\"")
            || run.stderr.contains("no matches for \"nope\""),
        "{}",
        run.stderr
    );
}

#[tokio::test]
async fn failing_hook_gives_exit_1_with_its_reason() {
    let server = TestServer::start_with(
        Options::default()
            .args(["--debug-failing-hook", "flaky=100000"])
            .wait_for("/livez/ping")
            .probe_as_admin(),
    )
    .await;
    // Let every other hook finish, so that flaky is the only failing check.
    within(Duration::from_secs(30), "only flaky failing", async {
        loop {
            let (_, checks) = server_checks(&server, "/readyz?verbose").await;
            let failed: Vec<_> = checks
                .iter()
                .filter(|(_, s)| s == "failed")
                .map(|(n, _)| n.as_str())
                .collect();
            if failed == ["poststarthook/flaky"] {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    let run = kapi(&server, &["health"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(fields(&run.stdout).contains(&vec![
        "poststarthook/flaky".to_string(),
        "failed".to_string()
    ]));
    assert!(
        run.stderr
            .contains("readyz: failed (1 failing: poststarthook/flaky)"),
        "{}",
        run.stderr
    );

    let quiet = kapi(&server, &["health", "-q"]).await;
    assert_eq!(
        (quiet.code, quiet.stdout.as_str(), quiet.stderr.as_str()),
        (1, "", "")
    );

    let run = kapi(&server, &["hooks"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("flaky "))
        .expect("flaky row");
    let row: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(row[..2], ["flaky", "failed"]);
    assert!(line.contains("failing on purpose (attempt "), "{line}");
    assert!(
        run.stderr.contains("1 post-start hook(s) not ok"),
        "{}",
        run.stderr
    );

    let run = kapi(&server, &["hooks", "--failing", "-o", "json"]).await;
    assert_eq!(run.code, 1);
    let json: Value = serde_json::from_str(&run.stdout).unwrap();
    let hooks = json["apiservers"][0]["hooks"].as_array().unwrap().clone();
    assert_eq!(hooks.len(), 1, "{hooks:?}");
    assert_eq!(hooks[0]["name"], "flaky");
    assert_eq!(hooks[0]["status"], "failed");
    assert!(hooks[0]["reason"]
        .as_str()
        .unwrap()
        .starts_with("failing on purpose"));

    let waited = std::time::Instant::now();
    let run = kapi(&server, &["health", "--wait", "--timeout", "2s"]).await;
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        waited.elapsed() >= Duration::from_secs(2),
        "returned before the timeout"
    );
    assert!(run.stdout.contains("poststarthook/flaky"), "{}", run.stdout);
}

#[tokio::test]
async fn healthy_hooks_give_exit_0() {
    let server =
        TestServer::start_with(Options::default().args(["--debug-failing-hook", "flaky=1"])).await;
    let run = kapi(&server, &["hooks", "-o", "wide"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    let rows = fields(&run.stdout);
    assert_eq!(rows[0], ["HOOK", "STATUS", "REASON", "APISERVER"]);
    let (_, checks) = server_checks(&server, "/readyz?verbose").await;
    let want: Vec<Vec<String>> = checks
        .iter()
        .filter_map(|(n, _)| n.strip_prefix("poststarthook/"))
        .map(|n| vec![n.to_string(), "ok".to_string(), server.url.clone()])
        .collect();
    assert_eq!(rows[1..].to_vec(), want);
    let run = kapi(&server, &["hooks", "--failing", "--no-headers"]).await;
    assert_eq!((run.code, run.stdout.as_str()), (0, ""));
}

#[tokio::test]
async fn health_wait_returns_0_once_ready() {
    // About 1.5s of failures with the supervisor's backoff, then ready.
    let server = TestServer::start_with(
        Options::default()
            .args(["--debug-failing-hook", "flaky=4"])
            .wait_for("/livez/ping")
            .probe_as_admin(),
    )
    .await;
    let run = kapi(&server, &["health", "--wait", "--timeout", "60s"]).await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        fields(&run.stdout).contains(&vec!["poststarthook/flaky".to_string(), "ok".to_string()])
    );
    assert_eq!(
        run.stderr, "readyz: ok\n",
        "silent while waiting when stderr is not a terminal"
    );
}

#[tokio::test]
async fn no_answer_gives_exit_3() {
    let server = TestServer::start().await;
    let tmp = tempfile::tempdir().unwrap();

    // Unreachable: the kubeconfig points at a closed port.
    let port = free_port();
    let unreachable = edited_kubeconfig(&server, tmp.path(), |doc| {
        doc["clusters"][0]["cluster"]["server"] = format!("https://127.0.0.1:{port}").into();
    });
    let run = kapi_with(&unreachable, &["health"]).await;
    assert_eq!(run.code, 3);
    assert_one_line_error(&run, "cannot reach");
    let run = kapi_with(&unreachable, &["health", "--wait", "--timeout", "2s"]).await;
    assert_eq!(run.code, 3);
    assert_one_line_error(&run, "cannot reach");

    // Missing kubeconfig.
    let run = kapi(
        &server,
        &["leases", "--kubeconfig", "/nonexistent/kubeconfig"],
    )
    .await;
    assert_eq!(run.code, 3);
    assert_one_line_error(&run, "does not exist");
    let fut = tokio::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
        .arg("hooks")
        .env_remove("KUBECONFIG")
        .env("HOME", tmp.path())
        .env_remove("KUBERNETES_SERVICE_HOST")
        .output();
    let out = within(Duration::from_secs(30), "kapi hooks", fut)
        .await
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "kapi: error: no kubeconfig found: pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config\n"
    );

    // Unknown context.
    let run = kapi(&server, &["health", "--context", "nope"]).await;
    assert_eq!(run.code, 3);
    assert_one_line_error(&run, "nope");

    // Wrong credentials: a token the server does not know.
    let bad_token = edited_kubeconfig(&server, tmp.path(), |doc| {
        doc["users"][0]["user"] = serde_yaml::from_str("{token: not-a-valid-token}").unwrap();
    });
    let run = kapi_with(&bad_token, &["hooks"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_one_line_error(&run, "401 Unauthorized");

    // TLS failure: a CA that did not sign the serving certificate.
    let other_ca = rcgen::generate_simple_self_signed(vec!["other-ca".to_string()]).unwrap();
    let b64 = base64::Engine::encode(
        &base64::engine::general_purpose::STANDARD,
        other_ca.cert.pem(),
    );
    let bad_ca = edited_kubeconfig(&server, tmp.path(), |doc| {
        doc["clusters"][0]["cluster"]["certificate-authority-data"] = b64.into();
    });
    let run = kapi_with(&bad_ca, &["health"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_one_line_error(&run, "TLS");

    // A request timeout: a listener that accepts and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    let hang = edited_kubeconfig(&server, tmp.path(), |doc| {
        doc["clusters"][0]["cluster"]["server"] = format!("https://127.0.0.1:{silent_port}").into();
    });
    let run = kapi_with(&hang, &["health", "--request-timeout", "1s"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_one_line_error(&run, "within 1s");
    drop(silent);
}

#[tokio::test]
async fn usage_errors_give_exit_2_and_closed_stdout_exits_quietly() {
    let server = TestServer::start().await;
    let run = kapi(&server, &["leases", "-o", "bogus"]).await;
    assert_eq!(run.code, 2);
    let run = kapi(&server, &["health", "--timeout", "soon"]).await;
    assert_eq!(run.code, 2);

    // stdout closed before anything is written: exit 0, nothing on stderr.
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args(["health", "all"])
        .env("KUBECONFIG", server.kubeconfig())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = within(
        Duration::from_secs(30),
        "kapi health all",
        child.wait_with_output(),
    )
    .await
    .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr), "");
}

#[tokio::test]
async fn closed_stderr_keeps_the_exit_code() {
    // `kapi candidates` notes "No lease candidates found." on stderr; with stderr a pipe
    // nobody reads, eprintln! used to panic (exit 101) instead of exiting 0.
    let server = TestServer::start().await;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    // spawn, not output(): tokio's output() makes stderr a pipe of its own.
    let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_kapi"))
        .args(["candidates"])
        .env("KUBECONFIG", server.kubeconfig())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(writer)
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let out = within(
        Duration::from_secs(30),
        "kapi candidates",
        child.wait_with_output(),
    )
    .await
    .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("NAMESPACE "));
}
