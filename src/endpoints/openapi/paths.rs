//! The paths of the OpenAPI documents (kube-openapi's path builder, in small): collection,
//! item and subresource paths of each served resource with one operation per verb and the
//! query parameters kube-apiserver accepts — kubectl looks for `fieldValidation` on the PATCH
//! operation tagged with the kind's `x-kubernetes-group-version-kind`.
//! May use: api.

use super::spec::{ref_prefix, Flavor, Served};
use serde_json::{json, Map, Value};

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
    let mut group = match r.group.as_str() {
        "" => "Core".to_string(),
        g => g
            .trim_end_matches(".k8s.io")
            .split('.')
            .map(capitalize)
            .collect(),
    };
    group.push_str(&capitalize(&r.version));
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
        if r.subresources.iter().any(|(sub, _)| *sub == "token") {
            let mut params = item_params.clone();
            if let Some(name) = params.first_mut() {
                name["description"] = "name of the TokenRequest".into();
            }
            out.insert(
                format!("{collection}/{{name}}/token"),
                token_request_path(r, params, flavor),
            );
        }
        // The token subresource takes and gives a TokenRequest ([`token_request_path`]).
        let subs = r
            .subresources
            .iter()
            .map(|(sub, _)| *sub)
            .filter(|s| *s != "token");
        for sub in std::iter::once("").chain(subs) {
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

/// The schema name of authentication.k8s.io/v1 TokenRequest.
pub(super) const TOKEN_REQUEST: &str = "io.k8s.api.authentication.v1.TokenRequest";

/// `.../serviceaccounts/{name}/token`: a POST that takes and gives a TokenRequest
/// (createCoreV1NamespacedServiceAccountToken).
fn token_request_path(r: &Served, params: Vec<Value>, flavor: Flavor) -> Value {
    let token_ref = format!("{}{TOKEN_REQUEST}", ref_prefix(flavor));
    let mut post = operation(
        r,
        "post",
        "post",
        operation_id("create", r, r.namespaced, "Token"),
        WRITE_PARAMS,
        Some(&token_ref),
        &token_ref,
        flavor,
    );
    post["description"] = format!("create token of a {}", r.kind).into();
    post["x-kubernetes-group-version-kind"] =
        json!({"group": "authentication.k8s.io", "kind": "TokenRequest", "version": "v1"});
    json!({"parameters": params, "post": post})
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
    // Custom resources as apiextensions-apiserver's builder publishes them: kubectl's
    // client-side apply sends a strategic merge patch only where PATCH declares it.
    let custom = r.is_custom();
    let consumes: Vec<&str> = match (verb, custom) {
        ("patch", false) => vec![
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml",
        ],
        ("patch", true) => vec![
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/apply-patch+yaml",
        ],
        (_, false) => vec!["*/*"],
        (_, true) => vec!["application/json", "application/yaml"],
    };
    let produces: &[&str] = if custom {
        &["application/json", "application/yaml"]
    } else {
        &[
            "application/json",
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
        ]
    };
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
    // The group without `.k8s.io`, camel-cased: `rbacAuthorization` for
    // rbac.authorization.k8s.io, as kube-openapi tags operations.
    let g = match r.group.as_str() {
        "" => "core".to_string(),
        g => {
            let mut parts = g.trim_end_matches(".k8s.io").split('.');
            let first = parts.next().unwrap_or("").to_string();
            parts.fold(first, |tag, p| tag + &capitalize(p))
        }
    };
    format!("{g}_{}", r.version)
}
