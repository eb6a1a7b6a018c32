//! Byte layout of the embedded store's table values: the latest record of a key and the
//! change recorded at each revision. Fixed little-endian headers followed by the raw value;
//! decoding checks lengths and reports damage as [`Error::Corrupt`].

use crate::storage::{Error, KeyValue, Result, Revision, WatchEvent};
use bytes::Bytes;

/// The latest state of one key (table `latest`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    pub create_revision: Revision,
    pub mod_revision: Revision,
    /// Unix time in milliseconds after which the key no longer exists; 0 = never.
    pub expires_at_ms: u64,
    pub value: Bytes,
}

const RECORD_HEADER: usize = 8 + 8 + 8;

impl Record {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(RECORD_HEADER + self.value.len());
        out.extend_from_slice(&self.create_revision.to_le_bytes());
        out.extend_from_slice(&self.mod_revision.to_le_bytes());
        out.extend_from_slice(&self.expires_at_ms.to_le_bytes());
        out.extend_from_slice(&self.value);
        out
    }

    pub fn decode(key: &str, raw: &[u8]) -> Result<Record> {
        if raw.len() < RECORD_HEADER {
            return Err(Error::Corrupt(format!("record of key {key} is truncated")));
        }
        Ok(Record {
            create_revision: i64_at(raw, 0),
            mod_revision: i64_at(raw, 8),
            expires_at_ms: u64_at(raw, 16),
            value: Bytes::copy_from_slice(&raw[RECORD_HEADER..]),
        })
    }

    /// Whether the key has expired at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        self.expires_at_ms != 0 && self.expires_at_ms <= now_ms
    }

    pub fn into_kv(self, key: &str) -> KeyValue {
        KeyValue {
            key: key.to_string(),
            value: self.value,
            create_revision: self.create_revision,
            mod_revision: self.mod_revision,
        }
    }
}

/// Encodes the change of one revision (table `history`). Every event carries its key.
pub(crate) fn encode_event(ev: &WatchEvent) -> Vec<u8> {
    let mut out = Vec::with_capacity(64);
    match ev {
        WatchEvent::Created(kv) => {
            out.push(0);
            put_kv(&mut out, kv);
        }
        WatchEvent::Updated { kv, prev } => {
            out.push(1);
            put_kv(&mut out, kv);
            put_kv(&mut out, prev);
        }
        WatchEvent::Deleted { prev, revision } => {
            out.push(2);
            out.extend_from_slice(&revision.to_le_bytes());
            put_kv(&mut out, prev);
        }
        // Progress notifications are never stored.
        WatchEvent::Progress(revision) => {
            out.push(3);
            out.extend_from_slice(&revision.to_le_bytes());
        }
    }
    out
}

/// Decodes a change written by [`encode_event`].
pub(crate) fn decode_event(revision: u64, raw: &[u8]) -> Result<WatchEvent> {
    let corrupt = || Error::Corrupt(format!("history entry of revision {revision} is damaged"));
    let mut r = Reader { raw, pos: 1 };
    let ev = match raw.first() {
        Some(0) => WatchEvent::Created(r.kv().ok_or_else(corrupt)?),
        Some(1) => {
            let kv = r.kv().ok_or_else(corrupt)?;
            let prev = r.kv().ok_or_else(corrupt)?;
            WatchEvent::Updated { kv, prev }
        }
        Some(2) => {
            let rev = r.i64().ok_or_else(corrupt)?;
            let prev = r.kv().ok_or_else(corrupt)?;
            WatchEvent::Deleted {
                prev,
                revision: rev,
            }
        }
        _ => return Err(corrupt()),
    };
    Ok(ev)
}

fn put_kv(out: &mut Vec<u8>, kv: &KeyValue) {
    out.extend_from_slice(&(kv.key.len() as u32).to_le_bytes());
    out.extend_from_slice(kv.key.as_bytes());
    out.extend_from_slice(&kv.create_revision.to_le_bytes());
    out.extend_from_slice(&kv.mod_revision.to_le_bytes());
    out.extend_from_slice(&(kv.value.len() as u32).to_le_bytes());
    out.extend_from_slice(&kv.value);
}

struct Reader<'a> {
    raw: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Option<&[u8]> {
        let end = self.pos.checked_add(n)?;
        let s = self.raw.get(self.pos..end)?;
        self.pos = end;
        Some(s)
    }
    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }
    fn i64(&mut self) -> Option<i64> {
        Some(i64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
    fn kv(&mut self) -> Option<KeyValue> {
        let klen = self.u32()? as usize;
        let key = std::str::from_utf8(self.take(klen)?).ok()?.to_string();
        let create_revision = self.i64()?;
        let mod_revision = self.i64()?;
        let vlen = self.u32()? as usize;
        let value = Bytes::copy_from_slice(self.take(vlen)?);
        Some(KeyValue {
            key,
            value,
            create_revision,
            mod_revision,
        })
    }
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

    fn kv(key: &str, v: &str, c: i64, m: i64) -> KeyValue {
        KeyValue {
            key: key.into(),
            value: Bytes::from(v.to_string()),
            create_revision: c,
            mod_revision: m,
        }
    }

    #[test]
    fn record_round_trips() {
        let r = Record {
            create_revision: 3,
            mod_revision: 9,
            expires_at_ms: 77,
            value: Bytes::from_static(b"v"),
        };
        assert_eq!(Record::decode("k", &r.encode()).unwrap(), r);
        assert!(Record::decode("k", &[1, 2, 3]).is_err());
    }

    #[test]
    fn events_round_trip() {
        let evs = [
            WatchEvent::Created(kv("/a", "1", 2, 2)),
            WatchEvent::Updated {
                kv: kv("/a", "2", 2, 3),
                prev: kv("/a", "1", 2, 2),
            },
            WatchEvent::Deleted {
                prev: kv("/a", "2", 2, 3),
                revision: 4,
            },
        ];
        for ev in evs {
            let raw = encode_event(&ev);
            assert_eq!(decode_event(ev.revision() as u64, &raw).unwrap(), ev);
            assert!(decode_event(1, &raw[..raw.len() - 1]).is_err());
        }
    }
}
