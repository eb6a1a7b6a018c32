//! The single writer thread of the embedded store, with group commit: callers queue
//! operations, the thread takes everything pending, applies it in one redb write transaction,
//! makes it durable with one record in the write-ahead log and one fsync (see [`super::wal`]),
//! commits it to redb, publishes the events to watchers and only then answers each caller. Preconditions (expected mod revision, absence) are checked here against
//! the latest state, inside the transaction, so a lost race surfaces as [`Outcome::Stale`] and
//! the caller re-reads and retries. The same thread reaps expired keys, compacts history
//! periodically and sends progress notifications.

use super::apply::{record, Tables};
use super::cell::DbCell;
use super::codec::{Change, Index};
use super::read::value_at;
use super::tables::{self, Opener, EXPIRY, HISTORY, LATEST, META};
use super::wal::{self, AppendError, Log, Wal};
use crate::storage::watch::Hub;
use crate::storage::{Error, KeyValue, Result, Revision, Source, WatchEvent};
use bytes::Bytes;
use redb::{Durability, ReadableTable};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

mod keys;

/// Most operations folded into one transaction.
pub(super) const MAX_BATCH: usize = 4096;
/// How often expired keys are looked for.
const REAP_EVERY: Duration = Duration::from_millis(250);
/// Free space the store leaves on its filesystem: a transaction that could leave less is
/// refused as on a full disk, before redb writes anything (see [`Writer::check_disk`]).
pub(crate) const FREE_SPACE_FLOOR: u64 = 2 << 20;
/// How often watchers that saw no event learn the current revision.
const PROGRESS_EVERY: Duration = Duration::from_millis(250);
/// Revisions one step of the periodic compaction covers. Five minutes of 2,600 writes/s in one
/// transaction (780,000 revisions scanned, their dead entries collected and removed at once)
/// held the writer, and every write queued behind it, for the whole of it; steps of this size
/// let the writes in between go through, as etcd compacts in batches
/// (`--experimental-compaction-batch-limit`).
pub(super) const COMPACT_STEP: Revision = if cfg!(test) { 100 } else { 10_000 };

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

/// What the writer's channel carries: an operation, or the store's close.
pub(crate) enum Msg {
    Op(Op),
    /// Stop after the operations sent before (a clean stop: the log is checkpointed and cut).
    Stop,
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
    /// Where batches are made durable between checkpoints.
    pub wal: Wal,
    /// When redb was last made durable (and the log emptied).
    pub checkpointed: Instant,
    /// Cleared when the thread ends.
    pub alive: Arc<std::sync::atomic::AtomicBool>,
    /// Why the last reopen failed, while the database is closed.
    pub reopen_failure: Option<Source>,
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
pub(super) enum TxnError {
    /// redb refused a step (an I/O error, a full disk...).
    #[error(transparent)]
    Redb(#[from] redb::Error),
    /// redb refused the durability setting.
    #[error(transparent)]
    Durability(#[from] redb::SetDurabilityError),
    /// The transaction found damage in the store ([`Error::Corrupt`]).
    #[error(transparent)]
    Damaged(Error),
    /// An earlier failure closed the database and it could not be reopened yet; the last
    /// reopen's error inside.
    #[error("the store could not be reopened after an I/O error")]
    Closed(#[source] Option<Source>),
    /// The batch could not be written to the write-ahead log; redb was not touched.
    #[error(transparent)]
    Wal(#[from] AppendError),
    /// The disk would not take the transaction (see [`Writer::check_disk`]); redb was not
    /// touched.
    #[error("cannot write to {path}")]
    Refused {
        path: String,
        #[source]
        source: std::io::Error,
    },
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
            closed @ TxnError::Closed(_) => Arc::new(closed),
            TxnError::Wal(e) => Arc::new(e),
            refused @ TxnError::Refused { .. } => Arc::new(refused),
        }
    }

    /// Whether redb was left untouched, so the database needs no reopening.
    pub(super) fn left_redb_untouched(&self) -> bool {
        matches!(self, TxnError::Wal(_) | TxnError::Refused { .. })
    }
}

impl Writer {
    /// Runs until every sender is dropped.
    pub(super) fn run(mut self, rx: Receiver<Msg>) {
        let mut next_reap = Instant::now();
        let mut next_progress = Instant::now() + PROGRESS_EVERY;
        let mut next_compaction = Instant::now() + self.compaction_interval;
        let mut compact_to: Revision = self.revision;
        // Where the periodic compaction is going, step by step.
        let mut compact_goal: Revision = 0;
        loop {
            let now = Instant::now();
            let mut deadline = next_reap.min(next_progress);
            if !self.compaction_interval.is_zero() {
                deadline = deadline.min(next_compaction);
            }
            if self.compacting_towards(compact_goal) {
                deadline = now;
            }
            if self.wal.len() > 0 {
                deadline = deadline.min(self.checkpointed + self.opener.checkpoint_every());
            }
            match rx.recv_timeout(deadline.saturating_duration_since(now)) {
                Ok(msg) => {
                    let mut batch = Vec::new();
                    let mut next = Some(msg);
                    let mut stop = false;
                    while let Some(msg) = next.take() {
                        match msg {
                            Msg::Op(op) => batch.push(op),
                            Msg::Stop => {
                                stop = true;
                                break;
                            }
                        }
                        if batch.len() < MAX_BATCH {
                            next = rx.try_recv().ok();
                        }
                    }
                    if !batch.is_empty() {
                        self.commit(batch);
                    }
                    if stop {
                        break;
                    }
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
            if self.checkpoint_due() {
                self.checkpoint();
            }
            if !self.compaction_interval.is_zero() && now >= next_compaction && !self.wal.failing()
            {
                // Like kube-apiserver: compact to the revision seen one interval ago, so about
                // one interval of history stays available.
                compact_goal = compact_goal.max(compact_to);
                compact_to = self.revision;
                next_compaction = now + self.compaction_interval;
            }
            if self.compacting_towards(compact_goal) {
                let before = self.compacted;
                let (tx, _rx) = oneshot::channel();
                self.commit(vec![Op::Compact {
                    revision: compact_goal.min(before.max(0) + COMPACT_STEP),
                    reply: tx,
                }]);
                if self.compacted <= before {
                    // The step failed (its error is logged): the next interval tries again.
                    compact_goal = self.compacted;
                }
            }
        }
        self.checkpoint();
        // A clean stop leaves an empty log file (see `wal`'s comment).
        if self.wal.len() == 0 && !self.wal.failing() {
            self.wal.clear();
        }
        self.alive
            .store(false, std::sync::atomic::Ordering::Release);
        self.hub.close_all();
    }

    /// Whether the periodic compaction has a step to take towards `goal`.
    fn compacting_towards(&self, goal: Revision) -> bool {
        goal > self.compacted && !self.wal.failing()
    }

    /// Applies a batch in one durable transaction, publishes its events, answers its callers.
    fn commit(&mut self, batch: Vec<Op>) {
        crate::metrics::global().storage.batch(batch.len());
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
                // redb refuses every call after an I/O error of its own; a failed append to the
                // log left redb untouched.
                let reopen = !e.left_redb_untouched();
                let cause = e.into_source();
                for r in replies {
                    r.fail(
                        Error::io("the write transaction was not committed")
                            .with_source(cause.clone()),
                    );
                }
                if reopen {
                    self.recover();
                }
            }
        }
    }

    /// After a failed transaction: close the database and open it again (redb refuses every
    /// call after an I/O error). The counters are re-read from the file, where the failed
    /// transaction left no trace. If reopening fails the next write tries again.
    pub(super) fn recover(&mut self) {
        if !self.db.close() {
            tracing::error!("embedded store: readers still hold the failed database; will retry");
            return;
        }
        match self.opener.reopen() {
            Ok(o) => {
                self.revision = o.revision;
                self.compacted = o.compacted;
                self.wal = o.wal.inherit(&self.wal);
                self.checkpointed = Instant::now();
                self.db.set(o.db);
                self.reopen_failure = None;
                tracing::info!(
                    revision = self.revision,
                    "embedded store: reopened after a write failure"
                );
            }
            Err(e) => {
                tracing::error!(error = %e, "embedded store: cannot reopen after a write failure; will retry");
                self.reopen_failure = Some(Arc::new(e));
            }
        }
    }

    /// The open database, reopening it first if an earlier failure closed it.
    pub(super) fn database(&mut self) -> Result<Arc<redb::Database>, TxnError> {
        if let Some(db) = self.db.get() {
            return Ok(db);
        }
        self.recover();
        self.db
            .get()
            .ok_or_else(|| TxnError::Closed(self.reopen_failure.clone()))
    }

    /// Whether redb should be made durable now: the log is old or large. Not while appends
    /// fail: the log keeps what it holds, and redb is not written to until the disk takes
    /// writes again.
    fn checkpoint_due(&self) -> bool {
        let len = self.wal.len();
        !self.wal.failing()
            && (len >= wal::CHECKPOINT_BYTES
                || (len > 0 && self.checkpointed.elapsed() >= self.opener.checkpoint_every()))
    }

    /// Makes redb durable and empties the log (an empty durable transaction).
    fn checkpoint(&mut self) {
        if self.wal.len() == 0 || self.wal.failing() {
            return;
        }
        if let Err(e) = self.transact(true, |_, _, _, _| Ok(())) {
            tracing::error!(error = %e, "embedded store: checkpoint failed");
            if !e.left_redb_untouched() {
                self.recover();
            }
        }
    }

    /// Checks, before anything of a transaction is written, that the disk will take it. redb
    /// must never meet a write it cannot make: a failed write of its own closes the database,
    /// reads included, and reopening it needs a writable file with room to repair. So a
    /// transaction is refused (redb and the log untouched) when the redb file cannot be opened
    /// for writing (made immutable, remounted read-only: EPERM, EROFS), or when it could leave
    /// less than [`FREE_SPACE_FLOOR`] free on the data directory's filesystem (ENOSPC). As
    /// after a failed append, no checkpoint is due until an append succeeds again.
    fn check_disk(&mut self, checkpoint: bool, batch: u64) -> Result<(), TxnError> {
        let path = &self.opener.path;
        let mut needed = FREE_SPACE_FLOOR + 4 * batch;
        if checkpoint {
            needed += 2 * self.wal.len();
        }
        let checked = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .and_then(|_| {
                let dir = path.parent().unwrap_or(path);
                let fs = rustix::fs::statvfs(dir)?;
                if fs.f_bavail.saturating_mul(fs.f_frsize) < needed {
                    return Err(rustix::io::Errno::NOSPC.into());
                }
                Ok(())
            });
        checked.map_err(|source| {
            self.wal.mark_failing();
            TxnError::Refused {
                path: path.display().to_string(),
                source,
            }
        })
    }

    /// Runs `f` in one write transaction and makes its changes durable: through the log, or
    /// when `checkpoint` (or one is due) with a durable redb commit that also empties the log.
    /// The counters are written last.
    pub(super) fn transact(
        &mut self,
        checkpoint: bool,
        f: impl FnOnce(&mut Writer, &mut Tables, &mut Log, &mut Vec<WatchEvent>) -> Result<(), TxnError>,
    ) -> Result<Vec<WatchEvent>, TxnError> {
        let checkpoint = checkpoint || self.checkpoint_due();
        self.wal.probe()?;
        let db = self.database()?;
        let mut txn = db.begin_write()?;
        txn.set_durability(if checkpoint {
            Durability::Immediate
        } else {
            Durability::None
        })?;
        let mut log = Log::default();
        let mut events = Vec::new();
        {
            let mut t = Tables {
                latest: txn.open_table(LATEST)?,
                history: txn.open_table(HISTORY)?,
                expiry: txn.open_table(EXPIRY)?,
            };
            f(self, &mut t, &mut log, &mut events)?;
        }
        if !checkpoint && log.is_empty() {
            // Nothing changed (every write lost its race or was refused): nothing to commit.
            txn.abort()?;
            return Ok(events);
        }
        if let Err(e) = self.check_disk(checkpoint, log.len()) {
            txn.abort()?;
            return Err(e);
        }
        {
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
        // Durable before visible: readers see the batch only once the log holds it.
        let appended = if !checkpoint && !log.is_empty() {
            Some(self.wal.append(&mut log)?)
        } else {
            None
        };
        if let Err(e) = txn.commit() {
            // Not acknowledged: take it out of the log too, or a replay would bring it back.
            if let Some(len) = appended {
                self.wal.undo(len);
            }
            return Err(e.into());
        }
        if checkpoint {
            self.wal.rewind();
            self.checkpointed = Instant::now();
        }
        Ok(events)
    }

    fn apply_batch(
        &mut self,
        batch: Vec<Op>,
        events: &mut Vec<WatchEvent>,
        replies: &mut Vec<Reply>,
    ) -> Result<(), TxnError> {
        let compacts = batch.iter().any(|op| matches!(op, Op::Compact { .. }));
        let now = now_ms();
        let mut ops = batch.into_iter();
        let done = self.transact(compacts, |w, t, log, events| {
            w.apply_ops(t, log, events, now, &mut ops, replies)
        });
        match done {
            Ok(e) => *events = e,
            Err(e) => {
                // Every caller hears of the failure, those after the failed step (or all of
                // them, when the transaction could not begin) too.
                replies.extend(ops.map(Op::unanswered));
                return Err(e);
            }
        }
        Ok(())
    }

    /// Applies `ops` in order, answering each in `replies`; stops at the first failed step
    /// (its caller is answered too: [`Writer::commit`] fails every reply of the batch).
    fn apply_ops(
        &mut self,
        t: &mut Tables,
        log: &mut Log,
        events: &mut Vec<WatchEvent>,
        now: u64,
        ops: &mut impl Iterator<Item = Op>,
        replies: &mut Vec<Reply>,
    ) -> Result<(), TxnError> {
        for op in ops {
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
                    let r = self.put(t, log, events, now, put);
                    replies.push(Reply::Write(reply, Ok(Outcome::Stale)));
                    Self::answer(replies, r?);
                }
                Op::Delete { key, expect, reply } => {
                    let r = self.delete(t, log, events, now, &key, Some(expect));
                    replies.push(Reply::Write(reply, Ok(Outcome::Stale)));
                    Self::answer(replies, r?);
                }
                Op::Compact { revision, reply } => {
                    let r = self.compact(t, revision);
                    replies.push(Reply::Compact(reply, Ok(())));
                    let r = r?;
                    if let Some(Reply::Compact(_, slot)) = replies.last_mut() {
                        *slot = r;
                    }
                }
            }
        }
        Ok(())
    }

    /// Sets the result of the last write reply.
    fn answer(replies: &mut [Reply], r: Result<Outcome>) {
        if let Some(Reply::Write(_, slot)) = replies.last_mut() {
            *slot = r;
        }
    }

    fn next_revision(&mut self) -> Revision {
        self.revision += 1;
        self.revision
    }
}

impl Op {
    /// The reply of an operation that was not reached (its batch failed before it); the
    /// result is replaced by the batch's failure.
    fn unanswered(self) -> Reply {
        match self {
            Op::Put { reply, .. } | Op::Delete { reply, .. } => {
                Reply::Write(reply, Ok(Outcome::Stale))
            }
            Op::Compact { reply, .. } => Reply::Compact(reply, Ok(())),
        }
    }
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
