//! The cost budget of x-kubernetes-validations rules (validation.go, cel_validation.go): each
//! rule's estimated cost, times how many times it can run in one object (the product of the
//! `maxItems` and `maxProperties` above it, or how many values of its node fit in a request),
//! must stay within 10,000,000, and all rules and messageExpressions of a schema within
//! 100,000,000. Rules that do not parse are left to the compile errors.

use super::path;
use crate::registry::cel::decl::{decl, Decl, MAX_REQUEST_SIZE_BYTES};
use crate::registry::cel::{cost, parse};
use crate::registry::error::FieldError;
use serde_json::Value;

/// StaticEstimatedCostLimit: the most one expression may cost.
const EXPRESSION_LIMIT: u64 = 10_000_000;
/// StaticEstimatedCRDCostLimit: the most all expressions of a schema may cost together.
const SCHEMA_LIMIT: u64 = 100_000_000;

/// getCostErrorMessage.
fn over_budget(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let shown = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {shown} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}

/// TotalCost: the sum, and the (at most four) most expensive expressions of at least 1% of the
/// schema's budget, most expensive first.
#[derive(Default)]
struct Total {
    sum: u64,
    most_expensive: Vec<(String, u64)>,
}

impl Total {
    fn observe(&mut self, at: String, cost: u64) {
        self.sum = self.sum.saturating_add(cost);
        if cost < SCHEMA_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((at, cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
    }
}

/// The cost errors of the rules of `schema` (the root at `root_at`); `suppress_per_expression`
/// when the version's schema is unchanged by an update, so rules stored before keep working.
pub(super) fn cost_errors(
    schema: &Value,
    root_at: &str,
    suppress_per_expression: bool,
) -> Vec<FieldError> {
    let mut walk = Walk {
        suppress_per_expression,
        total: Total::default(),
        errs: Vec::new(),
    };
    walk.node(schema, root_at, Some(1), true);
    let Walk {
        total, mut errs, ..
    } = walk;
    if total.sum > SCHEMA_LIMIT {
        for (at, _) in total.most_expensive {
            errs.push(FieldError::forbidden(
                at,
                "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            ));
        }
        errs.push(FieldError::forbidden(
            root_at,
            over_budget(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                total.sum,
                SCHEMA_LIMIT,
            ),
        ));
    }
    errs
}

struct Walk {
    suppress_per_expression: bool,
    total: Total,
    errs: Vec<FieldError>,
}

/// extractMaxElements: how many children a value of `s` has at most (`None`: unbounded).
fn max_elements(s: &Value) -> Option<u64> {
    let bound = |key: &str| s.get(key).and_then(Value::as_i64).map(|m| m.max(0) as u64);
    match s.get("type").and_then(Value::as_str) {
        Some("object") if s.get("additionalProperties").is_some() => bound("maxProperties"),
        Some("array") => bound("maxItems"),
        _ => Some(1),
    }
}

impl Walk {
    /// Checks the rules of node `s` at `at`, which can occur `cardinality` times in an object
    /// (`None`: no bound is declared above it), then its children.
    fn node(&mut self, s: &Value, at: &str, cardinality: Option<u64>, root: bool) {
        self.rules(s, at, cardinality, root);
        let child = cardinality.and_then(|c| max_elements(s).map(|m| c.saturating_mul(m)));
        if let Some(props) = s.get("properties").and_then(Value::as_object) {
            for (name, p) in props {
                self.node(
                    p,
                    &path::key(&path::child(at, "properties"), name),
                    child,
                    false,
                );
            }
        }
        if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
            self.node(ap, &path::child(at, "additionalProperties"), child, false);
        }
        if let Some(items) = s.get("items").filter(|i| i.is_object()) {
            self.node(items, &path::child(at, "items"), child, false);
        }
    }

    fn rules(&mut self, s: &Value, at: &str, cardinality: Option<u64>, root: bool) {
        let Some(rules) = s
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .filter(|r| !r.is_empty())
        else {
            return;
        };
        let embedded = s
            .get("x-kubernetes-embedded-resource")
            .and_then(Value::as_bool);
        let Some(d) = decl(s, root || embedded == Some(true)) else {
            return;
        };
        // Unbounded above: as many values of this node as fit in a request.
        let times =
            cardinality.unwrap_or((MAX_REQUEST_SIZE_BYTES / (d.min_size + 1)).max(0) as u64);
        let rules_at = path::child(at, "x-kubernetes-validations");
        for (i, r) in rules.iter().enumerate() {
            let rule_at = |f: &str| path::child(&path::index(&rules_at, i), f);
            let Some(rule_cost) = expression_cost(r.get("rule"), &d) else {
                continue;
            };
            let c = rule_cost.saturating_mul(times);
            self.check("estimated rule cost", rule_at("rule"), c);
            if let Some(m) = expression_cost(r.get("messageExpression"), &d) {
                self.check(
                    "estimated messageExpression cost",
                    rule_at("messageExpression"),
                    m,
                );
            }
        }
    }

    fn check(&mut self, what: &str, at: String, cost: u64) {
        if !self.suppress_per_expression && cost > EXPRESSION_LIMIT {
            self.errs.push(FieldError::forbidden(
                at.clone(),
                over_budget(what, cost, EXPRESSION_LIMIT),
            ));
        }
        self.total.observe(at, cost);
    }
}

/// The estimated cost of an expression that parses (`None` for none, or one that does not).
fn expression_cost(expr: Option<&Value>, d: &Decl) -> Option<u64> {
    let expr = expr
        .and_then(Value::as_str)
        .filter(|e| !e.trim().is_empty())?;
    let parsed = parse(expr, true).ok()?;
    Some(cost::estimate(&parsed, d).max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A list of strings, bounded (100 items of at most 64 characters) or not.
    fn strings(bounded: bool) -> Value {
        let mut list = json!({"type": "array", "items": {"type": "string"}});
        if bounded {
            list["maxItems"] = json!(100);
            list["items"]["maxLength"] = json!(64);
        }
        json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"names": list},
            "x-kubernetes-validations": [{"rule": "self.names.all(x, self.names.all(y, x == y))"}]}}})
    }

    #[test]
    fn a_quadratic_rule_over_an_unbounded_list_is_over_budget() {
        let errs = cost_errors(&strings(false), "spec.validation.openAPIV3Schema", false);
        let shown: Vec<String> = errs.iter().map(ToString::to_string).collect();
        assert_eq!(shown, [
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
            "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
        ]);
        assert!(cost_errors(&strings(true), "s", false).is_empty());
        // An unchanged schema keeps its rules; the schema's total still counts.
        assert_eq!(cost_errors(&strings(false), "s", true).len(), 2);
    }

    #[test]
    fn rules_under_unbounded_lists_count_once_per_item() {
        // self.contains over an unbounded string costs about 315k: fine 10 times, not for
        // every string a request can hold.
        let schema = |max_items: Option<i64>| {
            let mut list = json!({"type": "array", "items": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self.contains('a')"}]}});
            if let Some(m) = max_items {
                list["maxItems"] = json!(m);
            }
            json!({"type": "object", "properties": {"list": list}})
        };
        assert!(cost_errors(&schema(Some(10)), "s", false).is_empty());
        let errs = cost_errors(&schema(None), "s", false);
        assert_eq!(
            errs[0].to_string(),
            "s.properties[list].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
        );
    }

    #[test]
    fn factors_are_shown_as_upstream_shows_them() {
        assert!(over_budget("x", 12_000_000, EXPRESSION_LIMIT).contains("factor of 1.200000x"));
        assert!(over_budget("x", 25_000_000, EXPRESSION_LIMIT).contains("factor of 2.5x"));
        assert!(over_budget("x", u64::MAX, EXPRESSION_LIMIT).contains("more than 100x"));
    }
}
