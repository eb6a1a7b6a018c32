//! `kapi top` as a real process against a real `kapi serve`: the rates it prints match the
//! requests the test makes meanwhile; one document per sample on a pipe (JSON, YAML, tables);
//! a user without `system:monitoring` gets exit 3 and one line naming the role, and reads
//! /metrics once bound to it; usage errors exit 2; on a terminal the tables are redrawn in place
//! until Ctrl-C, which exits 0.

use std::num::NonZeroU16;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::pty;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::Api;
use serde_json::Value;

use crate::inspect::{kapi_with, Run};
use crate::support::etcd::free_port;
use crate::support::{within, Options, TestServer};

/// Every JSON document of a stream of pretty-printed ones.
fn documents(stdout: &str) -> Vec<Value> {
    serde_json::Deserializer::from_str(stdout)
        .into_iter::<Value>()
        .map(|d| d.expect("a JSON document"))
        .collect()
}

/// The row of `verb` on configmaps in a sample of one apiserver.
fn configmaps<'a>(doc: &'a Value, verb: &str) -> Option<&'a Value> {
    doc["apiservers"][0]["requests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["verb"] == verb && r["resource"] == "configmaps" && r["group"] == "")
}

fn assert_one_line_error(run: &Run, needles: &[&str]) {
    assert!(run.stdout.is_empty(), "stdout: {:?}", run.stdout);
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "one stderr line: {:?}", run.stderr);
    assert!(lines[0].starts_with("kapi: error: "), "{:?}", run.stderr);
    for needle in needles {
        assert!(
            lines[0].contains(needle),
            "{:?} lacks {needle:?}",
            run.stderr
        );
    }
}

#[tokio::test]
async fn json_rates_follow_the_requests_made_meanwhile() {
    let server = TestServer::start().await;
    let client = server.client().await;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");

    // GETs of configmaps that do not exist (404), one every 20ms, until top is done.
    let made = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicBool::new(false));
    let load = {
        let (made, done) = (made.clone(), done.clone());
        tokio::spawn(async move {
            while !done.load(Ordering::SeqCst) {
                assert!(api.get_opt("top-missing").await.unwrap().is_none());
                made.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    let started = Instant::now();
    let run = kapi_with(
        server.kubeconfig(),
        &["top", "-o", "json", "--count", "2", "--interval", "1s"],
    )
    .await;
    let elapsed = started.elapsed().as_secs_f64();
    done.store(true, Ordering::SeqCst);
    within(Duration::from_secs(30), "the load to stop", load)
        .await
        .unwrap();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stderr, "");

    let docs = documents(&run.stdout);
    assert_eq!(docs.len(), 2, "one document per sample: {}", run.stdout);
    let mut counted = 0.0;
    for doc in &docs {
        assert!(doc["time"].as_str().unwrap().ends_with('Z'), "{doc}");
        assert_eq!(doc["unreachable"], serde_json::json!([]));
        let apiservers = doc["apiservers"].as_array().unwrap();
        assert_eq!(apiservers.len(), 1);
        let a = &apiservers[0];
        assert_eq!(a["apiserver"], server.url.as_str());
        assert_eq!(a["identity"], Value::Null);
        let interval = a["intervalSeconds"].as_f64().unwrap();
        assert!((0.9..5.0).contains(&interval), "{interval}");
        assert!(a["inFlight"]["readOnly"].is_u64(), "{a}");
        assert!(a["inFlight"]["mutating"].is_u64(), "{a}");
        assert!(a["residentMemoryBytes"].as_u64().unwrap() > 1 << 20);
        assert!(a["cpuPercent"].as_f64().unwrap() >= 0.0);
        assert!(a["longRunning"].is_null() || a["longRunning"].is_u64());

        let get = configmaps(doc, "GET").unwrap_or_else(|| panic!("no GET configmaps row: {doc}"));
        let rate = get["requestsPerSecond"].as_f64().unwrap();
        let not_found = get["clientErrorsPerSecond"].as_f64().unwrap();
        assert!(not_found > 0.0, "{get}");
        assert!(not_found <= rate + 1e-9, "{get}");
        assert_eq!(get["serverErrorsPerSecond"], 0.0);
        let (p50, p99) = (get["p50Seconds"].as_f64(), get["p99Seconds"].as_f64());
        assert!(
            p50.unwrap() > 0.0 && p50 <= p99 && p99.unwrap() <= 60.0,
            "{get}"
        );
        assert!(
            a["requestsPerSecond"].as_f64().unwrap() >= rate,
            "the total counts every row: {a}"
        );
        counted += not_found * interval;
    }
    // The two samples cover the time from the first read to the last: most of the run.
    let made = made.load(Ordering::SeqCst) as f64;
    assert!(made >= 20.0, "only {made} requests in {elapsed:.1}s");
    assert!(
        counted <= made + 0.5 && counted >= made * 0.4,
        "top counted {counted:.1} of the {made} 404s made in {elapsed:.1}s"
    );
}

#[tokio::test]
async fn tables_and_yaml_print_one_sample_each_on_a_pipe() {
    let server = TestServer::start().await;
    server.kubectl_ok(&["create", "configmap", "top-a"]).await;
    let run = kapi_with(
        server.kubeconfig(),
        &[
            "top",
            "--count",
            "2",
            "--interval",
            "500ms",
            "--sort",
            "p99",
        ],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(!run.stdout.contains('\x1b'), "no escapes off a terminal");
    let summaries: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("APISERVER "))
        .collect();
    assert_eq!(summaries.len(), 2, "{}", run.stdout);
    assert_eq!(
        summaries[0].split_whitespace().collect::<Vec<_>>(),
        [
            "APISERVER",
            "INFLIGHT-RO",
            "INFLIGHT-MUT",
            "LONGRUNNING",
            "RSS",
            "CPU",
            "REQ/S",
            "5XX/S"
        ]
    );
    let rows: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("VERB "))
        .collect();
    assert_eq!(rows.len(), 2, "{}", run.stdout);
    assert_eq!(
        rows[0].split_whitespace().collect::<Vec<_>>(),
        ["VERB", "RESOURCE", "REQ/S", "5XX/S", "P50", "P99"]
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with(&format!("{} ", server.url))),
        "{}",
        run.stdout
    );

    let run = kapi_with(
        server.kubeconfig(),
        &["top", "-o", "yaml", "--once", "--interval", "500ms"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("---\n"), "{}", run.stdout);
    assert_eq!(run.stdout.matches("---\n").count(), 1);
    let doc: Value = serde_yaml::from_str(&run.stdout).unwrap();
    assert_eq!(doc["apiservers"][0]["apiserver"], server.url.as_str());

    // --limit cuts the rows of each apiserver, not the totals.
    let limited = kapi_with(
        server.kubeconfig(),
        &[
            "top",
            "-o",
            "json",
            "--once",
            "--interval",
            "1s",
            "--limit",
            "0",
        ],
    )
    .await;
    assert_eq!(limited.code, 0, "{}", limited.stderr);
    let doc = &documents(&limited.stdout)[0];
    assert_eq!(doc["apiservers"][0]["requests"], serde_json::json!([]));
}

/// A server with the token user alice, who may do nothing yet.
async fn server_with_alice() -> (TestServer, tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "alice-token,alice,uid-a\n").unwrap();
    let server = TestServer::start_with(
        Options::default().args(["--token-auth-file", &tokens.display().to_string()]),
    )
    .await;
    let kubeconfig = server.token_kubeconfig("alice", "alice-token");
    (server, dir, kubeconfig)
}

#[tokio::test]
async fn without_system_monitoring_exit_3_naming_the_role() {
    let (server, _dir, alice) = server_with_alice().await;
    let run = kapi_with(&alice, &["top", "--once", "--interval", "500ms"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_one_line_error(
        &run,
        &[
            &server.url,
            "/metrics (403 Forbidden)",
            "--clusterrole=system:monitoring",
        ],
    );

    // The command the message names lets her read them.
    server
        .kubectl_ok(&[
            "create",
            "clusterrolebinding",
            "kapi-top",
            "--clusterrole=system:monitoring",
            "--user=alice",
        ])
        .await;
    let run = kapi_with(
        &alice,
        &["top", "-o", "json", "--once", "--interval", "500ms"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(documents(&run.stdout).len(), 1);

    // A token the server does not know: 401, also no answer.
    let stranger = server.token_kubeconfig("mallory", "not-a-token");
    let run = kapi_with(&stranger, &["top", "--once"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_one_line_error(&run, &["401 Unauthorized"]);
}

#[tokio::test]
async fn unreachable_and_usage_errors() {
    let server = TestServer::start().await;
    let tmp = tempfile::tempdir().unwrap();
    let mut doc: serde_yaml::Value =
        serde_yaml::from_str(&std::fs::read_to_string(server.kubeconfig()).unwrap()).unwrap();
    doc["clusters"][0]["cluster"]["server"] = format!("https://127.0.0.1:{}", free_port()).into();
    let closed = tmp.path().join("kubeconfig");
    std::fs::write(&closed, serde_yaml::to_string(&doc).unwrap()).unwrap();
    let run = kapi_with(&closed, &["top", "--once"]).await;
    assert_eq!(run.code, 3, "{}", run.stderr);
    assert_one_line_error(&run, &["cannot reach"]);

    for args in [
        &["top", "--interval", "0s"][..],
        &["top", "--interval", "soon"],
        &["top", "--count", "0"],
        &["top", "--once", "--count", "2"],
        &["top", "-o", "name"],
        &["top", "--sort", "name"],
    ] {
        let run = kapi_with(server.kubeconfig(), args).await;
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
}

const ROWS: u16 = 30;
const COLS: u16 = 160;

/// Runs `kapi <args>` on a fresh pseudo-terminal, types Ctrl-C once `ready` holds for what it
/// printed so far, and returns the exit code and everything printed; blocking.
fn ctrl_c_on_a_pty(
    kubeconfig: &Path,
    args: &[&str],
    ready: impl Fn(&[u8]) -> bool,
) -> (u32, Vec<u8>) {
    let mut run = pty::spawn(kubeconfig, args, ROWS, COLS);
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut out = Vec::new();
    let mut typed = false;
    let status = loop {
        while let Ok((_, chunk)) = run.output.try_recv() {
            out.extend(chunk);
        }
        if !typed && ready(&out) {
            run.type_keys(b"\x03");
            typed = true;
        }
        if let Some(status) = run.child.try_wait().expect("wait for kapi") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = run.child.kill();
            panic!(
                "kapi {args:?} did not end within 60s: {:?}",
                String::from_utf8_lossy(&out)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    while let Ok((_, chunk)) = run.output.recv_timeout(Duration::from_secs(5)) {
        out.extend(chunk);
    }
    assert!(
        typed,
        "ended before Ctrl-C: {:?}",
        String::from_utf8_lossy(&out)
    );
    (status.exit_code(), out)
}

#[tokio::test]
async fn a_terminal_is_redrawn_in_place_until_ctrl_c() {
    let server = TestServer::start().await;
    let kubeconfig = server.kubeconfig().to_path_buf();
    // The waiting screen, then three samples.
    let frames = |out: &[u8]| String::from_utf8_lossy(out).matches("\x1b[J").count();
    let (code, out) = within(
        Duration::from_secs(90),
        "kapi top on a pty",
        tokio::task::spawn_blocking(move || {
            ctrl_c_on_a_pty(&kubeconfig, &["top", "--interval", "300ms"], |out| {
                frames(out) >= 4
            })
        }),
    )
    .await
    .unwrap();
    let text = String::from_utf8_lossy(&out).into_owned();
    assert_eq!(code, 0, "Ctrl-C quits top with 0: {text:?}");
    let mut parser = vt100::Parser::new(
        NonZeroU16::new(ROWS).unwrap(),
        NonZeroU16::new(COLS).unwrap(),
        0,
    );
    parser.process(&out);
    let screen: Vec<String> = parser
        .screen()
        .rows(0, COLS)
        .map(|r| r.trim_end().to_string())
        .collect();
    let dump = format!("{}\nraw: {text:?}", screen.join("\n"));
    assert!(screen[0].starts_with("kapi top - "), "{dump}");
    assert!(screen[0].ends_with("every 300ms - Ctrl-C quits"), "{dump}");
    let headers = screen
        .iter()
        .filter(|r| r.starts_with("APISERVER "))
        .count();
    assert_eq!(headers, 1, "redrawn in place, not appended\n{dump}");
    assert!(
        screen
            .iter()
            .any(|r| r.starts_with(&format!("{} ", server.url))),
        "{dump}"
    );
    assert!(screen.iter().any(|r| r.starts_with("VERB ")), "{dump}");
    assert!(
        !screen.iter().any(|r| r.contains("waiting")),
        "the waiting line was drawn over\n{dump}"
    );
    assert!(frames(&out) >= 4, "{dump}");
}

#[tokio::test]
async fn all_apiservers_samples_every_replica_and_names_the_lost_one() {
    let etcd = crate::support::etcd::start_etcd().await;
    let certs = tempfile::tempdir().unwrap();
    let a = TestServer::start_with(Options::peer_replica(&etcd.url, certs.path(), "node-a")).await;
    let mut b =
        TestServer::start_with(Options::peer_replica(&etcd.url, certs.path(), "node-b")).await;
    let mut urls = vec![a.url.clone(), b.url.clone()];
    urls.sort();
    let args = [
        "top",
        "--all-apiservers",
        "-o",
        "json",
        "--once",
        "--interval",
        "500ms",
    ];

    // Both replicas once both identity leases carry a peer address.
    let doc = within(Duration::from_secs(30), "top of two replicas", async {
        loop {
            let run = kapi_with(a.kubeconfig(), &args).await;
            assert_eq!(run.code, 0, "{}", run.stderr);
            let doc = documents(&run.stdout).remove(0);
            if doc["apiservers"].as_array().unwrap().len() == 2 {
                break doc;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })
    .await;
    let mut servers: Vec<String> = doc["apiservers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            assert!(
                s["identity"].as_str().unwrap().starts_with("apiserver-"),
                "{s}"
            );
            assert!(s["residentMemoryBytes"].as_u64().unwrap() > 0, "{s}");
            s["apiserver"].as_str().unwrap().to_string()
        })
        .collect();
    servers.sort();
    assert_eq!(servers, urls);
    assert_eq!(doc["unreachable"], serde_json::json!([]));

    // Replica b goes away; its identity lease stays until it expires.
    b.signal(9);
    b.wait_exit(Duration::from_secs(10)).await;
    let run = kapi_with(a.kubeconfig(), &args).await;
    assert_eq!(run.code, 0, "a still answers: {}", run.stderr);
    let doc = &documents(&run.stdout)[0];
    assert_eq!(doc["apiservers"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["apiservers"][0]["apiserver"], a.url.as_str());
    assert_eq!(doc["unreachable"][0]["apiserver"], b.url.as_str(), "{doc}");
    assert!(
        run.stderr
            .starts_with(&format!("kapi: {} unreachable: cannot reach", b.url)),
        "{}",
        run.stderr
    );
    assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);

    // On tables, the lost replica is a row of the summary and a line after the rows.
    let run = kapi_with(
        a.kubeconfig(),
        &["top", "--all-apiservers", "--once", "--interval", "500ms"],
    )
    .await;
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .lines()
            .any(|l| l.split_whitespace().eq([b.url.as_str(), "unreachable"])),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains(&format!("\n{} unreachable: cannot reach", b.url)),
        "{}",
        run.stdout
    );
}
