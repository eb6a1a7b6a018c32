//! The protobuf form of /openapi/v3/<group version> (gnostic's openapi_v3.Document, what
//! kube-openapi's handler3 serves for the protobuf media type): the OpenAPI 3.0 JSON document
//! converted message by message into the prost types generated from proto/openapiv3.proto,
//! reading each object as gnostic's compiler does: an object with `$ref` is a Reference, any
//! other the schema (parameter, response, ...) itself; maps keep the JSON's key order; `x-`
//! keys become specification extensions which, like enum values and examples, travel as YAML
//! text (the value's JSON text, which YAML reads alike); a default is carried only when it is
//! a scalar; path items are the `/` keys of `paths`, responses the three-character codes.
//! May use: nothing internal.

use prost::Message;
use serde_json::{Map, Value};

#[allow(missing_docs, unreachable_pub, clippy::all)]
pub(crate) mod pb {
    include!(concat!(env!("OUT_DIR"), "/openapi.v3.rs"));
}

/// Encodes an OpenAPI 3.0 JSON document as an openapi_v3.Document.
pub(crate) fn encode_v3(doc: &Value) -> Vec<u8> {
    document(doc).encode_to_vec()
}

#[cfg(test)]
pub(crate) fn decode_v3(bytes: &[u8]) -> Result<pb::Document, prost::DecodeError> {
    pb::Document::decode(bytes)
}

fn document(d: &Value) -> pb::Document {
    pb::Document {
        openapi: text(d, "openapi"),
        info: d.get("info").map(info),
        paths: d.get("paths").map(paths),
        components: d.get("components").map(components),
        security: list(d, "security", security_requirement),
        specification_extension: extensions(d),
    }
}

fn info(v: &Value) -> pb::Info {
    pb::Info {
        title: text(v, "title"),
        description: text(v, "description"),
        terms_of_service: text(v, "termsOfService"),
        version: text(v, "version"),
        specification_extension: extensions(v),
        summary: text(v, "summary"),
    }
}

fn components(v: &Value) -> pb::Components {
    pb::Components {
        schemas: v.get("schemas").map(|s| pb::SchemasOrReferences {
            additional_properties: named_schemas(s),
        }),
        security_schemes: v
            .get("securitySchemes")
            .map(|s| pb::SecuritySchemesOrReferences {
                additional_properties: entries(s)
                    .map(|(name, v)| pb::NamedSecuritySchemeOrReference {
                        name: name.clone(),
                        value: Some(security_scheme_or_reference(v)),
                    })
                    .collect(),
            }),
        specification_extension: extensions(v),
    }
}

fn security_scheme_or_reference(v: &Value) -> pb::SecuritySchemeOrReference {
    use pb::security_scheme_or_reference::Oneof;
    let oneof = match reference(v) {
        Some(r) => Oneof::Reference(r),
        None => Oneof::SecurityScheme(pb::SecurityScheme {
            r#type: text(v, "type"),
            description: text(v, "description"),
            name: text(v, "name"),
            r#in: text(v, "in"),
            scheme: text(v, "scheme"),
            bearer_format: text(v, "bearerFormat"),
            open_id_connect_url: text(v, "openIdConnectUrl"),
            specification_extension: extensions(v),
        }),
    };
    pb::SecuritySchemeOrReference { oneof: Some(oneof) }
}

/// `{scheme: [scope, ...]}`.
fn security_requirement(v: &Value) -> pb::SecurityRequirement {
    pb::SecurityRequirement {
        additional_properties: entries(v)
            .map(|(name, scopes)| pb::NamedStringArray {
                name: name.clone(),
                value: Some(pb::StringArray {
                    value: strings(Some(scopes)),
                }),
            })
            .collect(),
    }
}

fn paths(v: &Value) -> pb::Paths {
    pb::Paths {
        path: entries(v)
            .filter(|(name, _)| name.starts_with('/'))
            .map(|(name, item)| pb::NamedPathItem {
                name: name.clone(),
                value: Some(path_item(item)),
            })
            .collect(),
        specification_extension: extensions(v),
    }
}

fn path_item(v: &Value) -> pb::PathItem {
    let op = |verb: &str| v.get(verb).map(operation);
    pb::PathItem {
        r#ref: text(v, "$ref"),
        summary: text(v, "summary"),
        description: text(v, "description"),
        get: op("get"),
        put: op("put"),
        post: op("post"),
        delete: op("delete"),
        options: op("options"),
        head: op("head"),
        patch: op("patch"),
        trace: op("trace"),
        parameters: list(v, "parameters", parameter_or_reference),
        specification_extension: extensions(v),
    }
}

fn operation(v: &Value) -> pb::Operation {
    pb::Operation {
        tags: strings(v.get("tags")),
        summary: text(v, "summary"),
        description: text(v, "description"),
        operation_id: text(v, "operationId"),
        parameters: list(v, "parameters", parameter_or_reference),
        request_body: v.get("requestBody").map(request_body_or_reference),
        responses: v.get("responses").map(responses),
        deprecated: flag(v, "deprecated"),
        security: list(v, "security", security_requirement),
        specification_extension: extensions(v),
    }
}

fn parameter_or_reference(v: &Value) -> pb::ParameterOrReference {
    use pb::parameter_or_reference::Oneof;
    let oneof = match reference(v) {
        Some(r) => Oneof::Reference(r),
        None => Oneof::Parameter(pb::Parameter {
            name: text(v, "name"),
            r#in: text(v, "in"),
            description: text(v, "description"),
            required: flag(v, "required"),
            deprecated: flag(v, "deprecated"),
            allow_empty_value: flag(v, "allowEmptyValue"),
            style: text(v, "style"),
            explode: flag(v, "explode"),
            allow_reserved: flag(v, "allowReserved"),
            schema: v.get("schema").map(schema_or_reference),
            example: v.get("example").map(any),
            content: v.get("content").map(media_types),
            specification_extension: extensions(v),
        }),
    };
    pb::ParameterOrReference { oneof: Some(oneof) }
}

fn request_body_or_reference(v: &Value) -> pb::RequestBodyOrReference {
    use pb::request_body_or_reference::Oneof;
    let oneof = match reference(v) {
        Some(r) => Oneof::Reference(r),
        None => Oneof::RequestBody(pb::RequestBody {
            description: text(v, "description"),
            content: v.get("content").map(media_types),
            required: flag(v, "required"),
            specification_extension: extensions(v),
        }),
    };
    pb::RequestBodyOrReference { oneof: Some(oneof) }
}

fn media_types(v: &Value) -> pb::MediaTypes {
    pb::MediaTypes {
        additional_properties: entries(v)
            .map(|(name, m)| pb::NamedMediaType {
                name: name.clone(),
                value: Some(pb::MediaType {
                    schema: m.get("schema").map(schema_or_reference),
                    example: m.get("example").map(any),
                    specification_extension: extensions(m),
                }),
            })
            .collect(),
    }
}

fn responses(v: &Value) -> pb::Responses {
    let is_code = |k: &str| k.len() == 3 && k.bytes().all(|b| b.is_ascii_digit() || b == b'X');
    pb::Responses {
        default: v.get("default").map(response_or_reference),
        response_or_reference: entries(v)
            .filter(|(code, _)| is_code(code))
            .map(|(code, r)| pb::NamedResponseOrReference {
                name: code.clone(),
                value: Some(response_or_reference(r)),
            })
            .collect(),
        specification_extension: extensions(v),
    }
}

fn response_or_reference(v: &Value) -> pb::ResponseOrReference {
    use pb::response_or_reference::Oneof;
    let oneof = match reference(v) {
        Some(r) => Oneof::Reference(r),
        None => Oneof::Response(pb::Response {
            description: text(v, "description"),
            content: v.get("content").map(media_types),
            specification_extension: extensions(v),
        }),
    };
    pb::ResponseOrReference { oneof: Some(oneof) }
}

fn named_schemas(v: &Value) -> Vec<pb::NamedSchemaOrReference> {
    entries(v)
        .map(|(name, s)| pb::NamedSchemaOrReference {
            name: name.clone(),
            value: Some(schema_or_reference(s)),
        })
        .collect()
}

fn schema_or_reference(v: &Value) -> pb::SchemaOrReference {
    use pb::schema_or_reference::Oneof;
    let oneof = match reference(v) {
        Some(r) => Oneof::Reference(r),
        None => Oneof::Schema(Box::new(schema(v))),
    };
    pb::SchemaOrReference { oneof: Some(oneof) }
}

fn schema(v: &Value) -> pb::Schema {
    use pb::additional_properties_item::Oneof as Additional;
    let additional_properties = v.get("additionalProperties").and_then(|a| {
        let oneof = match a {
            Value::Bool(b) => Additional::Boolean(*b),
            Value::Object(_) => Additional::SchemaOrReference(Box::new(schema_or_reference(a))),
            _ => return None,
        };
        Some(Box::new(pb::AdditionalPropertiesItem {
            oneof: Some(oneof),
        }))
    });
    let schemas = |key: &str| list(v, key, schema_or_reference);
    pb::Schema {
        nullable: flag(v, "nullable"),
        read_only: flag(v, "readOnly"),
        write_only: flag(v, "writeOnly"),
        example: v.get("example").map(any),
        deprecated: flag(v, "deprecated"),
        title: text(v, "title"),
        multiple_of: number(v, "multipleOf"),
        maximum: number(v, "maximum"),
        exclusive_maximum: flag(v, "exclusiveMaximum"),
        minimum: number(v, "minimum"),
        exclusive_minimum: flag(v, "exclusiveMinimum"),
        max_length: integer(v, "maxLength"),
        min_length: integer(v, "minLength"),
        pattern: text(v, "pattern"),
        max_items: integer(v, "maxItems"),
        min_items: integer(v, "minItems"),
        unique_items: flag(v, "uniqueItems"),
        max_properties: integer(v, "maxProperties"),
        min_properties: integer(v, "minProperties"),
        required: strings(v.get("required")),
        r#enum: v
            .get("enum")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(any).collect())
            .unwrap_or_default(),
        r#type: text(v, "type"),
        all_of: schemas("allOf"),
        one_of: schemas("oneOf"),
        any_of: schemas("anyOf"),
        not: v
            .get("not")
            .filter(|n| n.is_object())
            .map(|n| Box::new(schema(n))),
        // A single schema: gnostic reads no array of them here.
        items: v
            .get("items")
            .filter(|i| i.is_object())
            .map(|i| pb::ItemsItem {
                schema_or_reference: vec![schema_or_reference(i)],
            }),
        properties: v.get("properties").map(|p| pb::Properties {
            additional_properties: named_schemas(p),
        }),
        additional_properties,
        default: v.get("default").map(default),
        description: text(v, "description"),
        format: text(v, "format"),
        specification_extension: extensions(v),
    }
}

/// A scalar default as such; any other default is present with nothing set, as gnostic has it.
fn default(v: &Value) -> pb::DefaultType {
    use pb::default_type::Oneof;
    let oneof = match v {
        Value::Bool(b) => Some(Oneof::Boolean(*b)),
        Value::String(s) => Some(Oneof::String(s.clone())),
        Value::Number(n) => n.as_f64().map(Oneof::Number),
        _ => None,
    };
    pb::DefaultType { oneof }
}

/// The Reference an object with `$ref` is.
fn reference(v: &Value) -> Option<pb::Reference> {
    v.get("$ref")?;
    Some(pb::Reference {
        r#ref: text(v, "$ref"),
        summary: text(v, "summary"),
        description: text(v, "description"),
    })
}

/// The key-value pairs of an object, in order (none for anything else).
fn entries(v: &Value) -> impl Iterator<Item = (&String, &Value)> {
    v.as_object().into_iter().flat_map(Map::iter)
}

fn list<T>(v: &Value, key: &str, each: impl Fn(&Value) -> T) -> Vec<T> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().map(each).collect())
        .unwrap_or_default()
}

/// A string field as gnostic reads it: a string, an integer's digits, or empty for null.
fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        Value::Null => Some(String::new()),
        _ => None,
    }
}

fn text(v: &Value, key: &str) -> String {
    v.get(key).and_then(scalar_text).unwrap_or_default()
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| a.iter().filter_map(scalar_text).collect())
        .unwrap_or_default()
}

fn flag(v: &Value, key: &str) -> bool {
    v.get(key).and_then(Value::as_bool).unwrap_or(false)
}

fn number(v: &Value, key: &str) -> f64 {
    v.get(key).and_then(Value::as_f64).unwrap_or(0.0)
}

fn integer(v: &Value, key: &str) -> i64 {
    v.get(key).and_then(Value::as_i64).unwrap_or(0)
}

fn any(v: &Value) -> pb::Any {
    pb::Any {
        yaml: v.to_string(),
    }
}

fn extensions(v: &Value) -> Vec<pb::NamedAny> {
    entries(v)
        .filter(|(k, _)| k.starts_with("x-"))
        .map(|(k, v)| pb::NamedAny {
            name: k.clone(),
            value: Some(any(v)),
        })
        .collect()
}
