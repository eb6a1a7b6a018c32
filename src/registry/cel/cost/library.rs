//! Kubernetes' CEL library estimates (k8s.io/apiserver pkg/cel/library/cost.go
//! `EstimateCallCost`), by function name: authorizer checks, lists, strings, regexes, URLs,
//! IPs and CIDRs, quantities, semvers and formats.

use super::{fixed, Coster, Estimate, Node, UNKNOWN};
use super::{MAX_FORMAT_SIZE, MAX_NAME_FORMAT_REGEX_SIZE, REGEX_LENGTH, STRING_TRAVERSAL};
use crate::registry::cel::types::Ty;
use kube_cel::cel::common::ast::{Expr, LiteralValue};

impl<'d> Coster<'d> {
    /// Kubernetes' library estimates (library.CostEstimator.EstimateCallCost), by function.
    pub(super) fn library_cost(
        &self,
        func: &str,
        target: Option<&Node<'_, 'd>>,
        args: &[Node<'_, 'd>],
    ) -> Option<(Estimate, Option<Estimate>)> {
        let size = |n: &Node<'_, 'd>| self.node_size(n);
        let one = Some((fixed(1), None));
        let traversal = |n: &Node<'_, 'd>| Some((size(n).factor(STRING_TRAVERSAL), None));
        match func {
            "check" => Some((fixed(350_000), None)),
            "serviceAccount" | "path" | "group" | "resource" | "subresource" | "namespace"
            | "name" | "allowed" | "reason" | "error" | "errored" => one,
            "fieldSelector" | "labelSelector" => {
                // selectorCostEstimate: a base, a parse, and a requirement per two bytes.
                let [a] = args else { return None };
                let sz = size(a);
                let requirements = sz.factor(0.5).factor(50.0);
                Some((
                    fixed(10).add(sz.factor(STRING_TRAVERSAL)).add(requirements),
                    None,
                ))
            }
            "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" | "includes" => {
                let t = target?;
                let mut el = fixed(1);
                if let Some(el_node) = items_node(t) {
                    if matches!(el_node.ty, Ty::String | Ty::Bytes) {
                        el = el.add(size(&el_node).factor(STRING_TRAVERSAL));
                    }
                    return Some((size(t).mul(el), None));
                }
                if func == "includes" {
                    return Some((size(t).mul(el), None));
                }
                Some((size(t).factor(STRING_TRAVERSAL), None))
            }
            "url" | "jsonpatch.escapeKey" => {
                let [a] = args else { return None };
                let sz = size(a);
                Some((sz.factor(STRING_TRAVERSAL), Some(sz)))
            }
            "lowerAscii" | "upperAscii" | "substring" | "trim" => {
                let sz = size(target?);
                Some((sz.factor(STRING_TRAVERSAL), Some(sz)))
            }
            "replace" => {
                let t = target?;
                let [from, to, ..] = args else { return None };
                Some(replace_cost(size(t), size(from), size(to)))
            }
            "split" => {
                let sz = size(target?);
                let mut max = sz.max;
                if let Some(Expr::Literal(LiteralValue::Int(i))) =
                    args.get(1).and_then(|a| a.expr).map(|x| &x.expr)
                {
                    max = *i.inner() as u64;
                }
                Some((
                    sz.factor(2.0 * STRING_TRAVERSAL),
                    Some(Estimate { min: 0, max }),
                ))
            }
            "join" => {
                let t = target?;
                let list = size(t);
                let mut sz = fixed(0);
                if let Some(el_node) = items_node(t) {
                    sz = list.mul(size(&el_node));
                }
                if let Some(sep) = args.first() {
                    let seps = Estimate {
                        min: list.min.saturating_sub(1),
                        max: list.max.saturating_sub(1),
                    };
                    sz = sz.add(size(sep).mul(seps));
                }
                Some((sz.factor(STRING_TRAVERSAL), Some(sz)))
            }
            "find" | "findAll" => {
                let t = target?;
                let re = args.first()?;
                let sz = size(t);
                let s = sz.add(fixed(1)).factor(STRING_TRAVERSAL);
                let r = size(re).factor(REGEX_LENGTH);
                Some((
                    s.mul(r),
                    Some(Estimate {
                        min: 0,
                        max: sz.max,
                    }),
                ))
            }
            "cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity" | "semver" | "isSemver" => {
                traversal(args.first()?)
            }
            "ip" => traversal(args.first()?),
            "ip.isCanonical" => {
                let a = args.first()?;
                Some((size(a).factor(2.0 * STRING_TRAVERSAL), None))
            }
            "masked"
            | "prefixLength"
            | "family"
            | "isUnspecified"
            | "isLoopback"
            | "isLinkLocalMulticast"
            | "isLinkLocalUnicast"
            | "isGlobalUnicast" => one,
            "containsIP" | "containsCIDR" => {
                let a = args.first()?;
                let ip = Estimate { min: 4, max: 16 };
                let mut cost = ip.add(ip).factor(STRING_TRAVERSAL);
                if func == "containsCIDR" {
                    cost = cost.add(ip.factor(STRING_TRAVERSAL)).add(fixed(1));
                }
                if a.ty == Ty::String {
                    cost = cost.add(size(a).factor(STRING_TRAVERSAL));
                }
                Some((cost, None))
            }
            "validate" => {
                let a = args.first()?;
                let cost = size(a)
                    .factor(STRING_TRAVERSAL)
                    .factor(MAX_NAME_FORMAT_REGEX_SIZE * REGEX_LENGTH);
                Some((cost, None))
            }
            "format.named" | "sign" | "asInteger" | "isInteger" | "asApproximateFloat"
            | "isGreaterThan" | "isLessThan" | "compareTo" | "add" | "sub" | "major" | "minor"
            | "patch" | "getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath"
            | "getQuery" => one,
            "_==_" => {
                let [l, r] = args else { return None };
                if l.ty != r.ty {
                    return None;
                }
                match l.ty {
                    Ty::Library("ip" | "cidr" | "quantity" | "semver") => one,
                    Ty::Library("format") => Some((
                        Estimate {
                            min: 1,
                            max: MAX_FORMAT_SIZE,
                        }
                        .factor(STRING_TRAVERSAL),
                        None,
                    )),
                    Ty::Library("url") => {
                        let max = r.size.map_or(1, |s| s.max);
                        Some((Estimate { min: 1, max }.factor(STRING_TRAVERSAL), None))
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }

    /// library.CostEstimator.sizeEstimate: the size computed, else the schema's, else unknown.
    fn node_size(&self, n: &Node<'_, 'd>) -> Estimate {
        if let Some(s) = n.size {
            return s;
        }
        n.path
            .as_deref()
            .and_then(|p| self.estimate_size(p))
            .unwrap_or(UNKNOWN)
    }
}

/// listElementNode: the element of list `t` (its first type parameter), at `t`'s path and
/// `@items`, with no size of its own.
fn items_node<'e, 'd>(t: &Node<'e, 'd>) -> Option<Node<'e, 'd>> {
    let ty = t.ty.first_parameter()?.clone();
    let path = t.path.clone().map(|mut p| {
        p.push("@items".into());
        p
    });
    Some(Node {
        path,
        ty,
        expr: None,
        size: None,
    })
}

/// `replace`: the cost of a traversal of the string, twice; the result's size from how many
/// replacements can happen.
fn replace_cost(sz: Estimate, from: Estimate, to: Estimate) -> (Estimate, Option<Estimate>) {
    // (replacements, characters retained) for a string of `len` when the replaced text has
    // `from_len` characters and a replacement does not grow it (`shrinks`).
    let bound = |len: u64, from_len: u64, shrinks: bool| {
        if from_len == 0 {
            (len.saturating_add(1), len)
        } else if shrinks {
            (0, len)
        } else {
            ((len as f64 / from_len as f64).ceil() as u64, 0)
        }
    };
    let (max_count, max_retained) = bound(sz.max, from.min, to.max <= from.min);
    let (min_count, min_retained) = bound(sz.min, from.max, from.max <= to.min);
    let count = Estimate {
        min: min_count,
        max: max_count,
    };
    let retained = Estimate {
        min: min_retained,
        max: max_retained,
    };
    let size = count.mul(to).add(retained);
    (sz.factor(2.0 * STRING_TRAVERSAL), Some(size))
}
