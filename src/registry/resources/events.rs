//! Events, served as v1 and as events.k8s.io/v1 over the same stored objects (kept in the v1
//! shape under `<prefix>/events`, as kube-apiserver does), with events' field selectors (v1:
//! involvedObject.*, reason, reportingComponent, source, type; events.k8s.io/v1: regarding.*,
//! reason, reportingController, source, type) and kube's event table.
//! May use: registry (strategy), api.

use crate::api::protobuf::{event_source, message, metadata, object_reference, Obj, ProtobufError};
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    col, name_of, since, str_at, typed_roundtrip, Column, Input, ResourceInfo, Strategy,
    STORED_VERBS,
};
use crate::registry::strategy::{schema_of, text, KindSchema, Names};
use k8s_pb::api::{core, events};
use serde_json::{Map, Value};

/// What discovery reports for v1 events.
pub(crate) static CORE_INFO: ResourceInfo = ResourceInfo {
    group: text(""),
    version: text("v1"),
    resource: text("events"),
    singular: text("event"),
    kind: text("Event"),
    namespaced: true,
    short_names: Names::Static(&["ev"]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<k8s_openapi::api::core::v1::Event>),
    protobuf: Some(core_from_protobuf),
};

/// What discovery reports for events.k8s.io/v1 events.
pub(crate) static EVENTS_INFO: ResourceInfo = ResourceInfo {
    group: text("events.k8s.io"),
    version: text("v1"),
    resource: text("events"),
    singular: text("event"),
    kind: text("Event"),
    namespaced: true,
    short_names: Names::Static(&["ev"]),
    categories: Names::Static(&[]),
    verbs: STORED_VERBS,
    subresources: &[],
    schema: KindSchema::Typed(schema_of::<k8s_openapi::api::events::v1::Event>),
    protobuf: Some(events_from_protobuf),
};

/// events.k8s.io/v1's field labels and the v1 labels they select by (pkg/apis/events/v1's
/// AddFieldLabelConversionsForEvent): its own names (`regarding.*`, `reportingController`),
/// not v1's.
const EVENTS_FIELDS: &[(&str, &str)] = &[
    ("reason", "reason"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    (
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
    ("source", "source"),
    ("type", "type"),
];

/// The v1 field label an events.k8s.io/v1 one stands for.
fn core_label(events_label: &str) -> Option<&'static str> {
    EVENTS_FIELDS
        .iter()
        .find(|(e, _)| *e == events_label)
        .map(|(_, c)| *c)
}

/// Field value of a v1-shaped event (pkg/apis/core/v1 event field label conversion).
fn core_field(obj: &Value, field: &str) -> Option<String> {
    Some(match field {
        "reportingComponent" => str_at(obj, "/reportingComponent").to_string(),
        "source" => str_at(obj, "/source/component").to_string(),
        "reason" | "type" => str_at(obj, &format!("/{field}")).to_string(),
        f => {
            let sub = f.strip_prefix("involvedObject.")?;
            str_at(obj, &format!("/involvedObject/{sub}")).to_string()
        }
    })
}

/// The table of both event versions (printEvent, always wide on the server).
fn event_columns() -> Vec<Column> {
    let p1 = |mut c: Column| {
        c.priority = 1;
        c
    };
    let mut name = p1(col(
        "Name",
        "string",
        "Name must be unique within a namespace.",
    ));
    name.format = "name".into();
    vec![
        col("Last Seen", "string", "The time at which the most recent occurrence of this event was recorded."),
        col("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future"),
        col("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
        col("Object", "string", "The object that this event is about."),
        p1(col("Subobject", "string", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object."),),
        p1(col("Source", "string", "The component reporting this event. Should be a short machine understandable string.")),
        col("Message", "string", "A human-readable description of the status of this operation."),
        p1(col("First Seen", "string", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)")),
        p1(col("Count", "string", "The number of times this event has occurred.")),
        name,
    ]
}

fn core_cells(obj: &Value) -> Vec<Value> {
    let first_ts = str_at(obj, "/firstTimestamp");
    let first = if first_ts.is_empty() {
        since(str_at(obj, "/eventTime"))
    } else {
        since(first_ts)
    };
    let last_ts = str_at(obj, "/lastTimestamp");
    let mut last = if last_ts.is_empty() {
        first.clone()
    } else {
        since(last_ts)
    };
    let mut count = obj.get("count").and_then(Value::as_i64).unwrap_or(0);
    if obj.get("series").is_some_and(|s| !s.is_null()) {
        last = since(str_at(obj, "/series/lastObservedTime"));
        count = obj
            .pointer("/series/count")
            .and_then(Value::as_i64)
            .unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }
    let kind = str_at(obj, "/involvedObject/kind").to_lowercase();
    let target_name = str_at(obj, "/involvedObject/name");
    let target = if target_name.is_empty() {
        kind
    } else {
        format!("{kind}/{target_name}")
    };
    let mut source = str_at(obj, "/source/component").to_string();
    if source.is_empty() {
        source = str_at(obj, "/reportingComponent").to_string();
    }
    let host = str_at(obj, "/source/host");
    let host = if host.is_empty() {
        str_at(obj, "/reportingInstance")
    } else {
        host
    };
    if !host.is_empty() {
        source = format!("{source}, {host}");
    }
    vec![
        last.into(),
        str_at(obj, "/type").into(),
        str_at(obj, "/reason").into(),
        target.into(),
        str_at(obj, "/involvedObject/fieldPath").into(),
        source.into(),
        str_at(obj, "/message").trim().into(),
        first.into(),
        Value::from(count),
        name_of(obj).into(),
    ]
}

/// v1 events.
pub(crate) struct CoreEvents;

impl Strategy for CoreEvents {
    fn info(&self) -> &ResourceInfo {
        &CORE_INFO
    }
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        typed_roundtrip::<k8s_openapi::api::core::v1::Event>(obj)
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        let ns = str_at(obj, "/metadata/namespace");
        let io_ns = str_at(obj, "/involvedObject/namespace");
        if !io_ns.is_empty() && io_ns != ns {
            errs.push(FieldError::invalid(
                "involvedObject.namespace",
                io_ns,
                "does not match event.namespace",
            ));
        }
        errs
    }
    fn supports_field(&self, field: &str) -> bool {
        // v1's own labels are the ones events.k8s.io/v1's map to.
        EVENTS_FIELDS.iter().any(|(_, core)| *core == field)
    }
    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        core_field(obj, field)
    }
    fn columns(&self) -> Vec<Column> {
        event_columns()
    }
    fn cells(&self, obj: &Value) -> Vec<Value> {
        core_cells(obj)
    }
}

/// (events.k8s.io name, v1 name) of the renamed top-level fields.
const RENAMES: &[(&str, &str)] = &[
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
    ("reportingController", "reportingComponent"),
];

fn rename(obj: Value, api_version: &str, from_events: bool) -> Value {
    let Value::Object(map) = obj else { return obj };
    let mut out = Map::new();
    for (k, v) in map {
        let key = RENAMES
            .iter()
            .find(|(e, c)| if from_events { e == &k } else { c == &k })
            .map(|(e, c)| {
                if from_events {
                    c.to_string()
                } else {
                    e.to_string()
                }
            })
            .unwrap_or(k);
        out.insert(key, v);
    }
    out.insert("apiVersion".into(), Value::from(api_version));
    Value::Object(out)
}

/// events.k8s.io/v1 events, converted to and from the stored v1 shape.
pub(crate) struct Events;

impl Strategy for Events {
    fn info(&self) -> &ResourceInfo {
        &EVENTS_INFO
    }
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        typed_roundtrip::<k8s_openapi::api::events::v1::Event>(obj)
    }
    fn to_storage(&self, obj: Value) -> Result<Value, crate::registry::Error> {
        Ok(rename(obj, "v1", true))
    }
    fn to_served(&self, obj: Value) -> Result<Value, crate::registry::Error> {
        Ok(rename(obj, "events.k8s.io/v1", false))
    }
    fn stores_served_form(&self) -> bool {
        false
    }
    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if obj.get("eventTime").is_none_or(Value::is_null) {
            errs.push(FieldError::required("eventTime", ""));
        }
        for f in [
            "reportingController",
            "reportingInstance",
            "action",
            "reason",
        ] {
            if str_at(obj, &format!("/{f}")).is_empty() {
                errs.push(FieldError::required(f, ""));
            }
        }
        let note = str_at(obj, "/note");
        if note.len() > 1024 {
            errs.push(FieldError::too_long("note", 1024));
        }
        errs
    }
    fn supports_field(&self, field: &str) -> bool {
        core_label(field).is_some()
    }
    fn field(&self, obj: &Value, field: &str) -> Option<String> {
        core_field(&rename(obj.clone(), "v1", true), core_label(field)?)
    }
    fn columns(&self) -> Vec<Column> {
        event_columns()
    }
    fn cells(&self, obj: &Value) -> Vec<Value> {
        core_cells(&rename(obj.clone(), "v1", true))
    }
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn core_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(core_event(message::<core::v1::Event>(raw, "Event")?).into_map())
}

fn core_event(e: core::v1::Event) -> Obj {
    let series = e.series.as_ref().map(|s| {
        Obj::default()
            .int("count", s.count.map(i64::from))
            .micro_time("lastObservedTime", &s.last_observed_time)
    });
    metadata(&e.metadata)
        .obj(
            "involvedObject",
            Some(
                e.involved_object
                    .as_ref()
                    .map(object_reference)
                    .unwrap_or_default(),
            ),
        )
        .str("reason", &e.reason)
        .str("message", &e.message)
        .obj("source", e.source.as_ref().map(event_source))
        .time("firstTimestamp", &e.first_timestamp)
        .time("lastTimestamp", &e.last_timestamp)
        .int("count", e.count.map(i64::from))
        .str("type", &e.r#type)
        .micro_time("eventTime", &e.event_time)
        .obj("series", series)
        .str("action", &e.action)
        .obj("related", e.related.as_ref().map(object_reference))
        .str("reportingComponent", &e.reporting_component)
        .str("reportingInstance", &e.reporting_instance)
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn events_from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(events_event(message::<events::v1::Event>(raw, "Event")?).into_map())
}

fn events_event(e: events::v1::Event) -> Obj {
    let series = e.series.as_ref().map(|s| {
        Obj::default()
            .int("count", s.count.map(i64::from))
            .micro_time("lastObservedTime", &s.last_observed_time)
    });
    metadata(&e.metadata)
        .micro_time("eventTime", &e.event_time)
        .obj("series", series)
        .str("reportingController", &e.reporting_controller)
        .str("reportingInstance", &e.reporting_instance)
        .str("action", &e.action)
        .str("reason", &e.reason)
        .obj("regarding", e.regarding.as_ref().map(object_reference))
        .obj("related", e.related.as_ref().map(object_reference))
        .str("note", &e.note)
        .str("type", &e.r#type)
        .obj(
            "deprecatedSource",
            e.deprecated_source.as_ref().map(event_source),
        )
        .time("deprecatedFirstTimestamp", &e.deprecated_first_timestamp)
        .time("deprecatedLastTimestamp", &e.deprecated_last_timestamp)
        .int("deprecatedCount", e.deprecated_count.map(i64::from))
}
