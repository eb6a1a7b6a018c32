//! The shared handle of the open redb database. After an I/O error redb refuses every further
//! call on that handle, so the writer swaps in a freshly opened one; readers take a clone for
//! the length of one read and see [`Error::Unavailable`] while the swap is under way.

use crate::storage::{Error, Result};
use redb::{Database, ReadTransaction, ReadableDatabase};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

/// The current database, if open.
pub(crate) struct DbCell {
    db: RwLock<Option<Arc<Database>>>,
}

/// A read snapshot; keeps its database open while it lives.
pub(crate) struct Snapshot {
    txn: ReadTransaction,
    _db: Arc<Database>,
}

impl std::ops::Deref for Snapshot {
    type Target = ReadTransaction;
    fn deref(&self) -> &ReadTransaction {
        &self.txn
    }
}

impl DbCell {
    pub(super) fn new(db: Database) -> DbCell {
        DbCell {
            db: RwLock::new(Some(Arc::new(db))),
        }
    }

    /// The open database, or None while it is being reopened.
    pub(super) fn get(&self) -> Option<Arc<Database>> {
        self.db.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// A read snapshot of the current database.
    pub(super) fn snapshot(&self, what: &std::path::Path) -> Result<Snapshot> {
        let db = self.get().ok_or_else(|| {
            Error::unavailable(format!(
                "{} is being reopened after an I/O error",
                what.display()
            ))
        })?;
        let txn = db.begin_read().map_err(|e| {
            Error::unavailable(format!("cannot read {}", what.display())).caused_by(e)
        })?;
        Ok(Snapshot { txn, _db: db })
    }

    /// Closes the current database: takes it out and waits (bounded) until no reader holds it,
    /// so the file lock is released when this returns true.
    pub(super) fn close(&self) -> bool {
        let taken = self.db.write().unwrap_or_else(|e| e.into_inner()).take();
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
        *self.db.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::new(db));
    }
}
