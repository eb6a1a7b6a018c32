//! Static cost estimation of CEL expressions, as cel-go's checker/cost.go estimates them with
//! Kubernetes' size estimator and library costs (apiextensions-apiserver
//! pkg/apiserver/schema/cel/compilation.go `sizeEstimator`, k8s.io/apiserver
//! pkg/cel/library/cost.go): each node costs by what it does (1 per identifier, select and
//! call, a string traversal 0.1 per byte, a regex 0.25 per pattern byte...), a comprehension
//! its step times the most elements its range can hold, and the sizes come from the schema
//! (`cel::decl`): `maxLength`, `maxItems` and `maxProperties` where set, otherwise how many would
//! fit in the largest request. Only the estimate's maximum is used by callers, as upstream.
//!
//! Where this differs from upstream: types come from a light inference (`cel::types`) instead of
//! cel-go's checker, so an expression cel-go would refuse as mistyped is still estimated.

mod builtins;
mod library;

use super::decl::{Decl, Kind};
use super::types::{Ty, Typer};
use builtins::{overloads, Overload};
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use std::collections::HashMap;

/// StringTraversalCostFactor.
const STRING_TRAVERSAL: f64 = 0.1;
/// RegexStringLengthCostFactor.
const REGEX_LENGTH: f64 = 0.25;
/// The accumulator of cel-go's macros (parser.AccumulatorName) and its hidden variant.
const ACCUMULATORS: [&str; 2] = ["@result", "__result__"];
/// MaxNameFormatRegexSize, for `format.<name>().validate()`.
const MAX_NAME_FORMAT_REGEX_SIZE: f64 = 128.0;
/// MaxFormatSize.
const MAX_FORMAT_SIZE: u64 = 64;

/// A range of sizes or costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Estimate {
    pub(crate) min: u64,
    pub(crate) max: u64,
}

const UNKNOWN: Estimate = Estimate {
    min: 0,
    max: u64::MAX,
};

fn fixed(v: u64) -> Estimate {
    Estimate { min: v, max: v }
}

fn times_factor(x: u64, y: f64) -> u64 {
    let xf = x as f64;
    if xf > 0.0 && y > 0.0 && xf > u64::MAX as f64 / y {
        return u64::MAX;
    }
    let c = (xf * y).ceil();
    if c >= 18_446_744_073_709_551_616.0 {
        u64::MAX
    } else {
        c as u64
    }
}

impl Estimate {
    fn add(self, o: Estimate) -> Estimate {
        Estimate {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }

    fn mul(self, o: Estimate) -> Estimate {
        Estimate {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }

    fn factor(self, y: f64) -> Estimate {
        Estimate {
            min: times_factor(self.min, y),
            max: times_factor(self.max, y),
        }
    }

    fn union(self, o: Estimate) -> Estimate {
        Estimate {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

/// The sizes of a list's or map's entries, when an expression builds it.
#[derive(Debug, Clone, Copy)]
struct Entries {
    list: bool,
    key: Estimate,
    val: Estimate,
}

fn union_entries(a: Option<Entries>, b: Option<Entries>) -> Option<Entries> {
    let (a, b) = (a?, b?);
    Some(Entries {
        list: a.list,
        key: a.key.union(b.key),
        val: a.val.union(b.val),
    })
}

#[derive(Clone)]
struct Local {
    path: Vec<String>,
    size: Option<Estimate>,
    entries: Option<Entries>,
}

/// An operand as a function's estimate sees it (cel-go's AstNode).
struct Node<'e, 'd> {
    path: Option<Vec<String>>,
    ty: Ty<'d>,
    expr: Option<&'e IdedExpr>,
    size: Option<Estimate>,
}

/// The estimated cost of `expr` with `self` and `oldSelf` of declared type `root`.
pub(crate) fn estimate(expr: &IdedExpr, root: &Decl) -> Estimate {
    let vars = ["self", "oldSelf"]
        .iter()
        .map(|v| (v.to_string(), Ty::of(root)))
        .collect();
    let mut typer = Typer::new(vars);
    typer.infer(expr);
    let mut c = Coster {
        root,
        types: typer.types,
        paths: HashMap::new(),
        locals: HashMap::new(),
        sizes: HashMap::new(),
        entries: HashMap::new(),
    };
    c.cost(expr)
}

struct Coster<'d> {
    root: &'d Decl,
    types: HashMap<u64, Ty<'d>>,
    paths: HashMap<u64, Vec<String>>,
    locals: HashMap<String, Vec<Local>>,
    sizes: HashMap<u64, Estimate>,
    entries: HashMap<u64, Entries>,
}

impl<'d> Coster<'d> {
    fn ty(&self, e: &IdedExpr) -> Ty<'d> {
        self.types.get(&e.id).cloned().unwrap_or(Ty::Dyn)
    }

    fn local(&self, name: &str) -> Option<&Local> {
        self.locals.get(name).and_then(|s| s.last())
    }

    fn push(&mut self, name: &str, local: Local) {
        self.locals.entry(name.to_string()).or_default().push(local);
    }

    fn pop(&mut self, name: &str) {
        if let Some(s) = self.locals.get_mut(name) {
            s.pop();
        }
    }

    fn path(&self, e: &IdedExpr) -> Vec<String> {
        if let Expr::Ident(name) = &e.expr {
            if let Some(v) = self.local(name) {
                return v.path.clone();
            }
        }
        self.paths.get(&e.id).cloned().unwrap_or_default()
    }

    /// The schema's bound of the value at `path` (its first element, the variable, is skipped).
    fn estimate_size(&self, path: &[String]) -> Option<Estimate> {
        if path.is_empty() {
            return None;
        }
        let key = Decl::map_key();
        let mut node = self.root;
        for name in &path[1..] {
            node = match (name.as_str(), &node.kind) {
                ("@items" | "@values", Kind::List(e) | Kind::Map(e)) => e,
                ("@keys", Kind::Map(_)) => &key,
                (_, Kind::Object(fields)) => fields.get(name)?,
                _ => return None,
            };
        }
        Some(Estimate {
            min: 0,
            max: node.max_elements.max(0) as u64,
        })
    }

    fn size(&mut self, e: &IdedExpr) -> Option<Estimate> {
        if let Some(s) = self.sizes.get(&e.id) {
            return Some(*s);
        }
        if let Some(s) = expr_size(e) {
            return Some(s);
        }
        if let Some(s) = self.estimate_size(&self.path(e)) {
            self.sizes.insert(e.id, s);
            return Some(s);
        }
        if self.ty(e).is_scalar() {
            return Some(fixed(1));
        }
        if let Expr::Ident(name) = &e.expr {
            if let Some(v) = self.local(name) {
                return v.size;
            }
        }
        None
    }

    fn size_or_unknown(&mut self, e: &IdedExpr) -> Estimate {
        self.size(e).unwrap_or(UNKNOWN)
    }

    fn entry_sizes(&self, e: &IdedExpr) -> Option<Entries> {
        if let Some(s) = self.entries.get(&e.id) {
            return Some(*s);
        }
        if let Expr::Ident(name) = &e.expr {
            return self.local(name).and_then(|v| v.entries);
        }
        None
    }

    fn set_size(&mut self, e: &IdedExpr, s: Option<Estimate>) {
        if let Some(s) = s {
            self.sizes.insert(e.id, s);
        }
    }

    fn set_entries(&mut self, e: &IdedExpr, s: Option<Entries>) {
        if let Some(s) = s {
            self.entries.insert(e.id, s);
        }
    }

    fn node<'e>(&mut self, e: &'e IdedExpr) -> Node<'e, 'd> {
        let path = self.path(e);
        let path = match path.first() {
            Some(first) if ACCUMULATORS.contains(&first.as_str()) => None,
            _ if path.is_empty() => None,
            _ => Some(path),
        };
        Node {
            path,
            ty: self.ty(e),
            expr: Some(e),
            size: self.size(e),
        }
    }

    fn cost(&mut self, e: &IdedExpr) -> Estimate {
        match &e.expr {
            Expr::Literal(_) | Expr::Unspecified => fixed(0),
            Expr::Ident(name) => {
                let path = match self.local(name) {
                    Some(v) => v.path.clone(),
                    None => vec![name.clone()],
                };
                self.paths.insert(e.id, path);
                fixed(1)
            }
            Expr::Select(s) => {
                if s.test {
                    // Kubernetes turns off the cost of presence tests (PresenceTestHasCost).
                    return self.cost(&s.operand);
                }
                let mut sum = self.cost(&s.operand);
                if self.ty(&s.operand).selects_field() {
                    sum = sum.add(fixed(1));
                }
                let mut path = self.path(&s.operand);
                path.push(s.field.clone());
                self.paths.insert(e.id, path);
                sum
            }
            Expr::Call(_) => self.cost_call(e),
            Expr::List(l) => {
                let mut sum = fixed(0);
                let mut item = Estimate {
                    min: if l.elements.is_empty() { 0 } else { u64::MAX },
                    max: 0,
                };
                for x in &l.elements {
                    sum = sum.add(self.cost(x));
                    item = item.union(self.size_or_unknown(x));
                }
                self.entries.insert(
                    e.id,
                    Entries {
                        list: true,
                        key: fixed(1),
                        val: item,
                    },
                );
                sum.add(fixed(10))
            }
            Expr::Map(m) => {
                let mut sum = fixed(0);
                let empty = if m.entries.is_empty() { 0 } else { u64::MAX };
                let mut key = Estimate { min: empty, max: 0 };
                let mut val = key;
                for entry in &m.entries {
                    if let EntryExpr::MapEntry(me) = &entry.expr {
                        sum = sum.add(self.cost(&me.key)).add(self.cost(&me.value));
                        key = key.union(self.size_or_unknown(&me.key));
                        val = val.union(self.size_or_unknown(&me.value));
                    }
                }
                self.entries.insert(
                    e.id,
                    Entries {
                        list: false,
                        key,
                        val,
                    },
                );
                sum.add(fixed(30))
            }
            Expr::Struct(s) => {
                let mut sum = fixed(40);
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        sum = sum.add(self.cost(&f.value));
                    }
                }
                sum
            }
            Expr::Comprehension(_) => self.cost_comprehension(e),
        }
    }

    fn cost_comprehension(&mut self, e: &IdedExpr) -> Estimate {
        let Expr::Comprehension(c) = &e.expr else {
            return fixed(0);
        };
        let mut sum = self.cost(&c.iter_range).add(self.cost(&c.accu_init));
        let accu = Local {
            path: self.path(&c.accu_init),
            size: self.size(&c.accu_init),
            entries: self.entry_sizes(&c.accu_init),
        };
        self.push(&c.accu_var, accu);
        let range_entries = self.entry_sizes(&c.iter_range);
        let container_is_list = match range_entries {
            Some(en) => en.list,
            None => self.ty(&c.iter_range).is_list(),
        };
        let range_path = self.path(&c.iter_range);
        let with = |sub: &str| {
            let mut p = range_path.clone();
            p.push(sub.to_string());
            p
        };
        if let Some(v2) = &c.iter_var2 {
            let key_sub = if container_is_list {
                "@indices"
            } else {
                "@keys"
            };
            let val_sub = if container_is_list {
                "@items"
            } else {
                "@values"
            };
            let key = Local {
                path: with(key_sub),
                size: range_entries.map(|en| en.key),
                entries: None,
            };
            let val = Local {
                path: with(val_sub),
                size: range_entries.map(|en| en.val),
                entries: None,
            };
            self.push(&c.iter_var, key);
            self.push(v2, val);
        } else {
            let (sub, size) = if container_is_list {
                ("@items", range_entries.map(|en| en.val))
            } else {
                ("@keys", range_entries.map(|en| en.key))
            };
            let single = Local {
                path: with(sub),
                size,
                entries: None,
            };
            self.push(&c.iter_var, single);
        }
        let loop_cost = self.cost(&c.loop_cond);
        let step_cost = self.cost(&c.loop_step);
        self.pop(&c.iter_var);
        if let Some(v2) = &c.iter_var2 {
            self.pop(v2);
        }
        sum = sum.add(self.cost(&c.result));
        self.pop(&c.accu_var);
        let range = self.size_or_unknown(&c.iter_range);
        sum = sum.add(range.mul(step_cost.add(loop_cost)));
        match &c.accu_init.expr {
            Expr::Literal(_) => {
                let s = self.size(&c.accu_init);
                self.set_size(e, s);
            }
            Expr::List(_) | Expr::Map(_) => {
                self.sizes.insert(e.id, range);
                let step = self.entry_sizes(&c.loop_step);
                self.set_entries(e, step);
            }
            _ => {}
        }
        sum
    }

    fn cost_call(&mut self, e: &IdedExpr) -> Estimate {
        let Expr::Call(call) = &e.expr else {
            return fixed(0);
        };
        if call.func_name == "dyn" && call.target.is_none() && call.args.len() == 1 {
            let arg = &call.args[0];
            let cost = self.cost(arg);
            let (s, en) = (self.size(arg), self.entry_sizes(arg));
            self.set_size(e, s);
            self.set_entries(e, en);
            return fixed(1).add(cost);
        }
        let mut arg_costs = Vec::with_capacity(call.args.len());
        let mut args = Vec::with_capacity(call.args.len());
        for a in &call.args {
            arg_costs.push(self.cost(a));
            args.push(self.node(a));
        }
        let mut sum = fixed(0);
        let target = match &call.target {
            Some(t) => {
                sum = self.cost(t);
                Some(self.node(t))
            }
            None => None,
        };
        let overloads = overloads(
            &call.func_name,
            target.as_ref().map(|t| &t.ty),
            &args.iter().map(|a| a.ty.clone()).collect::<Vec<_>>(),
        );
        let mut fn_cost = Estimate {
            min: u64::MAX,
            max: 0,
        };
        let mut result: Option<Estimate> = None;
        for ov in overloads {
            let (cost, size) =
                self.function_cost(e, &call.func_name, ov, target.as_ref(), &args, &arg_costs);
            fn_cost = fn_cost.union(cost);
            if let Some(s) = size {
                result = Some(result.map_or(s, |r| r.union(s)));
            }
            if matches!(ov, Overload::IndexList | Overload::IndexMap) && !call.args.is_empty() {
                result = self.entry_sizes(&call.args[0]).map(|en| en.val);
                let mut p = self.path(&call.args[0]);
                p.push(
                    if ov == Overload::IndexList {
                        "@items"
                    } else {
                        "@values"
                    }
                    .into(),
                );
                self.paths.insert(e.id, p);
            }
            if result.is_none() {
                result = self.size(e);
            }
        }
        self.set_size(e, result);
        sum.add(fn_cost)
    }
}

/// computeExprSize: the size of a literal, or of a list or map literal (its entry count).
fn expr_size(e: &IdedExpr) -> Option<Estimate> {
    let v = match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => s.inner().chars().count() as u64,
        Expr::Literal(LiteralValue::Bytes(b)) => b.inner().len() as u64,
        Expr::Literal(_) => 1,
        Expr::List(l) => l.elements.len() as u64,
        Expr::Map(m) => m.entries.len() as u64,
        _ => return None,
    };
    Some(fixed(v))
}

#[cfg(test)]
mod tests;
