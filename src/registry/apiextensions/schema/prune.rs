//! Pruning (pkg/apiserver/schema/pruning): fields the structural schema does not specify are
//! dropped, except under `x-kubernetes-preserve-unknown-fields` (which still prunes inside the
//! properties and additionalProperties it specifies) and the apiVersion, kind and metadata of
//! embedded resources and of the root. The dropped paths are what fieldValidation Strict
//! rejects and Warn reports (`unknown field "spec.x"`), sorted as upstream sorts them.
//!
//! PruneNonNullableNullsWithoutDefaults (pkg/apiserver/schema/defaulting/prunenulls.go) can run
//! in the same walk: a null where the schema is neither nullable nor defaulted is dropped.
//! May use: nothing internal.

use super::compile::Node;
use super::path::{Path, Seg};
use serde_json::Value;

/// TypeMeta and ObjectMeta: never pruned in an embedded resource or at the root.
pub(super) fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

/// A null that PruneNonNullableNullsWithoutDefaults drops.
fn dropped_null(v: &Value, s: Option<&Node>) -> bool {
    v.is_null() && s.is_some_and(|s| !s.nullable && s.default.is_none())
}

/// One pruning walk.
pub(super) struct Pruner {
    /// Also drop non-nullable nulls without defaults.
    pub(super) nulls: bool,
    /// Record the pruned paths.
    pub(super) track: bool,
    /// The pruned paths (unsorted).
    pub(super) unknown: Vec<String>,
}

impl Pruner {
    /// Prunes `x` against `node`: `skip` when reached under preserve-unknown-fields through
    /// items (skipPrune), `embedded` when its meta fields are kept (the root, or an embedded
    /// resource).
    pub(super) fn run(&mut self, x: &mut Value, node: Option<&Node>, skip: bool, embedded: bool) {
        self.prune(x, node, skip, embedded, &Path::ROOT);
    }

    fn record(&mut self, path: &Path<'_>, k: &str) {
        if self.track {
            self.unknown.push(path.pruning_key(k));
        }
    }

    fn prune(
        &mut self,
        x: &mut Value,
        s: Option<&Node>,
        skip: bool,
        embedded: bool,
        path: &Path<'_>,
    ) {
        let skip = skip || s.is_some_and(|s| s.preserve_unknown);
        match x {
            Value::Object(m) => {
                let Some(s) = s else {
                    if skip {
                        // skipPrune of a nil schema does nothing.
                        return;
                    }
                    if self.track {
                        for k in m.keys() {
                            self.unknown.push(path.pruning_key(k));
                        }
                    }
                    m.clear();
                    return;
                };
                m.retain(|k, v| {
                    if embedded && is_meta_field(k) {
                        if self.nulls {
                            let schema = s.field_schema(k);
                            if dropped_null(v, schema) {
                                return false;
                            }
                            prune_nulls(v, schema);
                        }
                        return true;
                    }
                    if let Some(prop) = s.property(k) {
                        if self.nulls && dropped_null(v, Some(prop)) {
                            return false;
                        }
                        self.prune(
                            v,
                            Some(prop),
                            false,
                            prop.embedded,
                            &path.child(Seg::Prop(k)),
                        );
                        return true;
                    }
                    if let Some(a) = s.additional.as_deref() {
                        let schema = a.schema.as_ref();
                        if self.nulls && dropped_null(v, schema) {
                            return false;
                        }
                        let embedded = schema.is_some_and(|x| x.embedded);
                        self.prune(v, schema, false, embedded, &path.child(Seg::Key(k)));
                        return true;
                    }
                    if skip {
                        return true;
                    }
                    if !is_meta_field(k) || !path.is_root() {
                        self.record(path, k);
                    }
                    false
                });
            }
            Value::Array(items) => {
                let item = s.and_then(|s| s.items.as_deref());
                if skip && item.is_none() {
                    return;
                }
                let embedded = item.is_some_and(|i| i.embedded);
                for (i, v) in items.iter_mut().enumerate() {
                    self.prune(v, item, skip, embedded, &path.child(Seg::Index(i)));
                }
            }
            _ => {}
        }
    }
}

/// PruneNonNullableNullsWithoutDefaults on its own.
pub(super) fn prune_nulls(x: &mut Value, s: Option<&Node>) {
    match x {
        Value::Object(m) => m.retain(|k, v| {
            let schema = s.and_then(|s| s.field_schema(k));
            if dropped_null(v, schema) {
                return false;
            }
            prune_nulls(v, schema);
            true
        }),
        Value::Array(items) => {
            let item = s.and_then(|s| s.items.as_deref());
            for v in items {
                prune_nulls(v, item);
            }
        }
        _ => {}
    }
}
