//! The structure server-side apply needs from the served types (structured-merge-diff's
//! schema, reduced to what these kinds use): which objects are maps, which structs are atomic
//! or embedded by value, and list semantics from `endpoints::patch::meta`; for a custom
//! resource, from its CRD's structural schema ([`custom`]). With it: the field
//! set of an applied configuration (typed.ToFieldSet), the member set of a whole object (what
//! Compare sees), and merging an applied configuration into the live object (typed.Merge).
//! May use: api.

use super::fieldpath::{self, Element, Path, Set};
use super::ApplyError;
use crate::api::json::{field, pair_up, same};
use crate::api::GroupVersionKind;
use crate::endpoints::patch::meta::{field_meta, key_default, ListType};
use serde_json::{Map, Value};

mod custom;

/// How a node is merged and owned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A scalar, or anything owned as a whole (atomic struct, atomic list).
    Leaf,
    /// A struct field set by value in Go (never absent in kube's empty object: no `.`).
    EmbeddedStruct,
    /// A pointer struct: owned as a member when set.
    Struct,
    /// A `map[string]T`: every entry is a member.
    Map,
    /// A list merged by key fields; `atomic_items` when its element struct is atomic.
    ListMap {
        keys: &'static [&'static str],
        atomic_items: bool,
    },
    /// A set of scalars.
    ListSet,
}

/// Fields holding `map[string]...` values.
const MAPS: &[&[&str]] = &[
    &["metadata", "labels"],
    &["metadata", "annotations"],
    &["data"],
    &["binaryData"],
    &["stringData"],
    // A Service's selector (a workload's is a LabelSelector struct: none is served yet).
    &["spec", "selector"],
];

/// Struct fields embedded by value (`Spec LeaseSpec`, not `*LeaseSpec`).
const EMBEDDED: &[&[&str]] = &[
    &["metadata"],
    &["spec"],
    &["status"],
    &["source"],
    &["deprecatedSource"],
    // A Service's LoadBalancerStatus.
    &["status", "loadBalancer"],
];

/// Structs marked `+structType=atomic` (ObjectReference and friends).
const ATOMIC_STRUCTS: &[&[&str]] = &[&["involvedObject"], &["related"], &["regarding"]];

/// Keyed lists whose items are atomic structs.
const ATOMIC_ITEMS: &[&[&str]] = &[&["metadata", "ownerReferences"], &["secrets"]];

pub(crate) struct Types<'a> {
    gvk: &'a GroupVersionKind,
    /// A custom resource's structural schema (its openAPIV3Schema): lists and maps below
    /// `metadata` follow the tables, the rest the schema.
    schema: Option<&'a Value>,
}

impl<'a> Types<'a> {
    pub(crate) fn new(gvk: &'a GroupVersionKind) -> Self {
        Types { gvk, schema: None }
    }

    /// The types of a custom resource whose schema is `schema` (None: the built-in tables).
    pub(crate) fn with_schema(mut self, schema: Option<&'a Value>) -> Self {
        self.schema = schema;
        self
    }

    /// The defaults of the key fields of the keyed list at `fields`.
    fn key_default<'f>(&self, fields: &'f [&str]) -> impl Fn(&str) -> Option<&'static str> + 'f
    where
        'a: 'f,
    {
        let gvk = self.gvk;
        move |key| key_default(gvk, fields, key)
    }

    fn kind(&self, fields: &[&str], value: &Value) -> Kind {
        if let Some(schema) = self.schema {
            if fields.first() != Some(&"metadata") {
                return custom::kind(schema, fields, value);
            }
        }
        let is = |table: &[&[&str]]| table.contains(&fields);
        match value {
            Value::Array(_) => match field_meta(self.gvk, fields).list {
                ListType::Map(keys) => Kind::ListMap {
                    keys,
                    atomic_items: is(ATOMIC_ITEMS),
                },
                ListType::Set => Kind::ListSet,
                ListType::Atomic => Kind::Leaf,
            },
            Value::Object(_) if is(ATOMIC_STRUCTS) => Kind::Leaf,
            Value::Object(_) if is(MAPS) => Kind::Map,
            Value::Object(_) if is(EMBEDDED) => Kind::EmbeddedStruct,
            Value::Object(_) => Kind::Struct,
            _ => Kind::Leaf,
        }
    }

    /// typed.ToFieldSet of an applied configuration: leaves, list items, map entries, and
    /// struct fields only when set to null or `{}`.
    pub(crate) fn apply_set(&self, config: &Value) -> Result<Set, ApplyError> {
        let mut set = Set::new();
        self.walk(config, &mut Vec::new(), &mut Vec::new(), false, &mut set)?;
        Ok(set)
    }

    /// The members of a whole object as Compare sees them: like [`Self::apply_set`], plus
    /// every map, pointer struct and non-atomic list that is present.
    pub(crate) fn object_set(&self, obj: &Value) -> Set {
        let mut set = Set::new();
        // Objects already stored are well-formed; a malformed one owns what could be walked.
        let _ = self.walk(obj, &mut Vec::new(), &mut Vec::new(), true, &mut set);
        set
    }

    /// Compare of two whole objects: (members added or modified, members removed), exactly
    /// what comparing the two [`Self::object_set`]s member by member gives, without walking
    /// what did not change. A subtree equal on both sides adds the same members with the same
    /// values to both sets, so it is skipped; a non-empty map or struct on both sides is a
    /// member of both with children (never changed itself), so only its children are
    /// compared; anything else is compared member by member.
    pub(crate) fn compare(&self, old: &Value, new: &Value) -> (Set, Set) {
        let mut out = (Set::new(), Set::new());
        self.compare_at(old, new, None, &mut Vec::new(), &mut Vec::new(), &mut out);
        out
    }

    /// `in_map`: whether the parent is a map (its entries are members); None at the root.
    fn compare_at<'v>(
        &self,
        old: &'v Value,
        new: &'v Value,
        in_map: Option<bool>,
        fields: &mut Vec<&'v str>,
        path: &mut Path,
        out: &mut (Set, Set),
    ) {
        let (old_kind, new_kind) = if path.is_empty() {
            (Kind::EmbeddedStruct, Kind::EmbeddedStruct)
        } else {
            (self.kind(fields, old), self.kind(fields, new))
        };
        let structs = old_kind == new_kind
            && matches!(new_kind, Kind::Map | Kind::Struct | Kind::EmbeddedStruct);
        let (Value::Object(o), Value::Object(n)) = (old, new) else {
            return self.compare_members(Some(old), Some(new), in_map, fields, path, out);
        };
        if !structs || o.is_empty() || n.is_empty() {
            return self.compare_members(Some(old), Some(new), in_map, fields, path, out);
        }
        let is_map = Some(new_kind == Kind::Map);
        let in_metadata = path.len() == 1 && path[0] == "f:metadata";
        let skip = |k: &str| in_metadata && k == "managedFields";
        let mut all_found = o.len() == n.len();
        for (k, nv, ov) in pair_up(o, n) {
            all_found &= ov.is_some();
            // managedFields first: it is large, equal in most updates, and never compared.
            if skip(k) || ov.is_some_and(|ov| same(ov, nv)) {
                continue;
            }
            fields.push(k);
            path.push(fieldpath::field(k));
            match ov {
                Some(ov) => self.compare_at(ov, nv, is_map, fields, path, out),
                None => self.compare_members(None, Some(nv), is_map, fields, path, out),
            }
            path.pop();
            fields.pop();
        }
        if all_found {
            // `o` has as many keys as `n` and holds every key of `n`: none was removed.
            return;
        }
        for (k, ov) in o {
            if skip(k) || field(n, k).is_some() {
                continue;
            }
            fields.push(k);
            path.push(fieldpath::field(k));
            self.compare_members(Some(ov), None, is_map, fields, path, out);
            path.pop();
            fields.pop();
        }
    }

    /// Compares the members of one subtree at `path` on each side (absent: none), including
    /// the subtree's own membership in its parent (`in_map`, or set to null or `{}`).
    fn compare_members<'v>(
        &self,
        old: Option<&'v Value>,
        new: Option<&'v Value>,
        in_map: Option<bool>,
        fields: &mut Vec<&'v str>,
        path: &mut Path,
        out: &mut (Set, Set),
    ) {
        let members = |v: Option<&'v Value>, fields: &mut Vec<&'v str>, path: &mut Path| {
            let mut set = Set::new();
            if let Some(v) = v {
                // Objects already stored are well-formed; a malformed one owns what was walked.
                let _ = self.walk(v, fields, path, true, &mut set);
                let empty = v.is_null() || v.as_object().is_some_and(Map::is_empty);
                if in_map.is_some_and(|m| m || empty) {
                    set.insert(path.clone());
                }
            }
            set
        };
        let old_set = members(old, fields, path);
        let new_set = members(new, fields, path);
        let depth = path.len();
        let at = |v: Option<&'v Value>, p: &Path| v.and_then(|v| fieldpath::get(v, &p[depth..]));
        for p in new_set.intersection(&old_set) {
            let (a, b) = (at(old, p), at(new, p));
            let leaf =
                b.is_some_and(|v| !v.is_object() && !v.is_array()) || !has_children(&new_set, p);
            if leaf && a != b {
                out.0.insert(p.clone());
            }
        }
        out.0.extend(new_set.difference(&old_set).cloned());
        out.1.extend(old_set.difference(&new_set).cloned());
    }

    fn walk<'v>(
        &self,
        value: &'v Value,
        fields: &mut Vec<&'v str>,
        path: &mut Path,
        containers: bool,
        set: &mut Set,
    ) -> Result<(), ApplyError> {
        let kind = if path.is_empty() {
            Kind::EmbeddedStruct
        } else {
            self.kind(fields, value)
        };
        match kind {
            Kind::Leaf => {
                set.insert(path.clone());
            }
            Kind::ListMap { keys, atomic_items } => {
                if containers {
                    set.insert(path.clone());
                }
                for item in value.as_array().into_iter().flatten() {
                    let pe = fieldpath::key(item, keys, self.key_default(fields)).ok_or_else(|| {
                        ApplyError::Invalid(format!(
                            "{}: associative list with keys has an element that omits key field {:?}",
                            fieldpath::to_string(path),
                            keys.iter().find(|k| item.get(**k).is_none()).unwrap_or(&keys[0])
                        ))
                    })?;
                    path.push(pe);
                    set.insert(path.clone());
                    if !atomic_items {
                        self.walk_fields(item, fields, path, containers, set)?;
                    }
                    path.pop();
                }
            }
            Kind::ListSet => {
                if containers {
                    set.insert(path.clone());
                }
                for item in value.as_array().into_iter().flatten() {
                    path.push(fieldpath::value(item));
                    set.insert(path.clone());
                    path.pop();
                }
            }
            Kind::Map | Kind::Struct | Kind::EmbeddedStruct => {
                if containers && matches!(kind, Kind::Map | Kind::Struct) {
                    set.insert(path.clone());
                }
                let is_map = kind == Kind::Map;
                for (k, v) in value.as_object().into_iter().flatten() {
                    fields.push(k);
                    path.push(fieldpath::field(k));
                    self.walk(v, fields, path, containers, set)?;
                    let empty = v.is_null() || v.as_object().is_some_and(Map::is_empty);
                    if empty || is_map {
                        set.insert(path.clone());
                    }
                    path.pop();
                    fields.pop();
                }
            }
        }
        Ok(())
    }

    /// Walks the fields of a list item (an object) as a struct under `path`.
    fn walk_fields<'v>(
        &self,
        item: &'v Value,
        fields: &mut Vec<&'v str>,
        path: &mut Path,
        containers: bool,
        set: &mut Set,
    ) -> Result<(), ApplyError> {
        for (k, v) in item.as_object().into_iter().flatten() {
            if k == "managedFields" && path.len() == 1 && path[0] == "f:metadata" {
                // Never owned by anyone (strip() drops it): not worth walking its large tree.
                continue;
            }
            fields.push(k);
            path.push(fieldpath::field(k));
            self.walk(v, fields, path, containers, set)?;
            if v.is_null() || v.as_object().is_some_and(Map::is_empty) {
                set.insert(path.clone());
            }
            path.pop();
            fields.pop();
        }
        Ok(())
    }

    /// The paths of the atomic lists, maps and structs an applied configuration sets, as
    /// structured-merge-diff prints them (`.spec.selector`, `.metadata.ownerReferences[0]`):
    /// what a MutatingAdmissionPolicy may not set (findAtomics).
    pub(crate) fn atomics(&self, config: &Value) -> Vec<String> {
        let mut out = Vec::new();
        self.find_atomics(config, &mut Vec::new(), &mut String::new(), &mut out);
        out
    }

    fn find_atomics<'v>(
        &self,
        value: &'v Value,
        fields: &mut Vec<&'v str>,
        path: &mut String,
        out: &mut Vec<String>,
    ) {
        let kind = if fields.is_empty() {
            Kind::EmbeddedStruct
        } else {
            self.kind(fields, value)
        };
        let fields_of = |m: &'v Map<String, Value>,
                         fields: &mut Vec<&'v str>,
                         path: &mut String,
                         out: &mut Vec<String>| {
            for (k, v) in m {
                let len = path.len();
                path.push('.');
                path.push_str(k);
                fields.push(k);
                self.find_atomics(v, fields, path, out);
                fields.pop();
                path.truncate(len);
            }
        };
        match (kind, value) {
            (Kind::Leaf, Value::Object(_) | Value::Array(_)) => out.push(path.clone()),
            (Kind::Map | Kind::Struct | Kind::EmbeddedStruct, Value::Object(m)) => {
                fields_of(m, fields, path, out);
            }
            (Kind::ListMap { atomic_items, .. }, Value::Array(items)) => {
                for (i, item) in items.iter().enumerate() {
                    let len = path.len();
                    path.push_str(&format!("[{i}]"));
                    match item {
                        Value::Object(_) if atomic_items => out.push(path.clone()),
                        Value::Object(m) => fields_of(m, fields, path, out),
                        _ => {}
                    }
                    path.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// typed.Merge: the applied configuration merged into the live object.
    pub(crate) fn merge(&self, live: &Value, config: &Value) -> Value {
        self.merge_at(live, config, &mut Vec::new(), true)
    }

    fn merge_at<'v>(
        &self,
        live: &Value,
        config: &'v Value,
        fields: &mut Vec<&'v str>,
        root: bool,
    ) -> Value {
        let kind = if root {
            Kind::EmbeddedStruct
        } else {
            self.kind(fields, config)
        };
        match (kind, live, config) {
            (
                Kind::Map | Kind::Struct | Kind::EmbeddedStruct,
                Value::Object(l),
                Value::Object(c),
            ) => {
                let mut out = l.clone();
                for (k, v) in c {
                    if v.is_null() {
                        out.shift_remove(k);
                        continue;
                    }
                    fields.push(k);
                    let merged = match l.get(k) {
                        Some(lv) => self.merge_at(lv, v, fields, false),
                        None => v.clone(),
                    };
                    fields.pop();
                    out.insert(k.clone(), merged);
                }
                Value::Object(out)
            }
            (Kind::ListMap { keys, atomic_items }, Value::Array(l), Value::Array(c)) => {
                let mut out = l.clone();
                for item in c {
                    let id = fieldpath::key(item, keys, self.key_default(fields));
                    let pos = out.iter().position(|o| {
                        id.is_some() && fieldpath::key(o, keys, self.key_default(fields)) == id
                    });
                    match pos {
                        Some(i) if !atomic_items => {
                            let merged = self.merge_item(&out[i], item, fields);
                            out[i] = merged;
                        }
                        Some(i) => out[i] = item.clone(),
                        None => out.push(item.clone()),
                    }
                }
                Value::Array(out)
            }
            (Kind::ListSet, Value::Array(l), Value::Array(c)) => {
                let mut out = l.clone();
                for item in c {
                    if !out.contains(item) {
                        out.push(item.clone());
                    }
                }
                Value::Array(out)
            }
            _ => config.clone(),
        }
    }

    fn merge_item<'v>(&self, live: &Value, config: &'v Value, fields: &mut Vec<&'v str>) -> Value {
        let (Value::Object(l), Value::Object(c)) = (live, config) else {
            return config.clone();
        };
        let mut out = l.clone();
        for (k, v) in c {
            fields.push(k);
            let merged = match l.get(k) {
                Some(lv) => self.merge_at(lv, v, fields, false),
                None => v.clone(),
            };
            fields.pop();
            out.insert(k.clone(), merged);
        }
        Value::Object(out)
    }
}

/// Paths kube never tracks (fieldmanager's stripMeta), plus `status` of a namespace written
/// through the main resource (reset by its strategy).
pub(crate) fn strip(set: &mut Set, gvk: &GroupVersionKind, subresource: &str) {
    const META: &[&str] = &[
        "name",
        "namespace",
        "creationTimestamp",
        "selfLink",
        "uid",
        "clusterName",
        "generation",
        "managedFields",
        "resourceVersion",
    ];
    // Compared as `f:` + name without building the element (this runs for every path).
    let is_meta = |e: &Element| {
        e.strip_prefix("f:")
            .is_some_and(|name| META.contains(&name))
    };
    set.retain(|p| {
        let first = p.first().map(String::as_str);
        match (first, p.get(1)) {
            (Some("f:apiVersion" | "f:kind"), _) => false,
            (Some("f:metadata"), None) => false,
            (Some("f:metadata"), Some(second)) => !is_meta(second),
            (Some("f:status"), _) => {
                !(gvk.kind == "Namespace" && gvk.group.is_empty() && subresource.is_empty())
            }
            _ => true,
        }
    });
}

/// Whether `set` holds a path below `p`.
pub(crate) fn has_children(set: &Set, p: &Path) -> bool {
    set.range(p.clone()..)
        .nth(1)
        .is_some_and(|q| q.starts_with(p))
}
