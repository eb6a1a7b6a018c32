//! The embedded store's redb tables and the opening of its file: a data file that is not a
//! redb database, or a redb database without our format marker, is refused with an error
//! naming the file before anything is written to it.

use super::codec::{decode_v1_record, Change};
use crate::storage::{Error, Result, Revision};
use redb::{
    Database, DatabaseError, ReadableDatabase, ReadableTable, TableDefinition, TableHandle,
};
use std::io::Read;
use std::path::{Path, PathBuf};

/// Store-wide values: format marker, current revision, compacted revision.
pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("kapi_meta");
/// Key → its [`super::codec::Index`]: create and mod revision, expiry.
pub(crate) const LATEST: TableDefinition<&str, &[u8]> = TableDefinition::new("kapi_latest");
/// Revision → the [`super::codec::Change`] made at it; a put's entry holds the value.
pub(crate) const HISTORY: TableDefinition<u64, &[u8]> = TableDefinition::new("kapi_history");
/// (expiry in Unix ms, key) of keys with a time-to-live.
pub(crate) const EXPIRY: TableDefinition<(u64, &str), ()> = TableDefinition::new("kapi_expiry");

pub(crate) const META_FORMAT: &str = "format";
pub(crate) const META_REVISION: &str = "revision";
pub(crate) const META_COMPACTED: &str = "compacted";
/// Format marker written into every store this code creates.
pub(crate) const FORMAT: &[u8] = b"kapi-embedded-store/2";
/// The previous format: values in `latest`, whole watch events in `history`.
const FORMAT_1: &[u8] = b"kapi-embedded-store/1";
/// File name of the store inside the data directory.
pub(crate) const FILE_NAME: &str = "kapi.redb";
/// Revision of an empty store (like etcd, the first write gets revision 2).
const INITIAL_REVISION: Revision = 1;

const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// redb's page cache, in bytes (a tenth of it for pages a write transaction dirtied). redb's
/// default, 1 GiB, is heap memory that grows with the file: after the API bench's ~80,000
/// lease updates the server held 75 MiB (51 MiB with a 32 MiB cap, and no slower). Reads that
/// miss it are `pread`s served by the OS page cache, and the watch cache serves most reads.
/// redb drops a page's entry when the page is freed and the whole cache when the file is
/// resized, so under churn it fills and empties again, and RSS with it: 8 MiB keeps that
/// swing small (32 MiB moved the watchers soak's RSS by ~33 MB) at 96% of 32 MiB's UPDATE
/// rate and 99% of its CREATE rate at c=64.
const PAGE_CACHE_BYTES: usize = 8 << 20;

fn builder() -> redb::Builder {
    let mut b = redb::Builder::new();
    b.set_cache_size(PAGE_CACHE_BYTES);
    b
}

/// An opened store file and its persisted counters.
pub(crate) struct Opened {
    pub db: Database,
    pub opener: Opener,
    /// The write-ahead log, replayed into `db` and emptied.
    pub wal: super::wal::Wal,
    pub revision: Revision,
    pub compacted: Revision,
}

/// How to (re)open the store file.
#[derive(Clone, Default)]
pub(crate) struct Opener {
    pub path: PathBuf,
    /// Test hook: while set, writes to the file fail as on a full disk.
    #[cfg(test)]
    pub fault: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Test hook: while set, writes to the write-ahead log fail as on a full disk.
    #[cfg(test)]
    pub wal_fault: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
    /// Test hook: how long the log may go without a checkpoint, in place of
    /// `wal::CHECKPOINT_EVERY` (a test that needs writes still in the log sets it long).
    #[cfg(test)]
    pub checkpoint_every: Option<std::time::Duration>,
}

impl Opener {
    /// How long the log may go without a checkpoint.
    pub(crate) fn checkpoint_every(&self) -> std::time::Duration {
        #[cfg(test)]
        if let Some(every) = self.checkpoint_every {
            return every;
        }
        super::wal::CHECKPOINT_EVERY
    }

    fn create(&self) -> Result<Database, DatabaseError> {
        #[cfg(test)]
        if let Some(fault) = &self.fault {
            let file = std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(&self.path)?;
            let backend = faulty::Faulty {
                inner: redb::backends::FileBackend::new(file)?,
                fail: fault.clone(),
            };
            return builder().create_with_backend(backend);
        }
        builder().create(&self.path)
    }

    /// Reopens the file after an I/O error (redb refuses every call after one), repairing it
    /// as after a crash, and reads the persisted counters.
    pub(super) fn reopen(&self) -> Result<Opened> {
        let db = self.create().map_err(|e| open_error(&self.path, e))?;
        let txn = db.begin_read().map_err(|e| corrupt(&self.path, e))?;
        let found = check_tables(&txn, &self.path)?
            .ok_or_else(|| damaged(&self.path, "the store tables are gone"))?;
        drop(txn);
        let (revision, compacted) = upgrade(&db, &self.path, found)?;
        let (wal, revision) = super::wal::recover(&db, self, revision, true)?;
        Ok(Opened {
            db,
            opener: self.clone(),
            wal,
            revision,
            compacted,
        })
    }
}

/// Opens (creating when absent) the store under `dir`; `opener` carries test hooks.
pub(crate) fn open_with(dir: &Path, mut opener: Opener) -> Result<Opened> {
    if dir.exists() && !dir.is_dir() {
        return Err(Error::corrupt(format!(
            "data directory {} is not a directory",
            dir.display()
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| io_error("cannot create data directory", dir, e))?;
    let path = dir.join(FILE_NAME);
    opener.path = path.clone();
    check_magic(&path)?;
    check_read_only(&path)?;
    let db = opener.create().map_err(|e| open_error(&path, e))?;
    let txn = db.begin_read().map_err(|e| corrupt(&path, e))?;
    let found = check_tables(&txn, &path)?;
    drop(txn);
    let (revision, compacted) = match found {
        Some(found) => upgrade(&db, &path, found)?,
        None => initialise(&db, &path)?,
    };
    let (wal, revision) = super::wal::recover(&db, &opener, revision, false)?;
    Ok(Opened {
        db,
        opener,
        wal,
        revision,
        compacted,
    })
}

/// Refuses a non-empty file that does not start with redb's magic number.
fn check_magic(path: &Path) -> Result<()> {
    let mut f = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(io_error("cannot read", path, e)),
    };
    let mut head = Vec::with_capacity(REDB_MAGIC.len());
    (&mut f)
        .take(REDB_MAGIC.len() as u64)
        .read_to_end(&mut head)
        .map_err(|e| io_error("cannot read", path, e))?;
    if head.is_empty() || head == REDB_MAGIC {
        return Ok(());
    }
    Err(Error::corrupt(format!(
        "{} is not a kapi data file (unknown format); move it away or choose another --data-dir",
        path.display()
    )))
}

fn open_error(path: &Path, e: DatabaseError) -> Error {
    match e {
        // The variant says all there is to say: redb's text would only repeat it.
        DatabaseError::DatabaseAlreadyOpen => Error::unavailable(format!(
            "{} is in use by another process (is another kapi serving this --data-dir?)",
            path.display()
        )),
        DatabaseError::Storage(redb::StorageError::Io(io)) => io_error("cannot open", path, io),
        other => Error::corrupt(format!("{} cannot be opened", path.display())).caused_by(other),
    }
}

/// The file at `path` is damaged, as redb found (`e`).
fn corrupt(path: &Path, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::corrupt(path.display().to_string()).caused_by(e)
}

/// The file at `path` is damaged, as this module found.
fn damaged(path: &Path, what: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("{}: {what}", path.display()))
}

/// `step` (e.g. "cannot upgrade") failed on `path` with the I/O or redb error `e`.
fn io_error(step: &str, path: &Path, e: impl std::error::Error + Send + Sync + 'static) -> Error {
    Error::io(format!("{step} {}", path.display())).caused_by(e)
}

fn read_i64(
    raw: Option<redb::AccessGuard<'_, &[u8]>>,
    path: &Path,
    name: &str,
) -> Result<Revision> {
    let raw = raw.ok_or_else(|| damaged(path, format!("the {name} counter is missing")))?;
    let bytes: [u8; 8] = raw
        .value()
        .try_into()
        .map_err(|_| damaged(path, format!("the {name} counter is damaged")))?;
    Ok(i64::from_le_bytes(bytes))
}

/// Checks an existing file through a read-only handle first, so that a database of another
/// program is refused before the writable open touches it. A file that needs crash recovery
/// cannot be opened read-only; it is checked after the writable open has repaired it.
fn check_read_only(path: &Path) -> Result<()> {
    if std::fs::metadata(path)
        .map(|m| m.len() == 0)
        .unwrap_or(true)
    {
        return Ok(());
    }
    match redb::ReadOnlyDatabase::open(path) {
        Ok(db) => {
            let txn = db.begin_read().map_err(|e| corrupt(path, e))?;
            check_tables(&txn, path).map(|_| ())
        }
        Err(DatabaseError::RepairAborted) => Ok(()),
        Err(e) => Err(open_error(path, e)),
    }
}

/// What an existing store file holds.
struct Found {
    revision: Revision,
    compacted: Revision,
    /// Written by a kapi of format 1: upgrade before use.
    format_1: bool,
}

/// Checks our format marker; None for a brand-new (table-less) database.
fn check_tables(txn: &redb::ReadTransaction, path: &Path) -> Result<Option<Found>> {
    let names: Vec<String> = txn
        .list_tables()
        .map_err(|e| corrupt(path, e))?
        .map(|t| t.name().to_string())
        .collect();
    if names.is_empty() {
        return Ok(None);
    }
    if !names.iter().any(|n| n == META.name()) {
        return Err(Error::corrupt(format!(
            "{} is a database of another program (tables: {}); move it away or choose another --data-dir",
            path.display(),
            names.join(", ")
        )));
    }
    let meta = txn.open_table(META).map_err(|e| corrupt(path, e))?;
    let format = meta.get(META_FORMAT).map_err(|e| corrupt(path, e))?;
    let format_1 = match format {
        Some(f) if f.value() == FORMAT => false,
        Some(f) if f.value() == FORMAT_1 => true,
        Some(f) => {
            return Err(Error::corrupt(format!(
                "{} has unsupported format {:?} (this kapi reads {:?})",
                path.display(),
                String::from_utf8_lossy(f.value()),
                String::from_utf8_lossy(FORMAT)
            )))
        }
        None => return Err(damaged(path, "the format marker is missing")),
    };
    let revision = read_i64(
        meta.get(META_REVISION).map_err(|e| corrupt(path, e))?,
        path,
        "revision",
    )?;
    let compacted = read_i64(
        meta.get(META_COMPACTED).map_err(|e| corrupt(path, e))?,
        path,
        "compacted",
    )?;
    for t in [LATEST.name(), HISTORY.name(), EXPIRY.name()] {
        if !names.iter().any(|n| n == t) {
            return Err(damaged(path, format!("table {t} is missing")));
        }
    }
    Ok(Some(Found {
        revision,
        compacted,
        format_1,
    }))
}

/// The store's (revision, compacted) after upgrading a format-1 store, if it is one.
///
/// Format 1 kept each key's value in `latest` and whole events (value and previous value) in
/// `history`. The upgrade moves every live value into the history entry of its mod revision,
/// shrinks `latest` to indexes, drops the older history and records the upgrade as one more
/// revision, compacted: watches and lists from before it get "too old" and relist, as after
/// any compaction. One transaction, so a crash leaves the store in format 1 or 2, never
/// between. The live values are held in memory while it runs.
fn upgrade(db: &Database, path: &Path, found: Found) -> Result<(Revision, Revision)> {
    if !found.format_1 {
        return Ok((found.revision, found.compacted));
    }
    let io = |e: redb::Error| io_error("cannot upgrade", path, e);
    let revision = found.revision + 1;
    let mut txn = db.begin_write().map_err(|e| io(e.into()))?;
    txn.set_durability(redb::Durability::Immediate)
        .map_err(|e| io_error("cannot upgrade", path, e))?;
    let keys = {
        let mut latest = txn.open_table(LATEST).map_err(|e| io(e.into()))?;
        let mut history = txn.open_table(HISTORY).map_err(|e| io(e.into()))?;
        let mut live = Vec::new();
        for item in latest.iter().map_err(|e| io(e.into()))? {
            let (k, v) = item.map_err(|e| io(e.into()))?;
            let (idx, value) = decode_v1_record(k.value(), v.value())?;
            live.push((k.value().to_string(), idx, value.to_vec()));
        }
        history.retain(|_, _| false).map_err(|e| io(e.into()))?;
        for (key, idx, value) in &live {
            let key: &str = key;
            let change = Change {
                key,
                create_revision: idx.create_revision,
                prev: 0,
                value: Some(value),
            };
            history
                .insert(idx.mod_revision as u64, change.encode().as_slice())
                .map_err(|e| io(e.into()))?;
            latest
                .insert(key, idx.encode().as_slice())
                .map_err(|e| io(e.into()))?;
        }
        let mut meta = txn.open_table(META).map_err(|e| io(e.into()))?;
        meta.insert(META_FORMAT, FORMAT).map_err(|e| io(e.into()))?;
        for name in [META_REVISION, META_COMPACTED] {
            meta.insert(name, revision.to_le_bytes().as_slice())
                .map_err(|e| io(e.into()))?;
        }
        live.len()
    };
    txn.commit().map_err(|e| io(e.into()))?;
    tracing::info!(
        path = %path.display(),
        keys,
        revision,
        "embedded store: upgraded the data file from format 1 to 2"
    );
    Ok((revision, revision))
}

fn initialise(db: &Database, path: &Path) -> Result<(Revision, Revision)> {
    let io = |e: redb::Error| io_error("cannot initialise", path, e);
    let txn = db.begin_write().map_err(|e| io(e.into()))?;
    {
        let mut meta = txn.open_table(META).map_err(|e| io(e.into()))?;
        meta.insert(META_FORMAT, FORMAT).map_err(|e| io(e.into()))?;
        meta.insert(META_REVISION, INITIAL_REVISION.to_le_bytes().as_slice())
            .map_err(|e| io(e.into()))?;
        meta.insert(META_COMPACTED, 0i64.to_le_bytes().as_slice())
            .map_err(|e| io(e.into()))?;
        txn.open_table(LATEST).map_err(|e| io(e.into()))?;
        txn.open_table(HISTORY).map_err(|e| io(e.into()))?;
        txn.open_table(EXPIRY).map_err(|e| io(e.into()))?;
    }
    txn.commit().map_err(|e| io(e.into()))?;
    Ok((INITIAL_REVISION, 0))
}

#[cfg(test)]
mod faulty {
    //! A file backend that fails writes on demand, like a full disk.
    use std::io;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[derive(Debug)]
    pub(crate) struct Faulty {
        pub inner: redb::backends::FileBackend,
        pub fail: Arc<AtomicBool>,
    }

    impl Faulty {
        fn check(&self) -> io::Result<()> {
            if self.fail.load(Ordering::Acquire) {
                return Err(io::Error::new(
                    io::ErrorKind::StorageFull,
                    "No space left on device (injected)",
                ));
            }
            Ok(())
        }
    }

    impl redb::StorageBackend for Faulty {
        fn len(&self) -> io::Result<u64> {
            self.inner.len()
        }
        fn read(&self, offset: u64, out: &mut [u8]) -> io::Result<()> {
            self.inner.read(offset, out)
        }
        fn set_len(&self, len: u64) -> io::Result<()> {
            self.check()?;
            self.inner.set_len(len)
        }
        fn sync_data(&self) -> io::Result<()> {
            self.check()?;
            self.inner.sync_data()
        }
        fn write(&self, offset: u64, data: &[u8]) -> io::Result<()> {
            self.check()?;
            self.inner.write(offset, data)
        }
        fn close(&self) -> io::Result<()> {
            self.inner.close()
        }
    }
}
