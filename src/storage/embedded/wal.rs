//! The embedded store's write-ahead log, `kapi.wal` next to the redb file.
//!
//! A batch of writes is made durable by appending one record to this file and one fdatasync,
//! a sequential write of a few KiB, instead of redb's durable commit, which writes and syncs
//! every B-tree page the batch dirtied (a create with a random name dirties its own leaf: the
//! commit was ~80% of a create batch's time). The batch is then committed to redb without an
//! fsync (`Durability::None`), so readers see it; every [`CHECKPOINT_EVERY`] or
//! [`CHECKPOINT_BYTES`] the writer makes redb durable (`Durability::Immediate`) and empties
//! the log. This is etcd's arrangement of its WAL and bbolt.
//!
//! Emptying the log at a checkpoint writes nothing: the next record is written over the
//! start of the file, and the file keeps its length (at most about a checkpoint's worth of
//! records). Writing over blocks the file already has lets fdatasync flush the data alone;
//! an append also changes the file's size, which the filesystem journals first (about a
//! quarter more CPU and latency per fdatasync on ext4). What lies past the last record
//! written since is older: records whose revisions redb already has durably, or the middle
//! of one.
//!
//! Opening the store replays the records whose revisions redb does not have yet, in one
//! durable transaction, then empties the log, cutting the file to nothing (as a clean stop
//! does after its last checkpoint). A record is
//! `[payload length u32][CRC-32 of the payload u32][payload]`; a torn or damaged record at the
//! end is what a crash during an append leaves, and is dropped: its batch was never
//! acknowledged. The payload is a sequence of `[revision u64][expiry in Unix ms u64][length
//! u32][history entry]`, the history entry being the batch's [`Change`] as the `history`
//! table stores it; replaying one is the same table update the writer made
//! ([`super::apply::record`]). The log ends at the first record that is damaged or does not
//! start after the record before it (an older one, left past the end). Revisions run on
//! without gaps from record to record, which replay checks.

use super::apply::{record, Tables};
use super::codec::{Change, Index};
use super::tables::{Opener, EXPIRY, HISTORY, LATEST, META, META_REVISION};
use crate::storage::{Error, Result, Revision};
use redb::{Database, Durability, ReadableTable};
use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// File name of the log inside the data directory.
pub(crate) const FILE_NAME: &str = "kapi.wal";
/// Longest time between two durable redb commits.
pub(crate) const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// Largest log before a durable redb commit empties it.
pub(crate) const CHECKPOINT_BYTES: u64 = 64 << 20;

const HEADER: usize = 8;
const ENTRY_HEADER: usize = 8 + 8 + 4;

/// The open log.
pub(crate) struct Wal {
    file: File,
    path: PathBuf,
    /// Bytes of whole records; an append that fails is cut back to this.
    len: u64,
    /// An append failed and cutting it back failed too: the end of the file may hold a record
    /// that was never acknowledged, and must be cut before anything else is appended.
    torn: bool,
    /// The last append failed (a full disk, a file made read-only): until one succeeds, the
    /// writer leaves redb alone, so that a failed write of redb's own does not close the
    /// database under its readers.
    failing: bool,
    /// Test hook: while set, appends fail as on a full disk.
    #[cfg(test)]
    fault: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// Why an append failed; the log is as before the append unless [`Wal::torn`] says so.
#[derive(Debug, thiserror::Error)]
#[error("cannot append to the write-ahead log {path}")]
pub(crate) struct AppendError {
    path: String,
    #[source]
    source: std::io::Error,
}

/// The entries of one batch, encoded as a record's payload.
#[derive(Default)]
pub(crate) struct Log {
    buf: Vec<u8>,
}

impl Log {
    /// Adds the history entry `change` (encoded) written at `revision`.
    pub(super) fn push(&mut self, revision: Revision, expires_at_ms: u64, change: &[u8]) {
        if self.buf.is_empty() {
            self.buf.extend_from_slice(&[0; HEADER]);
        }
        self.buf.extend_from_slice(&(revision as u64).to_le_bytes());
        self.buf.extend_from_slice(&expires_at_ms.to_le_bytes());
        self.buf
            .extend_from_slice(&(change.len() as u32).to_le_bytes());
        self.buf.extend_from_slice(change);
    }

    /// Bytes of the entries so far.
    pub(super) fn len(&self) -> u64 {
        self.buf.len() as u64
    }

    pub(super) fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The whole record: header filled in.
    fn record(&mut self) -> &[u8] {
        let payload = &self.buf[HEADER..];
        let len = payload.len() as u32;
        let crc = crc32fast::hash(payload);
        self.buf[..4].copy_from_slice(&len.to_le_bytes());
        self.buf[4..8].copy_from_slice(&crc.to_le_bytes());
        &self.buf
    }
}

/// One entry read back from a record.
struct Entry<'a> {
    revision: Revision,
    expires_at_ms: u64,
    change: &'a [u8],
}

impl Wal {
    /// Appends `log` as one record and waits for it to be on disk. Returns the length before
    /// it, for [`Wal::undo`].
    pub(super) fn append(&mut self, log: &mut Log) -> std::result::Result<u64, AppendError> {
        let fail = |wal: &Wal, source| AppendError {
            path: wal.path.display().to_string(),
            source,
        };
        if self.torn {
            self.cut().map_err(|e| {
                self.failing = true;
                fail(self, e)
            })?;
        }
        let record = log.record();
        let written = self.injected_fault().and_then(|()| {
            // Over the file's old records when it has them (see the module's comment).
            self.file.write_all_at(record, self.len)?;
            let syncing = std::time::Instant::now();
            self.file.sync_data()?;
            crate::metrics::global()
                .storage
                .fsync(syncing.elapsed().as_secs_f64());
            Ok(())
        });
        match written {
            Ok(()) => {
                let before = self.len;
                self.len += record.len() as u64;
                self.failing = false;
                Ok(before)
            }
            Err(e) => {
                self.failing = true;
                self.undo(self.len);
                Err(fail(self, e))
            }
        }
    }

    /// Cuts the log back to `len` (as [`Wal::append`] returned it): the record after it was
    /// not acknowledged. When that fails, the next append tries again first.
    pub(super) fn undo(&mut self, len: u64) {
        self.len = len;
        self.failing = true;
        if let Err(e) = self.cut() {
            tracing::error!(error = %e, path = %self.path.display(), "embedded store: cannot cut an unacknowledged record off the write-ahead log; will retry before the next append");
            self.torn = true;
        }
    }

    #[cfg(test)]
    fn injected_fault(&self) -> std::io::Result<()> {
        use std::sync::atomic::Ordering;
        match &self.fault {
            Some(f) if f.load(Ordering::Acquire) => Err(std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "No space left on device (injected)",
            )),
            _ => Ok(()),
        }
    }

    #[cfg(not(test))]
    fn injected_fault(&self) -> std::io::Result<()> {
        Ok(())
    }

    /// Cuts the file back to its whole records.
    fn cut(&mut self) -> std::io::Result<()> {
        self.injected_fault()?;
        self.file.set_len(self.len)?;
        self.file.sync_data()?;
        self.torn = false;
        Ok(())
    }

    /// Empties the log once redb holds everything in it durably, writing nothing: the next
    /// record goes over the start of the file (see the module's comment). A record that was
    /// never acknowledged and could not be cut off is cut first (its revisions are to be
    /// used again).
    pub(super) fn rewind(&mut self) {
        if self.torn {
            self.clear();
        } else {
            self.len = 0;
        }
    }

    /// Empties the log and cuts the file to nothing (when the store opens, and when it stops
    /// after its last checkpoint: rare, so the file is cut even when it is empty already). A
    /// failure leaves records that replay will skip (their revisions are in redb), so it is
    /// only logged.
    pub(super) fn clear(&mut self) {
        let saved = self.len;
        self.len = 0;
        if let Err(e) = self.cut() {
            self.len = saved;
            tracing::warn!(error = %e, path = %self.path.display(), "embedded store: cannot empty the write-ahead log; its records stay and are skipped on replay");
        }
    }

    /// While appends fail: whether the file takes a write again (cutting it to its whole
    /// records), checked before a batch touches redb, so that a file that refuses writes
    /// fails the batch here rather than in the middle of redb's transaction.
    pub(super) fn probe(&mut self) -> std::result::Result<(), AppendError> {
        if !self.failing {
            return Ok(());
        }
        self.cut().map_err(|source| AppendError {
            path: self.path.display().to_string(),
            source,
        })
    }

    /// Carries [`Wal::failing`] over to the log of a reopened store.
    pub(super) fn inherit(mut self, old: &Wal) -> Wal {
        self.failing |= old.failing;
        self
    }

    /// Records that the disk refused a write elsewhere (the redb file): as after a failed
    /// append, [`Wal::probe`] must succeed before the next one.
    pub(super) fn mark_failing(&mut self) {
        self.failing = true;
    }

    /// Whether the last append failed: the disk takes no writes now.
    pub(super) fn failing(&self) -> bool {
        self.failing
    }

    /// Bytes in the log.
    pub(super) fn len(&self) -> u64 {
        self.len
    }
}

/// Opens the log of the store whose redb file is `store` (creating it when absent), replays
/// into `db` the records after `revision` in one durable transaction and empties the log.
/// Returns the log and the revision after replay.
///
/// After a write failure (`reopening`) the replay is not made durable and the log is kept,
/// cut to its whole records: the log still holds the batches durably, and a disk that just
/// refused a write (full, read-only) could not take the durable commit; the next checkpoint
/// makes redb durable once writes work again.
pub(crate) fn recover(
    db: &Database,
    opener: &Opener,
    revision: Revision,
    reopening: bool,
) -> Result<(Wal, Revision)> {
    let path = opener.path.with_file_name(FILE_NAME);
    let io = |step: &str, e: std::io::Error| {
        Error::io(format!("{step} {}", path.display())).caused_by(e)
    };
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        // Its records are read first, to be replayed.
        .truncate(false)
        .mode(0o600)
        .open(&path)
        .map_err(|e| io("cannot open", e))?;
    let mut raw = Vec::new();
    file.read_to_end(&mut raw)
        .map_err(|e| io("cannot read", e))?;
    let mut wal = Wal {
        file,
        path: path.clone(),
        len: raw.len() as u64,
        torn: false,
        failing: false,
        #[cfg(test)]
        fault: opener.wal_fault.clone(),
    };
    let records = records(&raw);
    let whole: usize = records.iter().map(|r| HEADER + r.len()).sum();
    if whole < raw.len() {
        // After a crash: part of a record whose write was never acknowledged, or what a
        // rewound log held before (see the module's comment). A clean stop leaves neither.
        tracing::info!(
            path = %path.display(),
            bytes = raw.len() - whole,
            "embedded store: ignoring the end of the write-ahead log past its last whole record (a write that was never acknowledged, or records already in the store)"
        );
    }
    let revision = replay(db, &path, revision, &records, !reopening)?;
    if reopening {
        wal.len = whole as u64;
        if whole < raw.len() {
            wal.undo(wal.len);
        }
        return Ok((wal, revision));
    }
    wal.clear();
    if wal.len != 0 {
        return Err(Error::io(format!("cannot empty {}", path.display())));
    }
    Ok((wal, revision))
}

/// The whole, undamaged records at the start of `raw` (their payloads), up to the first that
/// does not start after the one before it: records of an earlier pass over the file lie past
/// the last one written since the log was emptied (see the module's comment).
fn records(raw: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut last_first = Revision::MIN;
    while let Some(header) = raw.get(at..at + HEADER) {
        let len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let crc = u32::from_le_bytes([header[4], header[5], header[6], header[7]]);
        let Some(payload) = raw.get(at + HEADER..at + HEADER + len) else {
            break;
        };
        if len == 0 || crc32fast::hash(payload) != crc {
            break;
        }
        // A payload too short for a revision is damaged, which `entries` reports.
        if let Some(first) = payload.get(..8) {
            let first = Revision::from_le_bytes(first.try_into().unwrap_or_default());
            if first <= last_first {
                break;
            }
            last_first = first;
        }
        out.push(payload);
        at += HEADER + len;
    }
    out
}

/// The entries of one record's payload.
fn entries<'a>(path: &Path, payload: &'a [u8]) -> Result<Vec<Entry<'a>>> {
    let damaged = || {
        Error::corrupt(format!(
            "{}: a record has a valid checksum but cannot be read",
            path.display()
        ))
    };
    let mut out = Vec::new();
    let mut rest = payload;
    while !rest.is_empty() {
        let head = rest.get(..ENTRY_HEADER).ok_or_else(damaged)?;
        let revision = i64::from_le_bytes(head[..8].try_into().map_err(|_| damaged())?);
        let expires_at_ms = u64::from_le_bytes(head[8..16].try_into().map_err(|_| damaged())?);
        let len = u32::from_le_bytes(head[16..20].try_into().map_err(|_| damaged())?) as usize;
        let change = rest
            .get(ENTRY_HEADER..ENTRY_HEADER + len)
            .ok_or_else(damaged)?;
        out.push(Entry {
            revision,
            expires_at_ms,
            change,
        });
        rest = &rest[ENTRY_HEADER + len..];
    }
    Ok(out)
}

/// Applies the entries after `revision` to `db`; the revision after them.
fn replay(
    db: &Database,
    path: &Path,
    revision: Revision,
    records: &[&[u8]],
    durable: bool,
) -> Result<Revision> {
    let io = |e: redb::Error| Error::io(format!("cannot replay {}", path.display())).caused_by(e);
    let mut entries_all = Vec::new();
    for payload in records {
        entries_all.extend(entries(path, payload)?);
    }
    let mut current = revision;
    let todo: Vec<&Entry> = entries_all
        .iter()
        .filter(|e| e.revision > revision)
        .collect();
    if todo.is_empty() {
        return Ok(revision);
    }
    let mut txn = db.begin_write().map_err(|e| io(e.into()))?;
    txn.set_durability(if durable {
        Durability::Immediate
    } else {
        Durability::None
    })
    .map_err(|e| Error::io(format!("cannot replay {}", path.display())).caused_by(e))?;
    {
        let mut t = Tables {
            latest: txn.open_table(LATEST).map_err(|e| io(e.into()))?,
            history: txn.open_table(HISTORY).map_err(|e| io(e.into()))?,
            expiry: txn.open_table(EXPIRY).map_err(|e| io(e.into()))?,
        };
        for e in todo {
            if e.revision != current + 1 {
                return Err(Error::corrupt(format!(
                    "{}: revision {} follows {current}; records are missing",
                    path.display(),
                    e.revision
                )));
            }
            let change = Change::decode(e.revision as u64, e.change)?;
            let old = match t.latest.get(change.key).map_err(|e| io(e.into()))? {
                Some(raw) => Some(Index::decode(change.key, raw.value())?),
                None => None,
            };
            record(
                &mut t,
                None,
                e.revision,
                &change,
                e.change,
                old,
                e.expires_at_ms,
            )
            .map_err(|e| Error::io(format!("cannot replay {}", path.display())).caused_by(e))?;
            current = e.revision;
        }
        let mut meta = txn.open_table(META).map_err(|e| io(e.into()))?;
        meta.insert(META_REVISION, current.to_le_bytes().as_slice())
            .map_err(|e| io(e.into()))?;
    }
    txn.commit().map_err(|e| io(e.into()))?;
    tracing::info!(
        path = %path.display(),
        from = revision,
        to = current,
        "embedded store: replayed the write-ahead log"
    );
    Ok(current)
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("path", &self.path)
            .field("len", &self.len)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One record holding one entry at `revision`.
    fn one_record(revision: Revision) -> Vec<u8> {
        let mut log = Log::default();
        log.push(revision, 0, b"change");
        log.record().to_vec()
    }

    #[test]
    fn the_log_ends_where_a_record_does_not_start_after_the_one_before() {
        // Two records written since the log was rewound, then one of an earlier pass, whole
        // and in line (what the file holds past them).
        let raw = [one_record(10), one_record(11), one_record(3)].concat();
        let found: Vec<Revision> = records(&raw)
            .iter()
            .map(|p| Revision::from_le_bytes(p[..8].try_into().unwrap()))
            .collect();
        assert_eq!(found, [10, 11]);
    }
}
