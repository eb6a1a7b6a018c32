//! PolicyRule evaluation as upstream's (pkg/apis/rbac/v1/evaluation_helpers.go and
//! component-helpers auth/rbac/validation/policy_comparator.go): whether a rule allows a
//! request, whether rules cover other rules (escalation checks, the bootstrap policy's
//! reconciliation), and the compact text escalation errors print. May use: api.

use super::authorizer::PolicyRule;
use super::RequestInfo;

const ALL: &str = "*";

fn has(set: &[String], item: &str) -> bool {
    set.iter().any(|s| s == item)
}

fn has_all(set: &[String], items: &[String]) -> bool {
    items.iter().all(|i| has(set, i))
}

/// VerbMatches.
fn verb_matches(rule: &PolicyRule, verb: &str) -> bool {
    rule.verbs.iter().any(|v| v == ALL || v == verb)
}

/// APIGroupMatches.
fn group_matches(rule: &PolicyRule, group: &str) -> bool {
    rule.api_groups.iter().any(|g| g == ALL || g == group)
}

/// ResourceMatches: `*`, the exact `resource[/subresource]`, or `*/subresource`.
fn resource_matches(rule: &PolicyRule, resource: &str, subresource: &str) -> bool {
    rule.resources.iter().any(|r| {
        if r == ALL {
            return true;
        }
        if subresource.is_empty() {
            return r == resource;
        }
        // resource/subresource without building the string.
        let exact = r.len() == resource.len() + 1 + subresource.len()
            && r.starts_with(resource)
            && r.as_bytes()[resource.len()] == b'/'
            && r.ends_with(subresource);
        exact
            || (r.len() == subresource.len() + 2 && r.starts_with("*/") && r.ends_with(subresource))
    })
}

/// ResourceNameMatches: no names means every name.
fn name_matches(rule: &PolicyRule, name: &str) -> bool {
    rule.resource_names.is_empty() || has(&rule.resource_names, name)
}

/// NonResourceURLMatches: `*`, exact, or a prefix ending in `*`.
fn url_matches(rule: &PolicyRule, path: &str) -> bool {
    rule.non_resource_urls.iter().any(|u| url_covers(u, path))
}

/// nonResourceURLCovers (NonResourceURLMatches too: `*` is a prefix ending in `*`).
fn url_covers(owner: &str, path: &str) -> bool {
    owner == path
        || owner
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

/// RuleAllows: whether `rule` allows the request `attrs` describes.
pub(crate) fn allows(rule: &PolicyRule, attrs: &RequestInfo) -> bool {
    if attrs.is_resource_request {
        verb_matches(rule, &attrs.verb)
            && group_matches(rule, &attrs.api_group)
            && resource_matches(rule, &attrs.resource, &attrs.subresource)
            && name_matches(rule, &attrs.name)
    } else {
        verb_matches(rule, &attrs.verb) && url_matches(rule, &attrs.path)
    }
}

/// BreakdownRule: the rule as rules of one group, resource, verb and name each (or one URL
/// and verb each).
fn breakdown(rule: &PolicyRule) -> Vec<PolicyRule> {
    let one = |s: &String| vec![s.clone()];
    let mut out = Vec::new();
    for group in &rule.api_groups {
        for resource in &rule.resources {
            for verb in &rule.verbs {
                let base = PolicyRule {
                    api_groups: one(group),
                    resources: one(resource),
                    verbs: one(verb),
                    ..PolicyRule::default()
                };
                if rule.resource_names.is_empty() {
                    out.push(base);
                } else {
                    for name in &rule.resource_names {
                        out.push(PolicyRule {
                            resource_names: one(name),
                            ..base.clone()
                        });
                    }
                }
            }
        }
    }
    for url in &rule.non_resource_urls {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: one(verb),
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn resources_cover(owner: &[String], wanted: &[String]) -> bool {
    if has(owner, ALL) || has_all(owner, wanted) {
        return true;
    }
    wanted.iter().all(|path| {
        has(owner, path)
            || path
                .split_once('/')
                .is_some_and(|(_, sub)| has(owner, &format!("*/{sub}")))
    })
}

/// ruleCovers: whether `owner` covers `sub`, a rule of one verb, resource and name at most.
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(&owner.api_groups, ALL) || has_all(&owner.api_groups, &sub.api_groups);
    let resources = resources_cover(&owner.resources, &sub.resources);
    let urls = sub
        .non_resource_urls
        .iter()
        .all(|p| owner.non_resource_urls.iter().any(|o| url_covers(o, p)));
    let names = if sub.resource_names.is_empty() {
        owner.resource_names.is_empty()
    } else {
        owner.resource_names.is_empty() || has_all(&owner.resource_names, &sub.resource_names)
    };
    verbs && groups && resources && names && urls
}

/// Covers: whether `owner` rules cover every `wanted` rule, and the broken-down rules they
/// do not cover.
pub(crate) fn covers(owner: &[PolicyRule], wanted: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let missing: Vec<PolicyRule> = wanted
        .iter()
        .flat_map(breakdown)
        .filter(|sub| !owner.iter().any(|o| rule_covers(o, sub)))
        .collect();
    (missing.is_empty(), missing)
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn quoted(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", inner.join(" "))
}

/// Go's `%q` of one string (strconv.Quote for the printable ASCII names RBAC uses).
pub(crate) fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// CompactString: `{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}`.
pub(crate) fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (label, items) in [
        ("APIGroups", &rule.api_groups),
        ("Resources", &rule.resources),
        ("NonResourceURLs", &rule.non_resource_urls),
        ("ResourceNames", &rule.resource_names),
        ("Verbs", &rule.verbs),
    ] {
        if !items.is_empty() {
            parts.push(format!("{label}:{}", quoted(items)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// CompactRules: "simple" rules (one group, one resource, at most one name, no URLs) of the
/// same group, resource and name merged into one with the verbs of all.
pub(crate) fn compact(rules: Vec<PolicyRule>) -> Vec<PolicyRule> {
    let mut out: Vec<PolicyRule> = Vec::with_capacity(rules.len());
    let mut simple: Vec<PolicyRule> = Vec::new();
    for rule in rules {
        let is_simple = rule.api_groups.len() == 1
            && rule.resources.len() == 1
            && rule.resource_names.len() <= 1
            && rule.non_resource_urls.is_empty();
        if !is_simple {
            out.push(rule);
            continue;
        }
        match simple.iter_mut().find(|p| {
            p.api_groups == rule.api_groups
                && p.resources == rule.resources
                && p.resource_names == rule.resource_names
        }) {
            Some(prev) => prev.verbs.extend(rule.verbs),
            None => simple.push(rule),
        }
    }
    out.extend(simple);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::Method;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
        let v = |xs: &[&str]| xs.iter().map(|s| s.to_string()).collect();
        PolicyRule {
            verbs: v(verbs),
            api_groups: v(groups),
            resources: v(resources),
            ..PolicyRule::default()
        }
    }

    fn req(method: Method, path: &str) -> RequestInfo {
        RequestInfo::parse(&method, path, None)
    }

    #[test]
    fn resource_rules_match_as_upstream() {
        let cm = rule(&["get", "list"], &[""], &["configmaps"]);
        assert!(allows(
            &cm,
            &req(Method::GET, "/api/v1/namespaces/a/configmaps/x")
        ));
        assert!(allows(
            &cm,
            &req(Method::GET, "/api/v1/namespaces/a/configmaps")
        ));
        assert!(!allows(
            &cm,
            &req(Method::DELETE, "/api/v1/namespaces/a/configmaps/x")
        ));
        assert!(!allows(
            &cm,
            &req(Method::GET, "/api/v1/namespaces/a/secrets/x")
        ));
        // A subresource needs its own grant.
        assert!(!allows(
            &cm,
            &req(Method::GET, "/api/v1/namespaces/a/configmaps/x/status")
        ));
        let status = rule(&["*"], &["*"], &["*/status"]);
        assert!(allows(
            &status,
            &req(Method::PUT, "/apis/g/v1/namespaces/a/things/x/status")
        ));
        assert!(!allows(
            &status,
            &req(Method::PUT, "/apis/g/v1/namespaces/a/things/x")
        ));
        let exact = rule(&["update"], &["g"], &["things/status"]);
        assert!(allows(
            &exact,
            &req(Method::PUT, "/apis/g/v1/namespaces/a/things/x/status")
        ));
        assert!(!allows(
            &exact,
            &req(Method::PUT, "/apis/g/v1/namespaces/a/thing/x/status")
        ));
        let mut named = rule(&["get"], &[""], &["configmaps"]);
        named.resource_names = vec!["x".into()];
        assert!(allows(
            &named,
            &req(Method::GET, "/api/v1/namespaces/a/configmaps/x")
        ));
        assert!(!allows(
            &named,
            &req(Method::GET, "/api/v1/namespaces/a/configmaps/y")
        ));
        assert!(!allows(
            &named,
            &req(Method::GET, "/api/v1/namespaces/a/configmaps")
        ));
    }

    #[test]
    fn non_resource_urls_match_with_a_trailing_star() {
        let r = PolicyRule {
            verbs: vec!["get".into()],
            non_resource_urls: vec!["/healthz".into(), "/readyz/*".into(), "/version".into()],
            ..PolicyRule::default()
        };
        assert!(allows(&r, &req(Method::GET, "/healthz")));
        assert!(allows(&r, &req(Method::GET, "/readyz/etcd")));
        assert!(!allows(&r, &req(Method::GET, "/readyz")));
        assert!(!allows(&r, &req(Method::GET, "/healthzz")));
        assert!(!allows(&r, &req(Method::POST, "/version")));
        // A resource rule never matches a path, nor a path rule a resource.
        assert!(!allows(
            &rule(&["*"], &["*"], &["*"]),
            &req(Method::GET, "/healthz")
        ));
    }

    #[test]
    fn covers_breaks_rules_down() {
        let owner = vec![rule(&["get", "list"], &[""], &["configmaps", "*/status"])];
        let (ok, missing) = covers(&owner, &[rule(&["get"], &[""], &["configmaps"])]);
        assert!(ok && missing.is_empty());
        let (ok, missing) = covers(&owner, &[rule(&["get", "delete"], &[""], &["configmaps"])]);
        assert!(!ok);
        assert_eq!(missing, vec![rule(&["delete"], &[""], &["configmaps"])]);
        let (ok, _) = covers(&owner, &[rule(&["get"], &[""], &["pods/status"])]);
        assert!(ok);
        let star = vec![rule(&["*"], &["*"], &["*"])];
        assert!(covers(&star, &[rule(&["escalate"], &["x"], &["y/z"])]).0);
        let mut named = rule(&["get"], &[""], &["secrets"]);
        named.resource_names = vec!["a".into()];
        assert!(!covers(&[named.clone()], &[rule(&["get"], &[""], &["secrets"])]).0);
        assert!(covers(&[rule(&["get"], &[""], &["secrets"])], &[named]).0);
    }

    #[test]
    fn compact_strings_as_go_prints_them() {
        let mut r = rule(&["get", "list"], &["apps"], &["deployments"]);
        assert_eq!(
            compact_string(&r),
            r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list"]}"#
        );
        r.resource_names = vec!["x".into()];
        assert_eq!(
            compact_string(&r),
            r#"{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["x"], Verbs:["get" "list"]}"#
        );
        let merged = compact(vec![
            rule(&["get"], &[""], &["secrets"]),
            rule(&["list"], &[""], &["secrets"]),
            rule(&["get"], &[""], &["pods"]),
        ]);
        assert_eq!(
            merged,
            vec![
                rule(&["get", "list"], &[""], &["secrets"]),
                rule(&["get"], &[""], &["pods"])
            ]
        );
    }
}
