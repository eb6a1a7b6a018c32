//! Reads of the embedded store, each inside one redb read transaction (a consistent
//! snapshot): a key, a page of a prefix at the latest or an older revision, and history for
//! watch replay. An older revision is rebuilt from the latest state by undoing the changes
//! recorded after it, so it is available exactly as far back as history is kept. Values live
//! in history (see `codec.rs`): the `latest` index says which entry holds a key's value.

use super::codec::{Change, Index};
use super::tables::{self, HISTORY, LATEST, META};
use crate::storage::{Error, KeyValue, ListResult, Result, Revision, WatchEvent};
use bytes::Bytes;
use redb::{ReadTransaction, ReadableTable};
use std::collections::BTreeMap;

fn db_err(e: impl Into<redb::Error>) -> Error {
    Error::unavailable("embedded store read failed").caused_by(e.into())
}

/// The (current, compacted) revisions in this snapshot.
pub(crate) fn revisions(txn: &ReadTransaction) -> Result<(Revision, Revision)> {
    let meta = txn.open_table(META).map_err(db_err)?;
    let get = |name: &str| -> Result<Revision> {
        let raw = meta.get(name).map_err(db_err)?;
        let raw = raw.ok_or_else(|| Error::corrupt(format!("store counter {name} is missing")))?;
        let b: [u8; 8] = raw
            .value()
            .try_into()
            .map_err(|_| Error::corrupt(format!("store counter {name} is damaged")))?;
        Ok(i64::from_le_bytes(b))
    };
    Ok((get(tables::META_REVISION)?, get(tables::META_COMPACTED)?))
}

/// The value `key` was given at `revision`, read from that revision's history entry.
pub(crate) fn value_at(
    history: &impl ReadableTable<u64, &'static [u8]>,
    key: &str,
    create_revision: Revision,
    revision: Revision,
) -> Result<KeyValue> {
    let missing = || {
        Error::corrupt(format!(
            "the value of key {key} at revision {revision} is missing from history"
        ))
    };
    let raw = history
        .get(revision as u64)
        .map_err(db_err)?
        .ok_or_else(missing)?;
    let change = Change::decode(revision as u64, raw.value())?;
    match change.value {
        Some(v) if change.key == key => Ok(KeyValue {
            key: key.to_string(),
            value: Bytes::copy_from_slice(v),
            create_revision,
            mod_revision: revision,
        }),
        _ => Err(missing()),
    }
}

/// The watch event recorded at `revision`, its previous value read from history.
pub(crate) fn event(
    history: &impl ReadableTable<u64, &'static [u8]>,
    revision: u64,
    change: &Change<'_>,
) -> Result<WatchEvent> {
    let prev = || value_at(history, change.key, change.create_revision, change.prev);
    Ok(match change.value {
        Some(v) => {
            let kv = KeyValue {
                key: change.key.to_string(),
                value: Bytes::copy_from_slice(v),
                create_revision: change.create_revision,
                mod_revision: revision as Revision,
            };
            if change.prev == 0 {
                WatchEvent::Created(kv)
            } else {
                WatchEvent::Updated {
                    kv,
                    prev: prev()?,
                    heartbeat: false,
                }
            }
        }
        None => WatchEvent::Deleted {
            prev: prev()?,
            revision: revision as Revision,
        },
    })
}

/// The live (unexpired) value of `key`.
pub(crate) fn get(txn: &ReadTransaction, key: &str, now_ms: u64) -> Result<Option<KeyValue>> {
    let latest = txn.open_table(LATEST).map_err(db_err)?;
    let Some(raw) = latest.get(key).map_err(db_err)? else {
        return Ok(None);
    };
    let idx = Index::decode(key, raw.value())?;
    if idx.expired(now_ms) {
        return Ok(None);
    }
    let history = txn.open_table(HISTORY).map_err(db_err)?;
    value_at(&history, key, idx.create_revision, idx.mod_revision).map(Some)
}

/// Events with revision in `(after, upto]` under `prefix`. `Err(Compacted)` when `after` is
/// older than the kept history (which, as in etcd, still holds the compacted revision itself).
pub(crate) fn history(
    txn: &ReadTransaction,
    prefix: &str,
    after: Revision,
    upto: Revision,
) -> Result<Vec<WatchEvent>> {
    let (_, compacted) = revisions(txn)?;
    if after < compacted - 1 {
        return Err(Error::Compacted {
            requested: after,
            oldest: compacted,
        });
    }
    let mut out = Vec::new();
    if upto <= after {
        return Ok(out);
    }
    let hist = txn.open_table(HISTORY).map_err(db_err)?;
    for item in hist
        .range((after + 1) as u64..=upto as u64)
        .map_err(db_err)?
    {
        let (k, v) = item.map_err(db_err)?;
        let change = Change::decode(k.value(), v.value())?;
        if change.key.starts_with(prefix) {
            out.push(event(&hist, k.value(), &change)?);
        }
    }
    Ok(out)
}

/// What a key that changed after a list's revision was at that revision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Before {
    /// Created after it.
    Absent,
    /// The value recorded at `revision`, read only when the page takes it.
    At {
        create_revision: Revision,
        revision: Revision,
    },
}

/// The keys under `prefix`, from `from` on, that changed in `(rev, current]`, each with what
/// it was at `rev` (the first change after `rev` says). No value is read: a paged LIST at an
/// older revision while writes go on (the garbage collector's pass, a client's pager) used to
/// copy every value written since, and the value before each, for every page.
fn changed_since(
    history: &impl ReadableTable<u64, &'static [u8]>,
    prefix: &str,
    from: &str,
    rev: Revision,
    current: Revision,
) -> Result<BTreeMap<String, Before>> {
    let mut overlay = BTreeMap::new();
    for item in history
        .range((rev + 1) as u64..=current as u64)
        .map_err(db_err)?
    {
        let (k, v) = item.map_err(db_err)?;
        let change = Change::decode(k.value(), v.value())?;
        if !change.key.starts_with(prefix) || change.key < from {
            continue;
        }
        if !overlay.contains_key(change.key) {
            let before = match change.prev {
                0 => Before::Absent,
                prev => Before::At {
                    create_revision: change.create_revision,
                    revision: prev,
                },
            };
            overlay.insert(change.key.to_string(), before);
        }
    }
    Ok(overlay)
}

/// One page of keys under `prefix` at `at` (None = the snapshot's latest revision).
pub(crate) fn list(
    txn: &ReadTransaction,
    prefix: &str,
    at: Option<Revision>,
    start_key: Option<&str>,
    limit: usize,
    now_ms: u64,
) -> Result<ListResult> {
    let (current, compacted) = revisions(txn)?;
    let rev = at.unwrap_or(current);
    if rev < compacted {
        return Err(Error::Compacted {
            requested: rev,
            oldest: compacted,
        });
    }
    if rev > current {
        return Err(Error::TooLargeRevision {
            requested: rev,
            current,
        });
    }
    let from = match start_key {
        Some(s) if s > prefix => s,
        _ => prefix,
    };
    let latest = txn.open_table(LATEST).map_err(db_err)?;
    let history = txn.open_table(HISTORY).map_err(db_err)?;
    let overlay = if rev < current {
        changed_since(&history, prefix, from, rev, current)?
    } else {
        BTreeMap::new()
    };
    let mut base = latest.range(from..).map_err(db_err)?;
    let mut over = overlay
        .range::<str, _>((std::ops::Bound::Included(from), std::ops::Bound::Unbounded))
        .peekable();
    let mut items = Vec::new();
    let mut next_key = None;
    let mut remaining: i64 = 0;
    let mut base_next: Option<(String, Index)> = None;
    let mut base_done = false;
    loop {
        if next_key.is_some() {
            // Past the page: count the rest without reading values, decoding indexes or
            // copying keys (a `limit=1` LIST of a large resource must not cost a full scan's
            // work). Keys that expired but are not reaped yet count too: upstream's
            // remainingItemCount is an estimate as well.
            if let Some((bk, _)) = base_next.take() {
                remaining += i64::from(!overlay.contains_key(&bk));
            }
            if !base_done {
                for item in base.by_ref() {
                    let (k, _) = item.map_err(db_err)?;
                    let key = k.value();
                    if !key.starts_with(prefix) {
                        break;
                    }
                    remaining += i64::from(!overlay.contains_key(key));
                }
            }
            remaining += over.filter(|(_, v)| **v != Before::Absent).count() as i64;
            break;
        }
        if base_next.is_none() && !base_done {
            match base.next() {
                Some(item) => {
                    let (k, v) = item.map_err(db_err)?;
                    let key = k.value();
                    if key.starts_with(prefix) {
                        base_next = Some((key.to_string(), Index::decode(key, v.value())?));
                    } else {
                        base_done = true;
                    }
                }
                None => base_done = true,
            }
        }
        // Merge the two sorted sources; the overlay wins for keys changed after `rev`.
        let take_over = match (&base_next, over.peek()) {
            (None, None) => break,
            (None, Some(_)) => true,
            (Some(_), None) => false,
            (Some((bk, _)), Some((ok, _))) => ok.as_str() <= bk.as_str(),
        };
        let kv = if take_over {
            let Some((ok, ov)) = over.next() else { break };
            if base_next.as_ref().is_some_and(|(bk, _)| bk == ok) {
                base_next = None;
            }
            match *ov {
                Before::Absent => None,
                Before::At { .. } if limit > 0 && items.len() >= limit => {
                    // Past the page: counted, its value not read.
                    next_key.get_or_insert_with(|| ok.clone());
                    remaining += 1;
                    continue;
                }
                Before::At {
                    create_revision,
                    revision,
                } => Some(value_at(&history, ok, create_revision, revision)?),
            }
        } else {
            let Some((bk, idx)) = base_next.take() else {
                break;
            };
            if overlay.contains_key(&bk) {
                continue;
            }
            if rev == current && idx.expired(now_ms) {
                continue;
            }
            if limit > 0 && items.len() >= limit {
                // Past the page: counted, its value not read.
                next_key.get_or_insert(bk);
                remaining += 1;
                continue;
            }
            Some(value_at(
                &history,
                &bk,
                idx.create_revision,
                idx.mod_revision,
            )?)
        };
        let Some(kv) = kv else { continue };
        if limit > 0 && items.len() >= limit {
            if next_key.is_none() {
                next_key = Some(kv.key.clone());
            }
            remaining += 1;
            continue;
        }
        items.push(kv);
    }
    Ok(ListResult {
        items,
        revision: rev,
        remaining: next_key.as_ref().map(|_| remaining),
        next_key,
    })
}
