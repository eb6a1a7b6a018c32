//! The embedded backend: a durable MVCC key-value store in one file under `--data-dir`,
//! with etcd's semantics (one global, strictly increasing revision; create/mod revisions per
//! key; history for watch-from-revision and lists at older revisions; compaction).
//!
//! Engine: [redb](https://docs.rs/redb). It is a pure-Rust, actively maintained embedded
//! B-tree store with ACID write transactions, MVCC snapshots for readers that never block the
//! writer, checksummed copy-on-write commits that survive a crash at any moment, and an
//! explicit `Durability::Immediate` (commit returns after fsync). Its single-writer model is
//! exactly what group commit needs, it brings no C toolchain or SQL layer (unlike SQLite via
//! rusqlite), and its typed tables map directly onto our four tables (see `tables.rs`).
//!
//! Writes go through one writer thread that batches everything pending into one transaction
//! (group commit, `writer.rs`), made durable by one append and one fsync to a write-ahead log
//! (`wal.rs`) before redb commits it without an fsync of its own; redb is made durable, and the
//! log emptied, once a second. A write is acknowledged only after its log record is on disk.
//! Reads run on the caller in a read snapshot (`read.rs`). Watchers are fed by a [`Hub`] after
//! each commit, with older events replayed from the history table.

mod apply;
mod cell;
mod codec;
mod read;
mod tables;
mod upkeep;
mod wal;
mod writer;

use super::remembered::Remembered;
use super::watch::{self, Hub};
use super::{
    update_round, DeleteCheck, Error, KeyValue, ListOptions, ListResult, ListRevision, Result,
    Revision, Round, Storage, UpdateFn, WatchStream,
};
use bytes::Bytes;
use cell::DbCell;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;
use writer::{now_ms, Expect, Msg, Op, Outcome, Writer};

/// Retries of a guaranteed update or delete that keeps losing races before giving up.
const MAX_RETRIES: usize = 10_000;

/// The embedded store.
pub struct EmbeddedStore {
    db: Arc<DbCell>,
    hub: Arc<Hub>,
    /// Always Some until drop.
    ops: Option<Sender<Msg>>,
    /// Taken by the first of [`Storage::close`] and drop.
    writer: std::sync::Mutex<Option<std::thread::JoinHandle<()>>>,
    alive: Arc<AtomicBool>,
    path: std::path::PathBuf,
    /// The value each recently updated key had after its last update (a guess for the next).
    known: Remembered,
}

impl EmbeddedStore {
    /// Opens (or creates) the store in `dir`. A file that is corrupt or not ours is an error
    /// naming it, and is left untouched.
    pub fn open(dir: &Path, compaction_interval: Duration) -> Result<EmbeddedStore> {
        Self::open_with(dir, compaction_interval, tables::Opener::default())
    }

    fn open_with(
        dir: &Path,
        compaction_interval: Duration,
        opener: tables::Opener,
    ) -> Result<EmbeddedStore> {
        let opened = tables::open_with(dir, opener)?;
        let path = opened.opener.path.clone();
        let db = Arc::new(DbCell::new(opened.db));
        let hub = Arc::new(Hub::new(opened.revision, watch::DEFAULT_QUEUE));
        let (tx, rx) = std::sync::mpsc::channel();
        let alive = Arc::new(AtomicBool::new(true));
        let w = Writer {
            db: db.clone(),
            opener: opened.opener,
            hub: hub.clone(),
            revision: opened.revision,
            compacted: opened.compacted,
            compaction_interval,
            wal: opened.wal,
            checkpointed: std::time::Instant::now(),
            alive: alive.clone(),
            reopen_failure: None,
        };
        let writer = std::thread::Builder::new()
            .name("kapi-store-writer".into())
            .spawn(move || w.run(rx))
            .map_err(|e| Error::io("cannot start the store writer thread").caused_by(e))?;
        tracing::info!(path = %path.display(), revision = opened.revision, "embedded store opened");
        Ok(EmbeddedStore {
            db,
            hub,
            ops: Some(tx),
            writer: std::sync::Mutex::new(Some(writer)),
            alive,
            path,
            known: Remembered::default(),
        })
    }

    /// Waits for the writer to end (once it has been told to, or its channel closed).
    fn join_writer(&self) {
        let writer = self.writer.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(w) = writer {
            if w.join().is_err() {
                tracing::error!("embedded store: the writer thread panicked");
            }
        }
    }

    fn read(&self) -> Result<cell::Snapshot> {
        self.db.snapshot(&self.path)
    }

    /// Runs `f` on a read snapshot; when the database failed under it (a write's I/O error,
    /// as on a full disk), runs it again once on the reopened database.
    fn reading<T>(&self, f: impl Fn(&redb::ReadTransaction) -> Result<T>) -> Result<T> {
        let snap = self.read()?;
        match f(&snap) {
            Err(e) if cell::failed_under_reader(&e) => {
                f(&*self.db.snapshot_after(&self.path, snap)?)
            }
            other => other,
        }
    }

    /// One LIST in one snapshot.
    fn list_in(
        &self,
        txn: &redb::ReadTransaction,
        prefix: &str,
        opts: &ListOptions,
    ) -> Result<ListResult> {
        let at = match opts.revision {
            ListRevision::Latest | ListRevision::Any => None,
            ListRevision::NotOlderThan(r) => {
                let (current, _) = read::revisions(txn)?;
                if r > current {
                    return Err(Error::TooLargeRevision {
                        requested: r,
                        current,
                    });
                }
                None
            }
            ListRevision::Exact(r) => Some(r),
        };
        read::list(
            txn,
            prefix,
            at,
            opts.start_key.as_deref(),
            opts.limit,
            now_ms(),
        )
    }

    async fn submit<T>(&self, make: impl FnOnce(oneshot::Sender<Result<T>>) -> Op) -> Result<T> {
        let (tx, rx) = oneshot::channel();
        self.ops
            .as_ref()
            .ok_or_else(|| Error::unavailable("the store is closed"))?
            .send(Msg::Op(make(tx)))
            .map_err(|_| Error::unavailable("the store writer has stopped"))?;
        rx.await.map_err(|_| {
            Error::io("the write transaction was aborted; the write was not applied")
        })?
    }

    async fn put(
        &self,
        key: &str,
        value: Bytes,
        expect: Expect,
        ttl: Option<Duration>,
        heartbeat: bool,
    ) -> Result<Outcome> {
        let expires_at_ms = match ttl {
            Some(t) => now_ms().saturating_add(t.as_millis().max(1) as u64),
            None => 0,
        };
        self.submit(|reply| Op::Put {
            key: key.to_string(),
            value,
            expect,
            expires_at_ms,
            heartbeat,
            reply,
        })
        .await
    }
}

impl Drop for EmbeddedStore {
    /// Stops the writer after the writes already queued and releases the file, so the store
    /// can be reopened as soon as this returns.
    fn drop(&mut self) {
        self.ops.take();
        self.join_writer();
    }
}

#[async_trait::async_trait]
impl Storage for EmbeddedStore {
    async fn get(&self, key: &str) -> Result<KeyValue> {
        self.reading(|txn| read::get(txn, key, now_ms()))?
            .ok_or_else(|| Error::NotFound {
                key: key.to_string(),
            })
    }

    fn remembered(&self, key: &str) -> Option<KeyValue> {
        self.known.get(key)
    }

    async fn list(&self, prefix: &str, opts: ListOptions) -> Result<ListResult> {
        self.reading(|txn| self.list_in(txn, prefix, &opts))
    }

    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue> {
        match self.put(key, value, Expect::Absent, ttl, false).await? {
            Outcome::Done(kv) => Ok(kv),
            Outcome::Stale => Err(Error::AlreadyExists {
                key: key.to_string(),
            }),
        }
    }

    async fn guaranteed_update(
        &self,
        key: &str,
        ignore_not_found: bool,
        update: UpdateFn<'_>,
    ) -> Result<KeyValue> {
        // Start from the value this store last wrote under the key (the writer checks its
        // mod revision); read the snapshot only when that is unknown or turned out stale.
        let fresh = || self.reading(|txn| read::get(txn, key, now_ms()));
        let mut cur = self.known.get(key);
        let mut guessed = cur.is_some();
        if !guessed {
            cur = fresh()?;
        }
        for _ in 0..MAX_RETRIES {
            let write = match update_round(key, cur.as_ref(), guessed, ignore_not_found, update) {
                Round::Write(write) => write,
                Round::Done(result) => return result,
                Round::Reread => {
                    (cur, guessed) = (fresh()?, false);
                    continue;
                }
            };
            let expect = match &cur {
                Some(c) => Expect::ModRevision(c.mod_revision, c.value.clone()),
                None => Expect::Absent,
            };
            match self
                .put(key, write.value, expect, write.ttl, write.heartbeat)
                .await
            {
                Ok(Outcome::Done(kv)) => {
                    self.known.set(key, Some(&kv));
                    return Ok(kv);
                }
                Ok(Outcome::Stale) | Err(Error::AlreadyExists { .. }) => {
                    (cur, guessed) = (fresh()?, false);
                }
                Err(e) => return Err(e),
            }
        }
        Err(Error::Conflict {
            key: key.to_string(),
            message: "too many concurrent updates".into(),
        })
    }

    async fn delete(&self, key: &str, check: DeleteCheck<'_>) -> Result<KeyValue> {
        for _ in 0..MAX_RETRIES {
            let cur = self
                .reading(|txn| read::get(txn, key, now_ms()))?
                .ok_or_else(|| Error::NotFound {
                    key: key.to_string(),
                })?;
            check(&cur)?;
            match self
                .submit(|reply| Op::Delete {
                    key: key.to_string(),
                    expect: cur.mod_revision,
                    reply,
                })
                .await?
            {
                Outcome::Done(prev) => {
                    self.known.set(key, None);
                    return Ok(prev);
                }
                Outcome::Stale => continue,
            }
        }
        Err(Error::Conflict {
            key: key.to_string(),
            message: "too many concurrent updates".into(),
        })
    }

    async fn watch(&self, prefix: &str, after: Option<Revision>) -> Result<WatchStream> {
        let (published, sub) = self.hub.subscribe(prefix, false);
        let after = after.unwrap_or(published);
        let replay = self.reading(|txn| read::history(txn, prefix, after, published))?;
        Ok(watch::stream(
            replay.into_iter().map(Arc::new).collect(),
            sub,
            after,
        ))
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.hub.revision())
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.submit(|reply| Op::Compact { revision, reply }).await
    }

    async fn db_size(&self) -> Result<Option<(String, i64)>> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(&self.path).map_err(|e| {
            Error::io(format!("{}: cannot read its size", self.path.display())).caused_by(e)
        })?;
        // Physically allocated, as etcd's dbSize (512-byte blocks).
        Ok(Some((
            self.path.display().to_string(),
            (meta.blocks() * 512) as i64,
        )))
    }

    fn close(&self) {
        if let Some(ops) = &self.ops {
            // A writer already gone has nothing left to do.
            let _ = ops.send(Msg::Stop);
        }
        self.join_writer();
    }

    async fn check_health(&self) -> Result<()> {
        self.reading(read::revisions)?;
        if !self.alive.load(Ordering::Acquire) {
            return Err(Error::unavailable(format!(
                "{}: the store writer has stopped",
                self.path.display()
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
