//! The shared handle of the open redb database. After an I/O error redb refuses every further
//! call on that handle, so the writer swaps in a freshly opened one; readers take a clone for
//! the length of one read. A reader that comes while the swap is under way waits for it (up
//! to [`REOPEN_WAIT`]) rather than failing: on a full disk every write fails and is followed
//! by a swap, and reads must go on through all of them. Only a reopen that does not succeed
//! in time makes reads fail, with [`Error::Unavailable`].

use crate::storage::{Error, Result};
use redb::{Database, ReadTransaction, ReadableDatabase};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How long a reader waits for the database to be reopened. The wait blocks the reader's
/// thread, as redb's reads do; a reopen takes milliseconds unless it fails.
const REOPEN_WAIT: Duration = Duration::from_secs(2);

/// The current database, if open, and how many times one was installed.
pub(crate) struct DbCell {
    db: Mutex<Current>,
    /// Notified when a database is installed.
    installed: Condvar,
}

struct Current {
    db: Option<Arc<Database>>,
    generation: u64,
}

/// A read snapshot; keeps its database open while it lives.
pub(crate) struct Snapshot {
    txn: ReadTransaction,
    _db: Arc<Database>,
    generation: u64,
}

impl std::ops::Deref for Snapshot {
    type Target = ReadTransaction;
    fn deref(&self) -> &ReadTransaction {
        &self.txn
    }
}

/// Whether a read failed because its database failed under it (a write's I/O error after the
/// read began): the reopened database has the same data, so the read may be retried there.
pub(super) fn failed_under_reader(e: &Error) -> bool {
    let Error::Unavailable {
        source: Some(source),
        ..
    } = e
    else {
        return false;
    };
    matches!(
        source.downcast_ref::<redb::Error>(),
        Some(redb::Error::PreviousIo)
    ) || matches!(
        source.downcast_ref::<redb::StorageError>(),
        Some(redb::StorageError::PreviousIo | redb::StorageError::DatabaseClosed)
    )
}

impl DbCell {
    pub(super) fn new(db: Database) -> DbCell {
        DbCell {
            db: Mutex::new(Current {
                db: Some(Arc::new(db)),
                generation: 0,
            }),
            installed: Condvar::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Current> {
        self.db.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The open database, or None while it is being reopened.
    pub(super) fn get(&self) -> Option<Arc<Database>> {
        self.lock().db.clone()
    }

    /// The open database of a generation after `failed` (any when None), waiting up to
    /// [`REOPEN_WAIT`] while it is being reopened. Holds no database while it waits, so the
    /// writer can close the failed one.
    fn wait(&self, failed: Option<u64>) -> Option<(Arc<Database>, u64)> {
        let usable = |c: &Current| c.db.is_some() && failed.is_none_or(|f| c.generation > f);
        let guard = self.lock();
        let (guard, _) = self
            .installed
            .wait_timeout_while(guard, REOPEN_WAIT, |c| !usable(c))
            .unwrap_or_else(|e| e.into_inner());
        if !usable(&guard) {
            return None;
        }
        guard.db.clone().map(|db| (db, guard.generation))
    }

    /// A read snapshot of the current database.
    pub(super) fn snapshot(&self, what: &std::path::Path) -> Result<Snapshot> {
        self.open_snapshot(what, None)
    }

    /// A read snapshot of a database reopened after the one of `failed` (see
    /// [`failed_under_reader`]).
    pub(super) fn snapshot_after(
        &self,
        what: &std::path::Path,
        failed: Snapshot,
    ) -> Result<Snapshot> {
        let generation = failed.generation;
        drop(failed);
        self.open_snapshot(what, Some(generation))
    }

    fn open_snapshot(&self, what: &std::path::Path, failed: Option<u64>) -> Result<Snapshot> {
        let (db, generation) = self.wait(failed).ok_or_else(|| {
            Error::unavailable(format!(
                "{} could not be reopened in time after an I/O error",
                what.display()
            ))
        })?;
        let txn = db.begin_read().map_err(|e| {
            Error::unavailable(format!("cannot read {}", what.display())).caused_by(e)
        })?;
        Ok(Snapshot {
            txn,
            _db: db,
            generation,
        })
    }

    /// Closes the current database: takes it out and waits (bounded) until no reader holds it,
    /// so the file lock is released when this returns true.
    pub(super) fn close(&self) -> bool {
        let taken = self.lock().db.take();
        let Some(mut db) = taken else { return true };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match Arc::try_unwrap(db) {
                Ok(db) => {
                    drop(db);
                    return true;
                }
                Err(still_shared) => {
                    if Instant::now() > deadline {
                        // Leave it to the last reader; the reopen will retry.
                        return false;
                    }
                    db = still_shared;
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }

    /// Installs a newly opened database.
    pub(super) fn set(&self, db: Database) {
        let mut cur = self.lock();
        cur.db = Some(Arc::new(db));
        cur.generation += 1;
        drop(cur);
        self.installed.notify_all();
    }
}
