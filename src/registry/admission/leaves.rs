//! Chains of field selections bound as variables of their own ("leaves"), so a write binds
//! `object.metadata.name` as one string instead of `object` as nested maps that the CEL
//! interpreter copies at every selection.
//!
//! At compile time every chain rooted at `object`, `oldObject` or `request`
//! (`object.metadata.name`, `has(object.data)`, `size(object.data)`) becomes `@object ?
//! @object.metadata.name : object.metadata.name`: names no CEL expression can spell. At bind
//! time, when every leaf of the variable resolves in the JSON (each field along the chain
//! present in an object; for `size()`, a string, list or map at its end), the flag is true and
//! each leaf is bound to its value (for `has()`, whether its last field is present; for
//! `size()`, the size, so a map read only for its size is never converted); the variable
//! itself is bound only with what the expressions read of it outside leaves. When one does
//! not resolve, the flag is false and the variable is bound as before ([`Projection`]), so the
//! chain runs as written and fails with the interpreter's own error.

use super::projection::{selection, Projection};
use crate::registry::cel::{from_json, visit};
use kube_cel::cel::common::ast::{operators, CallExpr, EntryExpr, Expr, IdedEntryExpr, IdedExpr};
use kube_cel::cel::{Context as CelContext, Value as CelValue};
use serde_json::Value;

/// The variables whose chains become leaves, with their flags.
const VARIABLES: [(&str, &str); 3] = [
    ("object", "@object"),
    ("oldObject", "@oldObject"),
    ("request", "@request"),
];

/// The flag of the variable `name` (None: its chains are not leaves).
fn flag(name: &str) -> Option<&'static str> {
    VARIABLES.iter().find(|(v, _)| *v == name).map(|(_, f)| *f)
}

/// A chain of selections rooted at a variable, bound as its own variable.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Leaf {
    /// The name it is bound as: `@object.metadata.name`, `@has(object.data)`.
    ident: String,
    /// The fields selected, from the variable on.
    path: Vec<String>,
    /// What of the chain's end is bound.
    kind: Kind,
}

/// What a leaf binds of the end of its chain.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    /// Its value.
    Value,
    /// `has(...)`: whether its last field is present.
    Has,
    /// `size(...)` or `(...).size()`: its size (code points of a string, as the `size()`
    /// registered by `crate::registry::cel::register_size` counts).
    Size,
}

impl Leaf {
    /// Its value in `root`; None when a field along the chain is missing or not in an object
    /// (the chain as written then errs, or answers from a value that is not a map).
    fn resolve(&self, root: &Value) -> Option<CelValue> {
        let (last, before) = self.path.split_last()?;
        let mut at = root;
        for field in before {
            at = at.as_object()?.get(field)?;
        }
        let object = at.as_object()?;
        match self.kind {
            Kind::Has => Some(CelValue::Bool(object.contains_key(last))),
            Kind::Value => object.get(last).map(from_json),
            Kind::Size => {
                let size = match object.get(last)? {
                    Value::String(s) => s.chars().count(),
                    Value::Array(a) => a.len(),
                    Value::Object(o) => o.len(),
                    _ => return None,
                };
                Some(CelValue::Int(i64::try_from(size).ok()?))
            }
        }
    }
}

/// The argument of `size(x)` or `x.size()`.
fn size_of(expr: &IdedExpr) -> Option<&IdedExpr> {
    let Expr::Call(c) = &expr.expr else {
        return None;
    };
    if c.func_name != "size" {
        return None;
    }
    match (&c.target, &c.args[..]) {
        (None, [arg]) => Some(arg),
        (Some(arg), []) => Some(arg),
        _ => None,
    }
}

/// The leaf `expr` is, when it is a chain of the variable `name`, or the size of one (the
/// name it would be bound as aside).
fn chain_of(expr: &IdedExpr, name: &str) -> Option<(Vec<String>, Kind)> {
    let (chain, size) = match size_of(expr) {
        Some(arg) => (arg, true),
        None => (expr, false),
    };
    let path = selection(chain, name)?;
    let test = matches!(&chain.expr, Expr::Select(s) if s.test);
    let kind = match (size, test) {
        (false, false) => Kind::Value,
        (false, true) => Kind::Has,
        (true, false) => Kind::Size,
        // The size of a bool: left as written.
        (true, true) => return None,
    };
    Some((path.into_iter().map(str::to_string).collect(), kind))
}

/// The leaf `expr` stands for, when it is a rewritten chain of the variable `name`.
pub(super) fn leaf_of(expr: &IdedExpr, name: &str) -> Option<Leaf> {
    let Expr::Call(call) = &expr.expr else {
        return None;
    };
    let [cond, leaf, chain] = &call.args[..] else {
        return None;
    };
    let (Expr::Ident(cond), Expr::Ident(ident)) = (&cond.expr, &leaf.expr) else {
        return None;
    };
    let is_flag = Some(cond.as_str()) == flag(name);
    if call.func_name != operators::CONDITIONAL || !is_flag {
        return None;
    }
    let (path, kind) = chain_of(chain, name)?;
    Some(Leaf {
        ident: ident.clone(),
        path,
        kind,
    })
}

/// Rewrites every chain of selections rooted at `object`, `oldObject` or `request` in
/// `expr` into `@<variable> ? @<chain> : <chain>` (not inside a comprehension whose own
/// variable has that name).
pub(super) fn rewrite(expr: &mut IdedExpr) {
    let mut next_id = 0;
    visit(expr, &mut |e| next_id = next_id.max(e.id));
    rewrite_in(expr, [true; 3], &mut next_id);
}

fn rewrite_in(e: &mut IdedExpr, active: [bool; 3], next_id: &mut u64) {
    for (i, (name, flag)) in VARIABLES.iter().enumerate() {
        let Some((path, kind)) = chain_of(e, name).filter(|_| active[i]) else {
            continue;
        };
        let chain = format!("{name}.{}", path.join("."));
        let ident = match kind {
            Kind::Value => format!("@{chain}"),
            Kind::Has => format!("@has({chain})"),
            Kind::Size => format!("@size({chain})"),
        };
        let mut node = |expr| {
            *next_id += 1;
            IdedExpr { id: *next_id, expr }
        };
        let cond = node(Expr::Ident((*flag).to_string()));
        let leaf = node(Expr::Ident(ident));
        let chain = std::mem::take(e);
        *e = node(Expr::Call(CallExpr {
            func_name: operators::CONDITIONAL.to_string(),
            target: None,
            args: vec![cond, leaf, chain],
        }));
        return;
    }
    match &mut e.expr {
        Expr::Call(c) => {
            if let Some(t) = &mut c.target {
                rewrite_in(t, active, next_id);
            }
            c.args
                .iter_mut()
                .for_each(|a| rewrite_in(a, active, next_id));
        }
        Expr::Comprehension(c) => {
            rewrite_in(&mut c.iter_range, active, next_id);
            rewrite_in(&mut c.accu_init, active, next_id);
            let mut inner = active;
            for (i, (name, _)) in VARIABLES.iter().enumerate() {
                let shadowed = c.iter_var == *name
                    || c.accu_var == *name
                    || c.iter_var2.as_deref() == Some(*name);
                inner[i] &= !shadowed;
            }
            for e in [&mut c.loop_cond, &mut c.loop_step, &mut c.result] {
                rewrite_in(e, inner, next_id);
            }
        }
        Expr::List(l) => l
            .elements
            .iter_mut()
            .for_each(|e| rewrite_in(e, active, next_id)),
        Expr::Map(m) => rewrite_entries(&mut m.entries, active, next_id),
        Expr::Struct(s) => rewrite_entries(&mut s.entries, active, next_id),
        Expr::Select(s) => rewrite_in(&mut s.operand, active, next_id),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn rewrite_entries(entries: &mut [IdedEntryExpr], active: [bool; 3], next_id: &mut u64) {
    for entry in entries {
        match &mut entry.expr {
            EntryExpr::MapEntry(e) => {
                rewrite_in(&mut e.key, active, next_id);
                rewrite_in(&mut e.value, active, next_id);
            }
            EntryExpr::StructField(f) => rewrite_in(&mut f.value, active, next_id),
        }
    }
}

/// What expressions read of one variable, and how it is bound.
#[derive(Debug, Clone, Default)]
pub(super) struct Reads {
    /// Everything they can observe (bound when a leaf does not resolve).
    parts: Projection,
    /// What they observe other than through leaves (bound beside the leaves).
    rest: Projection,
    /// The leaves, once each.
    leaves: Vec<Leaf>,
}

impl Reads {
    /// What `expr` reads of the variable `name`.
    pub(super) fn of(expr: &IdedExpr, name: &str) -> Reads {
        let mut leaves: Vec<Leaf> = Vec::new();
        visit(expr, &mut |e| {
            if let Some(leaf) = leaf_of(e, name).filter(|l| !leaves.contains(l)) {
                leaves.push(leaf);
            }
        });
        Reads {
            parts: Projection::of(expr, name),
            rest: Projection::outside_leaves(expr, name),
            leaves,
        }
    }

    /// Reads what either reads.
    pub(super) fn union(&mut self, other: &Reads) {
        self.parts.union(&other.parts);
        self.rest.union(&other.rest);
        for leaf in &other.leaves {
            if !self.leaves.contains(leaf) {
                self.leaves.push(leaf.clone());
            }
        }
    }

    /// Everything the expressions can observe.
    pub(super) fn parts(&self) -> &Projection {
        &self.parts
    }

    /// Binds the variable `name` (one of `object`, `oldObject`, `request`) to `value` (None:
    /// null): its leaves when all resolve, else the parts read.
    pub(super) fn bind(&self, ctx: &mut CelContext<'_>, name: &str, value: Option<&Value>) {
        let whole = || value.map_or(CelValue::Null, |v| self.parts.to_cel(v));
        let Some(flag) = flag(name).filter(|_| !self.leaves.is_empty()) else {
            ctx.add_variable_from_value(name, whole());
            return;
        };
        let resolved = value.and_then(|v| {
            let leaves: Option<Vec<CelValue>> = self.leaves.iter().map(|l| l.resolve(v)).collect();
            Some((v, leaves?))
        });
        let Some((value, values)) = resolved else {
            ctx.add_variable_from_value(flag, false);
            ctx.add_variable_from_value(name, whole());
            return;
        };
        ctx.add_variable_from_value(flag, true);
        for (leaf, v) in self.leaves.iter().zip(values) {
            ctx.add_variable_from_value(leaf.ident.as_str(), v);
        }
        if !self.rest.is_empty() {
            ctx.add_variable_from_value(name, self.rest.to_cel(value));
        }
    }
}

#[cfg(test)]
mod tests;
