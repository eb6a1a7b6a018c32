//! The embedded store on a file system that stops taking writes, under load: a small tmpfs
//! that fills up, and store files made read-only. Writes must fail quickly with a 5xx Status
//! naming the cause, reads go on, nothing acknowledged is lost (checked after a kill -9 and a
//! restart on the same data dir), and writes resume once the files take them again, without
//! restarting kapi. Needs permission to mount a tmpfs (root), and for the read-only case a
//! file system with the immutable attribute (`chattr +i`: ext4, xfs, btrfs); each test skips
//! with one line otherwise.
//!
//! The read-only files are made so between two batches of writes: a batch whose log record
//! reached the disk just before would fail in redb's own commit instead, the store would
//! reopen, and that fails on a read-only file, so reads would answer 503 until the files are
//! writable again. "Read-only" is the immutable attribute because Linux refuses `remount,ro` (EBUSY) while a
//! file on the file system is open for writing, as kapi's store files always are, and file
//! modes are not checked on descriptors already open; an immutable file refuses writes
//! through open descriptors too (EPERM).

use crate::support::{within, Options, TestServer};
use std::collections::BTreeSet;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Concurrent writers.
const WRITERS: usize = 8;
/// Time limit of one request: a write that takes longer counts as a hang.
const REQUEST_LIMIT: Duration = Duration::from_secs(20);
const NS: &str = "default";

/// A tmpfs mounted on a temp dir, unmounted on drop.
struct Tmpfs {
    dir: Arc<tempfile::TempDir>,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. `8m`), or says why it cannot.
    fn mount(size: &str) -> Result<Tmpfs, String> {
        let dir = Arc::new(tempfile::tempdir().map_err(|e| e.to_string())?);
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
        }
        Ok(Tmpfs { dir })
    }

    /// `mount -o remount,<opts>`.
    fn remount(&self, opts: &str) {
        let out = Command::new("mount")
            .args(["-o", &format!("remount,{opts}")])
            .arg(self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("remount,{opts}: {e}"));
        assert!(
            out.status.success(),
            "remount,{opts}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// What the writers saw.
#[derive(Default)]
struct Seen {
    acknowledged: Vec<String>,
    /// Status code (0: no answer within [`REQUEST_LIMIT`] or no connection) and body of
    /// each failed write.
    failures: Vec<(u16, String)>,
}

/// Writers creating ConfigMaps with `value_len` bytes of data until stopped.
struct Load {
    seen: Arc<Mutex<Seen>>,
    stop: CancellationToken,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(server: &TestServer, prefix: &str, value_len: usize) -> Load {
        let seen: Arc<Mutex<Seen>> = Default::default();
        let stop = CancellationToken::new();
        let url = server.url(&format!("/api/v1/namespaces/{NS}/configmaps"));
        let tasks = (0..WRITERS)
            .map(|w| {
                let (http, url, seen, stop) =
                    (server.admin_http(), url.clone(), seen.clone(), stop.clone());
                let prefix = prefix.to_string();
                tokio::spawn(async move {
                    let value = "x".repeat(value_len);
                    let mut seq = 0;
                    while !stop.is_cancelled() {
                        let name = format!("{prefix}-{w}-{seq}");
                        seq += 1;
                        let body = serde_json::json!({
                            "apiVersion": "v1",
                            "kind": "ConfigMap",
                            "metadata": {"name": name},
                            "data": {"v": value},
                        });
                        let sent = http
                            .post(&url)
                            .timeout(REQUEST_LIMIT)
                            .json(&body)
                            .send()
                            .await;
                        let failure = match sent {
                            Ok(r) if r.status() == 201 => None,
                            Ok(r) => {
                                let code = r.status().as_u16();
                                Some((code, r.text().await.unwrap_or_default()))
                            }
                            Err(e) => Some((0, format!("{e:?}"))),
                        };
                        let failed = failure.is_some();
                        {
                            let mut s = seen.lock().unwrap();
                            match failure {
                                None => s.acknowledged.push(name),
                                Some(f) => s.failures.push(f),
                            }
                        }
                        if failed {
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                    }
                })
            })
            .collect();
        Load { seen, stop, tasks }
    }

    fn counts(&self) -> (usize, usize) {
        let s = self.seen.lock().unwrap();
        (s.acknowledged.len(), s.failures.len())
    }

    /// Waits until `f(acknowledged, failed)` holds.
    async fn until(&self, limit: Duration, what: &str, f: impl Fn(usize, usize) -> bool) {
        within(limit, what, async {
            loop {
                let (a, e) = self.counts();
                if f(a, e) {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
        .await
    }

    /// Stops the writers; returns what they saw.
    async fn stop(self) -> Seen {
        self.stop.cancel();
        for t in self.tasks {
            within(REQUEST_LIMIT * 2, "writers to stop", t)
                .await
                .unwrap();
        }
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// Sets or clears (`+i` / `-i`) the immutable attribute of `files`, or says why it cannot.
fn chattr(flag: &str, files: &[std::path::PathBuf]) -> Result<(), String> {
    let out = Command::new("chattr")
        .arg(flag)
        .args(files)
        .output()
        .map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(String::from_utf8_lossy(&out.stderr).trim().to_string());
    }
    Ok(())
}

/// Clears the immutable attribute on drop, so a failed test leaves a removable temp dir.
struct Immutable(Vec<std::path::PathBuf>);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = chattr("-i", &self.0);
    }
}

/// Every failure so far is a 5xx Status whose message names `cause`.
fn assert_failures(seen: &Arc<Mutex<Seen>>, cause: &str) {
    let s = seen.lock().unwrap();
    assert!(!s.failures.is_empty(), "some writes failed");
    for (code, body) in &s.failures {
        assert!(
            (500..600).contains(code),
            "a write failed with {code}, not a 5xx: {body}"
        );
        let status: serde_json::Value =
            serde_json::from_str(body).unwrap_or_else(|e| panic!("a Status body ({e}): {body}"));
        assert_eq!(status["kind"], "Status", "{body}");
        let message = status["message"]
            .as_str()
            .unwrap_or_default()
            .to_lowercase();
        assert!(
            message.contains(cause),
            "the message names {cause:?}: {body}"
        );
    }
}

/// Reads answer: a LIST, and a GET of an acknowledged ConfigMap.
async fn assert_reads(server: &TestServer, name: &str) {
    let http = server.admin_http();
    for path in [
        format!("/api/v1/namespaces/{NS}/configmaps?limit=10"),
        format!("/api/v1/namespaces/{NS}/configmaps/{name}"),
    ] {
        let resp = within(REQUEST_LIMIT, &path, http.get(server.url(&path)).send()).await;
        let resp = resp.expect("an answer");
        let code = resp.status().as_u16();
        let body = resp.text().await.unwrap_or_default();
        let log = server.stderr();
        let tail: Vec<&str> = log.lines().rev().take(12).collect();
        assert_eq!(
            code,
            200,
            "GET {path}: {body}\nlog (newest first):\n{}",
            tail.join("\n")
        );
    }
}

/// Names of every ConfigMap, listed in pages.
async fn list_names(server: &TestServer) -> BTreeSet<String> {
    let http = server.admin_http();
    let mut names = BTreeSet::new();
    let mut cont = String::new();
    loop {
        let path = format!("/api/v1/namespaces/{NS}/configmaps?limit=500&continue={cont}");
        let resp = within(REQUEST_LIMIT, "LIST", http.get(server.url(&path)).send())
            .await
            .expect("LIST");
        assert_eq!(resp.status(), 200);
        let list: serde_json::Value = resp.json().await.unwrap();
        for item in list["items"].as_array().unwrap() {
            names.insert(item["metadata"]["name"].as_str().unwrap().to_string());
        }
        cont = list["metadata"]["continue"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if cont.is_empty() {
            return names;
        }
    }
}

/// kill -9, start again on the same data dir, and check that every acknowledged name is there.
async fn assert_kept_after_restart(
    mut server: TestServer,
    dir: &Arc<tempfile::TempDir>,
    acknowledged: &[String],
) -> TestServer {
    server.signal(libc::SIGKILL);
    server.wait_exit(Duration::from_secs(10)).await;
    drop(server);
    let server = TestServer::start_with(Options::default().data_dir(dir.clone())).await;
    let listed = list_names(&server).await;
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|n| !listed.contains(*n))
        .collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes lost, e.g. {:?}",
        lost.len(),
        acknowledged.len(),
        &lost[..lost.len().min(5)]
    );
    server
}

fn assert_no_panic(server: &mut TestServer) {
    assert!(server.is_running(), "kapi still runs:\n{}", server.stderr());
    assert!(!server.stderr().contains("panicked"), "{}", server.stderr());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_full_disk_fails_writes_keeps_reads_and_loses_nothing() {
    let fs = match Tmpfs::mount("8m") {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("skipping: cannot mount a tmpfs here: {e}");
            return;
        }
    };
    let mut server = TestServer::start_with(Options::default().data_dir(fs.dir.clone())).await;
    let load = Load::start(&server, "full", 16 * 1024);
    load.until(Duration::from_secs(60), "the disk to fill up", |_, e| {
        e >= WRITERS * 4
    })
    .await;
    assert_failures(&load.seen, "no space left on device");
    assert_no_panic(&mut server);
    let some = load.seen.lock().unwrap().acknowledged[0].clone();
    assert_reads(&server, &some).await;

    // Space comes back: writes resume without a restart.
    let (acked, _) = load.counts();
    fs.remount("size=64m");
    load.until(Duration::from_secs(30), "writes to resume", |a, _| {
        a >= acked + 20
    })
    .await;
    let seen = load.stop().await;
    assert!(
        !seen.failures.iter().any(|(c, _)| *c == 0),
        "no write hung or lost its connection"
    );
    assert_kept_after_restart(server, &fs.dir, &seen.acknowledged).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_only_store_files_fail_writes_keep_reads_and_lose_nothing() {
    let dir = Arc::new(tempfile::tempdir().unwrap());
    let mut server = TestServer::start_with(Options::default().data_dir(dir.clone())).await;
    let store = dir.path().join("store");
    let files = vec![store.join("kapi.wal"), store.join("kapi.redb")];
    let before = Load::start(&server, "rw", 512);
    before
        .until(Duration::from_secs(30), "some writes", |a, _| a >= 50)
        .await;
    // Between two batches: a batch whose log record was on disk just before the files
    // turned read-only would fail in redb's commit, and the store would reopen, which fails
    // on a read-only file (reads would answer 503 until it is writable again).
    let mut acknowledged = before.stop().await.acknowledged;
    // And after the checkpoint that follows the last of them (at most a second later): a
    // checkpoint's durable commit under way when the files turn read-only fails in redb the
    // same way.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let guard = Immutable(files.clone());
    if let Err(e) = chattr("+i", &files) {
        eprintln!("skipping: cannot make the store files immutable here: {e}");
        return;
    }
    let load = Load::start(&server, "ro", 512);
    load.until(Duration::from_secs(30), "writes to fail", |_, e| {
        e >= WRITERS * 4
    })
    .await;
    assert_failures(&load.seen, "operation not permitted");
    assert_no_panic(&mut server);
    assert_eq!(load.counts().0, 0, "no write acknowledged while read-only");
    // Past a checkpoint's interval: reads still answer.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_reads(&server, &acknowledged[0]).await;

    // Writable again: writes resume without a restart.
    chattr("-i", &files).expect("chattr -i");
    drop(guard);
    load.until(Duration::from_secs(30), "writes to resume", |a, _| a >= 20)
        .await;
    let seen = load.stop().await;
    assert!(
        !seen.failures.iter().any(|(c, _)| *c == 0),
        "no write hung or lost its connection"
    );
    acknowledged.extend(seen.acknowledged);
    assert_kept_after_restart(server, &dir, &acknowledged).await;
}
