//! The per-resource strategy (RESTCreateStrategy / RESTUpdateStrategy / TableConvertor in k8s):
//! what a resource is (names, scope, verbs for discovery), how its objects are canonicalized
//! through the typed k8s-openapi structs, prepared, validated, selected by field and printed
//! as a Table. The generic store calls these in a fixed order (see store.rs).
//! May use: api.

pub(crate) use super::codec::roundtrip::typed_roundtrip;
use super::error::FieldError;
use super::validation::NameRule;
use crate::api::At;
use k8s_openapi::schemars::{generate::SchemaGenerator, JsonSchema};
use serde_json::Value;

/// Description of a served resource (what discovery reports). Built-in resources describe
/// themselves in statics; custom resources build theirs from their CustomResourceDefinition.
#[derive(Debug, Clone)]
pub(crate) struct ResourceInfo {
    /// API group ("" for core).
    pub group: Text,
    /// API version.
    pub version: Text,
    /// Plural resource name.
    pub resource: Text,
    /// Singular resource name.
    pub singular: Text,
    /// Kind.
    pub kind: Text,
    /// Namespace-scoped.
    pub namespaced: bool,
    /// Short names (`cm`, `ns`...).
    pub short_names: Names,
    /// Categories (`all`...).
    pub categories: Names,
    /// Verbs, sorted as kube-apiserver lists them.
    pub verbs: &'static [&'static str],
    /// Subresources with their verbs.
    pub subresources: &'static [(&'static str, &'static [&'static str])],
    /// The kind's OpenAPI schema.
    pub schema: KindSchema,
    /// Decodes the kind's protobuf form (`application/vnd.kubernetes.protobuf` bodies); custom
    /// resources have none (kube-apiserver serves them as JSON and YAML only).
    pub protobuf: Option<crate::api::protobuf::Decoder>,
}

/// A name in a [`ResourceInfo`]: static for built-ins, owned for custom resources.
pub(crate) type Text = std::borrow::Cow<'static, str>;

/// A static name of a [`ResourceInfo`] (const, for the built-ins' statics).
pub(crate) const fn text(s: &'static str) -> Text {
    std::borrow::Cow::Borrowed(s)
}

/// A list of names in a [`ResourceInfo`] (short names, categories).
#[derive(Debug, Clone)]
pub(crate) enum Names {
    /// A built-in's.
    Static(&'static [&'static str]),
    /// A custom resource's.
    Owned(Vec<String>),
}

impl Names {
    /// The names, in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &str> {
        let (s, o): (&[&str], &[String]) = match self {
            Names::Static(s) => (s, &[]),
            Names::Owned(o) => (&[], o),
        };
        s.iter().copied().chain(o.iter().map(String::as_str))
    }

    /// Whether there are none.
    pub(crate) fn is_empty(&self) -> bool {
        match self {
            Names::Static(s) => s.is_empty(),
            Names::Owned(o) => o.is_empty(),
        }
    }
}

impl serde::Serialize for Names {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

/// Where a kind's OpenAPI schema comes from.
#[derive(Clone)]
pub(crate) enum KindSchema {
    /// A k8s-openapi type: [`schema_of`] adds its schema (and those it refers to) to a
    /// generator.
    Typed(fn(&mut SchemaGenerator)),
    /// A custom resource's: the CRD version's openAPIV3Schema, published as is.
    Custom(std::sync::Arc<CustomSchema>),
}

/// A CRD version's openAPIV3Schema, kept as compact JSON text (a few KB, where the decoded
/// tree takes several times that for every one of thousands of CRDs) and decoded when a
/// write first needs it.
pub(crate) struct CustomSchema {
    json: Box<str>,
    decoded: std::sync::OnceLock<Value>,
}

impl CustomSchema {
    /// Keeps `schema` as text.
    pub(crate) fn new(schema: &Value) -> CustomSchema {
        CustomSchema {
            json: schema.to_string().into_boxed_str(),
            decoded: std::sync::OnceLock::new(),
        }
    }

    /// The schema as JSON text.
    pub(crate) fn text(&self) -> &str {
        &self.json
    }

    /// The schema, decoded once and kept (what server-side apply and managedFields follow
    /// on every write of the kind).
    pub(crate) fn value(&self) -> &Value {
        self.decoded.get_or_init(|| self.decode())
    }

    /// The schema decoded afresh, not kept (for the OpenAPI document, built once per change
    /// of the served set).
    pub(crate) fn decode(&self) -> Value {
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }
}

impl std::fmt::Debug for KindSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KindSchema::Typed(_) => f.write_str("Typed"),
            KindSchema::Custom(_) => f.write_str("Custom"),
        }
    }
}

/// The [`ResourceInfo::schema`] of a kind whose k8s-openapi type is `T`.
pub(crate) fn schema_of<T: JsonSchema>(generator: &mut SchemaGenerator) {
    generator.subschema_for::<T>();
}

/// The full verb set of a stored resource.
pub(crate) const STORED_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

impl ResourceInfo {
    /// `v1` or `<group>/<version>`.
    pub(crate) fn api_version(&self) -> String {
        crate::api::gvk::api_version(&self.group, &self.version)
    }

    /// Whether the verb is served.
    pub(crate) fn serves(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    /// Whether this is the resource at group/version/resource.
    pub(crate) fn is(&self, group: &str, version: &str, resource: &str) -> bool {
        self.group == group && self.version == version && self.resource == resource
    }
}

/// One Table column (metav1.TableColumnDefinition).
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Column {
    /// Header.
    pub name: Text,
    /// `string`, `integer`, `date`...
    #[serde(rename = "type")]
    pub type_: Text,
    /// `name` for the name column.
    pub format: Text,
    /// Description.
    pub description: Text,
    /// 0 = default view, 1 = wide.
    pub priority: i32,
}

/// A column with priority 0.
pub(crate) const fn col(
    name: &'static str,
    type_: &'static str,
    description: &'static str,
) -> Column {
    Column {
        name: text(name),
        type_: text(type_),
        format: text(""),
        description: text(description),
        priority: 0,
    }
}

/// The Name column every printer starts with.
pub(crate) const NAME_COLUMN: Column = Column {
    name: text("Name"),
    type_: text("string"),
    format: text("name"),
    description: text("Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"),
    priority: 0,
};

/// The Age column most printers end with.
pub(crate) const AGE_COLUMN: Column = col(
    "Age",
    "string",
    "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
);

/// What the per-resource file provides to the generic store.
pub(crate) trait Strategy: Send + Sync + 'static {
    /// What the resource is.
    fn info(&self) -> &ResourceInfo;

    /// The resource's other versions holding the same objects (a CRD's), for admission's
    /// matchPolicy Equivalent; None for the built-ins, served at one version each.
    fn equivalents(&self) -> Option<&dyn crate::registry::admission::Equivalents> {
        None
    }

    /// Decodes through the typed struct and back: the canonical stored form (unknown fields
    /// dropped, as kube's decoder does). Returns the object and the unknown field paths;
    /// `Err` is a decode error (wrong types).
    fn canonicalize(&self, obj: Input<'_>) -> Result<(Value, Vec<String>), String>;

    /// Name syntax (NameIsDNSSubdomain by default).
    fn name_rule(&self) -> NameRule {
        NameRule::Subdomain
    }

    /// PrepareForCreate: reset status, set defaults.
    fn prepare_for_create(&self, _obj: &mut Value) {}

    /// PrepareForUpdate of the main resource: e.g. keep status from `old`.
    fn prepare_for_update(&self, _new: &mut Value, _old: &Value) {}

    /// PrepareForUpdate of a subresource (`status`, `finalize`): copy everything else from
    /// `old`. `false` when the subresource is not served.
    fn prepare_for_subresource_update(&self, _sub: &str, _new: &mut Value, _old: &Value) -> bool {
        false
    }

    /// Type-specific validation on create (object meta is validated by the store).
    fn validate(&self, _obj: &Value) -> Vec<FieldError> {
        Vec::new()
    }

    /// Type-specific validation on update (defaults to the create rules).
    fn validate_update(&self, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate(new)
    }

    /// Validation of an update through a subresource (`status`...): the update rules unless
    /// the resource says otherwise.
    fn validate_subresource_update(&self, _sub: &str, new: &Value, old: &Value) -> Vec<FieldError> {
        self.validate_update(new, old)
    }

    /// Validation of an update through `sub` ("" for the main resource) that may leave
    /// warnings for the response (upstream's ratcheted CRD rule failures); by default
    /// [`Self::validate_update`] or [`Self::validate_subresource_update`].
    fn validate_update_warning(
        &self,
        sub: &str,
        new: &Value,
        old: &Value,
        _warnings: &super::Warnings,
    ) -> Vec<FieldError> {
        if sub.is_empty() {
            self.validate_update(new, old)
        } else {
            self.validate_subresource_update(sub, new, old)
        }
    }

    /// WarningsOnCreate: what a valid new object is accepted with a warning for.
    fn warnings_on_create(&self, _obj: &Value) -> Vec<String> {
        Vec::new()
    }

    /// WarningsOnUpdate: what a valid update is accepted with a warning for.
    fn warnings_on_update(&self, _new: &Value, _old: &Value) -> Vec<String> {
        Vec::new()
    }

    /// Whether [`Self::validate`] and its update forms check ObjectMeta themselves (as
    /// upstream's CRD validation does, with its own name rule), so the store does not.
    fn validates_object_meta(&self) -> bool {
        false
    }

    /// The value of a type-specific selectable field; `None` when the field is not
    /// supported (metadata.name/namespace are handled by the store).
    fn field(&self, _obj: &Value, _field: &str) -> Option<String> {
        None
    }

    /// Whether the type-specific field is supported at all.
    fn supports_field(&self, _field: &str) -> bool {
        false
    }

    /// Table columns (kube-apiserver's printer for the type).
    fn columns(&self) -> Vec<Column> {
        vec![NAME_COLUMN, col("Created At", "date", "CreationTimestamp is a timestamp representing the server time when this object was created.")]
    }

    /// Table cells of one object, one per column.
    fn cells(&self, obj: &Value) -> Vec<Value> {
        vec![
            Value::from(name_of(obj)),
            obj.at("/metadata/creationTimestamp")
                .cloned()
                .unwrap_or(Value::Null),
        ]
    }

    /// Whether DELETE returns the deleted object rather than a Success Status.
    fn return_deleted_object(&self) -> bool {
        false
    }

    /// Converts a served object to its stored form (events.k8s.io events are stored as v1).
    ///
    /// # Errors
    ///
    /// The conversion failed (a CRD's conversion webhook): nothing is to be stored.
    fn to_storage(&self, obj: Value) -> Result<Value, super::error::Error> {
        Ok(obj)
    }

    /// Whether `new` only renews `old` (a heartbeat, which the in-process controllers have no
    /// use for): watches that ask for it skip such MODIFIED events. By default no write is one.
    fn is_renewal(&self, _old: &Value, _new: &Value) -> bool {
        false
    }

    /// Whether [`Self::is_renewal`] can ever be true: a watch that skips renewals remembers
    /// the last object of every key only for such resources.
    fn has_renewals(&self) -> bool {
        false
    }

    /// Converts a stored object to the served form.
    ///
    /// # Errors
    ///
    /// The conversion failed (a CRD's conversion webhook).
    fn to_served(&self, obj: Value) -> Result<Value, super::error::Error> {
        Ok(obj)
    }

    /// Whether [`Self::to_storage`] and [`Self::to_served`] leave objects as they are, so an
    /// object just written is served exactly as it was stored (no decode needed).
    fn stores_served_form(&self) -> bool {
        true
    }

    /// The Warning every request of this resource gets (a deprecated CRD version's).
    fn deprecation_warning(&self) -> Option<&str> {
        None
    }

    /// Where the scale subresource reads and writes replicas, if the resource has one.
    fn scale(&self) -> Option<&ScalePaths> {
        None
    }

    /// Checks that depend on the writer of a create (`old` None) or update: RBAC's
    /// escalation prevention. Runs after validation, inside the write.
    fn authorize_write(
        &self,
        _ctx: &super::Context,
        _new: &Value,
        _old: Option<&Value>,
    ) -> Result<(), super::error::Error> {
        Ok(())
    }

    /// Whether a PUT of a missing object creates it (AllowCreateOnUpdate; true for RBAC's
    /// resources, as `kubectl auth reconcile` relies on).
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Whether creates are served now (a terminating CRD's objects: `Err` is the answer).
    fn admit_create(&self) -> Result<(), super::error::Error> {
        Ok(())
    }

    /// Admission on delete (NamespaceLifecycle's immortal namespaces): `Err(why)` → 403.
    fn admit_delete(&self, _name: &str) -> Result<(), String> {
        Ok(())
    }

    /// First step of a DELETE: may mark the object (namespaces: phase Terminating) and
    /// return `true` to keep it instead of removing it.
    fn begin_delete(&self, _obj: &mut Value) -> bool {
        false
    }

    /// Whether an object whose deletion is pending and has no finalizers may go
    /// (namespaces also wait for spec.finalizers).
    fn may_delete(&self, _obj: &Value) -> bool {
        true
    }

    /// Whether writes maintain metadata.generation.
    fn uses_generation(&self) -> bool {
        false
    }
}

/// The paths of a scale subresource (a CRD's `subresources.scale`): where spec and status
/// replicas and the label selector are, as field names from the object's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ScalePaths {
    /// `specReplicasPath` (`.spec.replicas` → `["spec", "replicas"]`).
    pub spec_replicas: Vec<String>,
    /// `statusReplicasPath`.
    pub status_replicas: Vec<String>,
    /// `labelSelectorPath`.
    pub label_selector: Option<Vec<String>>,
}

impl ScalePaths {
    /// Fields of a simple JSON path (`.spec.replicas`).
    pub(crate) fn fields(path: &str) -> Vec<String> {
        path.trim_start_matches('.')
            .split('.')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect()
    }

    fn get<'a>(obj: &'a Value, path: &[String]) -> Option<&'a Value> {
        path.iter().try_fold(obj, |v, f| v.get(f))
    }

    /// The autoscaling/v1 Scale of `obj` (scaleFromCustomResource).
    ///
    /// # Errors
    /// A replicas field that is not an integer: the text of upstream's error.
    pub(crate) fn to_scale(&self, obj: &Value) -> Result<Value, String> {
        let int = |path: &[String]| -> Result<i64, String> {
            match Self::get(obj, path) {
                None | Some(Value::Null) => Ok(0),
                Some(v) => v.as_i64().ok_or_else(|| {
                    format!(
                        ".{} accessor error: {v} is of the type {}, expected int64",
                        path.join("."),
                        json_type(v)
                    )
                }),
            }
        };
        let spec = int(&self.spec_replicas)?;
        let status = int(&self.status_replicas)?;
        let mut meta = serde_json::Map::new();
        for f in [
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
        ] {
            if let Some(v) = obj.at(&format!("/metadata/{f}")) {
                meta.insert(f.into(), v.clone());
            }
        }
        let mut status_obj = serde_json::json!({ "replicas": status });
        if let Some(sel) = self
            .label_selector
            .as_ref()
            .and_then(|p| Self::get(obj, p))
            .and_then(Value::as_str)
        {
            status_obj["selector"] = Value::from(sel);
        }
        Ok(serde_json::json!({
            "kind": "Scale",
            "apiVersion": "autoscaling/v1",
            "metadata": meta,
            "spec": { "replicas": spec },
            "status": status_obj,
        }))
    }

    /// Sets spec replicas in `obj`, creating the objects on the way.
    pub(crate) fn set_replicas(&self, obj: &mut Value, replicas: i64) {
        let Some((last, parents)) = self.spec_replicas.split_last() else {
            return;
        };
        let mut cur = obj;
        for p in parents {
            if !cur.get(p).is_some_and(Value::is_object) {
                if let Some(m) = cur.as_object_mut() {
                    m.insert(p.clone(), Value::Object(serde_json::Map::new()));
                }
            }
            match cur.get_mut(p) {
                Some(next) => cur = next,
                None => return,
            }
        }
        if let Some(m) = cur.as_object_mut() {
            m.insert(last.clone(), Value::from(replicas));
        }
    }
}

/// Go's name of a JSON value's type in unstructured accessor errors.
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Bool(_) => "bool",
        Value::Number(_) => "float64",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
        Value::Null => "<nil>",
    }
}

/// What [`Strategy::canonicalize`] decodes: a JSON tree, or a JSON body still in bytes (decoded
/// straight into the typed struct, without building a tree first).
pub(crate) enum Input<'a> {
    /// An object already decoded (any body encoding, a patch result, an applied object).
    Value(Value),
    /// A JSON request body.
    Json(&'a [u8]),
}

/// PrepareForUpdate of a `status` subresource: everything but the status comes from `old`,
/// except the managedFields and resourceVersion of the request (ResetObjectMetaForStatus).
pub(crate) fn status_update(new: &mut Value, old: &Value) {
    let status = new.get("status").cloned();
    let managed = new.at("/metadata/managedFields").cloned();
    let rv = new.at("/metadata/resourceVersion").cloned();
    *new = old.clone();
    if let Some(m) = new.as_object_mut() {
        match status {
            Some(s) => m.insert("status".into(), s),
            None => m.remove("status"),
        };
    }
    if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        for (k, v) in [("managedFields", managed), ("resourceVersion", rv)] {
            match v {
                Some(v) => meta.insert(k.into(), v),
                None => meta.remove(k),
            };
        }
    }
}

/// A status strategy's PrepareForUpdate for kinds whose status writes may carry more than the
/// status: `spec` and the `metadata` fields named come from `old`, the rest from the request.
pub(crate) fn keep_spec_and_meta(new: &mut Value, old: &Value, meta_fields: &[&str]) {
    if let Some(m) = new.as_object_mut() {
        match old.get("spec") {
            Some(spec) => m.insert("spec".into(), spec.clone()),
            None => m.remove("spec"),
        };
    }
    let old_meta = old.get("metadata");
    if let Some(meta) = new.get_mut("metadata").and_then(Value::as_object_mut) {
        for &f in meta_fields {
            match old_meta.and_then(|m| m.get(f)) {
                Some(v) => meta.insert(f.into(), v.clone()),
                None => meta.remove(f),
            };
        }
    }
}

/// `metadata.name` of an object.
pub(crate) fn name_of(obj: &Value) -> &str {
    obj.at("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The string at a JSON pointer, or "".
pub(crate) fn str_at<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.at(pointer).and_then(Value::as_str).unwrap_or("")
}

/// Number of entries of the map or array at a pointer.
pub(crate) fn len_at(obj: &Value, pointer: &str) -> usize {
    match obj.at(pointer) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

/// The Age cell: time since `metadata.creationTimestamp` in kube's HumanDuration form.
pub(crate) fn age_of(obj: &Value) -> Value {
    Value::from(since(str_at(obj, "/metadata/creationTimestamp")))
}

/// HumanDuration since an RFC 3339 timestamp, `<unknown>` when absent.
pub(crate) fn since(ts: &str) -> String {
    match chrono::DateTime::parse_from_rfc3339(ts) {
        Ok(t) => human_duration(chrono::Utc::now().signed_duration_since(t).num_seconds()),
        Err(_) => "<unknown>".into(),
    }
}

/// apimachinery pkg/util/duration.HumanDuration.
pub(crate) fn human_duration(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 {
            format!("{minutes}m")
        } else {
            format!("{minutes}m{s}s")
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 {
            format!("{hours}h")
        } else {
            format!("{hours}h{m}m")
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 {
            format!("{}d", hours / 24)
        } else {
            format!("{}d{}h", hours / 24, h)
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 {
            format!("{}y", hours / 24 / 365)
        } else {
            format!("{}y{}d", hours / 24 / 365, dy)
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(3600 * 5 + 60 * 7), "5h7m");
        assert_eq!(human_duration(3600 * 24 * 3), "3d");
        assert_eq!(since("nope"), "<unknown>");
    }

    #[test]
    fn roundtrip_finds_unknown_fields() {
        let v = serde_json::json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","bogus":1},"data":{"k":"v"},"spec":{"x":1}});
        let (out, unknown) =
            typed_roundtrip::<k8s_openapi::api::core::v1::ConfigMap>(Input::Value(v)).unwrap();
        assert_eq!(
            unknown,
            vec!["metadata.bogus".to_string(), "spec".to_string()]
        );
        assert!(out.get("spec").is_none());
        let bad = serde_json::json!({"apiVersion":"v1","kind":"ConfigMap","data":{"k":1}});
        assert!(
            typed_roundtrip::<k8s_openapi::api::core::v1::ConfigMap>(Input::Value(bad)).is_err()
        );
    }
}
