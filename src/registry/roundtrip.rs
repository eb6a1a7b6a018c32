//! The typed round trip that canonicalizes a request object (JSON → a k8s-openapi struct →
//! JSON), collecting the unknown fields it drops, and its shortcut for `managedFields`.
//!
//! A client that updates an object sends back the `managedFields` it read (client-go's lease
//! renewal does, every few seconds per lease), and decoding those entries into structs and
//! serializing them again was 40% of the round trip. Every object's entries have the one
//! type, `ManagedFieldsEntry`, so their canonical form depends on their bytes only: a bounded
//! table remembers it by the bytes sent. A JSON body whose `metadata.managedFields` is in the
//! table round-trips without them, and the remembered list goes back in at its place. Anything
//! unusual (a parse or type error anywhere, unknown fields anywhere, a key that appears twice
//! or may be spelled with an escape, a type without `ObjectMeta`) takes the full round trip, so the result, warnings and error
//! texts are always the full round trip's. May use: nothing internal.

use serde_json::value::RawValue;
use serde_json::Value;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, LazyLock, Mutex};

use super::strategy::Input;

/// A canonical object and the unknown fields its decode dropped.
type Decoded = (Value, Vec<String>);

/// How many distinct `managedFields` lists the table keeps (a few MB at most).
const CAPACITY: usize = 1024;

/// Round-trips `obj` through the typed struct `T`, collecting unknown fields.
pub(crate) fn typed_roundtrip<T>(obj: Input<'_>) -> Result<Decoded, String>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    if let Input::Json(body) = obj {
        if let Some(done) = without_managed_fields::<T>(body) {
            return Ok(done);
        }
    }
    full::<T>(obj)
}

/// The round trip of every field.
fn full<T>(obj: Input<'_>) -> Result<Decoded, String>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let mut unknown = Vec::new();
    let typed: T = match obj {
        Input::Value(v) => serde_ignored::deserialize(v, |path| unknown.push(field_path(&path))),
        Input::Json(bytes) => {
            let mut de = serde_json::Deserializer::from_slice(bytes);
            let typed = serde_ignored::deserialize(&mut de, |path| unknown.push(field_path(&path)));
            typed.and_then(|t| de.end().map(|()| t))
        }
    }
    .map_err(|e| e.to_string())?;
    let out = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    Ok((out, unknown))
}

/// The round trip of `body` with its `metadata.managedFields` taken from the table, or None
/// when the full round trip must run (see the module doc).
fn without_managed_fields<T>(body: &[u8]) -> Option<Decoded>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let span = managed_fields_span(body)?;
    let entries = TABLE.canonical(&body[span.clone()])?;
    let mut rest = Vec::with_capacity(body.len());
    rest.extend_from_slice(&body[..span.start]);
    rest.extend_from_slice(b"null");
    rest.extend_from_slice(&body[span.end..]);
    let (mut out, unknown) = full::<T>(Input::Json(&rest)).ok()?;
    if !unknown.is_empty() {
        return None;
    }
    let meta = out.get_mut("metadata")?.as_object_mut()?;
    if meta.contains_key("managedFields") {
        return None;
    }
    // ObjectMeta serializes its fields in alphabetical order.
    let at = meta
        .keys()
        .position(|k| k.as_str() > "managedFields")
        .unwrap_or(meta.len());
    meta.shift_insert(at, "managedFields".into(), Value::clone(&entries));
    Some((out, unknown))
}

/// Where the value of `metadata.managedFields` lies in `body`, found without parsing the
/// whole body: the body names `managedFields` and `metadata` once each and has no `\u`
/// escape (which could spell either key another way), and a JSON value follows the key.
/// [`without_managed_fields`] then checks the rest of what it needs from the typed decode of
/// the body without that value: no unknown fields (so the key was not at some other level),
/// and no other `managedFields` in the result.
fn managed_fields_span(body: &[u8]) -> Option<Range<usize>> {
    use memchr::memmem::Finder;
    static KEY: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"managedFields\":"));
    static METADATA: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"metadata\":"));
    static ESCAPE: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\\u"));
    let mut keys = KEY.find_iter(body);
    let at = keys.next()? + KEY.needle().len();
    if keys.next().is_some() || METADATA.find_iter(body).count() != 1 || ESCAPE.find(body).is_some()
    {
        return None;
    }
    let mut values = serde_json::Deserializer::from_slice(&body[at..]).into_iter::<&RawValue>();
    let raw = values.next()?.ok()?.get();
    if raw == "null" {
        return None;
    }
    let start = (raw.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let end = start + raw.len();
    (end <= body.len()).then_some(start..end)
}

/// Canonical `managedFields` lists by the bytes that were sent.
struct Table {
    lists: Mutex<HashMap<Box<[u8]>, Arc<Value>>>,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| Table {
    lists: Mutex::new(HashMap::new()),
});

impl Table {
    /// The canonical form of the list `raw`, decoding it if it is not known yet; None when it
    /// does not decode cleanly as a list of entries (an error, or unknown fields to report).
    fn canonical(&self, raw: &[u8]) -> Option<Arc<Value>> {
        if let Some(v) = self.lock().get(raw) {
            return Some(v.clone());
        }
        let mut de = serde_json::Deserializer::from_slice(raw);
        let mut clean = true;
        let entries: Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry> =
            serde_ignored::deserialize(&mut de, |_| clean = false).ok()?;
        de.end().ok()?;
        if !clean {
            return None;
        }
        let v = Arc::new(serde_json::to_value(&entries).ok()?);
        let mut lists = self.lock();
        if lists.len() >= CAPACITY {
            // Evict one entry: the first in the map's (randomly seeded) order.
            if let Some(k) = lists.keys().next().cloned() {
                lists.remove(&k);
            }
        }
        lists.insert(raw.into(), v.clone());
        Some(v)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Box<[u8]>, Arc<Value>>> {
        self.lists.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A field path as kube prints it: `spec.containers[0].x`, skipping Option/newtype layers.
fn field_path(path: &serde_ignored::Path<'_>) -> String {
    use serde_ignored::Path;
    match path {
        Path::Root => String::new(),
        Path::Seq { parent, index } => format!("{}[{index}]", field_path(parent)),
        Path::Map { parent, key } => {
            let p = field_path(parent);
            if p.is_empty() {
                key.to_string()
            } else {
                format!("{p}.{key}")
            }
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => field_path(parent),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::Lease;
    use k8s_openapi::api::core::v1::ConfigMap;

    fn lease(managed_fields: &str) -> String {
        format!(
            r#"{{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{{"creationTimestamp":"2026-12-01T13:28:10Z","labels":{{"a":"b"}},"managedFields":{managed_fields},"name":"l1","namespace":"default","resourceVersion":"17","uid":"d206be1d"}},"spec":{{"holderIdentity":"l1","renewTime":"2026-12-01T13:00:01.5Z"}}}}"#
        )
    }

    const ENTRIES: &str = r#"[{"apiVersion":"coordination.k8s.io/v1","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:holderIdentity":{},"f:renewTime":{}}},"manager":"kubectl-create","operation":"Update","time":"2026-12-01T13:28:10+01:00"}]"#;

    /// The shortcut's answer (twice: decoding, then from the table) and the full round trip's.
    fn both<T>(body: &str) -> (Option<Decoded>, Result<Decoded, String>)
    where
        T: serde::de::DeserializeOwned + serde::Serialize,
    {
        let first = without_managed_fields::<T>(body.as_bytes());
        let again = without_managed_fields::<T>(body.as_bytes());
        assert_eq!(first, again, "from the table: {body}");
        (first, full::<T>(Input::Json(body.as_bytes())))
    }

    fn bytes(v: &Value) -> String {
        serde_json::to_string(v).unwrap()
    }

    #[test]
    fn the_shortcut_gives_the_full_round_trips_object_byte_for_byte() {
        for body in [
            lease(ENTRIES),
            lease("[]"),
            lease(&ENTRIES.replace("\"time\":\"2026-12-01T13:28:10+01:00\"", "\"time\":null")),
            // managedFields first and last in metadata, and a metadata with nothing else.
            r#"{"metadata":{"managedFields":[{"manager":"m"}],"name":"x"}}"#.to_string(),
            r#"{"metadata":{"name":"x","uid":"u","managedFields":[{"manager":"m"}]}}"#.into(),
            r#"{"metadata":{"managedFields":[{"manager":"m"}]}}"#.into(),
        ] {
            let (short, full) = both::<Lease>(&body);
            let (short, full) = (short.expect("shortcut taken"), full.unwrap());
            assert_eq!(bytes(&short.0), bytes(&full.0), "{body}");
            assert_eq!(short.1, full.1);
        }
        // The time was made canonical (UTC), as the typed struct writes it.
        let (short, _) = both::<Lease>(&lease(ENTRIES));
        assert_eq!(
            short.unwrap().0["metadata"]["managedFields"][0]["time"],
            "2026-12-01T12:28:10Z"
        );
    }

    #[test]
    fn anything_unusual_takes_the_full_round_trip() {
        for body in [
            // No managedFields, or null: nothing to save.
            r#"{"metadata":{"name":"x"}}"#.to_string(),
            lease("null"),
            // Unknown fields, inside the entries or not: the full trip reports them in place.
            lease(r#"[{"manager":"m","bogus":1}]"#),
            lease(ENTRIES).replace("\"spec\":{", "\"spec\":{\"bogus\":1,"),
            // A managedFields key at another level.
            r#"{"metadata":{"ownerReferences":[{"managedFields":[{"manager":"m"}]}]}}"#.into(),
            r#"{"metadata":{"name":"c"},"data":{"managedFields":"x"}}"#.into(),
            // A key that might be spelled with an escape, or a second metadata.
            lease(ENTRIES).replace("\"l1\"", "\"\\u006c1\""),
            format!(r#"{{"metadata":{{"managedFields":{ENTRIES}}},"metadata":{{"name":"x"}}}}"#),
            // A type error inside the entries, and one outside: the full trip's error text.
            lease(r#"[{"manager":1}]"#),
            lease(r#""not a list""#),
            lease(ENTRIES).replace("\"holderIdentity\":\"l1\"", "\"holderIdentity\":7"),
            // A second managedFields (the typed struct keeps the last).
            lease(ENTRIES).replace("\"name\":\"l1\"", "\"managedFields\":[],\"name\":\"l1\""),
            // Not one JSON object.
            format!("{} x", lease(ENTRIES)),
            "[]".into(),
        ] {
            assert_eq!(both::<Lease>(&body).0, None, "{body}");
            let via_public = typed_roundtrip::<Lease>(Input::Json(body.as_bytes()));
            assert_eq!(
                via_public,
                full::<Lease>(Input::Json(body.as_bytes())),
                "{body}"
            );
        }
    }

    #[test]
    fn other_kinds_with_object_meta_take_the_shortcut_too() {
        let body = r#"{"apiVersion":"v1","kind":"ConfigMap","data":{"k":"v"},"metadata":{"managedFields":[{"manager":"m","operation":"Update"}],"name":"c"}}"#;
        let (short, full) = both::<ConfigMap>(body);
        assert_eq!(bytes(&short.unwrap().0), bytes(&full.unwrap().0));
        // A data key named managedFields is data.
        let body = r#"{"metadata":{"name":"c"},"data":{"managedFields":"[]"}}"#;
        assert_eq!(both::<ConfigMap>(body).0, None);
    }

    #[test]
    fn field_paths_print_as_kube_does() {
        let (_, unknown) = full::<Lease>(Input::Json(
            br#"{"metadata":{"managedFields":[{"x":1}]},"spec":{"y":2},"z":3}"#,
        ))
        .unwrap();
        assert_eq!(unknown, vec!["metadata.managedFields[0].x", "spec.y", "z"]);
    }
}
