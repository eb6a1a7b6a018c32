//! The single writer thread of the embedded store, with group commit: callers queue
//! operations, the thread takes everything pending, applies it in one redb write transaction
//! and one fsync (`Durability::Immediate`), publishes the events to watchers and only then
//! answers each caller. Preconditions (expected mod revision, absence) are checked here against
//! the latest state, inside the transaction, so a lost race surfaces as [`Outcome::Stale`] and
//! the caller re-reads and retries. The same thread reaps expired keys, compacts history
//! periodically and sends progress notifications.

use super::cell::DbCell;
use super::codec::{Change, Index};
use super::read::value_at;
use super::tables::{self, Opener, EXPIRY, HISTORY, LATEST, META};
use crate::storage::watch::Hub;
use crate::storage::{Error, KeyValue, Result, Revision, Source, WatchEvent};
use bytes::Bytes;
use redb::{Durability, ReadableTable, Table};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

/// Most operations folded into one transaction.
const MAX_BATCH: usize = 4096;
/// How often expired keys are looked for.
const REAP_EVERY: Duration = Duration::from_millis(250);
/// How often watchers that saw no event learn the current revision.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);

/// What a write expects of the key's current state.
#[derive(Debug, Clone)]
pub(crate) enum Expect {
    /// The key must not exist (create).
    Absent,
    /// The key must exist with this mod revision; it then has this value (the caller read it),
    /// which the update's watch event carries as the previous value without reading it again.
    ModRevision(Revision, Bytes),
}

/// Result of a conditional write.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Written; the new value (put) or the deleted value (delete).
    Done(KeyValue),
    /// The key changed since the caller read it: re-read and retry.
    Stale,
}

/// One queued operation.
pub(crate) enum Op {
    Put {
        key: String,
        value: Bytes,
        expect: Expect,
        expires_at_ms: u64,
        /// [`crate::storage::Update::Heartbeat`]: the event is marked.
        heartbeat: bool,
        reply: oneshot::Sender<Result<Outcome>>,
    },
    Delete {
        key: String,
        expect: Revision,
        reply: oneshot::Sender<Result<Outcome>>,
    },
    Compact {
        revision: Revision,
        reply: oneshot::Sender<Result<()>>,
    },
}

/// A put, as the batch carries it to [`Writer::put`].
struct Put {
    key: String,
    value: Bytes,
    expect: Expect,
    expires_at_ms: u64,
    heartbeat: bool,
}

/// The writer's state.
pub(crate) struct Writer {
    pub db: Arc<DbCell>,
    pub opener: Opener,
    pub hub: Arc<Hub>,
    pub revision: Revision,
    pub compacted: Revision,
    pub compaction_interval: Duration,
    /// Cleared when the thread ends.
    pub alive: Arc<std::sync::atomic::AtomicBool>,
}

enum Reply {
    Write(oneshot::Sender<Result<Outcome>>, Result<Outcome>),
    Compact(oneshot::Sender<Result<()>>, Result<()>),
}

/// Milliseconds since the Unix epoch.
pub(crate) fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// Why a write transaction failed. Every write of its batch then fails with [`Error::Io`],
/// caused by the error inside ([`TxnError::into_source`]).
#[derive(Debug, thiserror::Error)]
enum TxnError {
    /// redb refused a step (an I/O error, a full disk...).
    #[error(transparent)]
    Redb(#[from] redb::Error),
    /// redb refused the durability setting.
    #[error(transparent)]
    Durability(#[from] redb::SetDurabilityError),
    /// The transaction found damage in the store ([`Error::Corrupt`]).
    #[error(transparent)]
    Damaged(Error),
    /// An earlier failure closed the database and it could not be reopened yet.
    #[error("the store could not be reopened after an I/O error")]
    Closed,
}

/// redb's step errors, each one a [`redb::Error`], so that `?` works on every redb call.
macro_rules! txn_error_from_redb {
    ($($t:ty),*) => {$(
        impl From<$t> for TxnError {
            fn from(e: $t) -> TxnError {
                TxnError::Redb(e.into())
            }
        }
    )*};
}
txn_error_from_redb!(
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError
);

impl TxnError {
    /// The error inside, shared as the source of every failed write of the batch.
    fn into_source(self) -> Source {
        match self {
            TxnError::Redb(e) => Arc::new(e),
            TxnError::Durability(e) => Arc::new(e),
            TxnError::Damaged(e) => Arc::new(e),
            closed @ TxnError::Closed => Arc::new(closed),
        }
    }
}

impl Writer {
    /// Runs until every sender is dropped.
    pub(super) fn run(mut self, rx: Receiver<Op>) {
        let mut next_reap = Instant::now();
        let mut next_progress = Instant::now() + PROGRESS_EVERY;
        let mut next_compaction = Instant::now() + self.compaction_interval;
        let mut compact_to: Revision = self.revision;
        loop {
            let now = Instant::now();
            let mut deadline = next_reap.min(next_progress);
            if !self.compaction_interval.is_zero() {
                deadline = deadline.min(next_compaction);
            }
            match rx.recv_timeout(deadline.saturating_duration_since(now)) {
                Ok(op) => {
                    let mut batch = vec![op];
                    while batch.len() < MAX_BATCH {
                        match rx.try_recv() {
                            Ok(op) => batch.push(op),
                            Err(_) => break,
                        }
                    }
                    self.commit(batch);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => break,
            }
            let now = Instant::now();
            if now >= next_reap {
                self.reap();
                next_reap = now + REAP_EVERY;
            }
            if now >= next_progress {
                self.hub.progress();
                next_progress = now + PROGRESS_EVERY;
            }
            if !self.compaction_interval.is_zero() && now >= next_compaction {
                // Like kube-apiserver: compact to the revision seen one interval ago, so about
                // one interval of history stays available.
                if compact_to > self.compacted {
                    let (tx, _rx) = oneshot::channel();
                    self.commit(vec![Op::Compact {
                        revision: compact_to,
                        reply: tx,
                    }]);
                }
                compact_to = self.revision;
                next_compaction = now + self.compaction_interval;
            }
        }
        self.alive
            .store(false, std::sync::atomic::Ordering::Release);
        self.hub.close_all();
    }

    /// Applies a batch in one durable transaction, publishes its events, answers its callers.
    fn commit(&mut self, batch: Vec<Op>) {
        let start = (self.revision, self.compacted);
        let mut events = Vec::new();
        let mut replies = Vec::with_capacity(batch.len());
        let result = self.apply_batch(batch, &mut events, &mut replies);
        match result {
            Ok(()) => {
                self.hub.publish(&events, self.revision);
                for r in replies {
                    r.send();
                }
            }
            Err(e) => {
                (self.revision, self.compacted) = start;
                tracing::error!(error = %e, "embedded store: write transaction failed; its writes were not acknowledged");
                let cause = e.into_source();
                for r in replies {
                    r.fail(
                        Error::io("the write transaction was not committed")
                            .with_source(cause.clone()),
                    );
                }
                self.recover();
            }
        }
    }

    /// After a failed transaction: close the database and open it again (redb refuses every
    /// call after an I/O error). The counters are re-read from the file, where the failed
    /// transaction left no trace. If reopening fails the next write tries again.
    fn recover(&mut self) {
        if !self.db.close() {
            tracing::error!("embedded store: readers still hold the failed database; will retry");
            return;
        }
        match self.opener.reopen() {
            Ok(o) => {
                self.revision = o.revision;
                self.compacted = o.compacted;
                self.db.set(o.db);
                tracing::info!(
                    revision = self.revision,
                    "embedded store: reopened after a write failure"
                );
            }
            Err(e) => {
                tracing::error!(error = %e, "embedded store: cannot reopen after a write failure; will retry")
            }
        }
    }

    /// The open database, reopening it first if an earlier failure closed it.
    fn database(&mut self) -> Result<Arc<redb::Database>, TxnError> {
        if let Some(db) = self.db.get() {
            return Ok(db);
        }
        self.recover();
        self.db.get().ok_or(TxnError::Closed)
    }

    fn apply_batch(
        &mut self,
        batch: Vec<Op>,
        events: &mut Vec<WatchEvent>,
        replies: &mut Vec<Reply>,
    ) -> Result<(), TxnError> {
        let db = self.database()?;
        let mut txn = db.begin_write()?;
        txn.set_durability(Durability::Immediate)?;
        let now = now_ms();
        {
            let mut t = Tables {
                latest: txn.open_table(LATEST)?,
                history: txn.open_table(HISTORY)?,
                expiry: txn.open_table(EXPIRY)?,
            };
            for op in batch {
                match op {
                    Op::Put {
                        key,
                        value,
                        expect,
                        expires_at_ms,
                        heartbeat,
                        reply,
                    } => {
                        let put = Put {
                            key,
                            value,
                            expect,
                            expires_at_ms,
                            heartbeat,
                        };
                        let r = self.put(&mut t, events, now, put)?;
                        replies.push(Reply::Write(reply, r));
                    }
                    Op::Delete { key, expect, reply } => {
                        let r = self.delete(&mut t, events, now, &key, Some(expect))?;
                        replies.push(Reply::Write(reply, r));
                    }
                    Op::Compact { revision, reply } => {
                        let r = self.compact(&mut t, revision)?;
                        replies.push(Reply::Compact(reply, r));
                    }
                }
            }
            let mut meta = txn.open_table(META)?;
            meta.insert(
                tables::META_REVISION,
                self.revision.to_le_bytes().as_slice(),
            )?;
            meta.insert(
                tables::META_COMPACTED,
                self.compacted.to_le_bytes().as_slice(),
            )?;
        }
        txn.commit()?;
        Ok(())
    }

    fn next_revision(&mut self) -> Revision {
        self.revision += 1;
        self.revision
    }

    /// Reads a key's index entry; an expired key is deleted first (announced as a delete).
    fn current(
        &mut self,
        t: &mut Tables,
        events: &mut Vec<WatchEvent>,
        now: u64,
        key: &str,
    ) -> Result<Option<Index>, TxnError> {
        let idx = match t.latest.get(key)? {
            Some(raw) => Index::decode(key, raw.value()).map_err(TxnError::Damaged)?,
            None => return Ok(None),
        };
        if idx.expired(now) {
            self.remove(t, events, key, idx)?;
            return Ok(None);
        }
        Ok(Some(idx))
    }

    fn remove(
        &mut self,
        t: &mut Tables,
        events: &mut Vec<WatchEvent>,
        key: &str,
        idx: Index,
    ) -> Result<KeyValue, TxnError> {
        let prev = value_at(&t.history, key, idx.create_revision, idx.mod_revision)
            .map_err(TxnError::Damaged)?;
        let rev = self.next_revision();
        t.latest.remove(key)?;
        if idx.expires_at_ms != 0 {
            t.expiry.remove((idx.expires_at_ms, key))?;
        }
        let change = Change {
            key,
            create_revision: idx.create_revision,
            prev: idx.mod_revision,
            value: None,
        };
        t.history.insert(rev as u64, change.encode().as_slice())?;
        events.push(WatchEvent::Deleted {
            prev: prev.clone(),
            revision: rev,
        });
        Ok(prev)
    }

    fn put(
        &mut self,
        t: &mut Tables,
        events: &mut Vec<WatchEvent>,
        now: u64,
        put: Put,
    ) -> Result<Result<Outcome>, TxnError> {
        let Put {
            key,
            value,
            expect,
            expires_at_ms,
            heartbeat,
        } = put;
        let cur = self.current(t, events, now, &key)?;
        // The previous value of an update is the one the caller read at the revision it expects.
        let prev = match (expect, &cur) {
            (Expect::Absent, Some(_)) => return Ok(Err(Error::AlreadyExists { key })),
            (Expect::Absent, None) => None,
            (Expect::ModRevision(..), None) => return Ok(Ok(Outcome::Stale)),
            (Expect::ModRevision(m, _), Some(c)) if c.mod_revision != m => {
                return Ok(Ok(Outcome::Stale))
            }
            (Expect::ModRevision(_, value), Some(c)) => Some(KeyValue {
                key: key.clone(),
                value,
                create_revision: c.create_revision,
                mod_revision: c.mod_revision,
            }),
        };
        let rev = self.next_revision();
        let idx = Index {
            create_revision: cur.map(|c| c.create_revision).unwrap_or(rev),
            mod_revision: rev,
            expires_at_ms,
        };
        t.latest.insert(key.as_str(), idx.encode().as_slice())?;
        if let Some(old) = &cur {
            if old.expires_at_ms != 0 {
                t.expiry.remove((old.expires_at_ms, key.as_str()))?;
            }
        }
        if expires_at_ms != 0 {
            t.expiry.insert((expires_at_ms, key.as_str()), ())?;
        }
        let change = Change {
            key: &key,
            create_revision: idx.create_revision,
            prev: cur.map(|c| c.mod_revision).unwrap_or(0),
            value: Some(&value),
        };
        t.history.insert(rev as u64, change.encode().as_slice())?;
        let kv = KeyValue {
            key,
            value,
            create_revision: idx.create_revision,
            mod_revision: rev,
        };
        let ev = match prev {
            Some(prev) => WatchEvent::Updated {
                prev,
                kv: kv.clone(),
                heartbeat,
            },
            None => WatchEvent::Created(kv.clone()),
        };
        events.push(ev);
        Ok(Ok(Outcome::Done(kv)))
    }

    fn delete(
        &mut self,
        t: &mut Tables,
        events: &mut Vec<WatchEvent>,
        now: u64,
        key: &str,
        expect: Option<Revision>,
    ) -> Result<Result<Outcome>, TxnError> {
        let Some(cur) = self.current(t, events, now, key)? else {
            return Ok(Ok(Outcome::Stale));
        };
        if let Some(m) = expect {
            if cur.mod_revision != m {
                return Ok(Ok(Outcome::Stale));
            }
        }
        let prev = self.remove(t, events, key, cur)?;
        Ok(Ok(Outcome::Done(prev)))
    }

    /// Drops the history older than `revision` that nothing can ask for any more, as etcd's
    /// compaction does: for each key, the newest value written before `revision` stays (it is
    /// the key's current value, or the previous value of a later change), everything older and
    /// every older delete goes. History below the last compacted revision is already reduced
    /// this way, so only the changes since then are read; each one's previous value is
    /// superseded, and a delete leaves nothing to keep.
    fn compact(&mut self, t: &mut Tables, revision: Revision) -> Result<Result<()>, TxnError> {
        if revision > self.revision {
            return Ok(Err(Error::TooLargeRevision {
                requested: revision,
                current: self.revision,
            }));
        }
        if revision <= self.compacted {
            return Ok(Ok(()));
        }
        let mut dead = Vec::new();
        for item in t
            .history
            .range(self.compacted.max(0) as u64..revision as u64)?
        {
            let (rev, raw) = item?;
            let change = Change::decode(rev.value(), raw.value()).map_err(TxnError::Damaged)?;
            if change.prev != 0 && change.prev < revision {
                dead.push(change.prev as u64);
            }
            if change.value.is_none() {
                dead.push(rev.value());
            }
        }
        for rev in dead {
            t.history.remove(rev)?;
        }
        self.compacted = revision;
        Ok(Ok(()))
    }

    /// Deletes every expired key in one transaction (watchers see deletes).
    fn reap(&mut self) {
        let now = now_ms();
        let due: Vec<String> = match self.expired_keys(now) {
            Ok(keys) => keys,
            Err(e) => {
                tracing::warn!(error = %e, "embedded store: cannot look for expired keys");
                return;
            }
        };
        if due.is_empty() {
            return;
        }
        let start = self.revision;
        let mut events = Vec::new();
        let res = (|| -> Result<(), TxnError> {
            let db = self.database()?;
            let mut txn = db.begin_write()?;
            txn.set_durability(Durability::Immediate)?;
            {
                let mut t = Tables {
                    latest: txn.open_table(LATEST)?,
                    history: txn.open_table(HISTORY)?,
                    expiry: txn.open_table(EXPIRY)?,
                };
                for key in &due {
                    // current() removes the key when it is expired.
                    self.current(&mut t, &mut events, now, key)?;
                }
                let mut meta = txn.open_table(META)?;
                meta.insert(
                    tables::META_REVISION,
                    self.revision.to_le_bytes().as_slice(),
                )?;
            }
            txn.commit()?;
            Ok(())
        })();
        match res {
            Ok(()) => self.hub.publish(&events, self.revision),
            Err(e) => {
                self.revision = start;
                tracing::warn!(error = %e, "embedded store: cannot delete expired keys");
                self.recover();
            }
        }
    }

    fn expired_keys(&self, now: u64) -> Result<Vec<String>, redb::Error> {
        use redb::ReadableDatabase;
        let Some(db) = self.db.get() else {
            return Ok(Vec::new());
        };
        let txn = db.begin_read()?;
        let expiry = txn.open_table(EXPIRY)?;
        let mut keys = Vec::new();
        for item in expiry.range((0u64, "")..(now + 1, ""))? {
            let (k, _) = item?;
            keys.push(k.value().1.to_string());
            if keys.len() >= MAX_BATCH {
                break;
            }
        }
        Ok(keys)
    }
}

struct Tables<'t> {
    latest: Table<'t, &'static str, &'static [u8]>,
    history: Table<'t, u64, &'static [u8]>,
    expiry: Table<'t, (u64, &'static str), ()>,
}

impl Reply {
    fn send(self) {
        match self {
            Reply::Write(tx, r) => {
                let _ = tx.send(r);
            }
            Reply::Compact(tx, r) => {
                let _ = tx.send(r);
            }
        }
    }

    fn fail(self, e: Error) {
        match self {
            Reply::Write(tx, _) => {
                let _ = tx.send(Err(e));
            }
            Reply::Compact(tx, _) => {
                let _ = tx.send(Err(e));
            }
        }
    }
}
