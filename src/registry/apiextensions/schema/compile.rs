//! The compiled form of a CRD version's schema, built once per version: every node's checks
//! ready to run (properties sorted for binary search, `pattern` compiled, formats resolved
//! and the unsupported ones stripped, defaults pruned), so applying it to an object is a walk
//! that allocates nothing unless it finds something to report.
//!
//! One [`Node`] type serves both upstream views of a schema: the go-openapi `spec.Schema` that
//! kube-openapi validates with (junctions included), and the structural schema that pruning,
//! defaulting, list types and embedded resources walk (`properties`, `items`,
//! `additionalProperties` of the node itself, never inside `allOf` and friends). May use:
//! nothing internal.

use super::super::goregex;
use super::formats::Format;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool,
};
use regex::Regex;
use serde_json::Value;

/// JSON types as a bit set (a schema's `type`, or `integer,string` for int-or-string).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) struct Types(u8);

impl Types {
    pub(super) const OBJECT: Types = Types(1);
    pub(super) const ARRAY: Types = Types(2);
    pub(super) const STRING: Types = Types(4);
    pub(super) const INTEGER: Types = Types(8);
    pub(super) const NUMBER: Types = Types(16);
    pub(super) const BOOLEAN: Types = Types(32);
    pub(super) const NULL: Types = Types(64);

    /// Whether every type of `other` is in `self`.
    pub(super) fn contains(self, other: Types) -> bool {
        self.0 & other.0 == other.0 && other.0 != 0
    }

    fn named(name: &str) -> Types {
        match name {
            "object" => Types::OBJECT,
            "array" => Types::ARRAY,
            "string" => Types::STRING,
            "integer" => Types::INTEGER,
            "number" => Types::NUMBER,
            "boolean" => Types::BOOLEAN,
            "null" => Types::NULL,
            _ => Types(0),
        }
    }
}

/// `x-kubernetes-list-type`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(super) enum ListType {
    /// atomic, or not set.
    #[default]
    Atomic,
    /// Unique items.
    Set,
    /// Items unique by these keys (`x-kubernetes-list-map-keys`).
    Map(Box<[Box<str>]>),
}

/// Numeric constraints.
#[derive(Debug, Default)]
pub(super) struct NumberRules {
    pub(super) maximum: Option<f64>,
    pub(super) exclusive_maximum: bool,
    pub(super) minimum: Option<f64>,
    pub(super) exclusive_minimum: bool,
    pub(super) multiple_of: Option<f64>,
}

/// A `pattern`: the text (for messages) and the compiled regex or why it did not compile.
#[derive(Debug)]
pub(super) struct Pattern {
    pub(super) source: Box<str>,
    pub(super) regex: Result<Regex, String>,
}

/// String constraints.
#[derive(Debug, Default)]
pub(super) struct StringRules {
    pub(super) max_length: Option<i64>,
    pub(super) min_length: Option<i64>,
    pub(super) pattern: Option<Pattern>,
}

/// Object and array size constraints, `required` and `uniqueItems`.
#[derive(Debug, Default)]
pub(super) struct SizeRules {
    pub(super) max_items: Option<i64>,
    pub(super) min_items: Option<i64>,
    pub(super) unique_items: bool,
    pub(super) max_properties: Option<i64>,
    pub(super) min_properties: Option<i64>,
    pub(super) required: Box<[Box<str>]>,
}

/// `allOf`, `anyOf`, `oneOf`, `not`.
#[derive(Debug, Default)]
pub(super) struct Junctions {
    pub(super) all_of: Box<[Node]>,
    pub(super) any_of: Box<[Node]>,
    pub(super) one_of: Box<[Node]>,
    pub(super) not: Option<Node>,
}

/// `additionalProperties`: `false`, `true`, or a schema (which allows).
#[derive(Debug)]
pub(super) struct Additional {
    pub(super) allows: bool,
    pub(super) schema: Option<Node>,
}

/// One compiled schema node.
#[derive(Debug, Default)]
pub(super) struct Node {
    /// `type` (int-or-string makes it `integer,string`).
    pub(super) types: Types,
    /// The types as kube-openapi joins them in messages.
    pub(super) type_text: std::borrow::Cow<'static, str>,
    /// Whether `type` was set at all (the type check runs if it or a format is).
    pub(super) has_type: bool,
    pub(super) nullable: bool,
    /// A supported format and its name as written.
    pub(super) format: Option<(Format, Box<str>)>,
    pub(super) number: Option<Box<NumberRules>>,
    pub(super) string: Option<Box<StringRules>>,
    pub(super) sizes: Option<Box<SizeRules>>,
    pub(super) enum_values: Box<[Value]>,
    pub(super) junctions: Option<Box<Junctions>>,
    /// `properties`, sorted by name.
    pub(super) properties: Box<[(Box<str>, Node)]>,
    pub(super) additional: Option<Box<Additional>>,
    pub(super) items: Option<Box<Node>>,
    /// `default`, pruned (None for a `null` default, as upstream drops it).
    pub(super) default: Option<Box<Value>>,
    pub(super) preserve_unknown: bool,
    pub(super) embedded: bool,
    pub(super) list: ListType,
    /// Whether a default applies anywhere below (set once defaults are pruned).
    pub(super) defaults_below: bool,
}

impl Node {
    /// The schema of property `name`.
    pub(super) fn property(&self, name: &str) -> Option<&Node> {
        self.properties
            .binary_search_by(|(k, _)| (**k).cmp(name))
            .ok()
            .map(|i| &self.properties[i].1)
    }

    /// The schema a field `name` of an object follows: its property, else the
    /// additionalProperties schema (getSchemaForField upstream).
    pub(super) fn field_schema(&self, name: &str) -> Option<&Node> {
        self.property(name)
            .or_else(|| self.additional.as_ref()?.schema.as_ref())
    }

    /// Compiles `props` without pruning its defaults.
    pub(super) fn compile(props: &JSONSchemaProps) -> Node {
        let mut type_names: Vec<&str> = Vec::new();
        if let Some(t) = props.type_.as_deref().filter(|t| !t.is_empty()) {
            type_names.push(t);
        }
        if props.x_kubernetes_int_or_string == Some(true) {
            type_names = vec!["integer", "string"];
        }
        let types = type_names
            .iter()
            .fold(Types(0), |acc, n| Types(acc.0 | Types::named(n).0));
        let format = props
            .format
            .as_deref()
            .and_then(|f| Format::lookup(f).map(|k| (k, Box::from(f))));
        let number =
            (props.maximum.is_some() || props.minimum.is_some() || props.multiple_of.is_some())
                .then(|| {
                    Box::new(NumberRules {
                        maximum: props.maximum,
                        exclusive_maximum: props.exclusive_maximum == Some(true),
                        minimum: props.minimum,
                        exclusive_minimum: props.exclusive_minimum == Some(true),
                        multiple_of: props.multiple_of,
                    })
                });
        let pattern = props
            .pattern
            .as_deref()
            .filter(|p| !p.is_empty())
            .map(|p| Pattern {
                source: p.into(),
                regex: goregex::compile(p),
            });
        let string = (props.max_length.is_some()
            || props.min_length.is_some()
            || pattern.is_some())
        .then(|| {
            Box::new(StringRules {
                max_length: props.max_length,
                min_length: props.min_length,
                pattern,
            })
        });
        let required: Box<[Box<str>]> = props
            .required
            .iter()
            .flatten()
            .map(|r| Box::from(r.as_str()))
            .collect();
        let sizes = (props.max_items.is_some()
            || props.min_items.is_some()
            || props.unique_items == Some(true)
            || props.max_properties.is_some()
            || props.min_properties.is_some()
            || !required.is_empty())
        .then(|| {
            Box::new(SizeRules {
                max_items: props.max_items,
                min_items: props.min_items,
                unique_items: props.unique_items == Some(true),
                max_properties: props.max_properties,
                min_properties: props.min_properties,
                required,
            })
        });
        let all = |v: &Option<Vec<JSONSchemaProps>>| -> Box<[Node]> {
            v.iter().flatten().map(Node::compile).collect()
        };
        let junctions = Junctions {
            all_of: all(&props.all_of),
            any_of: all(&props.any_of),
            one_of: all(&props.one_of),
            not: props.not.as_deref().map(Node::compile),
        };
        let has_junctions = !junctions.all_of.is_empty()
            || !junctions.any_of.is_empty()
            || !junctions.one_of.is_empty()
            || junctions.not.is_some();
        // BTreeMap iterates in key order, which is what the binary search needs.
        let properties = props
            .properties
            .iter()
            .flatten()
            .map(|(k, p)| (Box::from(k.as_str()), Node::compile(p)))
            .collect();
        let additional = props.additional_properties.as_ref().map(|a| {
            Box::new(match a {
                JSONSchemaPropsOrBool::Bool(b) => Additional {
                    allows: *b,
                    schema: None,
                },
                JSONSchemaPropsOrBool::Schema(s) => Additional {
                    allows: true,
                    schema: Some(Node::compile(s)),
                },
            })
        });
        // CRDs only allow a single items schema (an array of schemas is rejected).
        let items = match &props.items {
            Some(JSONSchemaPropsOrArray::Schema(s)) => Some(Box::new(Node::compile(s))),
            _ => None,
        };
        let list = match props.x_kubernetes_list_type.as_deref() {
            Some("set") => ListType::Set,
            Some("map") => ListType::Map(
                props
                    .x_kubernetes_list_map_keys
                    .iter()
                    .flatten()
                    .map(|k| Box::from(k.as_str()))
                    .collect(),
            ),
            _ => ListType::Atomic,
        };
        Node {
            types,
            type_text: type_text(&type_names),
            has_type: !type_names.is_empty(),
            nullable: props.nullable == Some(true),
            format,
            number,
            string,
            sizes,
            enum_values: props.enum_.iter().flatten().map(|j| j.0.clone()).collect(),
            junctions: has_junctions.then(|| Box::new(junctions)),
            properties,
            additional,
            items,
            default: props
                .default
                .as_ref()
                .filter(|d| !d.0.is_null())
                .map(|d| Box::new(d.0.clone())),
            preserve_unknown: props.x_kubernetes_preserve_unknown_fields == Some(true),
            embedded: props.x_kubernetes_embedded_resource == Some(true),
            list,
            defaults_below: true,
        }
    }
}

/// The types of a node as messages name them: static for the types a structural schema can
/// have (thousands of CRDs share them), joined with commas otherwise.
fn type_text(names: &[&str]) -> std::borrow::Cow<'static, str> {
    const KNOWN: [&str; 8] = [
        "object",
        "array",
        "string",
        "integer",
        "number",
        "boolean",
        "null",
        "integer,string",
    ];
    let joined = names.join(",");
    match KNOWN.iter().find(|k| **k == joined) {
        Some(k) => std::borrow::Cow::Borrowed(k),
        None => std::borrow::Cow::Owned(joined),
    }
}
