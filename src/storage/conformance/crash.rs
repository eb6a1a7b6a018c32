//! Crash test of the embedded store: a child process (this test binary, re-executed on the
//! hidden `crash_child` test) writes continuously from several tasks and prints each
//! acknowledged write; the parent kills it with SIGKILL at random moments, reopens the store
//! and checks that every acknowledged write is there, whole, and that the revision never goes
//! backwards.

use crate::storage::{EmbeddedStore, Error, Storage, Update};
use bytes::Bytes;
use rand::Rng;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

const DIR_ENV: &str = "KAPI_CRASH_CHILD_DIR";

fn value_of(key: &str, n: u64) -> Bytes {
    // Big enough to span pages, derived from the key so a torn write is detectable.
    Bytes::from(format!("{key}:{n}:").repeat(40))
}

/// Opens the store, waiting for a killed child's file lock to go away.
fn open_store(dir: &std::path::Path) -> EmbeddedStore {
    for _ in 0..200 {
        match EmbeddedStore::open(dir, Duration::ZERO) {
            Ok(s) => return s,
            Err(Error::Unavailable { .. }) => std::thread::sleep(Duration::from_millis(25)),
            Err(e) => panic!("reopening after a crash failed: {e}"),
        }
    }
    panic!("the store stayed locked after the child was killed");
}

#[test]
#[ignore = "child process of the crash test"]
fn crash_child() {
    let Some(dir) = std::env::var_os(DIR_ENV) else {
        return;
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async move {
        let store =
            Arc::new(EmbeddedStore::open(std::path::Path::new(&dir), Duration::ZERO).unwrap());
        let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
        let round: u64 = std::env::var("KAPI_CRASH_ROUND").unwrap().parse().unwrap();
        let mut tasks = Vec::new();
        for t in 0..8u64 {
            let (store, out) = (store.clone(), out.clone());
            tasks.push(tokio::spawn(async move {
                for i in 0.. {
                    let key = format!("/registry/crash/r{round}-t{t}-{i}");
                    let kv = store.create(&key, value_of(&key, 0), None).await.unwrap();
                    let counter = "/registry/crash-counter/c";
                    let upd = store
                        .guaranteed_update(counter, true, &|cur| {
                            let n = cur.map(|c| c.mod_revision).unwrap_or(0);
                            Ok(Update::Set(Bytes::from(n.to_string())))
                        })
                        .await
                        .unwrap();
                    let mut o = out.lock().unwrap();
                    writeln!(o, "ACK {key} {} {}", kv.mod_revision, upd.mod_revision).unwrap();
                    o.flush().unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let exe = std::env::current_exe().unwrap();
    let mut acked: Vec<(String, i64)> = Vec::new();
    let mut last_revision = 0i64;
    let mut rng = rand::thread_rng();
    for round in 0..5 {
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "storage::conformance::crash::crash_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(DIR_ENV, dir.path())
            .env("KAPI_CRASH_ROUND", round.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel::<String>();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                // The harness may print "test … ... " before the first line.
                if let Some(at) = line.find("ACK ") {
                    if tx.send(line[at..].to_string()).is_err() {
                        break;
                    }
                }
            }
        });
        // Wait for the first acknowledgement, then kill at a random moment.
        let first = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the child acknowledged nothing");
        tokio::time::sleep(Duration::from_millis(rng.gen_range(50..400))).await;
        child.kill().unwrap();
        child.wait().unwrap();
        reader.join().unwrap();
        let mut max_counter_rev = 0;
        let mut round_acks = 0;
        for line in std::iter::once(first).chain(rx.try_iter()) {
            let mut parts = line.split(' ').skip(1);
            let key = parts.next().unwrap().to_string();
            let rev: i64 = parts.next().unwrap().parse().unwrap();
            let counter_rev: i64 = parts.next().unwrap().parse().unwrap();
            max_counter_rev = max_counter_rev.max(counter_rev);
            acked.push((key, rev));
            round_acks += 1;
        }
        let store = open_store(dir.path());
        for (key, rev) in &acked {
            let kv = store
                .get(key)
                .await
                .unwrap_or_else(|e| panic!("acknowledged {key} lost after kill -9: {e}"));
            assert_eq!(kv.mod_revision, *rev, "{key}");
            assert_eq!(kv.value, value_of(key, 0), "{key} is torn");
        }
        let counter = store.get("/registry/crash-counter/c").await.unwrap();
        assert!(
            counter.mod_revision >= max_counter_rev,
            "counter went back to {}",
            counter.mod_revision
        );
        let now = store.current_revision().await.unwrap();
        assert!(
            now >= last_revision,
            "revision went backwards: {now} < {last_revision}"
        );
        assert!(now >= max_counter_rev);
        last_revision = now;
        // Every stored key is whole, acknowledged or not.
        let all = store
            .list("/registry/crash/", Default::default())
            .await
            .unwrap();
        for kv in &all.items {
            assert_eq!(kv.value, value_of(&kv.key, 0), "{} is torn", kv.key);
        }
        assert!(round_acks > 0);
        drop(store);
    }
    assert!(acked.len() >= 5);
}
