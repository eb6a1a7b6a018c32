//! The write-ahead log across crashes: what a crash leaves in the store's files is replayed,
//! and nothing else.

use super::*;

/// Copies the store's files as a crash would leave them: redb's file holds its last durable
/// commit, the write-ahead log everything acknowledged since.
fn crash_image(from: &std::path::Path, to: &std::path::Path) {
    std::fs::copy(from.join(tables::FILE_NAME), to.join(tables::FILE_NAME)).unwrap();
    std::fs::copy(from.join(wal::FILE_NAME), to.join(wal::FILE_NAME)).unwrap();
}

#[tokio::test]
async fn acknowledged_writes_since_the_last_checkpoint_are_replayed_from_the_log() {
    // The writer would checkpoint a second after it opened, which a loaded machine can reach
    // before the writes below are done: this one waits an hour.
    let dir = tempfile::tempdir().unwrap();
    let image = tempfile::tempdir().unwrap();
    let opener = tables::Opener {
        checkpoint_every: Some(Duration::from_secs(3600)),
        ..Default::default()
    };
    let s = EmbeddedStore::open_with(dir.path(), Duration::ZERO, opener).unwrap();
    let mut written = Vec::new();
    for i in 0..50 {
        let key = format!("/w/{i}");
        written.push(
            within(s.create(&key, Bytes::from(key.clone()), None))
                .await
                .unwrap(),
        );
    }
    within(s.delete("/w/7", &|_| Ok(()))).await.unwrap();
    crash_image(dir.path(), image.path());
    drop(s);
    // Not checkpointed: the log still starts with the first write.
    assert_eq!(
        first_record_revision(image.path()),
        Some(written[0].mod_revision)
    );
    // A crash in the middle of the next append leaves part of a record.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(image.path().join(wal::FILE_NAME))
        .unwrap();
    std::io::Write::write_all(&mut f, &[9, 0, 0, 0, 1, 2]).unwrap();
    drop(f);

    let s = open(image.path());
    for kv in &written {
        if kv.key == "/w/7" {
            assert!(matches!(
                within(s.get(&kv.key)).await,
                Err(Error::NotFound { .. })
            ));
        } else {
            assert_eq!(&within(s.get(&kv.key)).await.unwrap(), kv);
        }
    }
    // The delete took the revision after the last create.
    assert_eq!(
        within(s.current_revision()).await.unwrap(),
        written[49].mod_revision + 1
    );
    // The replay was made durable and the log emptied.
    assert_eq!(
        std::fs::metadata(image.path().join(wal::FILE_NAME))
            .unwrap()
            .len(),
        0
    );
}

#[tokio::test]
async fn a_log_with_a_gap_in_its_revisions_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let image = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    for i in 0..3 {
        create(&s, &format!("/g/{i}"), b"v").await;
    }
    crash_image(dir.path(), image.path());
    drop(s);
    // Drop the first record: the second then starts past redb's revision.
    let path = image.path().join(wal::FILE_NAME);
    let raw = std::fs::read(&path).unwrap();
    let first = 8 + u32::from_le_bytes(raw[..4].try_into().unwrap()) as usize;
    assert!(first < raw.len(), "expected several records");
    std::fs::write(&path, &raw[first..]).unwrap();
    let err = EmbeddedStore::open(image.path(), Duration::ZERO)
        .err()
        .expect("a log with missing records must not open");
    assert!(matches!(err, Error::Corrupt { .. }), "{err:?}");
    assert!(err.to_string().contains("records are missing"), "{err}");
}

#[tokio::test]
async fn a_log_emptied_at_a_checkpoint_is_written_over_and_its_old_records_stay_unread() {
    let dir = tempfile::tempdir().unwrap();
    let image = tempfile::tempdir().unwrap();
    let s = open(dir.path());
    // One record per write, all of one size: the records written after the checkpoint end
    // exactly where an older one begins, whose checksum is valid.
    for i in 0..20 {
        create(&s, &format!("/o/{i:02}"), b"old").await;
    }
    within(s.delete("/o/05", &|_| Ok(()))).await.unwrap();
    let before = std::fs::metadata(dir.path().join(wal::FILE_NAME))
        .unwrap()
        .len();
    // The writer checkpoints a second after its log last was: redb is made durable and the
    // log emptied without cutting the file.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        let kv = set(&s, "/o/00", b"new").await;
        if first_record_revision(dir.path()) == Some(kv.mod_revision) {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the log was not emptied by a checkpoint"
        );
    }
    let latest = set(&s, "/o/01", b"new").await;
    crash_image(dir.path(), image.path());
    drop(s);
    let raw = std::fs::read(image.path().join(wal::FILE_NAME)).unwrap();
    assert!(
        raw.len() as u64 >= before,
        "a checkpoint keeps the log's file: {} bytes, {before} before",
        raw.len()
    );
    // Past the two records written since, an older one, whole and in line.
    let (len, first) = record_at(&raw, 0).expect("the first record");
    assert_eq!(first, latest.mod_revision - 1);
    let (len2, second) = record_at(&raw, len).expect("the second record");
    assert_eq!(second, latest.mod_revision);
    let (_, old) = record_at(&raw, len + len2).expect("an older record in line");
    assert!(old < first, "revision {old} is older than {first}");

    let s = open(image.path());
    assert_eq!(within(s.get("/o/00")).await.unwrap().value.as_ref(), b"new");
    assert_eq!(within(s.get("/o/01")).await.unwrap().value.as_ref(), b"new");
    assert_eq!(within(s.get("/o/02")).await.unwrap().value.as_ref(), b"old");
    assert!(matches!(
        within(s.get("/o/05")).await,
        Err(Error::NotFound { .. })
    ));
    assert_eq!(
        within(s.current_revision()).await.unwrap(),
        latest.mod_revision
    );
}

/// The revision of the first entry of the log's first record, if it has one.
fn first_record_revision(dir: &Path) -> Option<Revision> {
    let raw = std::fs::read(dir.join(wal::FILE_NAME)).ok()?;
    record_at(&raw, 0).map(|(_, first)| first)
}

/// The length of the whole record at `at` in a log's bytes, and the revision of its first
/// entry; None when there is none or its checksum fails.
fn record_at(raw: &[u8], at: usize) -> Option<(usize, Revision)> {
    let len = u32::from_le_bytes(raw.get(at..at + 4)?.try_into().ok()?) as usize;
    let crc = u32::from_le_bytes(raw.get(at + 4..at + 8)?.try_into().ok()?);
    let payload = raw.get(at + 8..at + 8 + len)?;
    if len < 8 || crc32fast::hash(payload) != crc {
        return None;
    }
    let first = Revision::from_le_bytes(payload[..8].try_into().ok()?);
    Some((8 + len, first))
}

/// A store holding `/c/0`..`/c/4` with their records still in its log, and the log's path.
async fn five_keys_in_the_log(dir: &Path) -> (EmbeddedStore, std::path::PathBuf) {
    let s = open(dir);
    for i in 0..5 {
        create(&s, &format!("/c/{i}"), b"v").await;
    }
    let path = dir.join(wal::FILE_NAME);
    assert!(std::fs::metadata(&path).unwrap().len() > 0);
    (s, path)
}

/// The five keys, read from the store reopened in `dir`.
async fn assert_five_kept(dir: &Path) {
    let s = reopen(dir);
    let all = within(s.list("/c/", ListOptions::default())).await.unwrap();
    assert_eq!(all.items.len(), 5);
}

#[tokio::test]
async fn a_clean_stop_leaves_an_empty_log() {
    let dir = tempfile::tempdir().unwrap();
    let (s, path) = five_keys_in_the_log(dir.path()).await;
    // Dropping the store joins its writer: its last checkpoint rewinds the log, then the stop
    // cuts the file.
    drop(s);
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    assert_five_kept(dir.path()).await;
}

#[tokio::test]
async fn closing_a_store_still_held_empties_the_log_and_refuses_later_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (s, path) = five_keys_in_the_log(dir.path()).await;
    // What `kapi serve` does once it has drained: tasks may still hold the store.
    s.close();
    assert_eq!(std::fs::metadata(&path).unwrap().len(), 0);
    let refused = within(s.create("/c/late", Bytes::from_static(b"v"), None)).await;
    assert!(refused.is_err(), "{refused:?}");
    drop(s);
    assert_five_kept(dir.path()).await;
}
