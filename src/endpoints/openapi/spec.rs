//! The OpenAPI documents of the served types (kube-openapi's builder, in small): schemas come
//! from k8s-openapi's JSON schemas (its `schemars` feature), get the extensions kube adds
//! (`x-kubernetes-group-version-kind`, patch strategies and list types from
//! `endpoints::patch::meta`), and paths list each resource's verbs with the query parameters
//! kube-apiserver accepts — kubectl looks for `fieldValidation` on the PATCH operation.
//! May use: api.

use crate::api::GroupVersionKind;
use crate::endpoints::patch::meta::{tagged_fields, ListType};
use k8s_openapi::api::{authentication, authorization, coordination, core, events};
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::{json, Map, Value};

/// Which OpenAPI dialect a document is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flavor {
    /// Swagger 2.0: `#/definitions/`, `$ref` with sibling description.
    V2,
    /// OpenAPI 3.0: `#/components/schemas/`, `allOf` around `$ref`.
    V3,
}

/// One served resource, as discovery lists it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Served {
    pub(crate) group: &'static str,
    pub(crate) version: &'static str,
    pub(crate) kind: &'static str,
    pub(crate) plural: &'static str,
    pub(crate) namespaced: bool,
    /// Only `create` (the review kinds) rather than the full set of verbs.
    pub(crate) create_only: bool,
    /// Subresources served with get/put/patch (namespaces: status, finalize).
    pub(crate) subresources: &'static [&'static str],
}

const fn res(
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> Served {
    Served {
        group,
        version,
        kind,
        plural,
        namespaced,
        create_only: false,
        subresources: &[],
    }
}

/// Every resource kapi serves.
pub(crate) const SERVED: &[Served] = &[
    Served {
        subresources: &["status", "finalize"],
        ..res("", "v1", "Namespace", "namespaces", false)
    },
    res("", "v1", "ConfigMap", "configmaps", true),
    res("", "v1", "Secret", "secrets", true),
    res("", "v1", "ServiceAccount", "serviceaccounts", true),
    res("", "v1", "Event", "events", true),
    res("events.k8s.io", "v1", "Event", "events", true),
    res("coordination.k8s.io", "v1", "Lease", "leases", true),
    res(
        "coordination.k8s.io",
        "v1beta1",
        "LeaseCandidate",
        "leasecandidates",
        true,
    ),
    Served {
        create_only: true,
        ..res(
            "authentication.k8s.io",
            "v1",
            "SelfSubjectReview",
            "selfsubjectreviews",
            false,
        )
    },
    Served {
        create_only: true,
        ..res(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
        )
    },
];

impl Served {
    fn gvk(&self) -> GroupVersionKind {
        GroupVersionKind::new(self.group, self.version, self.kind)
    }

    /// The discovery path of the group version: `api/v1` or `apis/<group>/<version>`.
    pub(crate) fn gv_path(&self) -> String {
        gv_path(self.group, self.version)
    }

    /// Name of the kind's schema, e.g. `io.k8s.api.core.v1.ConfigMap`.
    fn schema_name(&self) -> String {
        let pkg = match self.group {
            "" => "core".to_string(),
            g => g.trim_end_matches(".k8s.io").replace('.', "_"),
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

fn add_kind_schema(gen: &mut SchemaGenerator, r: &Served) {
    match (r.group, r.version, r.kind) {
        ("", _, "Namespace") => drop(gen.subschema_for::<core::v1::Namespace>()),
        ("", _, "ConfigMap") => drop(gen.subschema_for::<core::v1::ConfigMap>()),
        ("", _, "Secret") => drop(gen.subschema_for::<core::v1::Secret>()),
        ("", _, "ServiceAccount") => drop(gen.subschema_for::<core::v1::ServiceAccount>()),
        ("", _, "Event") => drop(gen.subschema_for::<core::v1::Event>()),
        ("events.k8s.io", _, _) => drop(gen.subschema_for::<events::v1::Event>()),
        (_, "v1", "Lease") => drop(gen.subschema_for::<coordination::v1::Lease>()),
        (_, _, "LeaseCandidate") => {
            drop(gen.subschema_for::<coordination::v1beta1::LeaseCandidate>())
        }
        (_, _, "SelfSubjectReview") => {
            drop(gen.subschema_for::<authentication::v1::SelfSubjectReview>())
        }
        (_, _, "SelfSubjectAccessReview") => {
            drop(gen.subschema_for::<authorization::v1::SelfSubjectAccessReview>())
        }
        _ => {}
    }
}

/// The schemas (definitions or components.schemas) for `resources`, with kube's extensions.
pub(crate) fn schemas(resources: &[&Served], flavor: Flavor) -> Map<String, Value> {
    let mut gen = settings(flavor).into_generator();
    for r in resources {
        add_kind_schema(&mut gen, r);
    }
    drop(gen.subschema_for::<meta::Status>());
    drop(gen.subschema_for::<meta::DeleteOptions>());
    drop(gen.subschema_for::<meta::Patch>());
    drop(gen.subschema_for::<meta::ListMeta>());
    let mut defs = gen.take_definitions(true);
    let prefix = ref_prefix(flavor);
    for r in resources {
        let name = r.schema_name();
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

fn ref_prefix(flavor: Flavor) -> &'static str {
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

fn param(name: &str, location: &str, kind: &str, description: &str, flavor: Flavor) -> Value {
    let required = location == "path";
    match flavor {
        Flavor::V2 => {
            json!({"name": name, "in": location, "type": kind, "description": description, "required": required, "uniqueItems": true})
        }
        Flavor::V3 => {
            json!({"name": name, "in": location, "schema": {"type": kind, "uniqueItems": true}, "description": description, "required": required})
        }
    }
}

const LIST_PARAMS: &[(&str, &str, &str)] = &[
    ("allowWatchBookmarks", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."),
    ("continue", "string", "The continue option should be set when retrieving more results from the server."),
    ("fieldSelector", "string", "A selector to restrict the list of returned objects by their fields."),
    ("labelSelector", "string", "A selector to restrict the list of returned objects by their labels."),
    ("limit", "integer", "limit is a maximum number of responses to return for a list call."),
    ("resourceVersion", "string", "resourceVersion sets a constraint on what resource versions a request may be served from."),
    ("resourceVersionMatch", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls."),
    ("sendInitialEvents", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`."),
    ("timeoutSeconds", "integer", "Timeout for the list/watch call."),
    ("watch", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."),
];
const WRITE_PARAMS: &[(&str, &str, &str)] = &[
    ("dryRun", "string", "When present, indicates that modifications should not be persisted."),
    ("fieldManager", "string", "fieldManager is a name associated with the actor or entity that is making these changes."),
    ("fieldValidation", "string", "fieldValidation instructs the server on how to handle objects in the request containing unknown or duplicate fields. Valid values are: Ignore, Warn (default), Strict."),
];
const DELETE_PARAMS: &[(&str, &str, &str)] = &[
    ("dryRun", "string", "When present, indicates that modifications should not be persisted."),
    ("gracePeriodSeconds", "integer", "The duration in seconds before the object should be deleted."),
    ("ignoreStoreReadErrorWithClusterBreakingPotential", "boolean", "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error."),
    ("orphanDependents", "boolean", "Deprecated: please use the PropagationPolicy."),
    ("propagationPolicy", "string", "Whether and how garbage collection will be performed."),
];

fn operation_id(verb: &str, r: &Served, namespaced_path: bool, suffix: &str) -> String {
    let mut group = match r.group {
        "" => "Core".to_string(),
        g => g
            .trim_end_matches(".k8s.io")
            .split('.')
            .map(capitalize)
            .collect(),
    };
    group.push_str(&capitalize(r.version));
    let scope = if namespaced_path { "Namespaced" } else { "" };
    format!("{verb}{group}{scope}{}{suffix}", r.kind)
}

fn capitalize(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// The paths object of the resources' documents: collection, item and subresource paths
/// with one operation per verb kube-apiserver serves.
pub(crate) fn paths(resources: &[&Served], flavor: Flavor) -> Map<String, Value> {
    let prefix = ref_prefix(flavor);
    let mut out = Map::new();
    for r in resources {
        let gv = format!("/{}", r.gv_path());
        let kind_ref = format!("{prefix}{}", r.schema_name());
        let list_ref = format!("{kind_ref}List");
        let status_ref = format!("{prefix}io.k8s.apimachinery.pkg.apis.meta.v1.Status");
        let ns = if r.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let collection = format!("{gv}{ns}/{}", r.plural);
        let op =
            |verb: &str,
             action: &str,
             id: String,
             params: &[(&str, &str, &str)],
             body: Option<&str>,
             resp: &str| { operation(r, verb, action, id, params, body, resp, flavor) };
        let mut path_params = vec![param(
            "pretty",
            "query",
            "string",
            "If 'true', then the output is pretty printed.",
            flavor,
        )];
        if r.namespaced {
            path_params.insert(
                0,
                param(
                    "namespace",
                    "path",
                    "string",
                    "object name and auth scope, such as for teams and projects",
                    flavor,
                ),
            );
        }
        let mut coll = Map::new();
        coll.insert("parameters".into(), Value::Array(path_params.clone()));
        coll.insert(
            "post".into(),
            op(
                "post",
                "post",
                operation_id("create", r, r.namespaced, ""),
                WRITE_PARAMS,
                Some(&kind_ref),
                &kind_ref,
            ),
        );
        if !r.create_only {
            coll.insert(
                "get".into(),
                op(
                    "get",
                    "list",
                    operation_id("list", r, r.namespaced, ""),
                    LIST_PARAMS,
                    None,
                    &list_ref,
                ),
            );
            coll.insert(
                "delete".into(),
                op(
                    "delete",
                    "deletecollection",
                    operation_id("deleteCollection", r, r.namespaced, ""),
                    DELETE_PARAMS,
                    None,
                    &status_ref,
                ),
            );
        }
        out.insert(collection.clone(), Value::Object(coll));
        if r.create_only {
            continue;
        }
        if r.namespaced {
            let mut all = Map::new();
            all.insert(
                "parameters".into(),
                json!([param(
                    "pretty",
                    "query",
                    "string",
                    "If 'true', then the output is pretty printed.",
                    flavor
                )]),
            );
            all.insert(
                "get".into(),
                op(
                    "get",
                    "list",
                    operation_id("list", r, false, "ForAllNamespaces"),
                    LIST_PARAMS,
                    None,
                    &list_ref,
                ),
            );
            out.insert(format!("{gv}/{}", r.plural), Value::Object(all));
        }
        let mut item_params = path_params.clone();
        item_params.insert(
            0,
            param(
                "name",
                "path",
                "string",
                &format!("name of the {}", r.kind),
                flavor,
            ),
        );
        for sub in std::iter::once("").chain(r.subresources.iter().copied()) {
            let suffix = if sub.is_empty() {
                String::new()
            } else {
                capitalize(sub)
            };
            let path = if sub.is_empty() {
                format!("{collection}/{{name}}")
            } else {
                format!("{collection}/{{name}}/{sub}")
            };
            let mut item = Map::new();
            item.insert("parameters".into(), Value::Array(item_params.clone()));
            if sub != "finalize" {
                item.insert(
                    "get".into(),
                    op(
                        "get",
                        "get",
                        operation_id("read", r, r.namespaced, &suffix),
                        &[],
                        None,
                        &kind_ref,
                    ),
                );
                let mut patch_params = WRITE_PARAMS.to_vec();
                patch_params.push((
                    "force",
                    "boolean",
                    "Force is going to \"force\" Apply requests.",
                ));
                item.insert(
                    "patch".into(),
                    op(
                        "patch",
                        "patch",
                        operation_id("patch", r, r.namespaced, &suffix),
                        &patch_params,
                        Some(&format!(
                            "{prefix}io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
                        )),
                        &kind_ref,
                    ),
                );
            }
            item.insert(
                "put".into(),
                op(
                    "put",
                    "put",
                    operation_id("replace", r, r.namespaced, &suffix),
                    WRITE_PARAMS,
                    Some(&kind_ref),
                    &kind_ref,
                ),
            );
            if sub.is_empty() {
                item.insert(
                    "delete".into(),
                    op(
                        "delete",
                        "delete",
                        operation_id("delete", r, r.namespaced, ""),
                        DELETE_PARAMS,
                        None,
                        &status_ref,
                    ),
                );
            }
            out.insert(path, Value::Object(item));
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn operation(
    r: &Served,
    verb: &str,
    action: &str,
    id: String,
    params: &[(&str, &str, &str)],
    body: Option<&str>,
    response_ref: &str,
    flavor: Flavor,
) -> Value {
    let mut parameters: Vec<Value> = params
        .iter()
        .map(|(n, t, d)| param(n, "query", t, d, flavor))
        .collect();
    let consumes: Vec<&str> = if verb == "patch" {
        vec![
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ]
    } else {
        vec!["*/*"]
    };
    let produces = [
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
    ];
    let mut op = Map::new();
    op.insert("description".into(), format!("{action} {}", r.kind).into());
    op.insert("operationId".into(), id.into());
    op.insert("tags".into(), json!([operation_tag(r)]));
    let ok = match verb {
        "post" => "201",
        _ => "200",
    };
    match flavor {
        Flavor::V2 => {
            if let Some(b) = body {
                parameters.insert(
                    0,
                    json!({"name": "body", "in": "body", "required": true, "schema": {"$ref": b}}),
                );
            }
            op.insert("consumes".into(), json!(consumes));
            op.insert("produces".into(), json!(produces));
            op.insert("schemes".into(), json!(["https"]));
            op.insert("responses".into(), json!({ok: {"description": "OK", "schema": {"$ref": response_ref}}, "401": {"description": "Unauthorized"}}));
        }
        Flavor::V3 => {
            if let Some(b) = body {
                let content: Map<String, Value> = consumes
                    .iter()
                    .map(|c| (c.to_string(), json!({"schema": {"$ref": b}})))
                    .collect();
                op.insert(
                    "requestBody".into(),
                    json!({"content": content, "required": true}),
                );
            }
            let content: Map<String, Value> = produces
                .iter()
                .map(|c| (c.to_string(), json!({"schema": {"$ref": response_ref}})))
                .collect();
            op.insert("responses".into(), json!({ok: {"description": "OK", "content": content}, "401": {"description": "Unauthorized"}}));
        }
    }
    op.insert("parameters".into(), Value::Array(parameters));
    op.insert("x-kubernetes-action".into(), action.into());
    op.insert(
        "x-kubernetes-group-version-kind".into(),
        json!({"group": r.group, "kind": r.kind, "version": r.version}),
    );
    Value::Object(op)
}

fn operation_tag(r: &Served) -> String {
    let g = match r.group {
        "" => "core".to_string(),
        g => g.trim_end_matches(".k8s.io").replace('.', "_"),
    };
    format!("{g}_{}", r.version)
}

/// The Swagger 2.0 document of everything served (/openapi/v2).
pub(crate) fn v2_document(version: &str) -> Value {
    let all: Vec<&Served> = SERVED.iter().collect();
    json!({
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": paths(&all, Flavor::V2),
        "definitions": schemas(&all, Flavor::V2),
        "securityDefinitions": {"BearerToken": {"description": "Bearer Token authentication", "type": "apiKey", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}]
    })
}

/// The OpenAPI 3.0 document of one group version (/openapi/v3/<gv path>), if served.
pub(crate) fn v3_document(gv: &str, version: &str) -> Option<Value> {
    let rs: Vec<&Served> = SERVED.iter().filter(|r| r.gv_path() == gv).collect();
    if rs.is_empty() {
        return None;
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": version},
        "paths": paths(&rs, Flavor::V3),
        "components": {
            "schemas": schemas(&rs, Flavor::V3),
            "securitySchemes": {"BearerToken": {"type": "apiKey", "description": "Bearer Token authentication", "name": "authorization", "in": "header"}}
        }
    }))
}

/// The group-version paths that have a v3 document, in discovery order.
pub(crate) fn v3_group_versions() -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in SERVED {
        let gv = r.gv_path();
        if !out.contains(&gv) {
            out.push(gv);
        }
    }
    out
}
