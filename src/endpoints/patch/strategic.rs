//! Applying a strategic merge patch (k8s.io/apimachinery pkg/util/strategicpatch, patch.go:
//! `StrategicMergeMapPatch` with `MergeParallelList` and `IgnoreUnmatchedNulls`). Maps merge
//! recursively, `null` deletes, lists follow the field's patch strategy from [`super::meta`], and
//! the directives kubectl sends are honoured: `$patch: replace|delete` (maps and list elements),
//! `$retainKeys`, `$setElementOrder/<list>` and `$deleteFromPrimitiveList/<list>`.
//! May use: api.

use super::meta::{field_meta, FieldMeta};
use super::PatchError;
use crate::api::GroupVersionKind;
use serde_json::{Map, Value};
use std::cmp::Ordering;

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";

/// Applies a strategic merge patch to `original` for objects of kind `gvk`.
pub(crate) fn apply(
    original: &Value,
    patch: Map<String, Value>,
    gvk: &GroupVersionKind,
) -> Result<Value, PatchError> {
    let original = match original {
        Value::Object(m) => m.clone(),
        _ => Map::new(),
    };
    let merger = Merger { gvk };
    merger
        .merge_map(original, patch, &mut Vec::new())
        .map(Value::Object)
}

struct Merger<'a> {
    gvk: &'a GroupVersionKind,
}

/// Scalars, maps: the element kinds a list may hold (lists of lists are rejected).
#[derive(Clone, Copy, PartialEq, Eq)]
enum ElemKind {
    Map,
    Scalar,
}

fn bad_request(message: impl Into<String>) -> PatchError {
    PatchError::bad_request(message)
}

fn no_merge_key(item: &Value, key: &str) -> PatchError {
    bad_request(format!(
        "map: {item} does not contain declared merge key: {key}"
    ))
}

impl Merger<'_> {
    fn meta(&self, path: &[String], key: &str) -> FieldMeta {
        let mut full: Vec<&str> = path.iter().map(String::as_str).collect();
        full.push(key);
        field_meta(self.gvk, &full)
    }

    /// mergeMap in patch.go.
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<Map<String, Value>, PatchError> {
        if let Some(directive) = patch.get(DIRECTIVE) {
            return match directive.as_str() {
                Some("replace") => {
                    patch.shift_remove(DIRECTIVE);
                    // The replacement may itself carry directives; resolve them against nothing.
                    self.merge_map(Map::new(), patch, path)
                }
                Some("delete") => Ok(Map::new()),
                _ => Err(bad_request(format!(
                    "unknown patch type: {directive} in map: {}",
                    Value::Object(patch.clone())
                ))),
            };
        }
        apply_retain_keys(&mut original, &mut patch)?;
        self.merge_set_element_order(&mut original, &mut patch, path)?;

        for (key, patch_value) in patch {
            let (key, delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
                Some(field) if !field.is_empty() => (field.to_string(), true),
                Some(_) => return Err(bad_request("invalid patch format of primitive list")),
                None => (key, false),
            };
            if delete_list {
                let Value::Array(to_delete) = patch_value else {
                    return Err(bad_request("invalid patch format of primitive list"));
                };
                if let Some(Value::Array(list)) = original.get_mut(&key) {
                    list.retain(|v| !to_delete.contains(v));
                }
                continue;
            }
            if patch_value.is_null() {
                original.shift_remove(&key);
                continue;
            }
            let meta = self.meta(path, &key);
            path.push(key.clone());
            let merged = match (original.shift_remove(&key), patch_value) {
                (Some(Value::Object(o)), Value::Object(p)) => {
                    Value::Object(self.merge_map(o, p, path)?)
                }
                (Some(Value::Array(o)), Value::Array(p)) if meta.merges() => {
                    Value::Array(self.merge_slice(o, p, meta, path)?)
                }
                (None, value) => self.resolve_new(value, meta, path)?,
                (Some(_), value) => self.resolve_new(value, meta, path)?,
            };
            path.pop();
            original.insert(key, merged);
        }
        Ok(original)
    }

    /// A patch value with nothing to merge into: kube stores it as sent and the typed decode
    /// drops the directives; here they are resolved against an empty value instead.
    fn resolve_new(
        &self,
        value: Value,
        meta: FieldMeta,
        path: &mut Vec<String>,
    ) -> Result<Value, PatchError> {
        Ok(match value {
            Value::Object(p) => Value::Object(self.merge_map(Map::new(), p, path)?),
            Value::Array(p) if meta.merges() => {
                Value::Array(self.merge_slice(Vec::new(), p, meta, path)?)
            }
            other => other,
        })
    }

    /// mergeSlice in patch.go, for lists whose patch strategy is `merge`.
    fn merge_slice(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        meta: FieldMeta,
        path: &mut Vec<String>,
    ) -> Result<Vec<Value>, PatchError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let kind = element_kind(&[&original, &patch])?;
        let merge_key = meta.merge_key().unwrap_or("");
        let (server_order, merged, patch) =
            match kind {
                ElemKind::Scalar => {
                    let mut both = original.clone();
                    for v in &patch {
                        if !both.contains(v) {
                            both.push(v.clone());
                        }
                    }
                    (original, both, patch)
                }
                ElemKind::Map => {
                    if merge_key.is_empty() {
                        return Err(bad_request("cannot merge lists without merge key"));
                    }
                    let (original, patch) = merge_special_elements(original, patch, merge_key)?;
                    let mut merged = original.clone();
                    for item in &patch {
                        let key_value = item
                            .get(merge_key)
                            .ok_or_else(|| no_merge_key(item, merge_key))?;
                        let found = merged
                            .iter()
                            .position(|m| m.get(merge_key) == Some(key_value));
                        match (found, item) {
                            (Some(i), Value::Object(p)) => {
                                let Value::Object(o) = std::mem::take(&mut merged[i]) else {
                                    return Err(bad_request("list element is not a map"));
                                };
                                merged[i] = Value::Object(self.merge_map(o, p.clone(), path)?);
                            }
                            (None, Value::Object(p)) => merged.push(Value::Object(
                                self.merge_map(Map::new(), p.clone(), path)?,
                            )),
                            _ => return Err(bad_request("list element is not a map")),
                        }
                    }
                    (original, merged, patch)
                }
            };
        let (in_patch, server_only) = partition(merged, &patch, merge_key, kind);
        normalize_element_order(
            in_patch,
            server_only,
            &patch,
            &server_order,
            merge_key,
            kind,
        )
    }

    /// mergePatchIntoOriginal in patch.go: lists named by `$setElementOrder/<field>` are merged
    /// with their patch list here and ordered as the directive says.
    fn merge_set_element_order(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        path: &mut Vec<String>,
    ) -> Result<(), PatchError> {
        let keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
            .cloned()
            .collect();
        for key in keys {
            let bad = || bad_request("invalid patch format of setElementOrder list");
            let Some(Value::Array(order)) = patch.shift_remove(&key) else {
                return Err(bad());
            };
            let field = key[SET_ELEMENT_ORDER.len()..].to_string();
            if field.is_empty() {
                return Err(bad());
            }
            let original_list = match original.get(&field) {
                None => None,
                Some(Value::Array(l)) => Some(l.clone()),
                Some(_) => return Err(bad_request(format!("field {field} is not a list"))),
            };
            let patch_list = match patch.shift_remove(&field) {
                None => None,
                Some(Value::Array(l)) => Some(l),
                Some(_) => return Err(bad()),
            };
            let meta = self.meta(path, &field);
            let merge_key = meta.merge_key().unwrap_or("");
            if let Some(p) = &patch_list {
                validate_set_order(p, &order, merge_key)?;
            }
            path.push(field.clone());
            let merged = match (&original_list, patch_list.clone()) {
                (Some(o), None) => o.clone(),
                (None, Some(p)) if meta.merges() => self.merge_slice(Vec::new(), p, meta, path)?,
                (None, Some(p)) => p,
                (Some(o), Some(p)) if meta.merges() => {
                    self.merge_slice(o.clone(), p, meta, path)?
                }
                (Some(_), Some(p)) => p,
                (None, None) => {
                    path.pop();
                    continue;
                }
            };
            path.pop();
            if merged.is_empty() {
                original.insert(field, Value::Array(merged));
                continue;
            }
            let kind = element_kind(&[&merged])?;
            let server_order = original_list.unwrap_or_default();
            let (in_patch, server_only) = partition(merged, &order, merge_key, kind);
            let both = normalize_element_order(
                in_patch,
                server_only,
                &order,
                &server_order,
                merge_key,
                kind,
            )?;
            original.insert(field, Value::Array(both));
        }
        Ok(())
    }
}

/// applyRetainKeysDirective: keys of `original` not listed in `$retainKeys` are cleared.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let bad = || bad_request("invalid patch format of retainKeys");
    let Value::Array(retain) = retain else {
        return Err(bad());
    };
    let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
    if keep.len() != retain.len() {
        return Err(bad());
    }
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !keep.contains(&k.as_str()) {
            return Err(bad());
        }
    }
    original.retain(|k, _| keep.contains(&k.as_str()));
    Ok(())
}

/// mergeSliceWithSpecialElements: `{"$patch": "delete", <key>: v}` removes matching entries,
/// `{"$patch": "replace"}` makes the rest of the patch list replace the original.
fn merge_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Some(directive) = item.get(DIRECTIVE) else {
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let value = item
                    .get(merge_key)
                    .ok_or_else(|| no_merge_key(&item, merge_key))?;
                original.retain(|o| o.get(merge_key) != Some(value));
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(bad_request(
                    "merging lists cannot yet be specified in the patch",
                ))
            }
            _ => {
                return Err(bad_request(format!(
                    "unknown patch type: {directive} in map: {item}"
                )))
            }
        }
    }
    if replace {
        Ok((plain, Vec::new()))
    } else {
        Ok((original, plain))
    }
}

/// validatePatchWithSetOrderList: the patch list's items must appear in the order list, in
/// the same relative order (deletions excepted).
fn validate_set_order(patch: &[Value], order: &[Value], merge_key: &str) -> Result<(), PatchError> {
    let items: Vec<&Value> = patch
        .iter()
        .filter(|v| v.get(DIRECTIVE).is_none())
        .collect();
    let (mut pi, mut oi) = (0, 0);
    while pi < items.len() && oi < order.len() {
        if lookup(items[pi], merge_key) == lookup(&order[oi], merge_key) {
            pi += 1;
        }
        oi += 1;
    }
    if pi < items.len() {
        return Err(bad_request(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            Value::Array(patch.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

fn element_kind(lists: &[&Vec<Value>]) -> Result<ElemKind, PatchError> {
    let mut kind = None;
    for v in lists.iter().flat_map(|l| l.iter()) {
        let k = match v {
            Value::Array(_) => return Err(PatchError::invalid("lists of lists are not supported")),
            Value::Object(_) => ElemKind::Map,
            _ => ElemKind::Scalar,
        };
        match kind {
            None => kind = Some(k),
            Some(prev) if prev != k => {
                return Err(bad_request("list element types are not identical"))
            }
            Some(_) => {}
        }
    }
    kind.ok_or_else(|| bad_request("no elements in any of the given slices"))
}

/// The value an item is identified by: its merge key for maps, itself for scalars.
fn lookup<'v>(item: &'v Value, merge_key: &str) -> Option<&'v Value> {
    if merge_key.is_empty() {
        Some(item)
    } else {
        item.get(merge_key)
    }
}

fn index_in(list: &[Value], item: &Value, merge_key: &str, kind: ElemKind) -> Option<usize> {
    let key = |v: &Value| match kind {
        ElemKind::Map => v.get(merge_key).cloned(),
        ElemKind::Scalar => Some(v.clone()),
    };
    let wanted = key(item);
    list.iter().position(|v| key(v) == wanted)
}

/// partitionMapsByPresentInList / partitionPrimitivesByPresentInList.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> (Vec<Value>, Vec<Value>) {
    merged
        .into_iter()
        .partition(|v| index_in(by, v, merge_key, kind).is_some())
}

/// normalizeSliceOrder: a stable sort by position in `order`; items absent from it go first,
/// as Go's insertion sort with that comparator leaves them.
fn normalize_slice_order(
    mut items: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> Result<Vec<Value>, PatchError> {
    let mut to_delete = Vec::new();
    if kind == ElemKind::Map {
        for v in items.iter().chain(order.iter()) {
            if v.get(merge_key).is_none() {
                return Err(no_merge_key(v, merge_key));
            }
        }
        let (keep, del): (Vec<Value>, Vec<Value>) = items
            .into_iter()
            .partition(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"));
        items = keep;
        to_delete = del;
    }
    items.sort_by(|a, b| {
        match (
            index_in(order, a, merge_key, kind),
            index_in(order, b, merge_key, kind),
        ) {
            (Some(x), Some(y)) => x.cmp(&y),
            (None, Some(_)) => Ordering::Less,
            (Some(_), None) => Ordering::Greater,
            (None, None) => Ordering::Equal,
        }
    });
    items.extend(to_delete);
    Ok(items)
}

/// normalizeElementOrder + mergeSortedSlice: patch items keep the patch order, server-only
/// items keep the live order, and the two interleave by their positions in the live list.
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: ElemKind,
) -> Result<Vec<Value>, PatchError> {
    let right = normalize_slice_order(patch, patch_order, merge_key, kind)?;
    let left = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut left, mut right) = (left.into_iter().peekable(), right.into_iter().peekable());
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => matches!(
                (index_in(server_order, l, merge_key, kind), index_in(server_order, r, merge_key, kind)),
                (Some(li), Some(ri)) if li < ri
            ),
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    Ok(out)
}
