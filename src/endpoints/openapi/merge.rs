//! Merging Swagger 2.0 documents, as kube-openapi's pkg/aggregator does for kube-aggregator's
//! /openapi/v2. Each remote APIService's document is first cut down to the paths of its
//! group/version (`FilterSpecByPathsWithoutSideEffects`: definitions that only the dropped
//! paths reached go; definitions that no path reached stay). Then it is merged into this
//! server's document (`MergeSpecsIgnorePathConflictRenamingDefinitionsAndParameters`): a path
//! the document has already keeps its own operations; a definition or parameter whose name is
//! taken by a different body is renamed `<name>_v2`, `<name>_v3`, ... (reusing a renamed copy
//! with the same body) and every reference to it rewritten; definitions equal but for
//! `x-kubernetes-group-version-kind` are kept once, with their GVK lists merged.
//!
//! The documents are plain JSON, so a reference is any `$ref` string, wherever it sits.
//! Where upstream gives up on the whole merge (a path kept by prefix that is also in the
//! destination, a GVK list that is not a list of objects), this merge skips only that path or
//! that GVK list: one odd backend must not cost the others their place in the document.
//! May use: nothing internal.

use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet};

const DEFINITIONS: &str = "definitions";
const PARAMETERS: &str = "parameters";
const DEFINITION_PREFIX: &str = "#/definitions/";
const PARAMETER_PREFIX: &str = "#/parameters/";
const GVK_KEY: &str = "x-kubernetes-group-version-kind";

/// `local` with each remote document merged in, in order; each remote comes with the path
/// prefix its APIService owns (`/apis/<group>/<version>/`), and only those paths are taken.
pub(crate) fn merge_remotes<'a>(
    local: Value,
    remotes: impl IntoIterator<Item = (&'a str, &'a Value)>,
) -> Value {
    let mut merged = local;
    if let Value::Object(dest) = &mut merged {
        for (prefix, spec) in remotes {
            let filtered = filter_paths(spec, |path| path.starts_with(prefix));
            merge(dest, filtered);
        }
    }
    merged
}

/// `spec` with only the paths `keep` accepts, and without the definitions that only the
/// dropped paths used (kube-openapi's FilterSpecByPathsWithoutSideEffects). A document
/// without paths is returned whole.
pub(super) fn filter_paths(spec: &Value, keep: impl Fn(&str) -> bool) -> Value {
    let (Some(doc), Some(paths)) = (
        spec.as_object(),
        spec.get("paths").and_then(Value::as_object),
    ) else {
        return spec.clone();
    };
    let kept: Map<String, Value> = paths
        .iter()
        .filter(|(path, _)| keep(path))
        .map(|(path, item)| (path.clone(), item.clone()))
        .collect();
    let used_before = used_definitions(spec, paths);
    let used_after = used_definitions(spec, &kept);
    let mut out = Map::new();
    let mut kept = Some(kept);
    for (key, value) in doc {
        let value = match (key.as_str(), value) {
            ("paths", _) => Value::Object(kept.take().unwrap_or_default()),
            (DEFINITIONS, Value::Object(definitions)) => Value::Object(
                definitions
                    .iter()
                    .filter(|(name, _)| used_after.contains(*name) || !used_before.contains(*name))
                    .map(|(name, schema)| (name.clone(), schema.clone()))
                    .collect(),
            ),
            _ => value.clone(),
        };
        out.insert(key.clone(), value);
    }
    Value::Object(out)
}

/// The names of the definitions `paths` reach through the parameters and definitions of
/// `doc` (kube-openapi's usedDefinitionForSpec).
fn used_definitions<'a>(doc: &'a Value, paths: &'a Map<String, Value>) -> BTreeSet<String> {
    let section = |name: &str| doc.get(name).and_then(Value::as_object);
    let (definitions, parameters) = (section(DEFINITIONS), section(PARAMETERS));
    let mut used = BTreeSet::new();
    let mut seen_parameters = BTreeSet::new();
    let mut pending: Vec<&Value> = paths.values().collect();
    while let Some(value) = pending.pop() {
        each_ref(value, &mut |reference| {
            if let Some(name) = reference.strip_prefix(DEFINITION_PREFIX) {
                if used.insert(name.to_string()) {
                    pending.extend(definitions.and_then(|d| d.get(name)));
                }
            } else if let Some(name) = reference.strip_prefix(PARAMETER_PREFIX) {
                if seen_parameters.insert(name.to_string()) {
                    pending.extend(parameters.and_then(|p| p.get(name)));
                }
            }
        });
    }
    used
}

/// Calls `f` with every `$ref` string in `value`.
fn each_ref<'a>(value: &'a Value, f: &mut impl FnMut(&'a str)) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                match (key.as_str(), v) {
                    ("$ref", Value::String(reference)) => f(reference),
                    _ => each_ref(v, f),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| each_ref(v, f)),
        _ => {}
    }
}

/// Rewrites every `$ref` to `<prefix><old>` into `<prefix><new>` for each rename in `renames`.
fn rewrite_refs(value: &mut Value, prefix: &str, renames: &BTreeMap<String, String>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                match (key.as_str(), v) {
                    ("$ref", Value::String(reference)) => {
                        let renamed = reference
                            .strip_prefix(prefix)
                            .and_then(|name| renames.get(name));
                        if let Some(new) = renamed {
                            *reference = format!("{prefix}{new}");
                        }
                    }
                    (_, v) => rewrite_refs(v, prefix, renames),
                }
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| rewrite_refs(v, prefix, renames)),
        _ => {}
    }
}

/// Merges `source` into `dest` (kube-openapi's mergeSpecs with renaming of definition and
/// parameter conflicts, ignoring path conflicts). A source without paths adds nothing.
pub(super) fn merge(dest: &mut Map<String, Value>, source: Value) {
    let Some(source_paths) = source.get("paths").and_then(Value::as_object) else {
        return;
    };
    let dest_paths = dest.get("paths").and_then(Value::as_object);
    let taken = |path: &str| dest_paths.is_some_and(|d| d.contains_key(path));
    if source_paths.keys().all(|path| taken(path)) {
        // Nothing to merge: every path is there already.
        return;
    }
    let mut source = if source_paths.keys().any(|path| taken(path)) {
        filter_paths(&source, |path| !taken(path))
    } else {
        source
    };
    let Some(src) = source.as_object_mut() else {
        return;
    };

    let renames = conflict_renames(dest.get(DEFINITIONS), src.get(DEFINITIONS), same_modulo_gvk);
    rename(src, DEFINITIONS, DEFINITION_PREFIX, &renames);
    let renames = conflict_renames(dest.get(PARAMETERS), src.get(PARAMETERS), |a, b| a == b);
    rename(src, PARAMETERS, PARAMETER_PREFIX, &renames);

    if let Some(Value::Object(definitions)) = src.remove(DEFINITIONS) {
        if let Value::Object(into) = section(dest, DEFINITIONS) {
            for (name, schema) in definitions {
                match into.get_mut(&name) {
                    Some(existing) => merge_gvks(existing, &schema),
                    None => {
                        into.insert(name, schema);
                    }
                }
            }
        }
    }
    for key in [PARAMETERS, "paths"] {
        if let Some(Value::Object(entries)) = src.remove(key) {
            if let Value::Object(into) = section(dest, key) {
                for (name, value) in entries {
                    into.entry(name).or_insert(value);
                }
            }
        }
    }
}

/// The object `dest[key]`, made empty when absent.
fn section<'a>(dest: &'a mut Map<String, Value>, key: &str) -> &'a mut Value {
    dest.entry(key).or_insert_with(|| Value::Object(Map::new()))
}

/// The new names of the entries of `source` whose names `dest` uses for a different body:
/// `<name>_v<i>` from i = 2, the first one `dest` holds with the same body, else the first
/// free in both documents.
fn conflict_renames(
    dest: Option<&Value>,
    source: Option<&Value>,
    same: fn(&Value, &Value) -> bool,
) -> BTreeMap<String, String> {
    let mut renames = BTreeMap::new();
    let (Some(dest), Some(source)) = (
        dest.and_then(Value::as_object),
        source.and_then(Value::as_object),
    ) else {
        return renames;
    };
    let mut used: BTreeSet<String> = dest.keys().cloned().collect();
    'entries: for (name, body) in source {
        match dest.get(name) {
            Some(existing) if !same(existing, body) => {}
            _ => continue,
        }
        let mut i = 1;
        let mut candidate = loop {
            i += 1;
            let candidate = format!("{name}_v{i}");
            match dest.get(&candidate) {
                Some(existing) if same(existing, body) => {
                    renames.insert(name.clone(), candidate);
                    continue 'entries;
                }
                Some(_) => {}
                None => break candidate,
            }
        };
        while used.contains(&candidate) || source.contains_key(&candidate) {
            i += 1;
            candidate = format!("{name}_v{i}");
        }
        used.insert(candidate.clone());
        renames.insert(name.clone(), candidate);
    }
    renames
}

/// Renames the entries of `doc[key]` and the references to them.
fn rename(
    doc: &mut Map<String, Value>,
    key: &str,
    prefix: &str,
    renames: &BTreeMap<String, String>,
) {
    if renames.is_empty() {
        return;
    }
    for value in doc.values_mut() {
        rewrite_refs(value, prefix, renames);
    }
    if let Some(Value::Object(entries)) = doc.get_mut(key) {
        *entries = std::mem::take(entries)
            .into_iter()
            .map(|(name, body)| match renames.get(&name) {
                Some(new) => (new.clone(), body),
                None => (name, body),
            })
            .collect();
    }
}

/// Whether two schemas are equal but for their `x-kubernetes-group-version-kind`
/// (kube-openapi's deepEqualDefinitionsModuloGVKs).
fn same_modulo_gvk(a: &Value, b: &Value) -> bool {
    let (Some(a), Some(b)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    let len = |m: &Map<String, Value>| m.len() - usize::from(m.contains_key(GVK_KEY));
    len(a) == len(b)
        && a.iter()
            .filter(|(key, _)| *key != GVK_KEY)
            .all(|(key, value)| b.get(key) == Some(value))
}

/// Adds the GVKs of `other` that `existing` lacks to its `x-kubernetes-group-version-kind`,
/// sorted by `<group>/<version>.<kind>` when any was added (kube-openapi's mergedGVKs). A list
/// that is not a list of objects is left as it is.
fn merge_gvks(existing: &mut Value, other: &Value) {
    let (Some(mine), Some(theirs)) = (existing.as_object_mut(), other.get(GVK_KEY)) else {
        return;
    };
    let Some(current) = mine.get_mut(GVK_KEY) else {
        mine.insert(GVK_KEY.into(), theirs.clone());
        return;
    };
    let (Value::Array(list), Value::Array(additions)) = (current, theirs) else {
        return;
    };
    let key = |gvk: &Value| -> Option<String> {
        let gvk = gvk.as_object()?;
        let field = |k: &str| gvk.get(k).and_then(Value::as_str).unwrap_or_default();
        Some(format!(
            "{}/{}.{}",
            field("group"),
            field("version"),
            field("kind")
        ))
    };
    let Some(mut keyed) = list
        .iter()
        .map(|gvk| Some((key(gvk)?, gvk.clone())))
        .collect::<Option<Vec<(String, Value)>>>()
    else {
        return;
    };
    let mut seen: BTreeSet<String> = keyed.iter().map(|(k, _)| k.clone()).collect();
    let mut changed = false;
    for gvk in additions {
        let Some(k) = key(gvk) else {
            return;
        };
        if seen.insert(k.clone()) {
            keyed.push((k, gvk.clone()));
            changed = true;
        }
    }
    if changed {
        keyed.sort_by(|(a, _), (b, _)| a.cmp(b));
        *list = keyed.into_iter().map(|(_, gvk)| gvk).collect();
    }
}

#[cfg(test)]
#[path = "merge_tests.rs"]
mod tests;
