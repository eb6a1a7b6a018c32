//! The table updates of one change, shared by the writer and the replay of the write-ahead
//! log, so that a replayed write leaves the tables exactly as the original did.

use super::codec::{Change, Index};
use super::wal::Log;
use crate::storage::Revision;
use redb::Table;

/// The tables a write transaction changes.
pub(crate) struct Tables<'t> {
    pub latest: Table<'t, &'static str, &'static [u8]>,
    pub history: Table<'t, u64, &'static [u8]>,
    pub expiry: Table<'t, (u64, &'static str), ()>,
}

/// Records `change` (`encoded` is [`Change::encode`] of it) as the change at `revision`: the
/// key's index (from `old`, its index before), its expiry entry and its history entry; and in
/// `log` when one is given.
pub(super) fn record(
    t: &mut Tables,
    log: Option<&mut Log>,
    revision: Revision,
    change: &Change,
    encoded: &[u8],
    old: Option<Index>,
    expires_at_ms: u64,
) -> Result<(), redb::Error> {
    let key = change.key;
    if let Some(old) = old {
        if old.expires_at_ms != 0 {
            t.expiry.remove((old.expires_at_ms, key))?;
        }
    }
    match change.value {
        Some(_) => {
            let idx = Index {
                create_revision: change.create_revision,
                mod_revision: revision,
                expires_at_ms,
            };
            t.latest.insert(key, idx.encode().as_slice())?;
            if expires_at_ms != 0 {
                t.expiry.insert((expires_at_ms, key), ())?;
            }
        }
        None => {
            t.latest.remove(key)?;
        }
    }
    t.history.insert(revision as u64, encoded)?;
    if let Some(log) = log {
        log.push(revision, expires_at_ms, encoded);
    }
    Ok(())
}
