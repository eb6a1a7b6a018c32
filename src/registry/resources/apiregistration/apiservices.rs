//! APIServices (kube-aggregator's pkg/registry/apiservice): the v1 default port, the two
//! strategies of upstream's storage (the main resource keeps the status; `status` keeps the
//! spec, labels, annotations, finalizers and owner references), the Available condition a
//! local APIService is created with, and the Name/Service/Available/Age table.
//! May use: registry (strategy, error, validation), api.

use super::validation::{
    validate_api_service, validate_api_service_status_update, validate_api_service_update,
};
use super::GROUP;
use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use crate::api::At;
use crate::registry::error::FieldError;
use crate::registry::strategy::{
    age_of, col, name_of, schema_of, str_at, text, typed_roundtrip, Column, Input, KindSchema,
    Names, ResourceInfo, Strategy, AGE_COLUMN, NAME_COLUMN, STORED_VERBS,
};
use base64::Engine as _;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use k8s_pb::kube_aggregator::pkg::apis::apiregistration::v1 as pb;
use serde_json::{json, Map, Value};

/// What discovery reports for apiservices.
pub(crate) static INFO: ResourceInfo = ResourceInfo {
    group: text(GROUP),
    version: text("v1"),
    resource: text("apiservices"),
    singular: text("apiservice"),
    kind: text("APIService"),
    namespaced: false,
    short_names: Names::Static(&[]),
    categories: Names::Static(&["api-extensions"]),
    verbs: STORED_VERBS,
    subresources: &[("status", &["get", "patch", "update"])],
    schema: KindSchema::Typed(schema_of::<APIService>),
    protobuf: Some(from_protobuf),
};

/// The condition type the aggregator maintains (apiregistration.Available).
pub(crate) const AVAILABLE: &str = "Available";

/// The apiservice strategy (apiServerStrategy and apiServerStatusStrategy).
pub(crate) struct ApiServices;

/// Whether the APIService is served by kube-apiserver itself (no `spec.service`).
fn is_local(obj: &Value) -> bool {
    obj.at("/spec/service").is_none_or(Value::is_null)
}

impl Strategy for ApiServices {
    fn info(&self) -> &ResourceInfo {
        &INFO
    }

    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String> {
        let (mut obj, unknown) = typed_roundtrip::<APIService>(obj)?;
        // SetDefaults_ServiceReference.
        if let Some(service) = obj
            .get_mut("spec")
            .and_then(|s| s.get_mut("service"))
            .and_then(Value::as_object_mut)
        {
            service.entry("port").or_insert(Value::from(443));
        }
        Ok((obj, unknown))
    }

    /// PrepareForCreate: the status starts empty, but a local APIService is available at once
    /// (NewLocalAvailableAPIServiceCondition).
    fn prepare_for_create(&self, obj: &mut Value) {
        let status = if is_local(obj) {
            json!({"conditions": [{
                "type": AVAILABLE,
                "status": "True",
                "lastTransitionTime": crate::api::time::now_rfc3339(),
                "reason": "Local",
                "message": "Local APIServices are always available",
            }]})
        } else {
            json!({})
        };
        if let Some(m) = obj.as_object_mut() {
            m.insert("status".into(), status);
        }
    }

    /// PrepareForUpdate: the main resource does not write the status.
    fn prepare_for_update(&self, new: &mut Value, old: &Value) {
        if let Some(m) = new.as_object_mut() {
            match old.get("status") {
                Some(s) => m.insert("status".into(), s.clone()),
                None => m.remove("status"),
            };
        }
    }

    /// apiServerStatusStrategy.PrepareForUpdate: spec, labels, annotations, finalizers and
    /// owner references come from `old`.
    fn prepare_for_subresource_update(&self, sub: &str, new: &mut Value, old: &Value) -> bool {
        if sub != "status" {
            return false;
        }
        crate::registry::strategy::keep_spec_and_meta(
            new,
            old,
            &["labels", "annotations", "finalizers", "ownerReferences"],
        );
        true
    }

    fn validate(&self, obj: &Value) -> Vec<FieldError> {
        validate_api_service(obj)
    }

    fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_api_service_update(new, old)
    }

    fn validate_subresource_update(&self, _sub: &str, new: &Value, old: &Value) -> Vec<FieldError> {
        validate_api_service_status_update(new, old)
    }

    /// The name must be `<version>.<group>`, which the store's name rule cannot say.
    fn validates_object_meta(&self) -> bool {
        true
    }

    /// ConvertToTable of upstream's APIService storage.
    fn columns(&self) -> Vec<Column> {
        vec![
            NAME_COLUMN,
            col(
                "Service",
                "string",
                "The reference to the service that hosts this API endpoint.",
            ),
            col("Available", "string", "Whether this service is available."),
            AGE_COLUMN,
        ]
    }

    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            name_of(obj).into(),
            service_cell(obj).into(),
            available_cell(obj).into(),
            age_of(obj),
        ]
    }
}

/// `Local`, or `<namespace>/<name>` of the service.
fn service_cell(obj: &Value) -> String {
    if is_local(obj) {
        return "Local".into();
    }
    format!(
        "{}/{}",
        str_at(obj, "/spec/service/namespace"),
        str_at(obj, "/spec/service/name")
    )
}

/// `True`, `False (<reason>)`, the bare status without a reason, or `Unknown` without the
/// condition.
fn available_cell(obj: &Value) -> String {
    let condition = obj
        .at("/status/conditions")
        .and_then(Value::as_array)
        .and_then(|list| list.iter().find(|c| str_at(c, "/type") == AVAILABLE));
    let Some(c) = condition else {
        return "Unknown".into();
    };
    let (status, reason) = (str_at(c, "/status"), str_at(c, "/reason"));
    if status == "True" || reason.is_empty() {
        status.into()
    } else {
        format!("{status} ({reason})")
    }
}

/// Decodes the protobuf form of the object (client-go's typed clients send it).
pub(crate) fn from_protobuf(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    Ok(api_service(message::<pb::APIService>(raw, "APIService")?).into_map())
}

fn api_service(a: pb::APIService) -> Obj {
    let spec = a.spec.as_ref().map(|s| {
        let service = s.service.as_ref().map(|r| {
            Obj::default()
                .str("namespace", &r.namespace)
                .str("name", &r.name)
                .opt_int("port", r.port.map(i64::from))
        });
        let o = Obj::default()
            .obj("service", service)
            .str("group", &s.group)
            .str("version", &s.version)
            .bool("insecureSkipTLSVerify", s.insecure_skip_tls_verify);
        let o = match s.ca_bundle.as_deref() {
            Some(b) if !b.is_empty() => o.put(
                "caBundle",
                base64::engine::general_purpose::STANDARD.encode(b).into(),
            ),
            _ => o,
        };
        // Neither priority has omitempty.
        o.put(
            "groupPriorityMinimum",
            s.group_priority_minimum.unwrap_or(0).into(),
        )
        .put("versionPriority", s.version_priority.unwrap_or(0).into())
    });
    let status = a.status.as_ref().map(|st| {
        Obj::default().list("conditions", &st.conditions, |c| {
            Obj::default()
                .put("type", c.r#type.clone().unwrap_or_default().into())
                .put("status", c.status.clone().unwrap_or_default().into())
                .time("lastTransitionTime", &c.last_transition_time)
                .str("reason", &c.reason)
                .str("message", &c.message)
        })
    });
    metadata(&a.metadata)
        .obj("spec", spec)
        .obj("status", status)
}
