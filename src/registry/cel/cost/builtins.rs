//! cel-go's own estimates of its standard functions (checker/cost.go `functionCost`), by
//! overload: which overloads the operand types allow, and what each costs.

use super::{
    fixed, union_entries, Coster, Estimate, Node, REGEX_LENGTH, STRING_TRAVERSAL, UNKNOWN,
};
use crate::registry::cel::types::Ty;
use kube_cel::cel::common::ast::IdedExpr;

/// Which overload of a function cost depends on (cel-go's overload IDs that have their own
/// estimate; every other overload costs 1 plus its arguments).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Overload {
    Other,
    IndexList,
    IndexMap,
    FormatString,
    StringToBytes,
    BytesToString,
    QuoteString,
    StartsOrEndsWith,
    InList,
    MatchesString,
    ContainsString,
    Logical,
    Conditional,
    AddString,
    AddBytes,
    AddList,
    /// Comparisons of strings and bytes, equality and inequality.
    Compare,
}

impl<'d> Coster<'d> {
    /// The cost of one overload (arguments included; the target is counted by the caller)
    /// and the size of its result when the overload knows it.
    pub(super) fn function_cost(
        &mut self,
        e: &IdedExpr,
        func: &str,
        ov: Overload,
        target: Option<&Node<'_, 'd>>,
        args: &[Node<'_, 'd>],
        arg_costs: &[Estimate],
    ) -> (Estimate, Option<Estimate>) {
        let arg_sum = arg_costs.iter().fold(fixed(0), |s, c| s.add(*c));
        if let Some((cost, size)) = self.library_cost(func, target, args) {
            return (cost.add(arg_sum), size);
        }
        let size_of = |n: &Node<'_, 'd>| n.size.unwrap_or(UNKNOWN);
        match (ov, target, args) {
            (Overload::FormatString, Some(t), _) => {
                return (size_of(t).factor(STRING_TRAVERSAL).add(arg_sum), None);
            }
            (Overload::StringToBytes, _, [a]) => {
                let sz = size_of(a);
                let out = Estimate {
                    min: sz.min,
                    max: sz.max.saturating_mul(4),
                };
                return (sz.factor(STRING_TRAVERSAL).add(arg_sum), Some(out));
            }
            (Overload::BytesToString, _, [a]) => {
                let sz = size_of(a);
                let out = Estimate {
                    min: sz.min / 4,
                    max: sz.max,
                };
                return (sz.factor(STRING_TRAVERSAL).add(arg_sum), Some(out));
            }
            (Overload::QuoteString, _, [a]) => {
                let sz = size_of(a);
                let out = Estimate {
                    min: sz.min.saturating_add(2),
                    max: sz.max.saturating_mul(2).saturating_add(2),
                };
                return (sz.factor(STRING_TRAVERSAL).add(arg_sum), Some(out));
            }
            (Overload::StartsOrEndsWith, _, [a]) => {
                return (size_of(a).factor(STRING_TRAVERSAL).add(arg_sum), None);
            }
            (Overload::InList, _, [_, list]) => {
                return (size_of(list).factor(1.0).add(arg_sum), None);
            }
            (Overload::MatchesString, Some(t), [re]) => {
                let s = size_of(t).add(fixed(1)).factor(STRING_TRAVERSAL);
                let r = size_of(re).factor(REGEX_LENGTH);
                return (s.mul(r).add(arg_sum), None);
            }
            (Overload::ContainsString, Some(t), [sub]) => {
                let s = size_of(t).factor(STRING_TRAVERSAL);
                let r = size_of(sub).factor(STRING_TRAVERSAL);
                return (s.mul(r).add(arg_sum), None);
            }
            (Overload::Logical, _, [_, _]) => {
                let (l, r) = (arg_costs[0], arg_costs[1]);
                return (
                    Estimate {
                        min: l.min,
                        max: l.add(r).max,
                    },
                    None,
                );
            }
            (Overload::Conditional, _, [_, a, b]) => {
                let size = size_of(a).union(size_of(b));
                let en = union_entries(
                    a.expr.and_then(|x| self.entry_sizes(x)),
                    b.expr.and_then(|x| self.entry_sizes(x)),
                );
                self.set_entries(e, en);
                let cost = arg_costs[0].add(arg_costs[1].union(arg_costs[2]));
                return (cost, Some(size));
            }
            (Overload::AddString | Overload::AddBytes | Overload::AddList, _, [a, b]) => {
                let size = size_of(a).add(size_of(b));
                let en = union_entries(
                    a.expr.and_then(|x| self.entry_sizes(x)),
                    b.expr.and_then(|x| self.entry_sizes(x)),
                );
                self.set_entries(e, en);
                if ov == Overload::AddList {
                    return (fixed(1).add(arg_sum), Some(size));
                }
                return (size.factor(STRING_TRAVERSAL).add(arg_sum), Some(size));
            }
            (Overload::Compare, _, [a, b]) => {
                let smallest = size_of(a).max.min(size_of(b).max);
                let cost = Estimate {
                    min: u64::from(smallest > 0),
                    max: smallest,
                };
                return (cost.factor(STRING_TRAVERSAL).add(arg_sum), None);
            }
            _ => {}
        }
        (fixed(1).add(arg_sum), None)
    }
}

/// The overloads of `func` that the operand types allow, as far as cost tells them apart.
pub(super) fn overloads(func: &str, target: Option<&Ty<'_>>, args: &[Ty<'_>]) -> Vec<Overload> {
    let string = |t: &Ty<'_>| t.could(|t| *t == Ty::String);
    let bytes = |t: &Ty<'_>| t.could(|t| *t == Ty::Bytes);
    let list = |t: &Ty<'_>| t.could(Ty::is_list);
    let map = |t: &Ty<'_>| t.could(Ty::is_map);
    let other = |t: &Ty<'_>| t.could(|t| !matches!(t, Ty::String | Ty::Bytes | Ty::List(_)));
    let mut out = Vec::new();
    match (func, target, args) {
        ("_[_]", None, [a, _]) => {
            if list(a) {
                out.push(Overload::IndexList);
            }
            if map(a) {
                out.push(Overload::IndexMap);
            }
        }
        ("format", Some(t), _) if string(t) => out.push(Overload::FormatString),
        ("bytes", None, [a]) => {
            if string(a) {
                out.push(Overload::StringToBytes);
            }
            if !matches!(a, Ty::String) {
                out.push(Overload::Other);
            }
        }
        ("string", None, [a]) => {
            if bytes(a) {
                out.push(Overload::BytesToString);
            }
            if !matches!(a, Ty::Bytes) {
                out.push(Overload::Other);
            }
        }
        ("strings.quote", None, [_]) => out.push(Overload::QuoteString),
        ("startsWith" | "endsWith", Some(_), [_]) => out.push(Overload::StartsOrEndsWith),
        ("@in", None, [_, b]) => {
            if list(b) {
                out.push(Overload::InList);
            }
            if !b.is_list() {
                out.push(Overload::Other);
            }
        }
        ("matches", Some(_), [_]) => out.push(Overload::MatchesString),
        ("contains", Some(t), [_]) if string(t) => out.push(Overload::ContainsString),
        ("_&&_" | "_||_", None, [_, _]) => out.push(Overload::Logical),
        ("_?_:_", None, [_, _, _]) => out.push(Overload::Conditional),
        ("_+_", None, [a, b]) => {
            if string(a) && string(b) {
                out.push(Overload::AddString);
            }
            if bytes(a) && bytes(b) {
                out.push(Overload::AddBytes);
            }
            if list(a) && list(b) {
                out.push(Overload::AddList);
            }
            if other(a) && other(b) {
                out.push(Overload::Other);
            }
        }
        ("_<_" | "_<=_" | "_>_" | "_>=_", None, [a, b]) => {
            if (string(a) && string(b)) || (bytes(a) && bytes(b)) {
                out.push(Overload::Compare);
            }
            if other(a) && other(b) {
                out.push(Overload::Other);
            }
        }
        ("_==_" | "_!=_", None, [_, _]) => out.push(Overload::Compare),
        _ => {}
    }
    if out.is_empty() {
        out.push(Overload::Other);
    }
    out
}
