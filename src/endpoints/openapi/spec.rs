//! The OpenAPI documents of the served types (kube-openapi's builder, in small): schemas come
//! from k8s-openapi's JSON schemas (its `schemars` feature), get the extensions kube adds
//! (`x-kubernetes-group-version-kind`, patch strategies and list types from
//! `endpoints::patch::meta`); the paths come from `openapi::paths`.
//! May use: api.

use crate::api::GroupVersionKind;
use crate::endpoints::patch::meta::{tagged_fields, ListType};
use crate::registry::strategy::KindSchema;
use crate::registry::ResourceInfo;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::schemars::generate::SchemaSettings;
use serde_json::{json, Map, Value};

/// Which OpenAPI dialect a document is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// Swagger 2.0: `#/definitions/`, `$ref` with sibling description.
    V2,
    /// OpenAPI 3.0: `#/components/schemas/`, `allOf` around `$ref`.
    V3,
}

/// One served resource, as the registry describes it.
#[derive(Debug, Clone)]
pub(crate) struct Served {
    pub(crate) group: String,
    pub(crate) version: String,
    pub(crate) kind: String,
    pub(crate) plural: String,
    pub(crate) namespaced: bool,
    /// Only `create` (the review kinds) rather than the full set of verbs.
    pub(crate) create_only: bool,
    /// Subresources served with get/put/patch (namespaces: status, finalize).
    pub(crate) subresources: &'static [(&'static str, &'static [&'static str])],
    /// The kind's schema.
    schema: KindSchema,
}

impl From<&ResourceInfo> for Served {
    fn from(i: &ResourceInfo) -> Served {
        Served {
            group: i.group.to_string(),
            version: i.version.to_string(),
            kind: i.kind.to_string(),
            plural: i.resource.to_string(),
            namespaced: i.namespaced,
            create_only: i.verbs == ["create"],
            subresources: i.subresources,
            schema: i.schema.clone(),
        }
    }
}

impl Served {
    /// Whether it is a custom resource (served as apiextensions-apiserver publishes them: no
    /// strategic merge patch, no protobuf).
    pub(crate) fn is_custom(&self) -> bool {
        matches!(self.schema, KindSchema::Custom(_))
    }

    fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(&self.group, &self.version, &self.kind)
    }

    /// The discovery path of the group version: `api/v1` or `apis/<group>/<version>`.
    pub(crate) fn gv_path(&self) -> String {
        gv_path(&self.group, &self.version)
    }

    /// Name of the kind's schema: `io.k8s.api.core.v1.ConfigMap` for a built-in kind (the
    /// package of the Go type: kube-aggregator's and apiextensions-apiserver's have their own), the
    /// reversed group for a custom one (`com.example.stable.v1.CronTab`, as
    /// apiextensions-apiserver's builder names it).
    pub(super) fn schema_name(&self) -> String {
        if let KindSchema::Custom(_) = self.schema {
            let group: Vec<&str> = self.group.split('.').rev().collect();
            return format!("{}.{}.{}", group.join("."), self.version, self.kind);
        }
        if self.group == "apiextensions.k8s.io" {
            return format!(
                "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.{}.{}",
                self.version, self.kind
            );
        }
        if self.group == "apiregistration.k8s.io" {
            return format!(
                "io.k8s.kube-aggregator.pkg.apis.apiregistration.{}.{}",
                self.version, self.kind
            );
        }
        // The Go package: the group's first label (`rbac` for rbac.authorization.k8s.io).
        let pkg = match self.group.as_str() {
            "" => "core",
            g => g.split('.').next().unwrap_or(g),
        };
        format!("io.k8s.api.{pkg}.{}.{}", self.version, self.kind)
    }
}

/// `api/v1` for the core group, `apis/<group>/<version>` otherwise.
pub(crate) fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

fn settings(flavor: Flavor) -> SchemaSettings {
    let mut s = match flavor {
        Flavor::V2 => SchemaSettings::draft07(),
        Flavor::V3 => SchemaSettings::openapi3(),
    };
    if flavor == Flavor::V2 {
        // Swagger 2.0 as kube writes it: `$ref` with a sibling description, no allOf wrapper.
        s.transforms.clear();
    }
    s.meta_schema = None;
    s
}

/// The schemas (definitions or components.schemas) for `resources`, with kube's extensions.
pub(crate) fn schemas(resources: &[&Served], flavor: Flavor) -> Map<String, Value> {
    let mut gen = settings(flavor).into_generator();
    for r in resources {
        if let KindSchema::Typed(add) = r.schema {
            add(&mut gen);
        }
    }
    drop(gen.subschema_for::<meta::ObjectMeta>());
    drop(gen.subschema_for::<meta::Status>());
    drop(gen.subschema_for::<meta::DeleteOptions>());
    drop(gen.subschema_for::<meta::Patch>());
    drop(gen.subschema_for::<meta::ListMeta>());
    let token_requests = resources
        .iter()
        .any(|r| r.subresources.iter().any(|(sub, _)| *sub == "token"));
    if token_requests {
        drop(gen.subschema_for::<k8s_openapi::api::authentication::v1::TokenRequest>());
    }
    let mut defs = gen.take_definitions(true);
    if let Some(Value::Object(schema)) = defs.get_mut(super::paths::TOKEN_REQUEST) {
        schema.insert(
            "x-kubernetes-group-version-kind".into(),
            json!([{"group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1"}]),
        );
    }
    let prefix = ref_prefix(flavor);
    for r in resources {
        let name = r.schema_name();
        if let KindSchema::Custom(schema) = &r.schema {
            defs.insert(name.clone(), custom_schema(&schema.decode(), flavor));
        }
        let gvk_ext = json!([{"group": r.group, "kind": r.kind, "version": r.version}]);
        if let Some(Value::Object(schema)) = defs.get_mut(&name) {
            schema.insert("x-kubernetes-group-version-kind".into(), gvk_ext);
            // k8s-openapi marks metadata required because its Rust field is not optional;
            // kube's schemas do not.
            if let Some(Value::Array(req)) = schema.get_mut("required") {
                req.retain(|f| f != "metadata");
                if req.is_empty() {
                    schema.remove("required");
                }
            }
        }
        if !r.create_only {
            defs.insert(format!("{name}List"), list_schema(r, &name, prefix));
        }
        annotate_patch_metadata(&mut defs, &name, &r.gvk(), prefix);
    }
    defs
}

/// A custom kind's published schema: the CRD version's openAPIV3Schema with apiVersion, kind
/// and metadata described as for every kind (apiextensions-apiserver's builder adds them).
fn custom_schema(schema: &Value, flavor: Flavor) -> Value {
    let meta_ref = json!({"$ref": format!("{}io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", ref_prefix(flavor))});
    let metadata = match flavor {
        Flavor::V2 => meta_ref,
        Flavor::V3 => json!({"allOf": [meta_ref], "default": {}}),
    };
    let mut s = schema.clone();
    if let Value::Object(m) = &mut s {
        let props = m
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(props) = props {
            props.insert("apiVersion".into(), json!({"description": "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources", "type": "string"}));
            props.insert("kind".into(), json!({"description": "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds", "type": "string"}));
            props.insert("metadata".into(), metadata);
        }
    }
    s
}

pub(super) fn ref_prefix(flavor: Flavor) -> &'static str {
    match flavor {
        Flavor::V2 => "#/definitions/",
        Flavor::V3 => "#/components/schemas/",
    }
}

fn list_schema(r: &Served, item: &str, prefix: &str) -> Value {
    json!({
        "description": format!("{}List is a list of {} objects.", r.kind, r.kind),
        "type": "object",
        "required": ["items"],
        "properties": {
            "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"},
            "items": {"description": format!("Items is a list of {} objects.", r.kind), "type": "array", "items": {"$ref": format!("{prefix}{item}")}},
            "kind": {"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"},
            "metadata": {"$ref": format!("{prefix}io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta")}
        },
        "x-kubernetes-group-version-kind": [{"group": r.group, "kind": format!("{}List", r.kind), "version": r.version}]
    })
}

/// Adds `x-kubernetes-patch-strategy`/`-patch-merge-key`/`-list-type`/`-list-map-keys` to the
/// fields tagged in the patch metadata, following `$ref`s from the kind's schema.
fn annotate_patch_metadata(
    defs: &mut Map<String, Value>,
    kind_schema: &str,
    gvk: &GroupVersionKind,
    prefix: &str,
) {
    for (path, list) in tagged_fields(gvk) {
        let Some((field, parents)) = path.split_last() else {
            continue;
        };
        let mut def = kind_schema.to_string();
        let mut found = true;
        for p in parents {
            match defs
                .get(&def)
                .and_then(|d| d.pointer(&format!("/properties/{p}")))
                .and_then(|s| find_ref(s, prefix))
            {
                Some(next) => def = next,
                None => {
                    found = false;
                    break;
                }
            }
        }
        if !found {
            continue;
        }
        let Some(prop) = defs
            .get_mut(&def)
            .and_then(|d| d.pointer_mut(&format!("/properties/{field}")))
        else {
            continue;
        };
        let Some(prop) = prop.as_object_mut() else {
            continue;
        };
        match list {
            ListType::Set => {
                prop.insert("x-kubernetes-patch-strategy".into(), "merge".into());
                prop.insert("x-kubernetes-list-type".into(), "set".into());
            }
            ListType::Map(keys) => {
                prop.insert("x-kubernetes-patch-merge-key".into(), keys[0].into());
                prop.insert("x-kubernetes-patch-strategy".into(), "merge".into());
                prop.insert("x-kubernetes-list-type".into(), "map".into());
                prop.insert("x-kubernetes-list-map-keys".into(), json!(keys));
            }
            ListType::Atomic => {
                prop.insert("x-kubernetes-list-type".into(), "atomic".into());
            }
        }
    }
}

/// The definition a property schema points at: `$ref` directly or inside `allOf`.
fn find_ref(schema: &Value, prefix: &str) -> Option<String> {
    let r = schema
        .get("$ref")
        .or_else(|| schema.pointer("/allOf/0/$ref"))
        .and_then(Value::as_str)?;
    r.strip_prefix(prefix).map(str::to_string)
}

/// The Swagger 2.0 document of everything served (/openapi/v2).
pub(crate) fn v2_document(served: &[Served], version: &str) -> Value {
    let all: Vec<&Served> = served.iter().collect();
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": super::paths::paths(&all, Flavor::V2),
        "definitions": schemas(&all, Flavor::V2),
        "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}]
    })
}

/// The OpenAPI 3.0 document of one group version (/openapi/v3/<gv path>), if served.
pub(crate) fn v3_document(served: &[Served], gv: &str, version: &str) -> Option<Value> {
    let rs: Vec<&Served> = served.iter().filter(|r| r.gv_path() == gv).collect();
    if rs.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": super::paths::paths(&rs, Flavor::V3),
        "components": {
            "schemas": schemas(&rs, Flavor::V3),
            "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}}
        }
    }))
}

/// The group-version paths that have a v3 document, in discovery order.
pub(crate) fn v3_group_versions(served: &[Served]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in served {
        let gv = r.gv_path();
        if !out.contains(&gv) {
            out.push(gv);
        }
    }
    out
}
