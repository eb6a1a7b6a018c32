//! A CRD version's schema as its rules see it: each node's compiled rules, and how a value of
//! the node becomes a CEL value (k8s.io/apiserver's pkg/cel/common/values.go
//! `UnstructuredToVal`).
//!
//! - `integer` reads as `int`, `number` as `double` (whole numbers too), `boolean` as `bool`;
//!   strings of format `duration` as durations, `date` and `date-time` as timestamps, `byte`
//!   as bytes (a string that does not parse stays a string); int-or-string as either.
//! - An object with properties (or an embedded resource, which also gets `apiVersion`,
//!   `kind` and `metadata.name`/`generateName`, as the resource root does) shows its declared
//!   properties only, by their escaped names, and a null property as absent; one with an
//!   `additionalProperties` schema is a map keyed by the data's own keys; one that only
//!   preserves unknown fields is empty.
//!
//! Where this differs from upstream: values preserved without a schema read as plain JSON
//! (upstream only compares them); duration strings in strfmt's unit words (`3 days`) stay
//! strings.

use super::super::gofmt::quote;
use super::{lists, split_path, upstream_path};
use crate::registry::cel::budget;
use crate::registry::cel::decl::{escape, with_type_and_object_meta};
use crate::registry::cel::{from_json, parse, references, refuse_structs};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::ValidationRule;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{IdedExpr, Value as CelValue};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::Arc;

/// One schema node.
pub(super) struct Node {
    /// The node's `type` (empty for int-or-string and untyped nodes): the bad value of an
    /// evaluation error, and whether a failed rule shows the value (not for objects and
    /// arrays).
    pub(super) type_: String,
    pub(super) rules: Vec<Rule>,
    /// The variables naming the shapes the rules' operators on sets and map lists were given
    /// (`lists`), with their values: every rule here runs in a scope holding them.
    pub(super) shapes: Vec<(String, CelValue)>,
    /// Declared properties by their JSON names.
    pub(super) properties: HashMap<String, Property>,
    pub(super) items: Option<Box<Node>>,
    pub(super) additional: Option<Box<Node>>,
    conversion: Conversion,
    /// The keys of a list with `x-kubernetes-list-type: map` (its items meet the old items
    /// with the same keys).
    pub(super) map_keys: Option<Vec<String>>,
    /// Whether the properties and entries of an object meet their old values
    /// (`x-kubernetes-map-type` unset, `granular` or `atomic`).
    pub(super) correlatable: bool,
    /// Whether a rule lies here or below.
    pub(super) has_rules: bool,
}

/// A declared property.
pub(super) struct Property {
    /// The name CEL reads it by (None: it cannot be named, and is not shown).
    cel_name: Option<Arc<String>>,
    pub(super) node: Node,
}

/// How a value of a node becomes a CEL value.
enum Conversion {
    IntOrString,
    /// Declared properties only.
    Object,
    /// Every entry, through `additionalProperties`.
    Map,
    /// An object with neither properties nor an additionalProperties schema.
    Empty,
    List,
    String(Format),
    Number,
    /// As JSON reads (integers, booleans, untyped values).
    Json,
}

#[derive(Clone, Copy)]
enum Format {
    Plain,
    Duration,
    Date,
    DateTime,
    Byte,
}

/// A compiled rule.
pub(super) struct Rule {
    pub(super) declared: ValidationRule,
    /// The rule, or why it does not compile (a CRD stored before a check refused it).
    pub(super) program: Result<IdedExpr, String>,
    pub(super) message: Option<IdedExpr>,
    /// Whether it names `oldSelf`.
    pub(super) transition: bool,
    /// Its `fieldPath` as field.Path prints it (upstream's NormalizedRuleFieldPath).
    pub(super) field_path: Option<String>,
}

impl Rule {
    /// Rule `r` of the node of `schema`; the shapes its operators on sets and map lists name
    /// are added to the node's `shapes`.
    fn compile(r: &Value, schema: &Value, shapes: &mut Vec<Arc<lists::Shape>>) -> Option<Rule> {
        let declared: ValidationRule = serde_json::from_value(r.clone()).ok()?;
        if declared.rule.trim().is_empty() {
            return None;
        }
        let program = compile(&declared.rule, schema, shapes);
        let transition = program.as_ref().is_ok_and(|p| references(p, "oldSelf"));
        let message = declared
            .message_expression
            .as_deref()
            .filter(|m| !m.trim().is_empty())
            .and_then(|m| compile(m, schema, shapes).ok());
        let field_path = declared
            .field_path
            .as_deref()
            .filter(|p| !p.is_empty())
            .map(|p| upstream_path(schema, &split_path(p)));
        Some(Rule {
            declared,
            program,
            message,
            transition,
            field_path,
        })
    }

    /// ruleErrorString: the message when the rule has one, else the rule.
    pub(super) fn error_string(&self) -> &str {
        match self.declared.message.as_deref().map(str::trim) {
            Some(m) if !m.is_empty() => m,
            _ => self.declared.rule.trim(),
        }
    }
}

/// An expression of a rule at a node of `schema` parsed (optional syntax included), its
/// operators on sets and map lists rewritten (their shapes added to `shapes`), its
/// comprehensions metered.
fn compile(
    expr: &str,
    schema: &Value,
    shapes: &mut Vec<Arc<lists::Shape>>,
) -> Result<IdedExpr, String> {
    let mut parsed = parse(expr, true)?;
    refuse_structs(&parsed).map_err(|e| format!("ERROR: <input>: {e}"))?;
    lists::rewrite(&mut parsed, schema, shapes);
    budget::meter(&mut parsed);
    Ok(parsed)
}

fn flag(s: &Value, key: &str) -> bool {
    s.get(key).and_then(Value::as_bool) == Some(true)
}

impl Node {
    /// The tree of schema `s` (`resource_root` for the root of a resource or an embedded
    /// resource).
    pub(super) fn build(s: &Value, resource_root: bool) -> Node {
        let with_meta;
        let s = if resource_root {
            with_meta = with_type_and_object_meta(s);
            with_meta.as_ref().unwrap_or(s)
        } else {
            s
        };
        let type_ = s
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut shapes = Vec::new();
        let rules: Vec<Rule> = s
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .map(|rules| {
                rules
                    .iter()
                    .filter_map(|r| Rule::compile(r, s, &mut shapes))
                    .collect()
            })
            .unwrap_or_default();
        let shapes = shapes
            .into_iter()
            .enumerate()
            .map(|(i, shape)| (lists::variable(i), CelValue::Opaque(shape)))
            .collect();
        let child = |c: &Value| Node::build(c, flag(c, "x-kubernetes-embedded-resource"));
        let properties: HashMap<String, Property> = s
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .map(|(name, p)| {
                        let cel_name = escape(name).map(Arc::new);
                        (
                            name.clone(),
                            Property {
                                cel_name,
                                node: child(p),
                            },
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let items = s
            .get("items")
            .filter(|i| i.is_object())
            .map(|i| Box::new(child(i)));
        let additional = s
            .get("additionalProperties")
            .filter(|a| a.is_object())
            .map(|a| Box::new(child(a)));
        let conversion = if flag(s, "x-kubernetes-int-or-string") {
            Conversion::IntOrString
        } else {
            match type_.as_str() {
                "object" if s.get("properties").is_some() => Conversion::Object,
                "object" if additional.is_some() => Conversion::Map,
                "object" => Conversion::Empty,
                "array" if items.is_some() => Conversion::List,
                "string" => Conversion::String(
                    match s.get("format").and_then(Value::as_str).unwrap_or_default() {
                        "duration" => Format::Duration,
                        "date" => Format::Date,
                        "date-time" => Format::DateTime,
                        "byte" => Format::Byte,
                        _ => Format::Plain,
                    },
                ),
                "number" => Conversion::Number,
                _ => Conversion::Json,
            }
        };
        let map_keys = (s.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map"))
            .then(|| {
                s.get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|k| {
                        k.iter()
                            .filter_map(Value::as_str)
                            .map(String::from)
                            .collect()
                    })
            })
            .flatten();
        let correlatable = matches!(
            s.get("x-kubernetes-map-type").and_then(Value::as_str),
            None | Some("granular" | "atomic")
        );
        let children = || {
            properties
                .values()
                .map(|p| &p.node)
                .chain(items.as_deref())
                .chain(additional.as_deref())
        };
        let has_rules = !rules.is_empty() || children().any(|c| c.has_rules);
        Node {
            type_,
            rules,
            shapes,
            properties,
            items,
            additional,
            conversion,
            map_keys,
            correlatable,
            has_rules,
        }
    }

    /// Drops what no rule will read or reach: under a node that has no rule itself and none
    /// above it (`under_rules`), only the children with rules below them are walked, and no
    /// value is converted there.
    pub(super) fn prune(&mut self, under_rules: bool) {
        let under_rules = under_rules || !self.rules.is_empty();
        if under_rules {
            return;
        }
        self.properties.retain(|_, p| p.node.has_rules);
        for child in self
            .properties
            .values_mut()
            .map(|p| &mut p.node)
            .chain(self.items.as_deref_mut())
            .chain(self.additional.as_deref_mut())
        {
            child.prune(false);
        }
    }

    /// Whether a failed rule here shows the value (not for objects and arrays).
    pub(super) fn shows_value(&self) -> bool {
        !matches!(self.type_.as_str(), "object" | "array")
    }

    /// The bad value of an evaluation error: the node's type.
    pub(super) fn quoted_type(&self) -> String {
        quote(&self.type_)
    }

    /// `v` (a value of this node) as CEL reads it.
    pub(super) fn to_cel(&self, v: &Value) -> CelValue {
        match (&self.conversion, v) {
            (_, Value::Null) => CelValue::Null,
            (Conversion::IntOrString, Value::String(s)) => CelValue::String(Arc::new(s.clone())),
            (Conversion::Object, Value::Object(m)) => {
                let map = m
                    .iter()
                    .filter(|(_, v)| !v.is_null())
                    .filter_map(|(k, v)| {
                        let p = self.properties.get(k)?;
                        let name = p.cel_name.clone()?;
                        Some((Key::String(name), p.node.to_cel(v)))
                    })
                    .collect();
                CelValue::Map(Map { map: Arc::new(map) })
            }
            (Conversion::Map, Value::Object(m)) => {
                let Some(values) = self.additional.as_deref() else {
                    return from_json(v);
                };
                let map = m
                    .iter()
                    .map(|(k, v)| (Key::String(Arc::new(k.clone())), values.to_cel(v)))
                    .collect();
                CelValue::Map(Map { map: Arc::new(map) })
            }
            (Conversion::Empty, Value::Object(_)) => CelValue::Map(Map {
                map: Arc::new(HashMap::new()),
            }),
            (Conversion::List, Value::Array(a)) => match self.items.as_deref() {
                Some(items) => {
                    CelValue::List(Arc::new(a.iter().map(|i| items.to_cel(i)).collect()))
                }
                None => from_json(v),
            },
            (Conversion::String(f), Value::String(s)) => string(s, *f),
            (Conversion::Number, Value::Number(n)) => {
                CelValue::Float(n.as_f64().unwrap_or(f64::NAN))
            }
            _ => from_json(v),
        }
    }
}

/// A string of format `f`.
fn string(s: &str, f: Format) -> CelValue {
    let parsed = match f {
        Format::Plain => None,
        Format::Duration => super::super::schema::go_duration_nanos(s)
            .map(|n| CelValue::Duration(chrono::Duration::nanoseconds(n))),
        Format::Date => chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d")
            .ok()
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .map(|t| CelValue::Timestamp(t.and_utc().fixed_offset())),
        Format::DateTime => chrono::DateTime::parse_from_rfc3339(s)
            .ok()
            .map(CelValue::Timestamp),
        Format::Byte => {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(s)
                .ok()
                .map(|b| CelValue::Bytes(Arc::new(b)))
        }
    };
    parsed.unwrap_or_else(|| CelValue::String(Arc::new(s.to_string())))
}
