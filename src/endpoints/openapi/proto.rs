//! The protobuf form of /openapi/v2 (gnostic's openapi_v2.Document, what kubectl decodes):
//! the Swagger JSON document converted message by message into the prost types generated
//! from proto/openapiv2.proto. Vendor extensions, defaults and enums travel as YAML text
//! (JSON is valid YAML), as gnostic carries them.
//! May use: nothing internal.

use prost::Message;
use serde_json::{Map, Value};

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod pb {
    include!(concat!(env!("OUT_DIR"), "/openapi.v2.rs"));
}

/// Encodes a Swagger 2.0 JSON document as an openapi_v2.Document.
pub(crate) fn encode_v2(doc: &Value) -> Vec<u8> {
    to_document(doc).encode_to_vec()
}

fn to_document(doc: &Value) -> pb::Document {
    let info = doc.get("info").map(|i| pb::Info {
        title: str_of(i, "title"),
        version: str_of(i, "version"),
        description: str_of(i, "description"),
    });
    let paths = doc
        .get("paths")
        .and_then(Value::as_object)
        .map(|paths| pb::Paths {
            vendor_extension: Vec::new(),
            path: paths
                .iter()
                .map(|(name, item)| pb::NamedPathItem {
                    name: name.clone(),
                    value: Some(path_item(item)),
                })
                .collect(),
        });
    let definitions = doc
        .get("definitions")
        .and_then(Value::as_object)
        .map(|defs| pb::Definitions {
            additional_properties: named_schemas(defs),
        });
    pb::Document {
        swagger: str_of(doc, "swagger"),
        info,
        base_path: str_of(doc, "basePath"),
        consumes: strings(doc.get("consumes")),
        produces: strings(doc.get("produces")),
        paths,
        definitions,
        vendor_extension: extensions(doc),
    }
}

fn str_of(v: &Value, key: &str) -> String {
    v.get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

fn any(v: &Value) -> pb::Any {
    pb::Any {
        yaml: v.to_string(),
    }
}

fn extensions(v: &Value) -> Vec<pb::NamedAny> {
    v.as_object()
        .map(|m| {
            m.iter()
                .filter(|(k, _)| k.starts_with("x-"))
                .map(|(k, v)| pb::NamedAny {
                    name: k.clone(),
                    value: Some(any(v)),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn named_schemas(m: &Map<String, Value>) -> Vec<pb::NamedSchema> {
    m.iter()
        .map(|(k, v)| pb::NamedSchema {
            name: k.clone(),
            value: Some(schema(v)),
        })
        .collect()
}

fn schema(v: &Value) -> pb::Schema {
    let additional_properties =
        v.get("additionalProperties")
            .map(|a| pb::AdditionalPropertiesItem {
                oneof: Some(match a {
                    Value::Bool(b) => pb::additional_properties_item::Oneof::Boolean(*b),
                    other => pb::additional_properties_item::Oneof::Schema(Box::new(schema(other))),
                }),
            });
    let r#type = match v.get("type") {
        Some(Value::String(s)) => Some(pb::TypeItem {
            value: vec![s.clone()],
        }),
        Some(Value::Array(a)) => Some(pb::TypeItem {
            value: a
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        }),
        _ => None,
    };
    let items = match v.get("items") {
        Some(Value::Array(a)) => Some(pb::ItemsItem {
            schema: a.iter().map(schema).collect(),
        }),
        Some(other @ Value::Object(_)) => Some(pb::ItemsItem {
            schema: vec![schema(other)],
        }),
        _ => None,
    };
    pb::Schema {
        r#ref: str_of(v, "$ref"),
        format: str_of(v, "format"),
        title: str_of(v, "title"),
        description: str_of(v, "description"),
        default: v.get("default").map(any),
        required: strings(v.get("required")),
        r#enum: v
            .get("enum")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(any).collect())
            .unwrap_or_default(),
        additional_properties: additional_properties.map(Box::new),
        r#type,
        items,
        all_of: v
            .get("allOf")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(schema).collect())
            .unwrap_or_default(),
        properties: v
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| pb::Properties {
                additional_properties: named_schemas(p),
            }),
        read_only: v.get("readOnly").and_then(Value::as_bool).unwrap_or(false),
        example: v.get("example").map(any),
        vendor_extension: extensions(v),
    }
}

fn path_item(v: &Value) -> pb::PathItem {
    let op = |verb: &str| v.get(verb).map(operation);
    pb::PathItem {
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        patch: op("patch"),
        parameters: parameters(v.get("parameters")),
        vendor_extension: extensions(v),
    }
}

fn operation(v: &Value) -> pb::Operation {
    let responses = v
        .get("responses")
        .and_then(Value::as_object)
        .map(|m| pb::Responses {
            response_code: m
                .iter()
                .map(|(code, r)| pb::NamedResponseValue {
                    name: code.clone(),
                    value: Some(pb::ResponseValue {
                        oneof: Some(pb::response_value::Oneof::Response(pb::Response {
                            description: str_of(r, "description"),
                            schema: r.get("schema").map(|s| pb::SchemaItem {
                                oneof: Some(pb::schema_item::Oneof::Schema(schema(s))),
                            }),
                        })),
                    }),
                })
                .collect(),
        });
    pb::Operation {
        tags: strings(v.get("tags")),
        description: str_of(v, "description"),
        operation_id: str_of(v, "operationId"),
        produces: strings(v.get("produces")),
        consumes: strings(v.get("consumes")),
        parameters: parameters(v.get("parameters")),
        responses,
        schemes: strings(v.get("schemes")),
        vendor_extension: extensions(v),
    }
}

fn parameters(v: Option<&Value>) -> Vec<pb::ParametersItem> {
    let Some(list) = v.and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .map(|p| {
            let required = p.get("required").and_then(Value::as_bool).unwrap_or(false);
            let unique_items = p
                .get("uniqueItems")
                .and_then(Value::as_bool)
                .unwrap_or(false);
            let parameter = match p.get("in").and_then(Value::as_str) {
                Some("body") => pb::parameter::Oneof::BodyParameter(pb::BodyParameter {
                    description: str_of(p, "description"),
                    name: str_of(p, "name"),
                    r#in: "body".into(),
                    required,
                    schema: p.get("schema").map(schema),
                }),
                Some("path") => pb::parameter::Oneof::NonBodyParameter(pb::NonBodyParameter {
                    oneof: Some(pb::non_body_parameter::Oneof::PathParameterSubSchema(
                        pb::PathParameterSubSchema {
                            required,
                            r#in: "path".into(),
                            description: str_of(p, "description"),
                            name: str_of(p, "name"),
                            unique_items,
                            r#type: str_of(p, "type"),
                        },
                    )),
                }),
                _ => pb::parameter::Oneof::NonBodyParameter(pb::NonBodyParameter {
                    oneof: Some(pb::non_body_parameter::Oneof::QueryParameterSubSchema(
                        pb::QueryParameterSubSchema {
                            required,
                            r#in: "query".into(),
                            description: str_of(p, "description"),
                            name: str_of(p, "name"),
                            unique_items,
                            r#type: str_of(p, "type"),
                        },
                    )),
                }),
            };
            pb::ParametersItem {
                oneof: Some(pb::parameters_item::Oneof::Parameter(pb::Parameter {
                    oneof: Some(parameter),
                })),
            }
        })
        .collect()
}

#[cfg(test)]
pub(crate) fn decode_v2(bytes: &[u8]) -> Result<pb::Document, prost::DecodeError> {
    pb::Document::decode(bytes)
}
