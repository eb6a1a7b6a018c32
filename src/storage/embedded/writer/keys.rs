//! The per-key steps of a write transaction: read a key's current entry (reaping it when
//! expired), put, delete and remove, each recorded in the log and announced to watchers.

use super::*;

impl Writer {
    /// Reads a key's index entry; an expired key is deleted first (announced as a delete).
    pub(in crate::storage::embedded) fn current(
        &mut self,
        t: &mut Tables,
        log: &mut Log,
        events: &mut Vec<WatchEvent>,
        now: u64,
        key: &str,
    ) -> Result<Option<Index>, TxnError> {
        let idx = match t.latest.get(key)? {
            Some(raw) => Index::decode(key, raw.value()).map_err(TxnError::Damaged)?,
            None => return Ok(None),
        };
        if idx.expired(now) {
            self.remove(t, log, events, key, idx)?;
            return Ok(None);
        }
        Ok(Some(idx))
    }

    pub(super) fn remove(
        &mut self,
        t: &mut Tables,
        log: &mut Log,
        events: &mut Vec<WatchEvent>,
        key: &str,
        idx: Index,
    ) -> Result<KeyValue, TxnError> {
        let prev = value_at(&t.history, key, idx.create_revision, idx.mod_revision)
            .map_err(TxnError::Damaged)?;
        let rev = self.next_revision();
        let change = Change {
            key,
            create_revision: idx.create_revision,
            prev: idx.mod_revision,
            value: None,
        };
        record(t, Some(log), rev, &change, &change.encode(), Some(idx), 0)?;
        events.push(WatchEvent::Deleted {
            prev: prev.clone(),
            revision: rev,
        });
        Ok(prev)
    }

    pub(super) fn put(
        &mut self,
        t: &mut Tables,
        log: &mut Log,
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
        let cur = self.current(t, log, events, now, &key)?;
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
        let create_revision = cur.map(|c| c.create_revision).unwrap_or(rev);
        let change = Change {
            key: &key,
            create_revision,
            prev: cur.map(|c| c.mod_revision).unwrap_or(0),
            value: Some(&value),
        };
        record(
            t,
            Some(log),
            rev,
            &change,
            &change.encode(),
            cur,
            expires_at_ms,
        )?;
        let kv = KeyValue {
            key,
            value,
            create_revision,
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

    pub(super) fn delete(
        &mut self,
        t: &mut Tables,
        log: &mut Log,
        events: &mut Vec<WatchEvent>,
        now: u64,
        key: &str,
        expect: Option<Revision>,
    ) -> Result<Result<Outcome>, TxnError> {
        let Some(cur) = self.current(t, log, events, now, key)? else {
            return Ok(Ok(Outcome::Stale));
        };
        if let Some(m) = expect {
            if cur.mod_revision != m {
                return Ok(Ok(Outcome::Stale));
            }
        }
        let prev = self.remove(t, log, events, key, cur)?;
        Ok(Ok(Outcome::Done(prev)))
    }
}
