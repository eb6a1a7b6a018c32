//! Content negotiation (handlers/negotiation in k8s): which representation the client
//! accepts (JSON, YAML, Table, PartialObjectMetadata, aggregated discovery), request body
//! decoding (JSON, YAML, protobuf; anything else is an unsupported media type), and JSON
//! responses with `Warning` headers. A body that does not decode is an [`Error`], answered by
//! endpoints/status.rs. May use: registry, api.

use crate::api::protobuf::ProtobufError;
use crate::api::{full_body, Body, GroupVersionKind};
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response};
use serde_json::Value;

/// The media type of aggregated discovery responses.
pub(crate) const AGGREGATED_DISCOVERY: &str =
    "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

/// Media types accepted in request bodies (the 415 message lists them).
const BODY_TYPES: &str = "application/json, application/yaml, application/vnd.kubernetes.protobuf";

/// A request body that does not decode. The messages are kube-apiserver's, verbatim, so they
/// include the decoder's own text.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// A JSON body that does not parse.
    #[error("couldn't get version/kind; json parse error: {0}")]
    Json(serde_json::Error),
    /// A YAML body that does not parse.
    #[error("error converting YAML to JSON: yaml: {0}")]
    Yaml(serde_yaml::Error),
    /// A protobuf body that does not decode.
    #[error("{0}")]
    Protobuf(ProtobufError),
    /// A Content-Type no body decoder takes.
    #[error("the body of the request was in an unknown format - accepted media types include: {BODY_TYPES}")]
    UnsupportedMediaType,
    /// The body decodes, but not to an object.
    #[error("{kind} in version \"{version}\" cannot be handled as a {kind}: the body is not a JSON object")]
    NotAnObject {
        /// The kind of the URL.
        kind: String,
        /// Its version.
        version: String,
    },
}

/// What the client asked to receive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Output {
    /// Plain JSON objects.
    Json,
    /// YAML.
    Yaml,
    /// A meta.k8s.io Table of this version (`v1` or `v1beta1`).
    Table(&'static str),
    /// meta.k8s.io PartialObjectMetadata(List) of this version.
    Metadata(&'static str),
}

/// One entry of an Accept header: the media type and its parameters.
struct MediaRange {
    essence: String,
    params: Vec<(String, String)>,
}

impl MediaRange {
    fn param(&self, key: &str) -> &str {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map_or("", |(_, v)| v.as_str())
    }
}

fn accept_ranges(headers: &HeaderMap) -> Vec<MediaRange> {
    let raw = headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect::<Vec<_>>()
        .join(",");
    raw.split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|entry| {
            let mut parts = entry.split(';');
            let essence = parts.next().unwrap_or("").trim().to_ascii_lowercase();
            let params = parts
                .filter_map(|p| p.split_once('='))
                .map(|(k, v)| (k.trim().to_string(), v.trim().trim_matches('"').to_string()))
                .collect();
            MediaRange { essence, params }
        })
        .collect()
}

/// Picks the first acceptable representation, in the client's order; JSON when nothing
/// matches (kube-apiserver is lenient the same way).
pub(crate) fn output(headers: &HeaderMap) -> Output {
    for r in accept_ranges(headers) {
        let json_like = matches!(
            r.essence.as_str(),
            "application/json" | "*/*" | "application/*"
        );
        match (json_like, r.param("as"), r.param("g"), r.param("v")) {
            (true, "Table", "meta.k8s.io", "v1") => return Output::Table("v1"),
            (true, "Table", "meta.k8s.io", "v1beta1") => return Output::Table("v1beta1"),
            (true, "PartialObjectMetadata" | "PartialObjectMetadataList", "meta.k8s.io", "v1") => {
                return Output::Metadata("v1")
            }
            (
                true,
                "PartialObjectMetadata" | "PartialObjectMetadataList",
                "meta.k8s.io",
                "v1beta1",
            ) => return Output::Metadata("v1beta1"),
            (true, "", _, _) => return Output::Json,
            _ if r.essence == "application/yaml" => return Output::Yaml,
            _ => {}
        }
    }
    Output::Json
}

/// Whether the client asked for aggregated discovery v2 before plain JSON.
pub(crate) fn wants_aggregated_discovery(headers: &HeaderMap) -> bool {
    for r in accept_ranges(headers) {
        let json_like = matches!(
            r.essence.as_str(),
            "application/json" | "*/*" | "application/*"
        );
        if json_like
            && r.param("as") == "APIGroupDiscoveryList"
            && r.param("g") == "apidiscovery.k8s.io"
            && r.param("v") == "v2"
        {
            return true;
        }
        if json_like && r.param("as").is_empty() {
            return false;
        }
    }
    false
}

/// The Content-Type essence of a request.
pub(crate) fn content_type(headers: &HeaderMap) -> String {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Whether a request body is JSON by its Content-Type (none counts as JSON, as in
/// [`decode_body`]).
pub(crate) fn is_json_body(headers: &HeaderMap) -> bool {
    is_json_type(&content_type(headers))
}

fn is_json_type(content_type: &str) -> bool {
    matches!(content_type, "" | "application/json" | "*/*")
}

/// Decodes a create/update body into JSON by its Content-Type.
pub(crate) fn decode_body(
    headers: &HeaderMap,
    body: &Bytes,
    gvk: &GroupVersionKind,
) -> Result<Value, Error> {
    let ct = content_type(headers);
    let value = match ct.as_str() {
        json if is_json_type(json) => json_to_value(body)?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => yaml_to_json(body)?,
        "application/vnd.kubernetes.protobuf" => {
            super::protobuf::decode(body, gvk).map_err(Error::Protobuf)?
        }
        _ => return Err(Error::UnsupportedMediaType),
    };
    if !value.is_object() {
        return Err(Error::NotAnObject {
            kind: gvk.kind.clone(),
            version: gvk.version.clone(),
        });
    }
    Ok(value)
}

/// A JSON body as a JSON tree.
pub(crate) fn json_to_value(body: &[u8]) -> Result<Value, Error> {
    serde_json::from_slice(body).map_err(Error::Json)
}

/// YAML → JSON (yaml.YAMLToJSON).
pub(crate) fn yaml_to_json(body: &[u8]) -> Result<Value, Error> {
    serde_yaml::from_slice::<Value>(body).map_err(Error::Yaml)
}

/// Adds a `Warning: 299 - "<text>"` header to a response (first, as upstream's handler
/// records the deprecation warning before the handler's own).
pub(crate) fn add_warning(resp: &mut Response<Body>, text: &str) {
    if let Some(v) = warning_value(text) {
        resp.headers_mut().append(http::header::WARNING, v);
    }
}

/// Adds a `Warning: 299 - "<text>"` header before the response's other warnings (one
/// recorded while authenticating, before any handler ran).
pub(crate) fn add_warning_first(resp: &mut Response<Body>, text: &str) {
    let Some(v) = warning_value(text) else {
        return;
    };
    let headers = resp.headers_mut();
    let later: Vec<HeaderValue> = headers
        .get_all(http::header::WARNING)
        .iter()
        .cloned()
        .collect();
    headers.remove(http::header::WARNING);
    headers.append(http::header::WARNING, v);
    for w in later {
        headers.append(http::header::WARNING, w);
    }
}

/// A `Warning: 299 - "<text>"` header value (NewWarningHeader).
fn warning_value(text: &str) -> Option<HeaderValue> {
    let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
    HeaderValue::from_str(&format!("299 - \"{escaped}\"")).ok()
}

/// Encodes `value` for `out` (JSON unless YAML was asked for).
pub(crate) fn respond(
    code: u16,
    value: &Value,
    out: Output,
    warnings: &[String],
) -> Response<Body> {
    if out == Output::Yaml {
        let yaml = serde_yaml::to_string(value).unwrap_or_default();
        return respond_bytes(code, Bytes::from(yaml), "application/yaml", warnings);
    }
    let json = serde_json::to_vec(value).unwrap_or_default();
    respond_bytes(code, Bytes::from(json), "application/json", warnings)
}

/// A response whose body is already encoded as `content_type`.
pub(crate) fn respond_bytes(
    code: u16,
    body: Bytes,
    content_type: &'static str,
    warnings: &[String],
) -> Response<Body> {
    let mut resp = Response::new(full_body(body));
    *resp.status_mut() = http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::OK);
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    for w in warnings {
        if let Some(v) = warning_value(w) {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

/// A JSON response with an explicit Content-Type.
pub(crate) fn respond_typed(value: &Value, content_type: &'static str) -> Response<Body> {
    let mut resp = Response::new(full_body(serde_json::to_vec(value).unwrap_or_default()));
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(accept: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        h
    }

    #[test]
    fn picks_table_and_discovery_like_kube() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(output(&headers(kubectl)), Output::Table("v1"));
        assert_eq!(output(&headers("application/json")), Output::Json);
        assert_eq!(
            output(&headers(
                "application/vnd.kubernetes.protobuf,application/json"
            )),
            Output::Json
        );
        let disc = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert!(wants_aggregated_discovery(&headers(disc)));
        assert!(!wants_aggregated_discovery(&headers("application/json")));
    }

    #[test]
    fn warning_header_format() {
        assert_eq!(
            warning_value("unknown field \"spec.x\"").unwrap(),
            "299 - \"unknown field \\\"spec.x\\\"\""
        );
    }
}
