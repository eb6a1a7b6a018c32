//! The typed round trip that canonicalizes a request object (JSON → a k8s-openapi struct →
//! JSON), collecting the unknown fields it drops, and its shortcut for `metadata`.
//!
//! A client that updates an object sends back the metadata it read: the same bytes each time
//! but for `resourceVersion` (client-go's lease renewal does, every few seconds per lease,
//! `managedFields` and all). Decoding that metadata into `ObjectMeta` and serializing it
//! again was most of the round trip. Its canonical form depends on its bytes only, and
//! `resourceVersion` (a plain string) and `generation` (a plain integer, which moves with every
//! spec change of a custom resource) are copied through unchanged; so a bounded table
//! remembers the canonical metadata by the bytes sent with those values emptied (checked, when
//! the table learns a key, to be metadata's own resourceVersion: the decode of the bytes
//! sent must match). The rest of the body round-trips with a stand-in metadata (from the
//! table of [`super::rest`] when it knows those bytes but for their timestamps),
//! which must come out as the object's own, and the remembered metadata goes in its place with the
//! body's resourceVersion. Anything unusual (a body that names `metadata` more than once, a
//! parse or type error anywhere, unknown fields anywhere, a resourceVersion with an escape)
//! takes the full round trip, so the result, warnings and error texts are always the full
//! round trip's. Every served type's `metadata` is an `ObjectMeta`. May use: registry
//! (strategy), its siblings [`super::typed`] and [`super::rest`].

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde_json::value::RawValue;
use serde_json::Value;
use std::ops::Range;
use std::sync::{Arc, LazyLock};

use super::bounded::Bounded;
use super::typed::full;
use crate::registry::strategy::Input;

/// A canonical object and the unknown fields its decode dropped.
type Decoded = (Value, Vec<String>);

/// How many distinct metadata objects the table keeps, and the largest it keeps (in bytes
/// sent; a lease's, managedFields and all, is under 1 KiB): at most 4 MiB of keys, and their
/// decoded forms.
const CAPACITY: usize = 1024;
const LARGEST: usize = 4 << 10;

/// Round-trips `obj` through the typed struct `T`, collecting unknown fields.
pub(crate) fn typed_roundtrip<T>(obj: Input<'_>) -> Result<Decoded, String>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    if let Input::Json(body) = obj {
        if let Some(done) = with_remembered_metadata::<T>(body) {
            return Ok(done);
        }
    }
    full::<T>(obj)
}

/// The round trip of `body` with its `metadata` taken from the table, or None when the full
/// round trip must run (see the module doc).
fn with_remembered_metadata<T>(body: &[u8]) -> Option<Decoded>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    use memchr::memmem::Finder;
    static METADATA: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"metadata\":"));
    static RV: LazyLock<Finder<'static>> = LazyLock::new(|| Finder::new(b"\"resourceVersion\":"));
    // The one `"metadata":` in the body; the decode below shows it is the top-level key.
    let mut keys = METADATA.find_iter(body);
    let at = keys.next()? + METADATA.needle().len();
    if keys.next().is_some() {
        return None;
    }
    let meta = span(body, at)?;
    let sent = &body[meta.clone()];
    if sent.len() > LARGEST || !sent.starts_with(b"{") {
        return None;
    }
    // The table's key: the metadata sent with the value of its first `"resourceVersion":`
    // emptied (the table checks that it is metadata's own when it learns the key).
    let (key, rv) = match RV.find(sent) {
        None => (sent.to_vec(), None),
        Some(i) => {
            let after = i + RV.needle().len();
            let gap = sent[after..]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
            if sent.get(after + gap) != Some(&b'"') {
                return None;
            }
            let start = after + gap + 1;
            let len = memchr::memchr(b'"', &sent[start..])?;
            let value = &sent[start..start + len];
            // Not a plain string with an escape (a raw control character never gets here:
            // `span` parsed the metadata as JSON).
            if value.contains(&b'\\') {
                return None;
            }
            let rv = std::str::from_utf8(value).ok()?;
            (splice(sent, start..start + len, b""), Some(rv))
        }
    };
    // metadata.generation, a plain integer, moves with every spec change of kinds that keep
    // it (custom resources): it is set to 0 in the key and copied through, like rv.
    static GENERATION: LazyLock<Finder<'static>> =
        LazyLock::new(|| Finder::new(b"\"generation\":"));
    let (key, generation) = match GENERATION.find(&key) {
        None => (key, None),
        Some(i) => {
            let after = i + GENERATION.needle().len();
            let gap = key[after..]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
            let start = after + gap;
            let len = key[start..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            if len == 0 || len > 18 {
                return None;
            }
            let g: i64 = std::str::from_utf8(&key[start..start + len])
                .ok()?
                .parse()
                .ok()?;
            (splice(&key, start..start + len, b"0"), Some(g))
        }
    };
    let canonical = TABLE.canonical(&key, sent, rv, generation)?;
    // The rest with a stand-in metadata, which must come out as the object's own.
    const STAND_IN: &[u8] = br#"{"name":"-"}"#;
    let rest = splice(body, meta, STAND_IN);
    let (mut out, unknown) = match super::rest::canonical_rest::<T>(&rest) {
        Some(canonical) => (canonical, Vec::new()),
        None => full::<T>(Input::Json(&rest)).ok()?,
    };
    let slot = out.get_mut("metadata")?;
    let stood_in = |m: &Meta| m.len() == 1 && m.get("name").and_then(Value::as_str) == Some("-");
    if !unknown.is_empty() || !slot.as_object().is_some_and(stood_in) {
        return None;
    }
    *slot = Value::Object(with_rv(&canonical, rv, generation));
    Some((out, unknown))
}

/// Where the JSON value that starts at `at` in `json` lies.
fn span(json: &[u8], at: usize) -> Option<Range<usize>> {
    let rest = json.get(at..)?;
    let raw = serde_json::Deserializer::from_slice(rest)
        .into_iter::<&RawValue>()
        .next()?
        .ok()?
        .get();
    let start = (raw.as_ptr() as usize).checked_sub(json.as_ptr() as usize)?;
    let end = start + raw.len();
    (end <= json.len()).then_some(start..end)
}

/// `canonical` with its resourceVersion set to `rv` and its generation to `generation` (when
/// the key had them emptied).
fn with_rv(canonical: &Meta, rv: Option<&str>, generation: Option<i64>) -> Meta {
    let mut m = canonical.clone();
    if let (Some(rv), Some(slot)) = (rv, m.get_mut("resourceVersion")) {
        *slot = Value::from(rv);
    }
    if let (Some(g), Some(slot)) = (generation, m.get_mut("generation")) {
        *slot = Value::from(g);
    }
    m
}

/// `bytes` with the range `at` replaced by `with`.
fn splice(bytes: &[u8], at: Range<usize>, with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + with.len());
    out.extend_from_slice(&bytes[..at.start]);
    out.extend_from_slice(with);
    out.extend_from_slice(&bytes[at.end..]);
    out
}

/// A canonical metadata object.
type Meta = serde_json::Map<String, Value>;

/// Canonical metadata objects by the bytes that were sent (their resourceVersion emptied).
struct Table {
    metas: Bounded<Meta>,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| Table {
    metas: Bounded::new(CAPACITY),
});

impl Table {
    /// The canonical form of the metadata `key` (the metadata `sent`, with the value of its
    /// resourceVersion `rv` emptied), decoding it if it is not known yet. None when it does
    /// not decode cleanly as an `ObjectMeta` (an error, or unknown fields to report), or when
    /// the value emptied was not metadata's own resourceVersion: decoding `sent` itself must
    /// give the same object with `rv` in it. Once learnt, a key stands for every body that
    /// has it (its bytes but that value are the same, so is where that value lies).
    fn canonical(
        &self,
        key: &[u8],
        sent: &[u8],
        rv: Option<&str>,
        generation: Option<i64>,
    ) -> Option<Arc<Meta>> {
        if let Some(m) = self.metas.get(key) {
            return Some(m);
        }
        let m = Arc::new(decode_meta(key)?);
        if (rv.is_some() || generation.is_some())
            && decode_meta(sent)? != with_rv(&m, rv, generation)
        {
            return None;
        }
        self.metas.insert(key, m.clone());
        Some(m)
    }
}

/// `raw` round-tripped as an `ObjectMeta`; None on an error or unknown fields.
fn decode_meta(raw: &[u8]) -> Option<Meta> {
    match full::<ObjectMeta>(Input::Json(raw)).ok()? {
        (Value::Object(m), unknown) if unknown.is_empty() => Some(m),
        _ => None,
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
        let first = with_remembered_metadata::<T>(body.as_bytes());
        let again = with_remembered_metadata::<T>(body.as_bytes());
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
            lease("null"),
            lease(&ENTRIES.replace("\"time\":\"2026-12-01T13:28:10+01:00\"", "\"time\":null")),
            // Without resourceVersion, with an empty one, with metadata holding nothing else.
            lease(ENTRIES).replace(",\"resourceVersion\":\"17\"", ""),
            lease(ENTRIES).replace("\"17\"", "\"\""),
            r#"{"metadata":{"resourceVersion":"5"}}"#.into(),
            r#"{"metadata":{"name":"x"}}"#.to_string(),
            r#"{"metadata":{}}"#.to_string(),
            // A resourceVersion key below metadata's top level after metadata's own.
            r#"{"metadata":{"name":"x","resourceVersion":"5","labels":{"resourceVersion":"9"}}}"#
                .into(),
            // A key twice in metadata (decoded as the full trip decodes it).
            lease(ENTRIES).replace("\"name\":\"l1\"", "\"managedFields\":[],\"name\":\"l1\""),
            // Escapes, in values and in metadata's keys.
            lease(ENTRIES).replace("\"l1\"", "\"\\u006c1\""),
            lease(ENTRIES).replace("\"name\"", "\"\\u006eame\""),
        ] {
            let (short, full) = both::<Lease>(&body);
            let (short, full) = (short.expect(&body), full.unwrap());
            assert_eq!(bytes(&short.0), bytes(&full.0), "{body}");
            assert_eq!(short.1, full.1);
        }
        // The times were made canonical (UTC), as the typed struct writes them.
        let (short, _) = both::<Lease>(&lease(ENTRIES));
        assert_eq!(
            short.unwrap().0["metadata"]["managedFields"][0]["time"],
            "2026-12-01T12:28:10Z"
        );
    }

    #[test]
    fn the_remembered_metadata_takes_each_bodys_generation() {
        // A custom resource's generation moves with every spec change: one table entry serves
        // them all, and each body keeps its own.
        for (generation, spaced) in [("1", false), ("2", false), ("123456", true), ("0", false)] {
            let mut body = lease(ENTRIES).replace(
                "\"name\":\"l1\"",
                &format!("\"generation\":{generation},\"name\":\"l1\""),
            );
            if spaced {
                let v: Value = serde_json::from_str(&body).unwrap();
                body = serde_json::to_string_pretty(&v).unwrap();
            }
            let (short, full) = both::<Lease>(&body);
            let short = short.expect("shortcut taken");
            assert_eq!(bytes(&short.0), bytes(&full.unwrap().0), "{body}");
            assert_eq!(short.0["metadata"]["generation"].to_string(), generation);
        }
        // A label named generation is not metadata's generation: the full trip decides.
        let labelled = lease(ENTRIES).replace("\"a\":\"b\"", "\"generation\":\"7\"");
        let (short, full) = both::<Lease>(&labelled);
        if let Some(short) = short {
            assert_eq!(bytes(&short.0), bytes(&full.unwrap().0));
        }
    }

    #[test]
    fn the_remembered_metadata_takes_each_bodys_resource_version() {
        // Compact, and spaced as Python's json.dumps writes it.
        for (rv, spaced) in [("17", false), ("18", false), ("1000000", true), ("", true)] {
            let mut body = lease(ENTRIES).replace("\"17\"", &format!("\"{rv}\""));
            if spaced {
                let v: Value = serde_json::from_str(&body).unwrap();
                body = serde_json::to_string_pretty(&v).unwrap();
            }
            let (short, full) = both::<Lease>(&body);
            let short = short.expect("shortcut taken");
            assert_eq!(bytes(&short.0), bytes(&full.unwrap().0), "{body}");
            assert_eq!(short.0["metadata"]["resourceVersion"], rv);
        }
    }

    #[test]
    fn anything_unusual_takes_the_full_round_trip() {
        // The usual lease's metadata is in the table: what differs below must still decline.
        assert!(both::<Lease>(&lease(ENTRIES)).0.is_some());
        for body in [
            // Unknown fields, in metadata (its entries or not) or not: the full trip reports
            // them in place.
            lease(r#"[{"manager":"m","bogus":1}]"#),
            lease(ENTRIES).replace("\"name\":", "\"bogus\":1,\"name\":"),
            lease(ENTRIES).replace("\"spec\":{", "\"spec\":{\"bogus\":1,"),
            r#"{"metadata":{"ownerReferences":[{"managedFields":[{"manager":"m"}]}]}}"#.into(),
            // A resourceVersion key below metadata's top level, before metadata's own or
            // without it; a second metadata.
            r#"{"metadata":{"annotations":{"resourceVersion":"9"},"name":"x"}}"#.into(),
            r#"{"metadata":{"labels":{"resourceVersion":"9"},"resourceVersion":"5"}}"#.into(),
            format!(r#"{{"metadata":{{"managedFields":{ENTRIES}}},"metadata":{{"name":"x"}}}}"#),
            // A resourceVersion that is not a plain string.
            lease(ENTRIES).replace("\"17\"", "\"1\\u0037\""),
            lease(ENTRIES).replace("\"17\"", "17"),
            lease(ENTRIES).replace("\"17\"", "\"1\t7\""),
            // Type errors in metadata and outside it: the full trip's error text.
            lease(r#"[{"manager":1}]"#),
            lease(r#""not a list""#),
            lease(ENTRIES).replace("\"holderIdentity\":\"l1\"", "\"holderIdentity\":7"),
            r#"{"metadata":[]}"#.into(),
            // Not one JSON object, or no metadata.
            format!("{} x", lease(ENTRIES)),
            "[]".into(),
            r#"{"spec":{}}"#.into(),
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
        let (short, whole) = both::<ConfigMap>(body);
        assert_eq!(bytes(&short.unwrap().0), bytes(&whole.unwrap().0));
        // A data key named metadata, before metadata or without it.
        for body in [
            r#"{"data":{"metadata":"x"},"metadata":{"name":"c"}}"#,
            r#"{"data":{"metadata":"x"}}"#,
        ] {
            assert_eq!(both::<ConfigMap>(body).0, None, "{body}");
            let via_public = typed_roundtrip::<ConfigMap>(Input::Json(body.as_bytes()));
            assert_eq!(via_public, full::<ConfigMap>(Input::Json(body.as_bytes())));
        }
    }

    #[test]
    fn a_metadata_below_the_top_level_is_not_the_objects() {
        // Not a served type, but one with an ObjectMeta inside: the one `"metadata":` of the
        // body is the template's, and the stand-in shows it.
        use k8s_openapi::api::core::v1::PodTemplate;
        let body = r#"{"template":{"metadata":{"name":"t","resourceVersion":"3"}}}"#;
        assert_eq!(both::<PodTemplate>(body).0, None);
        let via_public = typed_roundtrip::<PodTemplate>(Input::Json(body.as_bytes()));
        assert_eq!(
            via_public,
            full::<PodTemplate>(Input::Json(body.as_bytes()))
        );
    }

    /// Renewals one after the other: the metadata from its table, the rest from its table
    /// (from the third), each the full round trip's object byte for byte.
    #[test]
    fn renewals_take_both_tables_and_give_the_full_round_trips_object() {
        for i in 0..5 {
            let body = lease(ENTRIES).replace(
                "\"2026-12-01T13:00:01.5Z\"",
                &format!("\"2026-12-01T13:00:0{i}.12345{i}Z\""),
            );
            let short = typed_roundtrip::<Lease>(Input::Json(body.as_bytes())).unwrap();
            let whole = full::<Lease>(Input::Json(body.as_bytes())).unwrap();
            assert_eq!(bytes(&short.0), bytes(&whole.0), "{body}");
            assert_eq!(
                short.0["spec"]["renewTime"],
                format!("2026-12-01T13:00:0{i}.12345{i}Z")
            );
        }
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
