//! The writer thread's upkeep besides the batches: deleting keys whose time-to-live ran out
//! and compacting history.

use super::apply::Tables;
use super::codec::Change;
use super::tables::EXPIRY;
use super::writer::{now_ms, TxnError, Writer, MAX_BATCH};
use crate::storage::{Error, Result, Revision};
use redb::ReadableTable;

impl Writer {
    /// Drops the history older than `revision` that nothing can ask for any more, as etcd's
    /// compaction does: for each key, the newest value written before `revision` stays (it is
    /// the key's current value, or the previous value of a later change), everything older and
    /// every older delete goes. History below the last compacted revision is already reduced
    /// this way, so only the changes since then are read; each one's previous value is
    /// superseded, and a delete leaves nothing to keep.
    pub(super) fn compact(
        &mut self,
        t: &mut Tables,
        revision: Revision,
    ) -> Result<Result<()>, TxnError> {
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
    pub(super) fn reap(&mut self) {
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
        let res = self.transact(false, |w, t, log, events| {
            for key in &due {
                // current() removes the key when it is expired.
                w.current(t, log, events, now, key)?;
            }
            Ok(())
        });
        match res {
            Ok(events) => self.hub.publish(&events, self.revision),
            Err(e) => {
                self.revision = start;
                tracing::warn!(error = %e, "embedded store: cannot delete expired keys");
                if !e.left_redb_untouched() {
                    self.recover();
                }
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
