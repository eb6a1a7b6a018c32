//! The rest of a request body (all but its metadata) round-tripped from a table, with holes
//! for the timestamps that change from one request to the next.
//!
//! A client that updates the same object again sends the same bytes each time but for a few
//! timestamps: a lease renewal changes `spec.renewTime` and nothing else. The typed round trip
//! of those bytes is the same each time but for those values, and for a MicroTime written in
//! its canonical form (`2006-01-02T15:04:05.000000Z`, what the typed struct writes) the round
//! trip gives back the same text. So a bounded table remembers the canonical rest by its bytes
//! with the values of such strings emptied (the holes), and where each hole's value lands in
//! the canonical object.
//!
//! A key is learnt on its second sight (a body seen once costs one hash), by round-tripping
//! the rest with a distinct stand-in time in each hole: each stand-in must come out unchanged,
//! exactly once, as a whole string value (so the hole is a MicroTime or a plain string, whose
//! round trip keeps the text), and the round trip must report no unknown field. A key that
//! fails this is remembered as such. A hole's value is used only if it is a valid timestamp
//! (else the full round trip gives its error). May use: registry (the round trip).

use foldhash::fast::RandomState;
use serde_json::Value;
use std::collections::HashSet;
use std::hash::BuildHasher;
use std::sync::{Arc, LazyLock, Mutex};

use super::bounded::Bounded;
use super::typed::full;
use crate::registry::strategy::Input;

/// Distinct keys remembered, the largest rest remembered (bytes sent), and how many keys seen
/// once are recalled.
const CAPACITY: usize = 1024;
const LARGEST: usize = 4 << 10;
const SEEN: usize = 4096;
/// Length of a canonical MicroTime.
const TIME_LEN: usize = 27;

/// The canonical rest of one key: the object with stand-ins in the holes, and each hole's
/// path in it (None: the key does not take the shortcut).
type Learnt = Option<(Value, Vec<Vec<Step>>)>;

/// One step down a canonical object: the entry at a position of an object (the canonical
/// object is built once, so positions are as stable as keys and need no hashing), or of a list.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Step {
    Entry(usize),
    Index(usize),
}

/// The learnt keys, and the hashes (foldhash, randomly seeded) of keys seen once.
struct Table {
    learnt: Bounded<Learnt>,
    seen: Mutex<HashSet<u64, RandomState>>,
    hasher: RandomState,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| Table {
    learnt: Bounded::new(CAPACITY),
    seen: Mutex::new(HashSet::default()),
    hasher: RandomState::default(),
});

/// The typed round trip (through `T`) of `rest`, a body whose metadata is the stand-in, from
/// the table; None when the full round trip must run.
pub(crate) fn canonical_rest<T>(rest: &[u8]) -> Option<Value>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    if rest.len() > LARGEST {
        return None;
    }
    let holes = holes(rest);
    if holes.is_empty() {
        return None;
    }
    // The key: the type, where the holes are, then the bytes with every hole emptied. (The
    // holes' places keep it unambiguous: a body with an empty string where another has a
    // hole has the same bytes once the hole is emptied.)
    let mut key = Vec::with_capacity(rest.len() + 64);
    key.extend_from_slice(std::any::type_name::<T>().as_bytes());
    key.push(0);
    for h in &holes {
        key.extend_from_slice(&(*h as u32).to_le_bytes());
    }
    key.push(0);
    let mut at = 0;
    for h in &holes {
        key.extend_from_slice(&rest[at..*h]);
        at = h + TIME_LEN;
    }
    key.extend_from_slice(&rest[at..]);
    let learnt = match TABLE.learnt.get(&key) {
        Some(l) => l,
        None => {
            if !TABLE.seen_before(&key) {
                return None;
            }
            let l = Arc::new(learn::<T>(rest, &holes));
            TABLE.learnt.insert(&key, l.clone());
            l
        }
    };
    let (value, paths) = learnt.as_ref().as_ref()?;
    let mut out = value.clone();
    for (h, path) in holes.iter().zip(paths) {
        let text = std::str::from_utf8(&rest[*h..h + TIME_LEN]).ok()?;
        text.parse::<jiff::Timestamp>().ok()?;
        *at_path(&mut out, path)? = Value::from(text);
    }
    Some(out)
}

impl Table {
    /// Whether `key` was seen before (recording it if not).
    fn seen_before(&self, key: &[u8]) -> bool {
        let h = self.hasher.hash_one(key);
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.remove(&h) {
            return true;
        }
        if seen.len() >= SEEN {
            seen.clear();
        }
        seen.insert(h);
        false
    }
}

/// The starts of the holes in `json`: string values (not keys) of exactly a canonical
/// MicroTime's shape, `dddd-dd-ddTdd:dd:dd.ddddddZ`, years from 1000, seconds up to 59.
fn holes(json: &[u8]) -> Vec<usize> {
    use memchr::memmem::Finder;
    static END: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"Z\""));
    let mut out = Vec::new();
    // Each candidate ends in `Z"`: the string's last character and closing quote.
    for z in END.find_iter(json) {
        let Some(start) = (z + 1).checked_sub(TIME_LEN) else {
            continue;
        };
        // The opening quote, not an escaped one.
        let quoted =
            start >= 1 && json[start - 1] == b'"' && (start < 2 || json[start - 2] != b'\\');
        if !quoted || !time_shaped(&json[start..z + 1]) {
            continue;
        }
        // A value, not a key: what follows the closing quote is not a colon.
        let after = json[z + 2..].iter().find(|b| !b.is_ascii_whitespace());
        if after != Some(&b':') {
            out.push(start);
        }
    }
    out
}

fn time_shaped(s: &[u8]) -> bool {
    const SHAPE: &[u8; TIME_LEN] = b"dddd-dd-ddTdd:dd:dd.ddddddZ";
    s.iter().zip(SHAPE).all(|(c, p)| {
        if *p == b'd' {
            c.is_ascii_digit()
        } else {
            c == p
        }
    }) && s[0] != b'0'
        && s[17] <= b'5'
}

/// The canonical rest of `rest` with stand-ins in its holes, and where each lands; None when
/// the key cannot take the shortcut (see the module doc).
fn learn<T>(rest: &[u8], holes: &[usize]) -> Learnt
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let stand_in = |i: usize| format!("2000-01-01T00:00:00.{:06}Z", i + 1);
    let mut body = rest.to_vec();
    for (i, h) in holes.iter().enumerate() {
        body[*h..h + TIME_LEN].copy_from_slice(stand_in(i).as_bytes());
    }
    let (value, unknown) = full::<T>(Input::Json(&body)).ok()?;
    if !unknown.is_empty() {
        return None;
    }
    let mut paths = Vec::with_capacity(holes.len());
    for i in 0..holes.len() {
        let mut found = Vec::new();
        find(&value, &stand_in(i), &mut Vec::new(), &mut found);
        let [path] = <[Vec<Step>; 1]>::try_from(found).ok()?;
        paths.push(path);
    }
    Some((value, paths))
}

/// Every path in `v` whose value is the string `text`.
fn find(v: &Value, text: &str, path: &mut Vec<Step>, out: &mut Vec<Vec<Step>>) {
    match v {
        Value::String(s) if s == text => out.push(path.clone()),
        Value::Object(m) => {
            for (i, v) in m.values().enumerate() {
                path.push(Step::Entry(i));
                find(v, text, path, out);
                path.pop();
            }
        }
        Value::Array(a) => {
            for (i, v) in a.iter().enumerate() {
                path.push(Step::Index(i));
                find(v, text, path, out);
                path.pop();
            }
        }
        _ => {}
    }
}

fn at_path<'v>(v: &'v mut Value, path: &[Step]) -> Option<&'v mut Value> {
    path.iter().try_fold(v, |v, step| match step {
        Step::Entry(i) => v.as_object_mut()?.values_mut().nth(*i),
        Step::Index(i) => v.get_mut(*i),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn renewal(renew: &str, acquire: &str) -> String {
        format!(
            r#"{{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{{"name":"-"}},"spec":{{"acquireTime":"{acquire}","holderIdentity":"h","leaseDurationSeconds":15,"renewTime":"{renew}"}}}}"#
        )
    }

    /// The table's answer (after the sight that learns it) and the full round trip's.
    fn both<T>(body: &str) -> (Option<Value>, Value)
    where
        T: serde::de::DeserializeOwned + serde::Serialize,
    {
        let _ = canonical_rest::<T>(body.as_bytes());
        let _ = canonical_rest::<T>(body.as_bytes());
        let short = canonical_rest::<T>(body.as_bytes());
        (short, full::<T>(Input::Json(body.as_bytes())).unwrap().0)
    }

    #[test]
    fn renewals_take_the_table_and_give_the_full_round_trips_object() {
        let first = renewal("2026-12-02T03:04:05.123456Z", "2026-12-01T00:00:00.000000Z");
        let (short, whole) = both::<Lease>(&first);
        assert_eq!(short.as_ref(), Some(&whole));
        // Another renewal of the same lease: same key, other values in the holes.
        let next = renewal("2026-12-02T03:04:07.654321Z", "2026-12-01T00:00:00.000000Z");
        let short = canonical_rest::<Lease>(next.as_bytes()).expect("from the table");
        assert_eq!(
            short,
            full::<Lease>(Input::Json(next.as_bytes())).unwrap().0
        );
        assert_eq!(short["spec"]["renewTime"], "2026-12-02T03:04:07.654321Z");
        assert_eq!(short["spec"]["acquireTime"], "2026-12-01T00:00:00.000000Z");
    }

    /// A body with an empty string where a learnt one has a hole is another key: each hole's
    /// value goes where that hole's stand-in went.
    #[test]
    fn an_empty_string_is_not_an_emptied_hole() {
        let cm = |a: &str| {
            format!(
                r#"{{"metadata":{{"name":"-"}},"data":{{"a":"{a}","b":"2026-12-02T03:04:05.123456Z"}}}}"#
            )
        };
        let two = cm("2026-12-01T00:00:00.000001Z");
        assert!(both::<ConfigMap>(&two).0.is_some());
        let (short, full) = both::<ConfigMap>(&cm(""));
        assert_eq!(short, Some(full));
    }

    #[test]
    fn a_body_seen_once_is_not_learnt() {
        let body = renewal("2026-12-02T03:04:05.111111Z", "2026-11-11T11:11:11.111111Z")
            .replace("\"h\"", "\"seen-once\"");
        assert_eq!(canonical_rest::<Lease>(body.as_bytes()), None);
    }

    #[test]
    fn holes_that_are_not_kept_as_sent_take_the_full_round_trip() {
        // A valid-looking time that is not a date: the full trip's error, not the table's.
        let bad = renewal("2026-02-30T03:04:05.123456Z", "2026-12-01T00:00:00.000000Z");
        let good = renewal("2026-02-27T03:04:05.123456Z", "2026-12-01T00:00:00.000000Z");
        assert!(both::<Lease>(&good).0.is_some());
        assert_eq!(canonical_rest::<Lease>(bad.as_bytes()), None);
        // A time-shaped plain string is kept as sent: fine.
        let body = r#"{"metadata":{"name":"-"},"data":{"k":"2026-12-02T03:04:05.123456Z"}}"#;
        let (short, full) = both::<ConfigMap>(body);
        assert_eq!(short, Some(full), "{body}");
        for body in [
            // A time-shaped key, and a time inside a longer string: no holes.
            r#"{"metadata":{"name":"-"},"data":{"2026-12-02T03:04:05.123456Z":"v"}}"#,
            r#"{"metadata":{"name":"-"},"data":{"k":"at \"2026-12-02T03:04:05.123456Z\""}}"#,
            // Unknown fields: the full trip reports them.
            r#"{"metadata":{"name":"-"},"bogus":"2026-12-02T03:04:05.123456Z"}"#,
        ] {
            assert_eq!(both::<ConfigMap>(body).0, None, "{body}");
        }
        // A seconds-precision Time in a hole's shape is written back in seconds: not a hole
        // the table can fill, so the key is refused.
        let event = r#"{"metadata":{"name":"-"},"involvedObject":{},"lastTimestamp":"2026-12-02T03:04:05.123456Z"}"#;
        let (short, full) = both::<k8s_openapi::api::core::v1::Event>(event);
        assert_eq!(short, None);
        assert_eq!(full["lastTimestamp"], "2026-12-02T03:04:05Z");
    }

    #[test]
    fn holes_are_string_values_of_a_canonical_micro_times_shape() {
        let j = br#"{"a":"2026-12-02T03:04:05.123456Z","2026-12-02T03:04:05.123456Z":1,"b":"2026-12-02T03:04:05.12345Z","c":"0999-12-02T03:04:05.123456Z","d":"2026-12-02T03:04:60.123456Z","e": "2026-12-02T03:04:05.000000Z" }"#;
        let at = |pat: &[u8]| memchr::memmem::find(j, pat).unwrap() + pat.len();
        assert_eq!(holes(j), [at(br#""a":""#), at(br#""e": ""#)]);
    }
}
