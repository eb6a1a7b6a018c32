//! Which parts of a variable (`object`, `oldObject`) a policy's expressions can observe, so a
//! write converts only those into CEL values: with `object.metadata.name` and `object.data`
//! the only uses, `{"metadata": {"name": ...}, "data": ...}` is all an expression could ever
//! tell apart, and managedFields and the rest are never converted.
//!
//! Read off the parsed expressions: a chain of field selections rooted at the variable
//! (`object.a.b`, `has(object.a.b)`) keeps the subtree at its end; the variable used any other
//! way (compared whole, passed to a function, iterated, or shadowed by a comprehension's
//! variable) keeps everything. Selecting a field of a map is a key lookup, so a projection that
//! keeps every selected path's subtree answers every expression as the whole value does.

use crate::registry::cel::from_json;
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedEntryExpr, IdedExpr};
use kube_cel::cel::objects::Key;
use kube_cel::cel::Value as CelValue;
use serde_json::Value;
use std::collections::BTreeMap;

/// The parts of a variable that are kept.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Projection {
    /// Everything under this node.
    all: bool,
    /// Only these fields (each with its own projection).
    fields: BTreeMap<String, Projection>,
}

impl Projection {
    /// Everything.
    pub(super) fn all() -> Projection {
        Projection {
            all: true,
            fields: BTreeMap::new(),
        }
    }

    /// What `expr` observes of the variable `name` (nothing when it does not use it).
    pub(super) fn of(expr: &IdedExpr, name: &str) -> Projection {
        let mut p = Projection::default();
        p.visit(expr, name, false);
        p
    }

    /// What `expr` observes of `name` other than through its leaves (see [`super::leaves`]):
    /// what must be bound beside them.
    pub(super) fn outside_leaves(expr: &IdedExpr, name: &str) -> Projection {
        let mut p = Projection::default();
        p.visit(expr, name, true);
        p
    }

    /// Whether nothing is kept.
    pub(super) fn is_empty(&self) -> bool {
        !self.all && self.fields.is_empty()
    }

    /// Keeps what either keeps.
    pub(super) fn union(&mut self, other: &Projection) {
        if self.all {
            return;
        }
        if other.all {
            *self = Projection::all();
            return;
        }
        for (field, p) in &other.fields {
            self.fields.entry(field.clone()).or_default().union(p);
        }
    }

    fn keep(&mut self, path: &[&str]) {
        let mut node = self;
        for field in path {
            if node.all {
                return;
            }
            node = node.fields.entry((*field).to_string()).or_default();
        }
        *node = Projection::all();
    }

    fn visit(&mut self, expr: &IdedExpr, name: &str, skip_leaves: bool) {
        if self.all || (skip_leaves && super::leaves::leaf_of(expr, name).is_some()) {
            return;
        }
        if let Some(path) = selection(expr, name) {
            self.keep(&path);
            return;
        }
        match &expr.expr {
            Expr::Ident(id) if id == name => *self = Projection::all(),
            Expr::Select(s) => self.visit(&s.operand, name, skip_leaves),
            Expr::Call(c) => {
                if let Some(t) = &c.target {
                    self.visit(t, name, skip_leaves);
                }
                for a in &c.args {
                    self.visit(a, name, skip_leaves);
                }
            }
            Expr::Comprehension(c) => {
                let shadowed = c.iter_var == name
                    || c.accu_var == name
                    || c.iter_var2.as_deref() == Some(name);
                if shadowed {
                    *self = Projection::all();
                    return;
                }
                for e in [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ] {
                    self.visit(e, name, skip_leaves);
                }
            }
            Expr::List(l) => {
                for e in &l.elements {
                    self.visit(e, name, skip_leaves);
                }
            }
            Expr::Map(m) => self.visit_entries(&m.entries, name, skip_leaves),
            Expr::Struct(s) => self.visit_entries(&s.entries, name, skip_leaves),
            Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
        }
    }

    fn visit_entries(&mut self, entries: &[IdedEntryExpr], name: &str, skip_leaves: bool) {
        for entry in entries {
            match &entry.expr {
                EntryExpr::MapEntry(e) => {
                    self.visit(&e.key, name, skip_leaves);
                    self.visit(&e.value, name, skip_leaves);
                }
                EntryExpr::StructField(f) => self.visit(&f.value, name, skip_leaves),
            }
        }
    }

    /// What is kept under the top-level field `field` (None: nothing).
    pub(super) fn field(&self, field: &str) -> Option<&Projection> {
        /// Everything, for the fields of a projection that keeps everything.
        static ALL: Projection = Projection {
            all: true,
            fields: BTreeMap::new(),
        };
        if self.all {
            Some(&ALL)
        } else {
            self.fields.get(field)
        }
    }

    /// Whether anything under the top-level field `field` is kept.
    pub(super) fn keeps(&self, field: &str) -> bool {
        self.all || self.fields.contains_key(field)
    }

    /// The kept parts of `value` as a CEL value, converted straight from the JSON (no
    /// projected copy of it is made first).
    pub(super) fn to_cel(&self, value: &Value) -> CelValue {
        match value {
            Value::Object(map) if !self.all => CelValue::Map(kube_cel::cel::objects::Map {
                map: std::sync::Arc::new(
                    self.fields
                        .iter()
                        .filter_map(|(field, p)| {
                            Some((Key::String(field.clone().into()), p.to_cel(map.get(field)?)))
                        })
                        .collect(),
                ),
            }),
            // Selecting a field of anything else fails the same way on the whole value.
            other => from_json(other),
        }
    }

    /// The kept parts of `value` (`value` itself when everything is kept).
    #[cfg(test)]
    fn apply(&self, value: &Value) -> Value {
        if self.all {
            return value.clone();
        }
        match value {
            Value::Object(map) => {
                let kept: serde_json::Map<String, Value> = self
                    .fields
                    .iter()
                    .filter_map(|(field, p)| Some((field.clone(), p.apply(map.get(field)?))))
                    .collect();
                Value::Object(kept)
            }
            // Selecting a field of anything else fails the same way on the whole value.
            other => other.clone(),
        }
    }
}

/// The fields of a chain of selections rooted at the variable `name`
/// (`object.metadata.name` → `["metadata", "name"]`), None for anything else.
pub(super) fn selection<'e>(expr: &'e IdedExpr, name: &str) -> Option<Vec<&'e str>> {
    let mut path = Vec::new();
    let mut cur = expr;
    loop {
        match &cur.expr {
            Expr::Select(s) => {
                path.push(s.field.as_str());
                cur = &s.operand;
            }
            Expr::Ident(id) if id == name && !path.is_empty() => {
                path.reverse();
                return Some(path);
            }
            _ => return None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_cel::cel::Program;
    use serde_json::json;

    fn projection(exprs: &[&str]) -> Projection {
        let mut p = Projection::default();
        for e in exprs {
            let program = Program::compile(e).unwrap();
            p.union(&Projection::of(program.expression(), "object"));
        }
        // What expressions see is the projected JSON, converted.
        assert_eq!(
            p.to_cel(&object()),
            from_json(&p.apply(&object())),
            "{exprs:?}"
        );
        p
    }

    fn object() -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": "a", "labels": {"team": "x"},
                            "managedFields": [{"manager": "kubectl"}]},
               "data": {"k": "v"}})
    }

    #[test]
    fn selections_keep_only_their_subtrees() {
        let p = projection(&[
            "object.metadata.name.size() < 64",
            "!has(object.data) || size(object.data) < 100",
            "request.userInfo.username != 'nobody'",
        ]);
        assert_eq!(
            p.apply(&object()),
            json!({"metadata": {"name": "a"}, "data": {"k": "v"}})
        );
        // Index and method calls end the chain: the subtree before them is kept.
        let p = projection(&["object.metadata.labels['team'] == 'x'"]);
        assert_eq!(
            p.apply(&object()),
            json!({"metadata": {"labels": {"team": "x"}}})
        );
        // A field the object lacks stays absent, so has() answers the same.
        let p = projection(&["has(object.spec.replicas)"]);
        assert_eq!(p.apply(&object()), json!({}));
    }

    #[test]
    fn the_variable_used_whole_or_shadowed_keeps_everything() {
        let metadata = json!({"metadata": object()["metadata"].clone()});
        for (e, kept) in [
            ("object == oldObject", object()),
            ("size(object) > 0", object()),
            (
                "object.metadata.name == 'a' && [object].size() == 1",
                object(),
            ),
            (
                "[1, 2].all(object, object > 0) && object.data.k == 'v'",
                object(),
            ),
            // `metadata` is iterated: it is kept whole, the rest is not.
            ("object.metadata.all(k, k != 'x')", metadata),
        ] {
            assert_eq!(projection(&[e]).apply(&object()), kept, "{e}");
        }
        // Another variable's use keeps nothing of this one.
        assert_eq!(
            projection(&["oldObject.data.k == 'v'"]).apply(&object()),
            json!({})
        );
    }
}
