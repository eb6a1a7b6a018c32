//! The protobuf v3 documents carry what the JSON ones do (decoded with the prost types and
//! compared), and the JSON documents hold only what gnostic's compiler reads without error and
//! the converter carries, so kube-openapi would derive the same protobuf from them.

use super::proto3::{decode_v3, pb};
use super::tests::{body, get, json_of};
use serde_json::{json, Map, Value};

const PB: &str = "application/com.github.proto-openapi.spec.v3.v1.0+protobuf";

/// Every served group version's JSON document and decoded protobuf document.
fn documents() -> Vec<(String, Value, pb::Document)> {
    let index = json_of(get("/openapi/v3", &[]));
    index["paths"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(gv, link)| {
            let url = link["serverRelativeURL"].as_str().unwrap();
            let json = json_of(get(url, &[("accept", "application/json")]));
            let proto = decode_v3(&body(get(url, &[("accept", PB)]))).expect("decodes");
            (gv.clone(), json, proto)
        })
        .collect()
}

fn yaml(any: &Option<pb::Any>) -> Value {
    serde_yaml::from_str(&any.as_ref().unwrap().yaml).unwrap()
}

fn extension(exts: &[pb::NamedAny], name: &str) -> Value {
    let e = exts.iter().find(|e| e.name == name);
    yaml(&e.unwrap_or_else(|| panic!("no {name}")).value)
}

fn reference_of(s: &Option<pb::SchemaOrReference>) -> &str {
    match s.as_ref().and_then(|s| s.oneof.as_ref()) {
        Some(pb::schema_or_reference::Oneof::Reference(r)) => &r.r#ref,
        other => panic!("not a reference: {other:?}"),
    }
}

/// A decoded schema back in JSON, each field as the converter maps it.
fn schema_json(s: &pb::SchemaOrReference) -> Value {
    use pb::schema_or_reference::Oneof;
    let s = match s.oneof.as_ref().expect("set") {
        Oneof::Reference(r) => {
            let mut m = json!({ "$ref": r.r#ref });
            if !r.description.is_empty() {
                m["description"] = r.description.clone().into();
            }
            return m;
        }
        Oneof::Schema(s) => s,
    };
    let mut m = Map::new();
    let texts = [
        ("title", &s.title),
        ("pattern", &s.pattern),
        ("type", &s.r#type),
        ("description", &s.description),
        ("format", &s.format),
    ];
    for (k, v) in texts {
        if !v.is_empty() {
            m.insert(k.into(), v.clone().into());
        }
    }
    let flags = [
        ("nullable", s.nullable),
        ("readOnly", s.read_only),
        ("writeOnly", s.write_only),
        ("deprecated", s.deprecated),
        ("exclusiveMaximum", s.exclusive_maximum),
        ("exclusiveMinimum", s.exclusive_minimum),
        ("uniqueItems", s.unique_items),
    ];
    for (k, v) in flags {
        if v {
            m.insert(k.into(), true.into());
        }
    }
    let ints = [
        ("maxLength", s.max_length),
        ("minLength", s.min_length),
        ("maxItems", s.max_items),
        ("minItems", s.min_items),
        ("maxProperties", s.max_properties),
        ("minProperties", s.min_properties),
    ];
    for (k, v) in ints {
        if v != 0 {
            m.insert(k.into(), v.into());
        }
    }
    for (k, v) in [
        ("multipleOf", s.multiple_of),
        ("maximum", s.maximum),
        ("minimum", s.minimum),
    ] {
        if v != 0.0 {
            m.insert(k.into(), v.into());
        }
    }
    if !s.required.is_empty() {
        m.insert("required".into(), json!(s.required));
    }
    if !s.r#enum.is_empty() {
        let values: Vec<Value> = s.r#enum.iter().map(|a| yaml(&Some(a.clone()))).collect();
        m.insert("enum".into(), values.into());
    }
    for (k, list) in [
        ("allOf", &s.all_of),
        ("oneOf", &s.one_of),
        ("anyOf", &s.any_of),
    ] {
        if !list.is_empty() {
            m.insert(k.into(), list.iter().map(schema_json).collect());
        }
    }
    if let Some(items) = &s.items {
        assert_eq!(items.schema_or_reference.len(), 1);
        m.insert("items".into(), schema_json(&items.schema_or_reference[0]));
    }
    if let Some(p) = &s.properties {
        let props: Map<String, Value> = p
            .additional_properties
            .iter()
            .map(|n| (n.name.clone(), schema_json(n.value.as_ref().unwrap())))
            .collect();
        m.insert("properties".into(), props.into());
    }
    if let Some(a) = &s.additional_properties {
        use pb::additional_properties_item::Oneof;
        let v = match a.oneof.as_ref().unwrap() {
            Oneof::Boolean(b) => Value::Bool(*b),
            Oneof::SchemaOrReference(s) => schema_json(s),
        };
        m.insert("additionalProperties".into(), v);
    }
    if let Some(d) = &s.default {
        use pb::default_type::Oneof;
        let v = match d.oneof.as_ref() {
            Some(Oneof::Boolean(b)) => json!(b),
            Some(Oneof::String(s)) => json!(s),
            Some(Oneof::Number(n)) => json!(n),
            None => Value::Null,
        };
        m.insert("default".into(), v);
    }
    if s.example.is_some() {
        m.insert("example".into(), yaml(&s.example));
    }
    for e in &s.specification_extension {
        m.insert(e.name.clone(), yaml(&e.value));
    }
    Value::Object(m)
}

#[test]
fn v3_protobuf_carries_the_json_document() {
    let docs = documents();
    assert_eq!(docs.len(), 12);
    for (gv, json, doc) in &docs {
        assert_eq!(doc.openapi, "3.0.0", "{gv}");
        let info = doc.info.as_ref().unwrap();
        assert_eq!(info.title, json["info"]["title"]);
        assert_eq!(info.version, json["info"]["version"]);
        let components = doc.components.as_ref().unwrap();
        let schemas = &components.schemas.as_ref().unwrap().additional_properties;
        let json_schemas = json["components"]["schemas"].as_object().unwrap();
        assert_eq!(schemas.len(), json_schemas.len(), "{gv}");
        for s in schemas {
            assert_eq!(
                schema_json(s.value.as_ref().unwrap()),
                json_schemas[&s.name],
                "{gv} {}",
                s.name
            );
        }
        let paths = &doc.paths.as_ref().unwrap().path;
        let json_paths: Vec<&String> = json["paths"].as_object().unwrap().keys().collect();
        let names: Vec<&String> = paths.iter().map(|p| &p.name).collect();
        assert_eq!(names, json_paths, "{gv}: the paths in order");
        let schemes = &components.security_schemes.as_ref().unwrap();
        let bearer = &schemes.additional_properties[0];
        assert_eq!(bearer.name, "BearerToken");
        match bearer.value.as_ref().unwrap().oneof.as_ref().unwrap() {
            pb::security_scheme_or_reference::Oneof::SecurityScheme(s) => {
                assert_eq!(
                    (s.r#type.as_str(), s.name.as_str()),
                    ("apiKey", "authorization")
                );
                assert_eq!(s.r#in, "header");
            }
            other => panic!("{other:?}"),
        }
    }

    let (_, json, core) = docs.iter().find(|(gv, _, _)| gv == "api/v1").unwrap();
    let schemas = &core.components.as_ref().unwrap().schemas.as_ref().unwrap();
    let cm = schemas
        .additional_properties
        .iter()
        .find(|s| s.name == "io.k8s.api.core.v1.ConfigMap")
        .unwrap();
    let Some(pb::schema_or_reference::Oneof::Schema(cm)) = &cm.value.as_ref().unwrap().oneof else {
        panic!("ConfigMap is a schema");
    };
    let props: Vec<&str> = cm
        .properties
        .as_ref()
        .unwrap()
        .additional_properties
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    let json_props: Vec<&str> = json["components"]["schemas"]["io.k8s.api.core.v1.ConfigMap"]
        ["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(props, json_props);
    assert!(props.contains(&"data") && props.contains(&"binaryData"));
    assert_eq!(
        extension(
            &cm.specification_extension,
            "x-kubernetes-group-version-kind"
        ),
        json!([{"group": "", "kind": "ConfigMap", "version": "v1"}])
    );

    // The PATCH of a ConfigMap: its parameters, extensions, body and responses.
    let item = core
        .paths
        .as_ref()
        .unwrap()
        .path
        .iter()
        .find(|p| p.name == "/api/v1/namespaces/{namespace}/configmaps/{name}")
        .unwrap()
        .value
        .as_ref()
        .unwrap();
    let json_item = &json["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"];
    let param_names = |list: &[pb::ParameterOrReference]| -> Vec<String> {
        list.iter()
            .map(|p| match p.oneof.as_ref().unwrap() {
                pb::parameter_or_reference::Oneof::Parameter(p) => p.name.clone(),
                other => panic!("{other:?}"),
            })
            .collect()
    };
    let json_names = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(
        param_names(&item.parameters),
        json_names(&json_item["parameters"])
    );
    assert_eq!(
        param_names(&item.parameters),
        ["name", "namespace", "pretty"]
    );
    let patch = item.patch.as_ref().unwrap();
    assert_eq!(patch.operation_id, "patchCoreV1NamespacedConfigMap");
    assert_eq!(patch.tags, ["core_v1"]);
    assert_eq!(
        param_names(&patch.parameters),
        json_names(&json_item["patch"]["parameters"])
    );
    assert!(param_names(&patch.parameters).contains(&"fieldValidation".to_string()));
    let Some(pb::parameter_or_reference::Oneof::Parameter(force)) = patch
        .parameters
        .iter()
        .find(|p| matches!(&p.oneof, Some(pb::parameter_or_reference::Oneof::Parameter(p)) if p.name == "force"))
        .and_then(|p| p.oneof.clone())
    else {
        panic!("force parameter");
    };
    assert_eq!(force.r#in, "query");
    let Some(pb::schema_or_reference::Oneof::Schema(force_schema)) =
        force.schema.as_ref().unwrap().oneof.as_ref()
    else {
        panic!("inline schema");
    };
    assert_eq!(force_schema.r#type, "boolean");
    assert!(force_schema.unique_items);
    let exts = &patch.specification_extension;
    assert_eq!(extension(exts, "x-kubernetes-action"), "patch");
    assert_eq!(
        extension(exts, "x-kubernetes-group-version-kind"),
        json!({"group": "", "kind": "ConfigMap", "version": "v1"})
    );
    let Some(pb::request_body_or_reference::Oneof::RequestBody(request)) =
        patch.request_body.as_ref().unwrap().oneof.as_ref()
    else {
        panic!("request body");
    };
    assert!(request.required);
    let content = &request.content.as_ref().unwrap().additional_properties;
    let types: Vec<&str> = content.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        types,
        [
            "application/json-patch+json",
            "application/merge-patch+json",
            "application/strategic-merge-patch+json",
            "application/apply-patch+yaml"
        ]
    );
    for c in content {
        assert_eq!(
            reference_of(&c.value.as_ref().unwrap().schema),
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.Patch"
        );
    }
    let responses = patch.responses.as_ref().unwrap();
    let codes: Vec<&str> = responses
        .response_or_reference
        .iter()
        .map(|r| r.name.as_str())
        .collect();
    assert_eq!(codes, ["200", "401"]);
    let Some(pb::response_or_reference::Oneof::Response(ok)) = responses.response_or_reference[0]
        .value
        .as_ref()
        .unwrap()
        .oneof
        .as_ref()
    else {
        panic!("response");
    };
    let json_media = ok.content.as_ref().unwrap().additional_properties[0]
        .value
        .as_ref()
        .unwrap();
    assert_eq!(
        reference_of(&json_media.schema),
        "#/components/schemas/io.k8s.api.core.v1.ConfigMap"
    );
}

/// The keys gnostic reads of each object the documents hold (and the converter carries): any
/// other key but an `x-` one makes gnostic's compiler fail, or would be left out.
fn check_keys(v: &Value, allowed: &[&str], at: &str) {
    for k in v
        .as_object()
        .unwrap_or_else(|| panic!("{at}: no object"))
        .keys()
    {
        assert!(
            allowed.contains(&k.as_str()) || k.starts_with("x-"),
            "{at}: {k}"
        );
    }
}

fn check_schema(v: &Value, at: &str) {
    if v.get("$ref").is_some() {
        return check_keys(v, &["$ref", "summary", "description"], at);
    }
    #[rustfmt::skip]
    const SCHEMA: &[&str] = &[
        "additionalProperties", "allOf", "anyOf", "default", "deprecated", "description", "enum",
        "example", "exclusiveMaximum", "exclusiveMinimum", "format", "items", "maxItems",
        "maxLength", "maxProperties", "maximum", "minItems", "minLength", "minProperties",
        "minimum", "multipleOf", "not", "nullable", "oneOf", "pattern", "properties",
        "readOnly", "required", "title", "type", "uniqueItems", "writeOnly",
    ];
    check_keys(v, SCHEMA, at);
    if let Some(t) = v.get("type") {
        assert!(t.is_string(), "{at}: type {t}");
    }
    for key in ["items", "not"] {
        if let Some(s) = v.get(key) {
            check_schema(s, &format!("{at}.{key}"));
        }
    }
    if let Some(s) = v.get("additionalProperties").filter(|a| !a.is_boolean()) {
        check_schema(s, &format!("{at}.additionalProperties"));
    }
    for key in ["allOf", "oneOf", "anyOf"] {
        for (i, s) in v
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .enumerate()
        {
            check_schema(s, &format!("{at}.{key}[{i}]"));
        }
    }
    for (name, s) in v
        .get("properties")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        check_schema(s, &format!("{at}.{name}"));
    }
}

fn check_content(v: &Value, at: &str) {
    for (media, m) in v.as_object().unwrap() {
        check_keys(m, &["schema", "example"], &format!("{at}.{media}"));
        check_schema(&m["schema"], &format!("{at}.{media}.schema"));
    }
}

fn check_parameters(v: Option<&Value>, at: &str) {
    #[rustfmt::skip]
    const PARAMETER: &[&str] = &[
        "allowEmptyValue", "allowReserved", "content", "deprecated", "description", "example",
        "explode", "in", "name", "required", "schema", "style",
    ];
    for p in v.and_then(Value::as_array).into_iter().flatten() {
        let at = format!("{at}.{}", p["name"]);
        check_keys(p, PARAMETER, &at);
        check_schema(&p["schema"], &at);
    }
}

#[test]
fn v3_json_documents_are_what_gnostic_reads() {
    #[rustfmt::skip]
    const OPERATION: &[&str] = &[
        "deprecated", "description", "operationId", "parameters", "requestBody", "responses",
        "security", "summary", "tags",
    ];
    #[rustfmt::skip]
    const PATH_ITEM: &[&str] = &[
        "$ref", "delete", "description", "get", "head", "options", "parameters", "patch",
        "post", "put", "summary", "trace",
    ];
    const VERBS: [&str; 8] = [
        "get", "put", "post", "delete", "options", "head", "patch", "trace",
    ];
    for (gv, json, _) in documents() {
        check_keys(
            &json,
            &["components", "info", "openapi", "paths", "security"],
            &gv,
        );
        check_keys(
            &json["info"],
            &[
                "description",
                "summary",
                "termsOfService",
                "title",
                "version",
            ],
            &gv,
        );
        check_keys(&json["components"], &["schemas", "securitySchemes"], &gv);
        for (name, s) in json["components"]["schemas"].as_object().unwrap() {
            check_schema(s, name);
        }
        for (path, item) in json["paths"].as_object().unwrap() {
            assert!(path.starts_with('/'), "{path}");
            check_keys(item, PATH_ITEM, path);
            check_parameters(item.get("parameters"), path);
            for verb in VERBS {
                let Some(op) = item.get(verb) else { continue };
                let at = format!("{path} {verb}");
                check_keys(op, OPERATION, &at);
                check_parameters(op.get("parameters"), &at);
                if let Some(b) = op.get("requestBody") {
                    check_keys(b, &["content", "description", "required"], &at);
                    check_content(&b["content"], &at);
                }
                for (code, r) in op["responses"].as_object().unwrap() {
                    let code_like =
                        code.len() == 3 && code.bytes().all(|b| b.is_ascii_digit() || b == b'X');
                    assert!(code_like || code == "default", "{at}: response {code}");
                    check_keys(r, &["content", "description"], &at);
                    if let Some(c) = r.get("content") {
                        check_content(c, &format!("{at} {code}"));
                    }
                }
            }
        }
    }
}
