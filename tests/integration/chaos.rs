//! Faults with real processes: three `kapi serve` replicas on a three-member etcd cluster, each
//! replica listing every member in `--etcd-servers`, 64 writers creating ConfigMaps through
//! all three replicas (round-robin) and one watch per replica reconnecting as client-go does.
//! Faults, one after the other: kill -9 of the etcd leader, kill -9 of the replica running the
//! coordinated-leader-election controller (with one etcd member still dead), and SIGSTOP of
//! the etcd leader for 10 s (after the killed member rejoined). Afterwards every acknowledged
//! (201) create is in etcd, no watcher saw a resourceVersion go backwards, the survivors'
//! /readyz recovered within 10 s of each fault, the killed replica's identity lease expired
//! and was collected, and the coordinated-leader-election lease has one live holder.
//!
//! `KAPI_CHAOS_ROUNDS=n` runs the sequence n times (scripts/soak.sh); each round prints one
//! line of figures.

use crate::controllers::{eventually, kapi_id};
use crate::ha::{cle_leader, lease, start_replicas};
use crate::support::etcd::EtcdCluster;
use crate::support::{within, TestServer};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use kube::api::{ListParams, WatchEvent, WatchParams};
use kube::{Api, Client};
use std::collections::BTreeSet;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Concurrent writers.
const WRITERS: usize = 64;
/// The longest a survivor's /readyz may fail after a fault.
const RECOVERY_LIMIT: Duration = Duration::from_secs(10);
/// How long the etcd leader stays stopped.
const PAUSE: Duration = Duration::from_secs(10);
/// How often /readyz is polled, and its time limit (a hang counts as not ready).
const READYZ_EVERY: Duration = Duration::from_millis(250);
const READYZ_TIMEOUT: Duration = Duration::from_secs(2);
/// Namespace of the ConfigMaps written.
const NS: &str = "default";

/// Figures of one round.
#[derive(Debug)]
pub(crate) struct Figures {
    pub acknowledged: usize,
    pub lost: usize,
    /// Slowest survivor's /readyz recovery per fault, in the order of [`FAULTS`].
    pub recovery: Vec<Duration>,
    pub seconds: f64,
}

/// Names of the faults, in order.
pub(crate) const FAULTS: [&str; 3] = ["etcd-leader-kill", "replica-kill", "etcd-leader-pause"];

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "acknowledged={} lost={} readyz-recovery-s",
            self.acknowledged, self.lost
        )?;
        for (name, d) in FAULTS.iter().zip(&self.recovery) {
            write!(f, " {name}={:.1}", d.as_secs_f64())?;
        }
        write!(f, " round-s={:.0}", self.seconds)
    }
}

/// Rounds to run: `KAPI_CHAOS_ROUNDS` (default 1).
fn rounds() -> usize {
    std::env::var("KAPI_CHAOS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn etcd_and_replica_faults_lose_no_acknowledged_write() {
    for round in 1..=rounds() {
        let figures = chaos_round().await;
        // One line per round, for scripts/soak.sh (run with --nocapture).
        println!("chaos round {round}: {figures}");
    }
}

/// Samples of one replica's /readyz: when each answer (or failure) came, and whether it was 200.
type Samples = Arc<Mutex<Vec<(Instant, bool)>>>;

fn poll_readyz(
    server: &TestServer,
    stop: CancellationToken,
) -> (Samples, tokio::task::JoinHandle<()>) {
    let samples: Samples = Default::default();
    let (s, url) = (samples.clone(), server.url("/readyz"));
    let http = server.anonymous_http();
    let task = tokio::spawn(async move {
        while !stop.is_cancelled() {
            let ok = match tokio::time::timeout(READYZ_TIMEOUT, http.get(&url).send()).await {
                Ok(Ok(r)) => r.status() == 200,
                _ => false,
            };
            s.lock().unwrap().push((Instant::now(), ok));
            tokio::select! {
                _ = stop.cancelled() => {}
                _ = tokio::time::sleep(READYZ_EVERY) => {}
            }
        }
    });
    (samples, task)
}

/// Waits until every replica in `live` answered /readyz 200 for the last 2 s; on failure
/// shows what the replicas say.
async fn wait_stable(servers: &[TestServer], samples: &[Samples], live: &[usize], what: &str) {
    let stable = async {
        loop {
            let since = Instant::now().checked_sub(Duration::from_secs(2));
            let ok = since.is_some_and(|since| {
                live.iter().all(|&i| {
                    let s = samples[i].lock().unwrap();
                    let recent: Vec<_> = s.iter().filter(|(t, _)| *t >= since).collect();
                    recent.len() >= 4 && recent.iter().all(|(_, ok)| *ok)
                })
            });
            if ok {
                return;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    };
    if tokio::time::timeout(Duration::from_secs(60), stable)
        .await
        .is_ok()
    {
        return;
    }
    let mut report = String::new();
    for &i in live {
        let s = &servers[i];
        let http = s.anonymous_http();
        let verbose =
            match tokio::time::timeout(READYZ_TIMEOUT, http.get(s.url("/readyz?verbose")).send())
                .await
            {
                Ok(Ok(r)) => r.text().await.unwrap_or_default(),
                other => format!("{other:?}"),
            };
        let log = s.stderr();
        let tail: Vec<&str> = log.lines().rev().take(30).collect();
        report += &format!(
            "--- replica {i} /readyz?verbose:\n{verbose}\n--- its log (last lines, newest first):\n{}\n",
            tail.join("\n")
        );
    }
    panic!("timed out after 60s: {what}\n{report}");
}

/// How long after `fault` the slowest replica in `live` last failed /readyz (zero if none did).
fn recovery(samples: &[Samples], live: &[usize], fault: Instant) -> Duration {
    live.iter()
        .filter_map(|&i| {
            let s = samples[i].lock().unwrap();
            s.iter()
                .filter(|(t, ok)| *t >= fault && !ok)
                .map(|(t, _)| *t - fault)
                .max()
        })
        .max()
        .unwrap_or_default()
}

/// Acknowledged names and counts of other outcomes.
#[derive(Default)]
struct Writes {
    acknowledged: Vec<String>,
    failed: usize,
}

fn start_writers(
    servers: &[TestServer],
    stop: CancellationToken,
) -> (Arc<Mutex<Writes>>, Vec<tokio::task::JoinHandle<()>>) {
    let writes: Arc<Mutex<Writes>> = Default::default();
    let targets: Arc<Vec<(reqwest::Client, String)>> = Arc::new(
        servers
            .iter()
            .map(|s| {
                let url = s.url(&format!("/api/v1/namespaces/{NS}/configmaps"));
                (s.admin_http(), url)
            })
            .collect(),
    );
    let tasks = (0..WRITERS)
        .map(|w| {
            let (writes, targets, stop) = (writes.clone(), targets.clone(), stop.clone());
            tokio::spawn(async move {
                let mut seq = 0usize;
                while !stop.is_cancelled() {
                    let (http, url) = &targets[(w + seq) % targets.len()];
                    let name = format!("w{w}-{seq}");
                    seq += 1;
                    let body = serde_json::json!({
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {"name": name},
                        "data": {"writer": w.to_string()},
                    });
                    let sent = http
                        .post(url)
                        .timeout(Duration::from_secs(20))
                        .json(&body)
                        .send();
                    let ok = matches!(sent.await, Ok(r) if r.status() == 201);
                    {
                        let mut wr = writes.lock().unwrap();
                        if ok {
                            wr.acknowledged.push(name);
                        } else {
                            wr.failed += 1;
                        }
                    }
                    if !ok {
                        tokio::time::sleep(Duration::from_millis(100)).await;
                    }
                }
            })
        })
        .collect();
    (writes, tasks)
}

/// One watch per replica, as a client-go reflector runs it: list, watch from the list's
/// resourceVersion, on a broken stream watch again from the last resourceVersion seen, on 410
/// list again. Returns every time a resourceVersion went backwards.
fn start_watcher(
    client: Client,
    replica: usize,
    stop: CancellationToken,
    backwards: Arc<Mutex<Vec<String>>>,
    events: Arc<std::sync::atomic::AtomicUsize>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let api: Api<ConfigMap> = Api::namespaced(client, NS);
        let mut last: u64 = 0;
        let mut from: Option<u64> = None;
        let see = |rv: Option<&String>, what: &str, last: &mut u64| -> Option<u64> {
            let rv: u64 = rv?.parse().ok()?;
            if rv < *last {
                backwards
                    .lock()
                    .unwrap()
                    .push(format!("replica {replica}: {what} at {rv} after {last}"));
            }
            *last = rv.max(*last);
            Some(rv)
        };
        let lp = ListParams::default();
        while !stop.is_cancelled() {
            let Some(rv) = from else {
                let listed = tokio::select! {
                    _ = stop.cancelled() => return,
                    l = tokio::time::timeout(Duration::from_secs(20), api.list(&lp)) => l,
                };
                match listed {
                    Ok(Ok(list)) => {
                        from = see(list.metadata.resource_version.as_ref(), "list", &mut last)
                    }
                    _ => tokio::time::sleep(Duration::from_millis(500)).await,
                }
                continue;
            };
            let wp = WatchParams::default().timeout(30);
            let rv = rv.to_string();
            let stream = tokio::select! {
                _ = stop.cancelled() => return,
                s = tokio::time::timeout(Duration::from_secs(20), api.watch(&wp, &rv)) => s,
            };
            let Ok(Ok(stream)) = stream else {
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            };
            let mut stream = std::pin::pin!(stream);
            loop {
                let next = tokio::select! {
                    _ = stop.cancelled() => return,
                    n = stream.next() => n,
                };
                match next {
                    Some(Ok(
                        WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o),
                    )) => {
                        events.fetch_add(1, Ordering::Relaxed);
                        if let Some(rv) =
                            see(o.metadata.resource_version.as_ref(), "event", &mut last)
                        {
                            from = Some(rv);
                        }
                    }
                    Some(Ok(WatchEvent::Bookmark(b))) => {
                        if let Some(rv) =
                            see(Some(&b.metadata.resource_version), "bookmark", &mut last)
                        {
                            from = Some(rv);
                        }
                    }
                    Some(Ok(WatchEvent::Error(e))) if e.code == 410 => {
                        from = None;
                        break;
                    }
                    // A broken stream or another error: watch again from the last rv.
                    Some(Ok(WatchEvent::Error(_))) | Some(Err(_)) | None => break,
                }
            }
        }
    })
}

/// Names of the ConfigMaps in etcd, read straight from etcd.
async fn names_in_etcd(urls: &str) -> BTreeSet<String> {
    let eps: Vec<&str> = urls.split(',').collect();
    let prefix = format!("/registry/configmaps/{NS}/");
    let read = async {
        let mut c = etcd_client::Client::connect(&eps, None).await.unwrap();
        let opts = etcd_client::GetOptions::new()
            .with_prefix()
            .with_keys_only();
        c.get(prefix.as_str(), Some(opts)).await.unwrap()
    };
    let resp = within(Duration::from_secs(30), "read keys from etcd", read).await;
    resp.kvs()
        .iter()
        .map(|kv| {
            kv.key_str()
                .unwrap()
                .trim_start_matches(&prefix)
                .to_string()
        })
        .collect()
}

async fn chaos_round() -> Figures {
    let started = Instant::now();
    let mut etcd = EtcdCluster::start(3).await;
    let pki = tempfile::tempdir().unwrap();
    let hosts = ["chaos-0", "chaos-1", "chaos-2"];
    let (mut replicas, clients) = start_replicas(&etcd.urls, pki.path(), &hosts).await;

    let stop = CancellationToken::new();
    let mut tasks = Vec::new();
    let mut samples = Vec::new();
    for r in &replicas {
        let (s, t) = poll_readyz(r, stop.clone());
        samples.push(s);
        tasks.push(t);
    }
    let backwards: Arc<Mutex<Vec<String>>> = Default::default();
    let events: Arc<std::sync::atomic::AtomicUsize> = Default::default();
    for (i, c) in clients.iter().enumerate() {
        tasks.push(start_watcher(
            c.clone(),
            i,
            stop.clone(),
            backwards.clone(),
            events.clone(),
        ));
    }
    let (writes, writers) = start_writers(&replicas, stop.clone());
    tokio::time::sleep(Duration::from_secs(2)).await;
    let mut live: Vec<usize> = (0..replicas.len()).collect();
    wait_stable(&replicas, &samples, &live, "replicas ready under load").await;
    let mut recoveries = Vec::new();

    // Fault 1: kill -9 the etcd leader; it stays dead through fault 2.
    let leader = etcd.leader().await.expect("an etcd leader");
    let fault = Instant::now();
    etcd.members[leader].kill();
    wait_stable(
        &replicas,
        &samples,
        &live,
        "readyz after the etcd leader's kill",
    )
    .await;
    recoveries.push(recovery(&samples, &live, fault));
    let acked = writes.lock().unwrap().acknowledged.len();
    eventually(
        Duration::from_secs(30),
        "writes go on with one etcd member dead",
        || async { (writes.lock().unwrap().acknowledged.len() > acked + WRITERS).then_some(()) },
    )
    .await;

    // Fault 2: kill -9 the replica running the coordinated-leader-election controller.
    let victim = cle_leader(&clients[0], &hosts, None).await;
    let fault = Instant::now();
    replicas[victim].signal(libc::SIGKILL);
    replicas[victim].wait_exit(Duration::from_secs(10)).await;
    live.retain(|&i| i != victim);
    let survivor = live[0];
    let sc = clients[survivor].clone();
    let dead_id = kapi_id(hosts[victim]);
    let dead_lease = lease(&sc, &dead_id).await;
    wait_stable(&replicas, &samples, &live, "readyz after a replica's kill").await;
    recoveries.push(recovery(&samples, &live, fault));

    // The dead etcd member comes back, then the leader stops for a while.
    etcd.members[leader].restart();
    eventually(
        Duration::from_secs(60),
        "the killed etcd member to rejoin",
        || async {
            let l = etcd.leader().await?;
            let mut c = etcd_client::Client::connect([&etcd.members[leader].url], None)
                .await
                .ok()?;
            tokio::time::timeout(Duration::from_secs(2), c.status())
                .await
                .ok()?
                .ok()?;
            Some(l)
        },
    )
    .await;
    wait_stable(
        &replicas,
        &samples,
        &live,
        "readyz after the etcd member's restart",
    )
    .await;
    let paused = etcd.leader().await.expect("an etcd leader");
    let fault = Instant::now();
    etcd.members[paused].pause(true);
    tokio::time::sleep(PAUSE).await;
    etcd.members[paused].pause(false);
    wait_stable(
        &replicas,
        &samples,
        &live,
        "readyz after the etcd leader's pause",
    )
    .await;
    recoveries.push(recovery(&samples, &live, fault));
    let acked = writes.lock().unwrap().acknowledged.len();
    eventually(
        Duration::from_secs(30),
        "writes go on after the pause",
        || async { (writes.lock().unwrap().acknowledged.len() > acked + WRITERS).then_some(()) },
    )
    .await;

    stop.cancel();
    for t in writers {
        within(Duration::from_secs(30), "writers to stop", t)
            .await
            .unwrap();
    }
    for t in tasks {
        within(Duration::from_secs(30), "watchers and pollers to stop", t)
            .await
            .unwrap();
    }

    // Every acknowledged create is in etcd.
    let acknowledged: BTreeSet<String> = writes.lock().unwrap().acknowledged.drain(..).collect();
    let stored = names_in_etcd(&etcd.urls).await;
    let lost: Vec<&String> = acknowledged.difference(&stored).collect();
    assert!(
        lost.is_empty(),
        "{} of {} acknowledged writes are not in etcd, e.g. {:?}",
        lost.len(),
        acknowledged.len(),
        lost.iter().take(5).collect::<Vec<_>>()
    );
    let backwards = backwards.lock().unwrap().clone();
    assert!(
        backwards.is_empty(),
        "resourceVersion went backwards: {backwards:?}"
    );
    assert!(
        events.load(Ordering::Relaxed) > 0,
        "the watchers saw events"
    );
    for (name, d) in FAULTS.iter().zip(&recoveries) {
        assert!(
            *d <= RECOVERY_LIMIT,
            "/readyz took {d:?} to recover after {name}"
        );
    }

    // The killed replica's identity lease expires, then a survivor collects it.
    if let Some(l) = dead_lease {
        let s = l.spec.unwrap_or_default();
        let renewed = s.renew_time.expect("renewTime").0;
        let expiry =
            renewed + SignedDuration::from_secs(s.lease_duration_seconds.unwrap_or(0).into());
        eventually(
            Duration::from_secs(30),
            "the killed replica's identity lease to be collected",
            || async { lease(&sc, &dead_id).await.is_none().then_some(()) },
        )
        .await;
        assert!(
            Timestamp::now() >= expiry,
            "collected only after it expired ({expiry})"
        );
    } else {
        // Already collected by the time we looked: it cannot have been before its expiry,
        // which the GC test of controllers.rs checks; here it is enough that it is gone.
    }
    // A survivor whose renewals were stuck on the stopped member for longer than the lease
    // duration may have lost its lease to the collector; it publishes it again.
    for &i in &live {
        let id = kapi_id(hosts[i]);
        eventually(
            Duration::from_secs(20),
            &format!("survivor {i}'s identity lease"),
            || lease(&sc, &id),
        )
        .await;
    }

    // Exactly one live holder of the coordinated-leader-election lease, a survivor, and it
    // stays put.
    let holder = cle_leader(&sc, &hosts, Some(victim)).await;
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let l = lease(&sc, "leader-election-controller")
            .await
            .expect("CLE lease");
        let s = l.spec.unwrap_or_default();
        let h = s.holder_identity.unwrap_or_default();
        assert!(
            h.starts_with(&format!("{}_", hosts[holder])),
            "holder moved to {h:?}"
        );
        let renew = s.renew_time.expect("renewTime").0;
        let fresh = renew + SignedDuration::from_secs(s.lease_duration_seconds.unwrap_or(0).into());
        assert!(
            fresh >= Timestamp::now(),
            "CLE lease held and renewed: {renew}"
        );
    }

    let failed = writes.lock().unwrap().failed;
    eprintln!("chaos: {failed} writes failed (not acknowledged)");
    Figures {
        acknowledged: acknowledged.len(),
        lost: lost.len(),
        recovery: recoveries,
        seconds: started.elapsed().as_secs_f64(),
    }
}
