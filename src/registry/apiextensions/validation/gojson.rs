//! The bad values of field errors as kube-apiserver prints them: field.Error renders any value
//! that is not a string, number or bool with Go's `json.Marshal`, and upstream validates the
//! *internal* CRD types, which carry no json tags. So a bad `spec.versions` prints as
//! `[{"Name":"v1","Served":true,...}]`, with Go's field names and order, nil as `null`, map
//! keys sorted, numbers formatted like Go's float64 and `<`, `>`, `&` escaped. This module
//! writes exactly that from the v1 types (after the v1 → internal conversion of [`super::view`]).

use super::super::gofmt;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceSubresources, CustomResourceValidation,
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, JSONSchemaPropsOrStringArray,
    SelectableField, ValidationRule,
};
use serde_json::Value;
use std::collections::BTreeMap;

/// A Go struct: fields in declaration order, each value already rendered.
pub(super) fn object(fields: &[(&str, String)]) -> String {
    let body: Vec<String> = fields
        .iter()
        .map(|(k, v)| format!("{}:{v}", string(k)))
        .collect();
    format!("{{{}}}", body.join(","))
}

/// A Go string, as `json.Marshal` escapes it (HTML-safe).
pub(super) fn string(s: &str) -> String {
    gofmt::json_str(s)
}

/// A `*string`.
pub(super) fn opt_string(s: Option<&str>) -> String {
    s.map_or_else(|| "null".to_string(), string)
}

/// A `[]string` (`null` when nil).
pub(super) fn strings(list: Option<&[String]>) -> String {
    match list {
        None => "null".to_string(),
        Some(l) => format!(
            "[{}]",
            l.iter().map(|s| string(s)).collect::<Vec<_>>().join(",")
        ),
    }
}

/// A bool.
pub(super) fn boolean(b: bool) -> String {
    b.to_string()
}

/// A float64, formatted as Go's encoding/json does (`1`, `1.5`, `1e+21`, `1e-7`).
pub(super) fn float(f: f64) -> String {
    gofmt::json_f64(f)
}

fn opt<T>(v: Option<T>, f: impl FnOnce(T) -> String) -> String {
    v.map_or_else(|| "null".to_string(), f)
}

/// A JSON value decoded into `interface{}`: numbers become float64, maps are sorted.
pub(super) fn value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => boolean(*b),
        Value::Number(n) => float(n.as_f64().unwrap_or(0.0)),
        Value::String(s) => string(s),
        Value::Array(a) => format!("[{}]", a.iter().map(value).collect::<Vec<_>>().join(",")),
        Value::Object(m) => {
            let sorted: BTreeMap<&String, &Value> = m.iter().collect();
            let body: Vec<String> = sorted
                .into_iter()
                .map(|(k, v)| format!("{}:{}", string(k), value(v)))
                .collect();
            format!("{{{}}}", body.join(","))
        }
    }
}

fn schema_map(m: Option<&BTreeMap<String, JSONSchemaProps>>) -> String {
    opt(m, |m| {
        let body: Vec<String> = m
            .iter()
            .map(|(k, v)| format!("{}:{}", string(k), schema(v)))
            .collect();
        format!("{{{}}}", body.join(","))
    })
}

fn schema_list(l: Option<&Vec<JSONSchemaProps>>) -> String {
    opt(l, |l| {
        format!("[{}]", l.iter().map(schema).collect::<Vec<_>>().join(","))
    })
}

/// An internal `JSONSchemaPropsOrArray`.
pub(super) fn items(i: &JSONSchemaPropsOrArray) -> String {
    match i {
        JSONSchemaPropsOrArray::Schema(s) => {
            object(&[("Schema", schema(s)), ("JSONSchemas", "null".into())])
        }
        JSONSchemaPropsOrArray::Schemas(l) => object(&[
            ("Schema", "null".into()),
            ("JSONSchemas", schema_list(Some(l))),
        ]),
    }
}

fn or_bool(b: &JSONSchemaPropsOrBool) -> String {
    match b {
        JSONSchemaPropsOrBool::Schema(s) => {
            object(&[("Allows", "true".into()), ("Schema", schema(s))])
        }
        JSONSchemaPropsOrBool::Bool(b) => {
            object(&[("Allows", boolean(*b)), ("Schema", "null".into())])
        }
    }
}

fn rule(r: &ValidationRule) -> String {
    object(&[
        ("Rule", string(&r.rule)),
        ("Message", string(r.message.as_deref().unwrap_or(""))),
        (
            "MessageExpression",
            string(r.message_expression.as_deref().unwrap_or("")),
        ),
        ("Reason", opt_string(r.reason.as_deref())),
        ("FieldPath", string(r.field_path.as_deref().unwrap_or(""))),
        ("OptionalOldSelf", opt(r.optional_old_self, boolean)),
    ])
}

/// An internal `JSONSchemaProps`, all 44 fields in the order of the Go struct.
pub(super) fn schema(s: &JSONSchemaProps) -> String {
    let int = |v: Option<i64>| opt(v, |n| n.to_string());
    let flt = |v: Option<f64>| opt(v, float);
    let text = |v: &Option<String>| string(v.as_deref().unwrap_or(""));
    let json = |v: &Option<
        k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSON,
    >| { opt(v.as_ref(), |j| value(&j.0)) };
    let dependencies = opt(s.dependencies.as_ref(), |m| {
        let body: Vec<String> = m
            .iter()
            .map(|(k, d)| {
                let v = match d {
                    JSONSchemaPropsOrStringArray::Schema(s) => {
                        object(&[("Schema", schema(s)), ("Property", "null".into())])
                    }
                    JSONSchemaPropsOrStringArray::Strings(p) => {
                        object(&[("Schema", "null".into()), ("Property", strings(Some(p)))])
                    }
                };
                format!("{}:{v}", string(k))
            })
            .collect();
        format!("{{{}}}", body.join(","))
    });
    object(&[
        ("ID", text(&s.id)),
        ("Schema", text(&s.schema)),
        ("Ref", opt_string(s.ref_path.as_deref())),
        ("Description", text(&s.description)),
        ("Type", text(&s.type_)),
        ("Nullable", boolean(s.nullable.unwrap_or(false))),
        ("Format", text(&s.format)),
        ("Title", text(&s.title)),
        ("Default", json(&s.default)),
        ("Maximum", flt(s.maximum)),
        (
            "ExclusiveMaximum",
            boolean(s.exclusive_maximum.unwrap_or(false)),
        ),
        ("Minimum", flt(s.minimum)),
        (
            "ExclusiveMinimum",
            boolean(s.exclusive_minimum.unwrap_or(false)),
        ),
        ("MaxLength", int(s.max_length)),
        ("MinLength", int(s.min_length)),
        ("Pattern", text(&s.pattern)),
        ("MaxItems", int(s.max_items)),
        ("MinItems", int(s.min_items)),
        ("UniqueItems", boolean(s.unique_items.unwrap_or(false))),
        ("MultipleOf", flt(s.multiple_of)),
        (
            "Enum",
            opt(s.enum_.as_ref(), |l| {
                format!(
                    "[{}]",
                    l.iter().map(|j| value(&j.0)).collect::<Vec<_>>().join(",")
                )
            }),
        ),
        ("MaxProperties", int(s.max_properties)),
        ("MinProperties", int(s.min_properties)),
        ("Required", strings(s.required.as_deref())),
        ("Items", opt(s.items.as_ref(), items)),
        ("AllOf", schema_list(s.all_of.as_ref())),
        ("OneOf", schema_list(s.one_of.as_ref())),
        ("AnyOf", schema_list(s.any_of.as_ref())),
        ("Not", opt(s.not.as_deref(), schema)),
        ("Properties", schema_map(s.properties.as_ref())),
        (
            "AdditionalProperties",
            opt(s.additional_properties.as_ref(), or_bool),
        ),
        (
            "PatternProperties",
            schema_map(s.pattern_properties.as_ref()),
        ),
        ("Dependencies", dependencies),
        ("AdditionalItems", opt(s.additional_items.as_ref(), or_bool)),
        ("Definitions", schema_map(s.definitions.as_ref())),
        (
            "ExternalDocs",
            opt(s.external_docs.as_ref(), |d| {
                object(&[("Description", text(&d.description)), ("URL", text(&d.url))])
            }),
        ),
        ("Example", json(&s.example)),
        (
            "XPreserveUnknownFields",
            opt(s.x_kubernetes_preserve_unknown_fields, boolean),
        ),
        (
            "XEmbeddedResource",
            boolean(s.x_kubernetes_embedded_resource.unwrap_or(false)),
        ),
        (
            "XIntOrString",
            boolean(s.x_kubernetes_int_or_string.unwrap_or(false)),
        ),
        (
            "XListMapKeys",
            strings(s.x_kubernetes_list_map_keys.as_deref()),
        ),
        ("XListType", opt_string(s.x_kubernetes_list_type.as_deref())),
        ("XMapType", opt_string(s.x_kubernetes_map_type.as_deref())),
        (
            "XValidations",
            opt(s.x_kubernetes_validations.as_ref(), |l| {
                format!("[{}]", l.iter().map(rule).collect::<Vec<_>>().join(","))
            }),
        ),
    ])
}

/// An internal `*CustomResourceValidation`.
pub(super) fn validation(v: Option<&CustomResourceValidation>) -> String {
    opt(v, |v| {
        object(&[(
            "OpenAPIV3Schema",
            opt(v.open_api_v3_schema.as_ref(), schema),
        )])
    })
}

/// An internal `*CustomResourceSubresources`.
pub(super) fn subresources(s: Option<&CustomResourceSubresources>) -> String {
    opt(s, |s| {
        object(&[
            ("Status", opt(s.status.as_ref(), |_| "{}".to_string())),
            (
                "Scale",
                opt(s.scale.as_ref(), |sc| {
                    object(&[
                        ("SpecReplicasPath", string(&sc.spec_replicas_path)),
                        ("StatusReplicasPath", string(&sc.status_replicas_path)),
                        (
                            "LabelSelectorPath",
                            opt_string(sc.label_selector_path.as_deref()),
                        ),
                    ])
                }),
            ),
        ])
    })
}

/// An internal `[]CustomResourceColumnDefinition`.
pub(super) fn columns(c: Option<&[CustomResourceColumnDefinition]>) -> String {
    opt(c, |c| {
        let list: Vec<String> = c
            .iter()
            .map(|c| {
                object(&[
                    ("Name", string(&c.name)),
                    ("Type", string(&c.type_)),
                    ("Format", string(c.format.as_deref().unwrap_or(""))),
                    (
                        "Description",
                        string(c.description.as_deref().unwrap_or("")),
                    ),
                    ("Priority", c.priority.unwrap_or(0).to_string()),
                    ("JSONPath", string(&c.json_path)),
                ])
            })
            .collect();
        format!("[{}]", list.join(","))
    })
}

/// An internal `[]SelectableField`.
pub(super) fn selectable_fields(f: Option<&[SelectableField]>) -> String {
    opt(f, |f| {
        let list: Vec<String> = f
            .iter()
            .map(|f| object(&[("JSONPath", string(&f.json_path))]))
            .collect();
        format!("[{}]", list.join(","))
    })
}

/// Go's base64 of a `[]byte` (`null` when nil).
pub(super) fn bytes(b: &[u8]) -> String {
    use base64::Engine as _;
    string(&base64::engine::general_purpose::STANDARD.encode(b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_go() {
        assert_eq!(float(1.0), "1");
        assert_eq!(float(1.5), "1.5");
        assert_eq!(float(1e21), "1e+21");
        assert_eq!(float(1e-7), "1e-7");
        assert_eq!(float(0.000001), "0.000001");
        assert_eq!(float(-3.0), "-3");
    }

    #[test]
    fn strings_are_html_escaped_and_maps_sorted() {
        assert_eq!(string("a<b>&"), r#""a\u003cb\u003e\u0026""#);
        assert_eq!(
            value(&json!({"b": 1, "a": [true, null, "x"]})),
            r#"{"a":[true,null,"x"],"b":1}"#
        );
    }
}
