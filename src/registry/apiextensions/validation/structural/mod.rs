//! Structural schemas, as apiextensions-apiserver's pkg/apiserver/schema defines them:
//! [`Structural::new`] is NewStructural (convert.go), [`validate_structural`] is
//! ValidateStructural (validation.go + complete.go), with upstream's field paths, texts and
//! sorted order. The types mirror the Go ones field by field, so that the places where upstream
//! compares with reflect.DeepEqual (the int-or-string patterns, the metadata at the root) can
//! compare with `==` and mean the same.

use std::collections::BTreeMap;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    JSONSchemaProps, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool, ValidationRule,
};
use serde_json::Value;

use super::path;
use crate::registry::error::FieldError;

mod rules;

pub(crate) use rules::validate_structural;

/// A structural schema (schema.Structural).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Structural {
    pub(crate) items: Option<Box<Structural>>,
    /// nil in Go when the schema has no properties.
    pub(crate) properties: Option<BTreeMap<String, Structural>>,
    pub(crate) additional_properties: Option<StructuralOrBool>,
    pub(crate) generic: Generic,
    pub(crate) extensions: Extensions,
    pub(crate) x_validations: Option<Vec<ValidationRule>>,
    pub(crate) value_validation: Option<Box<ValueValidation>>,
}

/// schema.StructuralOrBool.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct StructuralOrBool {
    pub(crate) structural: Option<Box<Structural>>,
    pub(crate) bool: bool,
}

/// schema.Generic.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Generic {
    pub(crate) description: String,
    pub(crate) type_: String,
    pub(crate) title: String,
    pub(crate) default: Option<Value>,
    pub(crate) nullable: bool,
}

/// schema.Extensions.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Extensions {
    pub(crate) x_preserve_unknown_fields: bool,
    pub(crate) x_embedded_resource: bool,
    pub(crate) x_int_or_string: bool,
    pub(crate) x_list_map_keys: Option<Vec<String>>,
    pub(crate) x_list_type: Option<String>,
    pub(crate) x_map_type: Option<String>,
}

/// schema.ValueValidation.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ValueValidation {
    pub(crate) format: String,
    pub(crate) maximum: Option<f64>,
    pub(crate) exclusive_maximum: bool,
    pub(crate) minimum: Option<f64>,
    pub(crate) exclusive_minimum: bool,
    pub(crate) max_length: Option<i64>,
    pub(crate) min_length: Option<i64>,
    pub(crate) pattern: String,
    pub(crate) max_items: Option<i64>,
    pub(crate) min_items: Option<i64>,
    pub(crate) unique_items: bool,
    pub(crate) multiple_of: Option<f64>,
    pub(crate) enum_: Option<Vec<Value>>,
    pub(crate) max_properties: Option<i64>,
    pub(crate) min_properties: Option<i64>,
    pub(crate) required: Option<Vec<String>>,
    pub(crate) all_of: Option<Vec<NestedValueValidation>>,
    pub(crate) one_of: Option<Vec<NestedValueValidation>>,
    pub(crate) any_of: Option<Vec<NestedValueValidation>>,
    pub(crate) not: Option<Box<NestedValueValidation>>,
}

/// schema.NestedValueValidation: a schema under allOf/anyOf/oneOf/not.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct NestedValueValidation {
    pub(crate) value_validation: ValueValidation,
    pub(crate) x_validations: Option<Vec<ValidationRule>>,
    pub(crate) items: Option<Box<NestedValueValidation>>,
    pub(crate) properties: Option<BTreeMap<String, NestedValueValidation>>,
    pub(crate) additional_properties: Option<Box<NestedValueValidation>>,
    pub(crate) forbidden_generics: Generic,
    pub(crate) forbidden_extensions: Extensions,
}

/// validateUnsupportedFields: the fields NewStructural cannot represent.
fn unsupported(s: &JSONSchemaProps) -> Result<(), String> {
    let set = |o: &Option<String>| o.as_deref().is_some_and(|v| !v.is_empty());
    let err = |f: &str| Err(format!("OpenAPIV3Schema '{f}' is not supported"));
    if set(&s.id) {
        return err("id");
    }
    if set(&s.schema) {
        return err("schema");
    }
    if set(&s.ref_path) {
        return err("$ref");
    }
    if s.pattern_properties.as_ref().is_some_and(|m| !m.is_empty()) {
        return err("patternProperties");
    }
    if s.dependencies.as_ref().is_some_and(|m| !m.is_empty()) {
        return err("dependencies");
    }
    if s.additional_items.is_some() {
        return err("additionalItems");
    }
    if s.definitions.as_ref().is_some_and(|m| !m.is_empty()) {
        return err("definitions");
    }
    Ok(())
}

const ITEMS_ARRAY: &str = "OpenAPIV3Schema 'items' must be a schema, but is an array";

/// The schema of `items`, or the error for an array of schemas.
fn item_schema(s: &JSONSchemaProps) -> Result<Option<&JSONSchemaProps>, String> {
    match &s.items {
        None => Ok(None),
        Some(JSONSchemaPropsOrArray::Schema(i)) => Ok(Some(i)),
        Some(JSONSchemaPropsOrArray::Schemas(l)) if l.is_empty() => Ok(None),
        Some(JSONSchemaPropsOrArray::Schemas(_)) => Err(ITEMS_ARRAY.into()),
    }
}

fn generic(s: &JSONSchemaProps) -> Generic {
    Generic {
        description: s.description.clone().unwrap_or_default(),
        type_: s.type_.clone().unwrap_or_default(),
        title: s.title.clone().unwrap_or_default(),
        default: s.default.as_ref().map(|d| d.0.clone()),
        nullable: s.nullable.unwrap_or(false),
    }
}

fn extensions(s: &JSONSchemaProps) -> Result<Extensions, String> {
    if s.x_kubernetes_preserve_unknown_fields == Some(false) {
        return Err(
            "internal error: 'x-kubernetes-preserve-unknown-fields' must be true or undefined"
                .into(),
        );
    }
    Ok(Extensions {
        x_preserve_unknown_fields: s.x_kubernetes_preserve_unknown_fields == Some(true),
        x_embedded_resource: s.x_kubernetes_embedded_resource.unwrap_or(false),
        x_int_or_string: s.x_kubernetes_int_or_string.unwrap_or(false),
        x_list_map_keys: s.x_kubernetes_list_map_keys.clone(),
        x_list_type: s.x_kubernetes_list_type.clone(),
        x_map_type: s.x_kubernetes_map_type.clone(),
    })
}

/// Go's `append` to a nil slice: empty input gives nil.
fn nested_list(
    l: &Option<Vec<JSONSchemaProps>>,
) -> Result<Option<Vec<NestedValueValidation>>, String> {
    let l = l.as_deref().unwrap_or(&[]);
    if l.is_empty() {
        return Ok(None);
    }
    l.iter()
        .map(NestedValueValidation::new)
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

impl ValueValidation {
    /// newValueValidation.
    fn new(s: &JSONSchemaProps) -> Result<Self, String> {
        let not = s
            .not
            .as_deref()
            .map(NestedValueValidation::new)
            .transpose()?
            .map(Box::new);
        let enum_ = s
            .enum_
            .as_ref()
            .filter(|e| !e.is_empty())
            .map(|e| e.iter().map(|j| j.0.clone()).collect());
        Ok(ValueValidation {
            format: s.format.clone().unwrap_or_default(),
            maximum: s.maximum,
            exclusive_maximum: s.exclusive_maximum.unwrap_or(false),
            minimum: s.minimum,
            exclusive_minimum: s.exclusive_minimum.unwrap_or(false),
            max_length: s.max_length,
            min_length: s.min_length,
            pattern: s.pattern.clone().unwrap_or_default(),
            max_items: s.max_items,
            min_items: s.min_items,
            unique_items: s.unique_items.unwrap_or(false),
            multiple_of: s.multiple_of,
            enum_,
            max_properties: s.max_properties,
            min_properties: s.min_properties,
            required: s.required.clone(),
            all_of: nested_list(&s.all_of)?,
            any_of: nested_list(&s.any_of)?,
            one_of: nested_list(&s.one_of)?,
            not,
        })
    }
}

impl NestedValueValidation {
    /// newNestedValueValidation.
    fn new(s: &JSONSchemaProps) -> Result<Self, String> {
        unsupported(s)?;
        let value_validation = ValueValidation::new(s)?;
        let forbidden_generics = generic(s);
        let forbidden_extensions = extensions(s)?;
        let items = item_schema(s)?
            .map(NestedValueValidation::new)
            .transpose()?
            .map(Box::new);
        let properties = s
            .properties
            .as_ref()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| Ok((k.clone(), NestedValueValidation::new(v)?)))
                    .collect::<Result<BTreeMap<_, _>, String>>()
            })
            .transpose()?;
        let additional_properties = match &s.additional_properties {
            Some(JSONSchemaPropsOrBool::Schema(a)) => {
                Some(Box::new(NestedValueValidation::new(a)?))
            }
            Some(JSONSchemaPropsOrBool::Bool(true)) => Some(Box::default()),
            _ => None,
        };
        Ok(NestedValueValidation {
            value_validation,
            x_validations: s.x_kubernetes_validations.clone(),
            items,
            properties,
            additional_properties,
            forbidden_generics,
            forbidden_extensions,
        })
    }
}

impl Structural {
    /// NewStructural: the structural form of a schema, or why it has none (upstream's error
    /// text, e.g. "OpenAPIV3Schema 'items' must be a schema, but is an array").
    pub(crate) fn new(s: &JSONSchemaProps) -> Result<Self, String> {
        unsupported(s)?;
        let value_validation = ValueValidation::new(s)?;
        let generic = generic(s);
        let extensions = extensions(s)?;
        let items = item_schema(s)?
            .map(Structural::new)
            .transpose()?
            .map(Box::new);
        let properties = s
            .properties
            .as_ref()
            .filter(|m| !m.is_empty())
            .map(|m| {
                m.iter()
                    .map(|(k, v)| Ok((k.clone(), Structural::new(v)?)))
                    .collect::<Result<BTreeMap<_, _>, String>>()
            })
            .transpose()?;
        let additional_properties = match &s.additional_properties {
            None => None,
            Some(JSONSchemaPropsOrBool::Schema(a)) => Some(StructuralOrBool {
                structural: Some(Box::new(Structural::new(a)?)),
                bool: true,
            }),
            Some(JSONSchemaPropsOrBool::Bool(b)) => Some(StructuralOrBool {
                structural: None,
                bool: *b,
            }),
        };
        Ok(Structural {
            items,
            properties,
            additional_properties,
            generic,
            extensions,
            x_validations: s.x_kubernetes_validations.clone(),
            value_validation: Some(Box::new(value_validation)),
        })
    }

    /// The schema of a property, if declared.
    pub(crate) fn property(&self, name: &str) -> Option<&Structural> {
        self.properties.as_ref()?.get(name)
    }
}

/// Whether a schema is structural (upstream's schemaIsNonStructural, negated).
pub(crate) fn is_structural(s: &JSONSchemaProps) -> bool {
    Structural::new(s).is_ok_and(|ss| validate_structural("", &ss).is_empty())
}
