//! /openapi/v2 and /openapi/v3 (kube-openapi pkg/handler and pkg/handler3): the Swagger 2.0
//! document and one OpenAPI 3.0 document per group version, each in JSON or, when the Accept
//! header picks it, in gnostic protobuf (kubectl create/apply/explain decode v2 eagerly), with
//! the hash of the JSON as ETag of both; the v3 index of group versions with those hashes; a
//! v3 document fetched by its current hash is immutable-cached, one fetched with a stale hash
//! redirected to it. Documents list only what the registry serves and are built on first use
//! (the v3 ones again when asked for, a few MB of them kept). The v2 document is kept
//! gzip-compressed and sent so to clients that accept gzip (kube-openapi wraps its v2 handler
//! in gziphandler), inflated for the others. With remote APIServices,
//! /openapi/v2 is this server's document with their documents merged in ([`merge`]), built again when one of them changes.
//! May use: api.

mod merge;
mod negotiate;
mod paths;
mod proto;
mod proto3;
mod spec;

use crate::api::{full_body, Body, Status};
use crate::registry::ResourceInfo;
use bytes::Bytes;
use flate2::read::GzDecoder;
use flate2::write::GzEncoder;
use flate2::Compression;
use http::{header, HeaderMap, HeaderValue, Response, StatusCode};
use serde_json::{json, Map, Value};
use sha2::{Digest, Sha512};
use spec::Served;
use std::io::{Read, Write};
use std::sync::{Arc, Mutex, OnceLock};

/// The protobuf media types a client may ask the v2 document in: the `.` form and the
/// deprecated `@` form (kube-openapi's subTypeProtobuf and subTypeProtobufDeprecated).
const PROTO_V2: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
const PROTO_V2_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

/// The same two forms for the v3 documents.
const PROTO_V3: &str = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf";
const PROTO_V3_DEPRECATED: &str = "application/com.github.proto-openapi.spec.v3@v1.0+protobuf";

/// The media types each handler offers, in the order it tries them against each Accept
/// clause. A protobuf answer is labelled with the `.` form whichever form was asked for: `@`
/// is not a token character, so Go's mime parser (kubectl's) refuses a response labelled
/// with the `@` form.
const V2_OFFERS: [(&str, Form); 3] = [
    ("application/json", Form::Json),
    (PROTO_V2_DEPRECATED, Form::Proto(PROTO_V2)),
    (PROTO_V2, Form::Proto(PROTO_V2)),
];
const V3_OFFERS: [(&str, Form); 3] = [
    ("application/json", Form::Json),
    (PROTO_V3, Form::Proto(PROTO_V3)),
    (PROTO_V3_DEPRECATED, Form::Proto(PROTO_V3)),
];

/// The form of a document an Accept header picked; a protobuf form with its content type.
#[derive(Debug, Clone, Copy)]
enum Form {
    Json,
    Proto(&'static str),
}

/// The `info.version` of the documents.
const SPEC_VERSION: &str = "unversioned";

/// A document's bytes, kept as they are or gzip-compressed, and the hash of its JSON.
struct Doc {
    bytes: Bytes,
    hash: String,
    gzipped: bool,
}

impl Doc {
    fn new(bytes: Vec<u8>) -> Doc {
        let hash = etag_of(&bytes);
        Doc {
            bytes: Bytes::from(bytes),
            hash,
            gzipped: false,
        }
    }

    /// The document compressed, as gziphandler compresses the v2 handler's answers (at gzip's
    /// default level): what a client that accepts gzip is sent as it is, and what the others
    /// wait to have inflated.
    fn gzipped(bytes: &[u8], hash: String) -> Doc {
        let mut gz = Gzipping::new(bytes.len() / 8, false);
        // Writing into a Vec cannot fail.
        let _ = gz.write_all(bytes);
        gz.finish(hash)
    }

    /// The bytes to send, and whether they are gzip-encoded: compressed bytes go out as they
    /// are when the client accepts gzip, inflated otherwise.
    fn body(&self, headers: &HeaderMap) -> std::io::Result<(Bytes, bool)> {
        if !self.gzipped || negotiate::accepts_gzip(headers) {
            return Ok((self.bytes.clone(), self.gzipped));
        }
        let mut out = Vec::new();
        GzDecoder::new(&self.bytes[..]).read_to_end(&mut out)?;
        Ok((Bytes::from(out), false))
    }
}

/// A document in JSON and in protobuf, both carrying the hash of the JSON (kube-openapi
/// computes the ETag from the JSON and passes it on to the protobuf it derives).
struct Forms {
    json: Doc,
    proto: Doc,
}

impl Forms {
    fn new(doc: &Value, encode: fn(&Value) -> Vec<u8>) -> Forms {
        let json = Doc::new(doc.to_string().into_bytes());
        let proto = Doc {
            bytes: Bytes::from(encode(doc)),
            hash: json.hash.clone(),
            gzipped: false,
        };
        Forms { json, proto }
    }

    /// Both forms kept gzip-compressed: the v2 document lists every resource (with thousands
    /// of CRDs, tens of MB in each form), and kubectl asks for it with gzip accepted. The
    /// protobuf form is encoded (and its tree dropped) first; the JSON is written straight
    /// into the compressor, hashed on the way, never whole in memory.
    fn gzipped(doc: &Value, encode: fn(&Value) -> Vec<u8>) -> Forms {
        let proto = encode(doc);
        let proto = Doc::gzipped(&proto, String::new());
        let mut json = std::io::BufWriter::with_capacity(64 << 10, Gzipping::new(1 << 20, true));
        // Writing a Value into memory cannot fail.
        let _ = serde_json::to_writer(&mut json, doc);
        let json = match json.into_inner() {
            Ok(mut gz) => {
                let hash = gz.hash.take().map(Sha512::finalize).unwrap_or_default();
                gz.finish(data_encoding::HEXUPPER.encode(&hash))
            }
            Err(_) => Doc::new(doc.to_string().into_bytes()),
        };
        let proto = Doc {
            hash: json.hash.clone(),
            ..proto
        };
        Forms { json, proto }
    }

    fn size(&self) -> usize {
        self.json.bytes.len() + self.proto.bytes.len()
    }

    fn pick(&self, form: Form) -> (&Doc, &'static str) {
        match form {
            Form::Json => (&self.json, "application/json"),
            Form::Proto(content_type) => (&self.proto, content_type),
        }
    }
}

/// How many bytes of built v3 documents are kept (the most recently built first).
const V3_KEPT_BYTES: usize = 16 << 20;

/// Built v3 documents, oldest first, and their size.
#[derive(Default)]
struct Built {
    docs: std::collections::VecDeque<(String, Arc<Forms>)>,
    bytes: usize,
}

/// A gzip compressor that can also hash what it is given (as [`etag_of`] hashes it).
struct Gzipping {
    gz: GzEncoder<Vec<u8>>,
    hash: Option<Sha512>,
}

impl Gzipping {
    fn new(capacity: usize, hashing: bool) -> Gzipping {
        Gzipping {
            gz: GzEncoder::new(Vec::with_capacity(capacity), Compression::default()),
            hash: hashing.then(Sha512::new),
        }
    }

    /// The compressed bytes as a document with the ETag `hash`.
    fn finish(self, hash: String) -> Doc {
        let mut out = self.gz.finish().unwrap_or_default();
        out.shrink_to_fit();
        Doc {
            bytes: Bytes::from(out),
            hash,
            gzipped: true,
        }
    }
}

impl Write for Gzipping {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.gz.write(buf)?;
        if let Some(h) = &mut self.hash {
            h.update(&buf[..n]);
        }
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.gz.flush()
    }
}

/// kube-openapi's computeETag: the upper-case hex SHA-512 of the JSON bytes.
fn etag_of(bytes: &[u8]) -> String {
    data_encoding::HEXUPPER.encode(&Sha512::digest(bytes))
}

/// The OpenAPI documents of the resources a server actually serves, built on first use.
pub(crate) struct OpenApi {
    served: Vec<Served>,
    /// The v2 document, built on its first request.
    v2: OnceLock<Forms>,
    /// The v3 index (each group version with the hash of its document), built on first use.
    /// The v3 documents themselves are built again when asked for and kept in
    /// [`OpenApi::v3_built`]: with thousands of CRDs, every group version's document in JSON
    /// and protobuf took hundreds of MB.
    v3_index: OnceLock<Doc>,
    /// The v2 document with the remote documents merged in, and the generation of the remote
    /// documents it was built from.
    merged_v2: Mutex<Option<(u64, Arc<Forms>)>>,
    /// The v3 documents built lately.
    v3_built: Mutex<Built>,
}

impl OpenApi {
    /// Documents for `resources` (the registry's), in its order.
    pub(crate) fn new<'a>(resources: impl IntoIterator<Item = &'a ResourceInfo>) -> OpenApi {
        OpenApi {
            served: resources.into_iter().map(Served::from).collect(),
            v2: OnceLock::new(),
            v3_index: OnceLock::new(),
            merged_v2: Mutex::new(None),
            v3_built: Mutex::new(Built::default()),
        }
    }

    fn v2(&self) -> &Forms {
        self.v2.get_or_init(|| {
            let doc = spec::v2_document(&self.served, SPEC_VERSION);
            Forms::gzipped(&doc, proto::encode_v2)
        })
    }

    fn v3_index(&self) -> &Doc {
        self.v3_index.get_or_init(|| {
            let served = &self.served;
            let paths: Map<String, Value> = spec::v3_group_versions(served)
                .into_iter()
                .filter_map(|gv| {
                    let doc = spec::v3_document(served, &gv, SPEC_VERSION)?;
                    let hash = etag_of(doc.to_string().as_bytes());
                    let url = format!("/openapi/v3/{gv}?hash={hash}");
                    Some((gv, json!({ "serverRelativeURL": url })))
                })
                .collect();
            Doc::new(json!({ "paths": paths }).to_string().into_bytes())
        })
    }

    /// Serves the OpenAPI endpoints. `path` is the request target (path and optional query, e.g.
    /// `/openapi/v3/api/v1?hash=AB12`); `None` when the path is not an OpenAPI path, so the caller
    /// routes it elsewhere.
    pub(crate) fn handle(&self, path: &str, headers: &HeaderMap) -> Option<Response<Body>> {
        let (path, query) = path.split_once('?').unwrap_or((path, ""));
        let path = path.trim_end_matches('/');
        if path == "/openapi/v2" {
            return Some(v2(self.v2(), headers));
        }
        if path == "/openapi/v3" {
            return Some(respond(self.v3_index(), "application/json", headers, false));
        }
        let gv = path.strip_prefix("/openapi/v3/")?;
        // None for what the index does not list: both come from v3_document.
        let Some(forms) = self.v3_forms(gv) else {
            return Some(Status::not_found_path().into_response());
        };
        Some(group_version(gv, &forms, query, headers))
    }

    /// The v3 document of `gv`, kept from a recent request or built again (the same bytes,
    /// so the same hash the index lists).
    fn v3_forms(&self, gv: &str) -> Option<Arc<Forms>> {
        let lock = || self.v3_built.lock().unwrap_or_else(|e| e.into_inner());
        let kept = |built: &Built| {
            let found = built.docs.iter().find(|(name, _)| name == gv);
            found.map(|(_, forms)| forms.clone())
        };
        if let Some(forms) = kept(&lock()) {
            return Some(forms);
        }
        // Built without the lock, so requests for other documents do not wait on this one.
        let doc = spec::v3_document(&self.served, gv, SPEC_VERSION)?;
        let forms = Arc::new(Forms::new(&doc, proto3::encode_v3));
        let mut built = lock();
        if let Some(forms) = kept(&built) {
            return Some(forms);
        }
        built.bytes += forms.size();
        built.docs.push_back((gv.to_string(), forms.clone()));
        while built.bytes > V3_KEPT_BYTES && built.docs.len() > 1 {
            if let Some((_, old)) = built.docs.pop_front() {
                built.bytes -= old.size();
            }
        }
        Some(forms)
    }

    /// Serves /openapi/v2 with the remote APIServices' documents merged in: `remotes` holds each
    /// one's path prefix (`/apis/<group>/<version>/`) and downloaded document, in merge order;
    /// `generation` changes whenever they do. The merged document is built on the first request
    /// of each generation and kept.
    pub(crate) fn handle_v2_merged(
        &self,
        headers: &HeaderMap,
        generation: u64,
        remotes: &[(String, Arc<Value>)],
    ) -> Response<Body> {
        let forms = {
            // Held while building, so concurrent requests wait for one build.
            let mut slot = self.merged_v2.lock().unwrap_or_else(|e| e.into_inner());
            match slot.as_ref() {
                Some((built, forms)) if *built == generation => forms.clone(),
                _ => {
                    let local = spec::v2_document(&self.served, SPEC_VERSION);
                    let remotes = remotes.iter().map(|(p, s)| (p.as_str(), s.as_ref()));
                    let merged = merge::merge_remotes(local, remotes);
                    let forms = Arc::new(Forms::gzipped(&merged, proto::encode_v2));
                    *slot = Some((generation, forms.clone()));
                    forms
                }
            }
        };
        v2(&forms, headers)
    }
}

/// /openapi/v2 in the form the Accept header picks.
fn v2(forms: &Forms, headers: &HeaderMap) -> Response<Body> {
    let clauses = negotiate::accept_clauses(headers);
    match negotiate::choose(&clauses, &V2_OFFERS) {
        Some(form) => {
            let (doc, content_type) = forms.pick(form);
            respond(doc, content_type, headers, false)
        }
        None => bare(StatusCode::NOT_ACCEPTABLE),
    }
}

/// handler3's HandleGroupVersion for a served group version: negotiation, then the `hash`
/// query parameter (ignored when empty).
fn group_version(gv: &str, forms: &Forms, query: &str, headers: &HeaderMap) -> Response<Body> {
    let clauses = negotiate::accept_clauses(headers);
    if clauses.is_empty() {
        // An Accept header without a single media range: kube-openapi returns before
        // negotiating, which answers 200 with nothing.
        return bare(StatusCode::OK);
    }
    let Some(form) = negotiate::choose(&clauses, &V3_OFFERS) else {
        return bare(StatusCode::NOT_ACCEPTABLE);
    };
    let (doc, content_type) = forms.pick(form);
    let hash = form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "hash")
        .map(|(_, v)| v.into_owned())
        .filter(|v| !v.is_empty());
    match hash {
        Some(h) if h != doc.hash => {
            let mut resp = bare(StatusCode::MOVED_PERMANENTLY);
            let location = format!("/openapi/v3/{gv}?hash={}", doc.hash);
            set(&mut resp, header::LOCATION, &location);
            set(&mut resp, header::CONTENT_TYPE, content_type);
            set(&mut resp, header::ETAG, &format!("\"{}\"", doc.hash));
            resp
        }
        Some(_) => respond(doc, content_type, headers, true),
        None => respond(doc, content_type, headers, false),
    }
}

/// A response without a body, varying on Accept and not cached.
fn bare(status: StatusCode) -> Response<Body> {
    let mut resp = Response::new(crate::api::empty_body());
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("no-cache, private"),
    );
    resp
}

fn set(resp: &mut Response<Body>, name: header::HeaderName, value: &str) {
    if let Ok(v) = HeaderValue::from_str(value) {
        resp.headers_mut().insert(name, v);
    }
}

fn respond(doc: &Doc, content_type: &str, headers: &HeaderMap, immutable: bool) -> Response<Body> {
    let etag = format!("\"{}\"", doc.hash);
    let not_modified = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    let mut gzipped = false;
    let mut resp = if not_modified {
        let mut r = Response::new(crate::api::empty_body());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        match doc.body(headers) {
            Ok((bytes, gz)) => {
                gzipped = gz;
                Response::new(full_body(bytes))
            }
            Err(e) => {
                return Status::internal(format!("inflating the OpenAPI document: {e}"))
                    .into_response()
            }
        }
    };
    let h = resp.headers_mut();
    if gzipped {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static("gzip"));
    }
    if let Ok(v) = HeaderValue::from_str(content_type) {
        h.insert(header::CONTENT_TYPE, v);
    }
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    if doc.gzipped {
        h.append(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    }
    if immutable {
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("public, immutable"),
        );
        let expires = chrono::Utc::now() + chrono::Duration::days(365);
        if let Ok(v) =
            HeaderValue::from_str(&expires.format("%a, %d %b %Y %H:%M:%S GMT").to_string())
        {
            h.insert(header::EXPIRES, v);
        }
    } else {
        h.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static("no-cache, private"),
        );
    }
    resp
}

#[cfg(test)]
mod proto3_tests;
#[cfg(test)]
mod tests;
