//! A size-rotated log file, as kube-apiserver's audit log uses lumberjack
//! (gopkg.in/natefinch/lumberjack.v2): lines are appended to the file until the next would
//! pass the size limit; then the file is renamed to `<name>-<timestamp>.<ext>` (UTC,
//! `2006-01-02T15-04-05.000`) and a new one is started, and backups beyond the count or age
//! limits are removed. May use: nothing internal.

use chrono::{DateTime, NaiveDateTime, Utc};
use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// lumberjack's size limit when none is given (megabytes).
const DEFAULT_MAX_SIZE_MB: u64 = 100;
const MEGABYTE: u64 = 1024 * 1024;
/// The timestamp in backup names (lumberjack's backupTimeFormat).
const BACKUP_TIME_FORMAT: &str = "%Y-%m-%dT%H-%M-%S%.3f";

/// Rotation limits (lumberjack.Logger's MaxSize, MaxBackups, MaxAge).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// Megabytes before rotating (0 = 100).
    pub max_size_mb: u32,
    /// Backups to keep (0 = all).
    pub max_backups: u32,
    /// Days to keep backups (0 = forever).
    pub max_age_days: u32,
}

/// An open, size-rotated file.
#[derive(Debug)]
pub(crate) struct RotatingFile {
    path: PathBuf,
    limits: Limits,
    file: File,
    size: u64,
}

impl RotatingFile {
    /// Opens `path` for appending (creating it and its directory), as upstream's
    /// ensureLogFile does before the server starts, so a path that cannot be written stops
    /// the start rather than the first request. A file already at the limit is rotated.
    pub(crate) fn open(path: &Path, limits: Limits) -> io::Result<RotatingFile> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(dir)?;
        }
        let file = open_append(path)?;
        let size = file.metadata()?.len();
        let mut rotating = RotatingFile {
            path: path.to_path_buf(),
            limits,
            file,
            size,
        };
        if size >= rotating.max_size() && is_regular(&rotating.path) {
            rotating.rotate(Utc::now())?;
        }
        Ok(rotating)
    }

    fn max_size(&self) -> u64 {
        match self.limits.max_size_mb {
            0 => DEFAULT_MAX_SIZE_MB * MEGABYTE,
            mb => u64::from(mb) * MEGABYTE,
        }
    }

    /// Appends `line` whole, rotating first when it would pass the limit.
    ///
    /// # Errors
    /// A line larger than the limit, or what the file system says.
    pub(crate) fn write_line(&mut self, line: &[u8]) -> io::Result<()> {
        self.write_line_at(line, Utc::now())
    }

    fn write_line_at(&mut self, line: &[u8], now: DateTime<Utc>) -> io::Result<()> {
        let len = line.len() as u64;
        if len > self.max_size() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "write length {len} exceeds maximum file size {}",
                    self.max_size()
                ),
            ));
        }
        // A device or pipe (e.g. /dev/stdout) is written to, never renamed.
        if self.size + len > self.max_size() && is_regular(&self.path) {
            self.rotate(now)?;
        }
        self.file.write_all(line)?;
        self.size += len;
        Ok(())
    }

    /// Renames the file to its backup name, starts a new one, then removes old backups.
    fn rotate(&mut self, now: DateTime<Utc>) -> io::Result<()> {
        std::fs::rename(&self.path, backup_name(&self.path, now))?;
        self.file = open_append(&self.path)?;
        self.size = 0;
        self.remove_old_backups(now)
    }

    /// lumberjack's millRunOnce without compression.
    fn remove_old_backups(&self, now: DateTime<Utc>) -> io::Result<()> {
        let Limits {
            max_backups,
            max_age_days,
            ..
        } = self.limits;
        if max_backups == 0 && max_age_days == 0 {
            return Ok(());
        }
        let mut backups = self.backups()?;
        // Newest first.
        backups.sort_by_key(|b| std::cmp::Reverse(b.0));
        let mut remove = Vec::new();
        if max_backups > 0 && backups.len() > max_backups as usize {
            remove.extend(backups.drain(max_backups as usize..));
        }
        if max_age_days > 0 {
            let cutoff = now - chrono::Duration::days(i64::from(max_age_days));
            remove.extend(backups.into_iter().filter(|(t, _)| *t < cutoff));
        }
        for (_, path) in remove {
            if let Err(err) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), error = %err, "cannot remove an old audit log backup");
            }
        }
        Ok(())
    }

    /// The backups beside the file, with the time in their names.
    fn backups(&self) -> io::Result<Vec<(DateTime<Utc>, PathBuf)>> {
        let (dir, prefix, ext) = name_parts(&self.path);
        let mut found = Vec::new();
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let name = entry.file_name();
            let Some(name) = name.to_str() else { continue };
            let stamp = name
                .strip_prefix(prefix.as_str())
                .and_then(|rest| rest.strip_prefix('-'))
                .and_then(|rest| rest.strip_suffix(ext.as_str()));
            let parsed = stamp
                .and_then(|s| NaiveDateTime::parse_from_str(s, BACKUP_TIME_FORMAT).ok())
                .map(|t| t.and_utc());
            if let Some(t) = parsed {
                found.push((t, entry.path()));
            }
        }
        Ok(found)
    }
}

/// Opens for appending with mode 0600 for a new file (lumberjack and ensureLogFile).
fn open_append(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)
}

fn is_regular(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file())
}

/// (directory, file name without extension, extension with its dot).
fn name_parts(path: &Path) -> (PathBuf, String, String) {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .map_or_else(|| PathBuf::from("."), Path::to_path_buf);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let ext = path
        .extension()
        .map(|e| format!(".{}", e.to_string_lossy()))
        .unwrap_or_default();
    let prefix = name[..name.len() - ext.len()].to_string();
    (dir, prefix, ext)
}

/// `<dir>/<name>-<UTC timestamp>.<ext>` (lumberjack's backupName).
fn backup_name(path: &Path, now: DateTime<Utc>) -> PathBuf {
    let (dir, prefix, ext) = name_parts(path);
    dir.join(format!("{prefix}-{}{ext}", now.format(BACKUP_TIME_FORMAT)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    fn at(day: u32, ms: u32) -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 3, day, 10, 20, 30).unwrap()
            + chrono::Duration::milliseconds(i64::from(ms))
    }

    #[test]
    fn backup_names_as_lumberjack() {
        assert_eq!(
            backup_name(Path::new("/var/log/audit.log"), at(1, 7)),
            Path::new("/var/log/audit-2024-03-01T10-20-30.007.log")
        );
        assert_eq!(
            backup_name(Path::new("audit"), at(1, 0)),
            Path::new("./audit-2024-03-01T10-20-30.000")
        );
    }

    #[test]
    fn rotates_at_the_size_limit_and_keeps_max_backups() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let limits = Limits {
            max_size_mb: 1,
            max_backups: 2,
            max_age_days: 0,
        };
        let mut f = RotatingFile::open(&path, limits).unwrap();
        let line = vec![b'x'; 400 * 1024];
        f.write_line_at(&line, at(1, 0)).unwrap();
        f.write_line_at(&line, at(1, 0)).unwrap();
        assert_eq!(files(dir.path()), ["audit.log"]);
        // The third line would pass 1 MiB: the file rotates first.
        f.write_line_at(&line, at(2, 0)).unwrap();
        assert_eq!(
            files(dir.path()),
            ["audit-2024-03-02T10-20-30.000.log", "audit.log"]
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 400 * 1024);
        for day in 3..6 {
            f.write_line_at(&line, at(day, 0)).unwrap();
            f.write_line_at(&line, at(day, 0)).unwrap();
        }
        // Three rotations more; only the two newest backups are kept.
        assert_eq!(
            files(dir.path()),
            [
                "audit-2024-03-04T10-20-30.000.log",
                "audit-2024-03-05T10-20-30.000.log",
                "audit.log"
            ]
        );
        let too_big = vec![b'y'; 2 * 1024 * 1024];
        assert!(f.write_line_at(&too_big, at(6, 0)).is_err());
    }

    #[test]
    fn removes_backups_past_max_age_and_reopens_appending() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        std::fs::write(dir.path().join("audit-2024-01-01T00-00-00.000.log"), "old").unwrap();
        std::fs::write(dir.path().join("unrelated.log"), "keep").unwrap();
        std::fs::write(&path, "first\n").unwrap();
        let limits = Limits {
            max_size_mb: 1,
            max_backups: 0,
            max_age_days: 7,
        };
        let mut f = RotatingFile::open(&path, limits).unwrap();
        f.write_line_at(b"second\n", at(1, 0)).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "first\nsecond\n");
        f.rotate(at(1, 0)).unwrap();
        assert_eq!(
            files(dir.path()),
            [
                "audit-2024-03-01T10-20-30.000.log",
                "audit.log",
                "unrelated.log"
            ]
        );
    }

    #[test]
    fn a_path_under_a_file_cannot_be_opened() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("plain");
        std::fs::write(&file, "").unwrap();
        let limits = Limits {
            max_size_mb: 0,
            max_backups: 0,
            max_age_days: 0,
        };
        assert!(RotatingFile::open(&file.join("audit.log"), limits).is_err());
    }
}
