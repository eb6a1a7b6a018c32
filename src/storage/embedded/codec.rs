//! Byte layout of the embedded store's table values. Fixed little-endian headers followed by
//! the raw value; decoding checks lengths and reports damage as [`Error::Corrupt`].
//!
//! Format 2 stores each value once, in the history entry of the revision that wrote it, as
//! etcd's bbolt backend does (its key bucket is keyed by revision). The `latest` table holds
//! only a small [`Index`] per key pointing at that entry, so an update rewrites one small index
//! leaf and appends to the end of history instead of rewriting a B-tree leaf full of values:
//! a commit of a batch writes several times fewer pages, and each fsync has less to flush.

use crate::storage::{Error, Result, Revision};

/// The latest state of one key (table `latest`): where its value is and when it expires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Index {
    pub create_revision: Revision,
    /// The history entry holding the value.
    pub mod_revision: Revision,
    /// Unix time in milliseconds after which the key no longer exists; 0 = never.
    pub expires_at_ms: u64,
}

const INDEX_LEN: usize = 8 + 8 + 8;

impl Index {
    pub(super) fn encode(&self) -> [u8; INDEX_LEN] {
        let mut out = [0u8; INDEX_LEN];
        out[..8].copy_from_slice(&self.create_revision.to_le_bytes());
        out[8..16].copy_from_slice(&self.mod_revision.to_le_bytes());
        out[16..].copy_from_slice(&self.expires_at_ms.to_le_bytes());
        out
    }

    pub(super) fn decode(key: &str, raw: &[u8]) -> Result<Index> {
        if raw.len() != INDEX_LEN {
            return Err(Error::corrupt(format!(
                "index entry of key {key} is damaged"
            )));
        }
        Ok(Index {
            create_revision: i64_at(raw, 0),
            mod_revision: i64_at(raw, 8),
            expires_at_ms: u64_at(raw, 16),
        })
    }

    /// Whether the key has expired at `now_ms`.
    pub(super) fn expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms != 0 && self.expires_at_ms <= now_ms
    }
}

/// The change made at one revision (table `history`), borrowed from its stored bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Change<'a> {
    pub key: &'a str,
    /// The create revision of the object written or deleted.
    pub create_revision: Revision,
    /// The revision of the key's previous value (its history entry); 0 for a creation.
    pub prev: Revision,
    /// The value written; None for a delete.
    pub value: Option<&'a [u8]>,
}

const PUT: u8 = 0;
const DELETE: u8 = 2;

impl Change<'_> {
    pub(super) fn encode(&self) -> Vec<u8> {
        let value = self.value.unwrap_or_default();
        let mut out = Vec::with_capacity(1 + 4 + self.key.len() + 16 + value.len());
        out.push(if self.value.is_some() { PUT } else { DELETE });
        out.extend_from_slice(&(self.key.len() as u32).to_le_bytes());
        out.extend_from_slice(self.key.as_bytes());
        out.extend_from_slice(&self.create_revision.to_le_bytes());
        out.extend_from_slice(&self.prev.to_le_bytes());
        out.extend_from_slice(value);
        out
    }

    pub(super) fn decode(revision: u64, raw: &[u8]) -> Result<Change<'_>> {
        let corrupt = || Error::corrupt(format!("history entry of revision {revision} is damaged"));
        let kind = *raw.first().ok_or_else(corrupt)?;
        let klen = raw
            .get(1..5)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize)
            .ok_or_else(corrupt)?;
        let key_end = 5usize.checked_add(klen).ok_or_else(corrupt)?;
        let key = raw
            .get(5..key_end)
            .and_then(|k| std::str::from_utf8(k).ok())
            .ok_or_else(corrupt)?;
        if raw.len() < key_end + 16 {
            return Err(corrupt());
        }
        let rest = &raw[key_end + 16..];
        let value = match kind {
            PUT => Some(rest),
            DELETE if rest.is_empty() => None,
            _ => return Err(corrupt()),
        };
        Ok(Change {
            key,
            create_revision: i64_at(raw, key_end),
            prev: i64_at(raw, key_end + 8),
            value,
        })
    }
}

/// The `latest` record of format 1, which held the value itself: read once, when a format-1
/// store is upgraded.
pub(crate) fn decode_v1_record<'a>(key: &str, raw: &'a [u8]) -> Result<(Index, &'a [u8])> {
    if raw.len() < INDEX_LEN {
        return Err(Error::corrupt(format!("record of key {key} is truncated")));
    }
    Ok((Index::decode(key, &raw[..INDEX_LEN])?, &raw[INDEX_LEN..]))
}

fn i64_at(raw: &[u8], at: usize) -> i64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&raw[at..at + 8]);
    i64::from_le_bytes(b)
}

fn u64_at(raw: &[u8], at: usize) -> u64 {
    let mut b = [0u8; 8];
    b.copy_from_slice(&raw[at..at + 8]);
    u64::from_le_bytes(b)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_round_trips() {
        let i = Index {
            create_revision: 3,
            mod_revision: 9,
            expires_at_ms: 77,
        };
        assert_eq!(Index::decode("k", &i.encode()).unwrap(), i);
        assert!(Index::decode("k", &[1, 2, 3]).is_err());
    }

    #[test]
    fn changes_round_trip_and_damage_is_reported() {
        let changes = [
            Change {
                key: "/a",
                create_revision: 2,
                prev: 0,
                value: Some(b"1"),
            },
            Change {
                key: "/a",
                create_revision: 2,
                prev: 2,
                value: Some(b""),
            },
            Change {
                key: "/a",
                create_revision: 2,
                prev: 3,
                value: None,
            },
        ];
        for c in changes {
            let raw = c.encode();
            assert_eq!(Change::decode(7, &raw).unwrap(), c);
            for cut in 0..raw.len() {
                if c.value.is_some() && cut >= raw.len() - c.value.unwrap().len() {
                    continue; // a shorter value is still a well-formed put
                }
                assert!(Change::decode(7, &raw[..cut]).is_err(), "cut at {cut}");
            }
        }
        // A delete never carries a value.
        let mut raw = changes[2].encode();
        raw.push(b'x');
        assert!(Change::decode(7, &raw).is_err());
    }
}
