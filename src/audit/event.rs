//! The audit event (audit.k8s.io/v1 Event) and its two encodings: JSON with upstream's field
//! names, order and omissions (staging/src/k8s.io/apiserver/pkg/apis/audit/v1/types.go,
//! timestamps as metav1.MicroTime), and upstream's one-line text summary (EventString in
//! pkg/audit/format.go), which the legacy log format writes and failed writes are logged
//! with. May use: api.

use super::policy::{Level, Stage};
use crate::api::{StatusDetails, UserInfo};
use chrono::{DateTime, Utc};
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;

/// One audit event: what one request was, at one stage.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Event {
    kind: &'static str,
    api_version: &'static str,
    /// The level the policy chose.
    #[serde(serialize_with = "level")]
    pub level: Level,
    /// The request's audit ID (the Audit-ID header).
    #[serde(rename = "auditID")]
    pub audit_id: String,
    /// The stage this event records.
    #[serde(serialize_with = "stage")]
    pub stage: Stage,
    /// Path and query as sent.
    #[serde(rename = "requestURI")]
    pub request_uri: String,
    /// The Kubernetes verb, or the lower-cased HTTP method of a non-resource request.
    pub verb: String,
    /// The authenticated user.
    pub user: User,
    /// The user the request acted as, when it impersonated one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub impersonated_user: Option<User>,
    /// X-Forwarded-For, X-Real-Ip, then the connection's address.
    #[serde(rename = "sourceIPs", skip_serializing_if = "Vec::is_empty")]
    pub source_ips: Vec<String>,
    /// The client's User-Agent (truncated past 1024 bytes, as upstream).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub user_agent: String,
    /// What the request is about; None for non-resource requests.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object_ref: Option<ObjectReference>,
    /// The response's code, and for a Status response its other fields.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response_status: Option<ResponseStatus>,
    /// The request body as JSON (level Request and above).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "raw")]
    pub request_object: Option<Arc<RawValue>>,
    /// The response body as JSON (level RequestResponse).
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "raw")]
    pub response_object: Option<Arc<RawValue>>,
    /// When the request reached the server.
    #[serde(serialize_with = "micro_time")]
    pub request_received_timestamp: DateTime<Utc>,
    /// When the request reached this stage.
    #[serde(serialize_with = "micro_time")]
    pub stage_timestamp: DateTime<Utc>,
    /// Notes of the filters, e.g. the authorization decision and its reason.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<Cow<'static, str>, String>,
}

/// authentication.k8s.io/v1 UserInfo: every field is omitted when empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct User {
    /// User name.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    /// UID.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// Groups.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Extra attributes.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub extra: BTreeMap<String, Vec<String>>,
}

impl From<&UserInfo> for User {
    fn from(u: &UserInfo) -> User {
        User {
            username: u.name.clone(),
            uid: u.uid.clone(),
            groups: u.groups.clone(),
            extra: u.extra.clone(),
        }
    }
}

/// audit.k8s.io/v1 ObjectReference.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ObjectReference {
    /// Resource, e.g. `configmaps`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource: String,
    /// Namespace ("" for cluster-scoped objects).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    /// Object name ("" for collections).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub name: String,
    /// Object UID, from the request object.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub uid: String,
    /// API group ("" for the core group).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// API version.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// Resource version, from the request object.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// Subresource, e.g. `status`.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub subresource: String,
}

/// The metav1 Status an event records: `metadata` is always written (an empty ListMeta),
/// the rest when set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub(crate) struct ResponseStatus {
    metadata: Empty,
    /// `Success` or `Failure`, for Status responses.
    #[serde(skip_serializing_if = "str::is_empty")]
    pub status: &'static str,
    /// The Status message (or why authentication failed).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub message: String,
    /// The Status reason.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// The Status details.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub details: Option<StatusDetails>,
    /// The HTTP status code.
    #[serde(skip_serializing_if = "is_zero")]
    pub code: u16,
}

impl ResponseStatus {
    /// Only a code (what a response that is not a Status records).
    pub(crate) fn code(code: u16) -> ResponseStatus {
        ResponseStatus {
            code,
            ..ResponseStatus::default()
        }
    }

    /// A code with a message and, for a Status, its `status` (`Success` or `Failure`).
    pub(crate) fn with_message(code: u16, status: &'static str, message: String) -> ResponseStatus {
        ResponseStatus {
            status,
            message,
            ..ResponseStatus::code(code)
        }
    }

    /// The fields of a Status response (LogResponseObject in k8s copies these).
    pub(crate) fn from_status(s: &crate::api::Status) -> ResponseStatus {
        ResponseStatus {
            metadata: Empty {},
            status: s.status,
            message: s.message.clone(),
            reason: s.reason.clone(),
            details: (s.details.present || !s.details.is_empty()).then(|| s.details.clone()),
            code: s.code,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
struct Empty {}

fn is_zero(n: &u16) -> bool {
    *n == 0
}

fn level<S: Serializer>(l: &Level, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(l.as_str())
}

fn stage<S: Serializer>(st: &Stage, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(st.as_str())
}

fn raw<S: Serializer>(v: &Option<Arc<RawValue>>, s: S) -> Result<S::Ok, S::Error> {
    match v {
        Some(raw) => raw.serialize(s),
        None => s.serialize_none(),
    }
}

/// metav1.MicroTime: RFC 3339 in UTC with exactly six fractional digits.
fn micro_time<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&t.format("%Y-%m-%dT%H:%M:%S%.6fZ"))
}

impl Event {
    /// A new event at stage RequestReceived, stamped with `received` for both timestamps.
    pub(crate) fn new(level: Level, audit_id: String, received: DateTime<Utc>) -> Event {
        Event {
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level,
            audit_id,
            stage: Stage::RequestReceived,
            request_uri: String::new(),
            verb: String::new(),
            user: User::default(),
            impersonated_user: None,
            source_ips: Vec::new(),
            user_agent: String::new(),
            object_ref: None,
            response_status: None,
            request_object: None,
            response_object: None,
            request_received_timestamp: received,
            stage_timestamp: received,
            annotations: BTreeMap::new(),
        }
    }

    /// One JSON line, newline included.
    pub(crate) fn to_json_line(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(self)
            .expect("an event always serializes: strings, numbers and checked JSON");
        out.push(b'\n');
        out
    }

    /// upstream's EventString: a one-line summary without objects or annotations.
    pub(crate) fn summary(&self) -> String {
        let (mut username, mut groups) = ("<none>".to_string(), "<none>".to_string());
        if !self.user.username.is_empty() {
            username.clone_from(&self.user.username);
            if !self.user.groups.is_empty() {
                groups = quoted_list(&self.user.groups);
            }
        }
        let (mut as_user, mut as_groups) = ("<self>".to_string(), "<lookup>".to_string());
        if let Some(u) = &self.impersonated_user {
            as_user.clone_from(&u.username);
            as_groups = quoted_list(&u.groups);
        }
        let namespace = self
            .object_ref
            .as_ref()
            .map(|r| r.namespace.as_str())
            .filter(|ns| !ns.is_empty())
            .unwrap_or("<none>");
        let response = self
            .response_status
            .as_ref()
            .map_or("<deferred>".to_string(), |s| s.code.to_string());
        let ip = self.source_ips.first().map_or("<unknown>", String::as_str);
        format!(
            "{} AUDIT: id={:?} stage={:?} ip={ip:?} method={:?} user={username:?} groups={groups:?} as={as_user:?} asgroups={as_groups:?} user-agent={:?} namespace={namespace:?} uri={:?} response=\"{response}\"",
            rfc3339_nano(&self.request_received_timestamp),
            self.audit_id,
            self.stage.as_str(),
            self.verb,
            self.user_agent,
            self.request_uri,
        )
    }
}

fn quoted_list(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("{i:?}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Go's time.RFC3339Nano in UTC: trailing zeros of the fraction dropped.
fn rfc3339_nano(t: &DateTime<Utc>) -> String {
    let base = t.format("%Y-%m-%dT%H:%M:%S").to_string();
    let nanos = format!("{:09}", t.timestamp_subsec_nanos());
    let fraction = nanos.trim_end_matches('0');
    if fraction.is_empty() {
        format!("{base}Z")
    } else {
        format!("{base}.{fraction}Z")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn at(micros: i64) -> DateTime<Utc> {
        Utc.timestamp_micros(1_700_000_000_000_000 + micros)
            .unwrap()
    }

    /// An event as kube-apiserver writes it (field order, omissions, MicroTime), from a
    /// kube-apiserver audit log line of a `kubectl create configmap` at level Request.
    #[test]
    fn json_matches_upstream() {
        let mut ev = Event::new(
            Level::Request,
            "5a0b7ab8-3c56-4b8e-9c1c-1b5c9d1e6e0f".into(),
            at(123_456),
        );
        ev.stage = Stage::ResponseComplete;
        ev.request_uri = "/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create".into();
        ev.verb = "create".into();
        ev.user = User {
            username: "kubernetes-admin".into(),
            groups: vec!["system:masters".into(), "system:authenticated".into()],
            ..User::default()
        };
        ev.source_ips = vec!["127.0.0.1".into()];
        ev.user_agent = "kubectl/v1.37.0 (linux/amd64) kubernetes/abcdef".into();
        ev.object_ref = Some(ObjectReference {
            resource: "configmaps".into(),
            namespace: "default".into(),
            name: "cm".into(),
            api_version: "v1".into(),
            ..ObjectReference::default()
        });
        ev.response_status = Some(ResponseStatus::code(201));
        ev.request_object = Some(Arc::from(
            RawValue::from_string(r#"{"kind":"ConfigMap","apiVersion":"v1"}"#.into()).unwrap(),
        ));
        ev.stage_timestamp = at(2_000_001);
        ev.annotations
            .insert("authorization.k8s.io/decision".into(), "allow".into());
        ev.annotations
            .insert("authorization.k8s.io/reason".into(), String::new());
        let line = String::from_utf8(ev.to_json_line()).unwrap();
        assert_eq!(
            line,
            concat!(
                r#"{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Request","auditID":"5a0b7ab8-3c56-4b8e-9c1c-1b5c9d1e6e0f","stage":"ResponseComplete","#,
                r#""requestURI":"/api/v1/namespaces/default/configmaps?fieldManager=kubectl-create","verb":"create","#,
                r#""user":{"username":"kubernetes-admin","groups":["system:masters","system:authenticated"]},"#,
                r#""sourceIPs":["127.0.0.1"],"userAgent":"kubectl/v1.37.0 (linux/amd64) kubernetes/abcdef","#,
                r#""objectRef":{"resource":"configmaps","namespace":"default","name":"cm","apiVersion":"v1"},"#,
                r#""responseStatus":{"metadata":{},"code":201},"#,
                r#""requestObject":{"kind":"ConfigMap","apiVersion":"v1"},"#,
                r#""requestReceivedTimestamp":"2023-11-14T22:13:20.123456Z","stageTimestamp":"2023-11-14T22:13:22.000001Z","#,
                r#""annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""}}"#,
                "\n"
            )
        );
    }

    #[test]
    fn failure_status_and_empty_user() {
        let mut ev = Event::new(Level::Metadata, "id".into(), at(0));
        let status = crate::api::Status::failure(404, "NotFound", "configmaps \"x\" not found")
            .with_details(StatusDetails {
                name: "x".into(),
                kind: "configmaps".into(),
                ..StatusDetails::default()
            });
        ev.response_status = Some(ResponseStatus::from_status(&status));
        let v: serde_json::Value = serde_json::from_slice(&ev.to_json_line()).unwrap();
        assert_eq!(v["user"], serde_json::json!({}));
        assert_eq!(
            serde_json::to_string(&v["responseStatus"]).unwrap(),
            r#"{"metadata":{},"status":"Failure","message":"configmaps \"x\" not found","reason":"NotFound","details":{"name":"x","kind":"configmaps"},"code":404}"#
        );
        assert!(v.get("objectRef").is_none() && v.get("annotations").is_none());
        assert_eq!(v["requestReceivedTimestamp"], "2023-11-14T22:13:20.000000Z");
    }

    #[test]
    fn summary_is_upstreams_event_string() {
        let mut ev = Event::new(Level::Metadata, "abc".into(), at(120_000));
        ev.verb = "get".into();
        ev.request_uri = "/api".into();
        assert_eq!(
            ev.summary(),
            r#"2023-11-14T22:13:20.12Z AUDIT: id="abc" stage="RequestReceived" ip="<unknown>" method="get" user="<none>" groups="<none>" as="<self>" asgroups="<lookup>" user-agent="" namespace="<none>" uri="/api" response="<deferred>""#
        );
        ev.user.username = "bob".into();
        ev.user.groups = vec!["a".into(), "b".into()];
        ev.response_status = Some(ResponseStatus::code(200));
        assert!(ev.summary().contains(r#"user="bob" groups="\"a\",\"b\"""#));
        assert!(ev.summary().ends_with(r#"response="200""#));
    }
}
