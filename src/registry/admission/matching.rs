//! What admission policies of both kinds share (k8s.io/apiserver's policy/generic and
//! policy/matching): which writes a policy's matchConstraints and its binding's matchResources
//! select, the policy's paramKind, matchConditions, variables and failurePolicy, the binding,
//! and the params objects its paramRef names.

use super::activation::{compile, Compiled};
use super::webhooks::{
    equivalent_version, is_namespace, labels, object_selected, rule_matches, selector,
};
use super::Attributes;
use kube::core::{Selector, SelectorExt};
use serde_json::Value;

/// The string at `ptr` in `v` ("" when absent).
pub(super) fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// What a policy or binding matches (MatchResources).
#[derive(Default)]
pub(super) struct Matcher {
    rules: Vec<Value>,
    exclude: Vec<Value>,
    namespace_selector: Option<Selector>,
    object_selector: Option<Selector>,
    /// matchResources was given (a binding without one matches whatever its policy does).
    given: bool,
    /// matchPolicy Equivalent (the default).
    equivalent: bool,
}

impl Matcher {
    /// Whether it selects by namespace labels (and so needs the namespace object).
    pub(super) fn selects_namespaces(&self) -> bool {
        self.namespace_selector.is_some()
    }

    fn new(v: Option<&Value>) -> Matcher {
        let Some(v) = v.filter(|v| v.is_object()) else {
            return Matcher::default();
        };
        let list = |k: &str| {
            v.get(k)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        Matcher {
            rules: list("resourceRules"),
            exclude: list("excludeResourceRules"),
            namespace_selector: selector(v.get("namespaceSelector")),
            object_selector: selector(v.get("objectSelector")),
            given: true,
            equivalent: v.get("matchPolicy").and_then(Value::as_str) != Some("Exact"),
        }
    }

    fn named(rule: &Value, name: &str) -> bool {
        rule.get("resourceNames")
            .and_then(Value::as_array)
            .is_none_or(|n| n.is_empty() || n.iter().any(|x| x.as_str() == Some(name)))
    }

    /// Whether the write is selected: its rules (and resourceNames), minus the excluded ones,
    /// and the object and namespace selectors.
    pub(super) fn matches(
        &self,
        attrs: &Attributes<'_>,
        subresource: &str,
        object: Option<&Value>,
        namespace: Option<&Value>,
    ) -> bool {
        self.matched(attrs, subresource, object, namespace)
            .is_some()
    }

    /// [`Self::matches`], and at which version: None when a rule names the version written,
    /// or, under matchPolicy Equivalent (the default), another served version a rule names
    /// (matching.go's matchesResourceRules: resourceNames are not looked at for those).
    pub(super) fn matched(
        &self,
        attrs: &Attributes<'_>,
        subresource: &str,
        object: Option<&Value>,
        namespace: Option<&Value>,
    ) -> Option<Option<String>> {
        if !self.given {
            return Some(None);
        }
        let hit = |r: &Value| rule_matches(r, attrs, subresource) && Matcher::named(r, attrs.name);
        let equivalent = |rules: &[Value]| {
            self.equivalent
                .then(|| equivalent_version(rules, attrs, subresource))
                .flatten()
        };
        if self.exclude.iter().any(hit) || equivalent(&self.exclude).is_some() {
            return None;
        }
        // A binding's empty resourceRules leave the policy's matching as it is.
        let version = if self.rules.is_empty() || self.rules.iter().any(hit) {
            None
        } else {
            Some(equivalent(&self.rules)?)
        };
        if let Some(sel) = &self.object_selector {
            if !object_selected(sel, attrs, object) {
                return None;
            }
        }
        if let Some(sel) = &self.namespace_selector {
            let ns_labels = if is_namespace(attrs) {
                labels(object.or(attrs.old_object))
            } else if attrs.namespace.is_empty() {
                return Some(version);
            } else {
                labels(namespace)
            };
            if !sel.matches(&ns_labels) {
                return None;
            }
        }
        Some(version)
    }
}

/// The parts of a policy both kinds declare alike: its name, paramKind, matchConstraints,
/// matchConditions, variables and failurePolicy.
pub(super) struct Header {
    /// metadata.name.
    pub name: String,
    /// paramKind: apiVersion and kind.
    pub param_kind: Option<(String, String)>,
    /// matchConstraints.
    pub constraints: Matcher,
    /// matchConditions, by name.
    pub conditions: Vec<(String, Compiled)>,
    /// variables, by name, in order.
    pub variables: Vec<(String, Compiled)>,
    /// failurePolicy Fail (the default).
    pub fail: bool,
}

impl Header {
    /// The header of the policy `v`.
    pub(super) fn new(v: &Value) -> Header {
        let spec = v.get("spec").unwrap_or(&Value::Null);
        let named = |k: &str| -> Vec<(String, Compiled)> {
            spec.get(k)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        str_at(c, "/name").to_string(),
                        compile(str_at(c, "/expression")),
                    )
                })
                .collect()
        };
        Header {
            name: str_at(v, "/metadata/name").to_string(),
            param_kind: spec.get("paramKind").filter(|p| p.is_object()).map(|p| {
                (
                    str_at(p, "/apiVersion").to_string(),
                    str_at(p, "/kind").to_string(),
                )
            }),
            constraints: Matcher::new(spec.get("matchConstraints")),
            conditions: named("matchConditions"),
            variables: named("variables"),
            fail: str_at(spec, "/failurePolicy") != "Ignore",
        }
    }
}

/// A binding of either kind of policy (its validationActions only for validating ones).
pub(super) struct Binding {
    /// metadata.name.
    pub name: String,
    policy: String,
    param_ref: Option<Value>,
    /// matchResources.
    pub resources: Matcher,
    /// validationActions, as written (`Deny`, `Warn`, `Audit`).
    pub actions: Vec<String>,
}

impl Binding {
    /// Whether its matchResources select by namespace labels.
    pub(super) fn needs_namespace(&self) -> bool {
        self.resources.selects_namespaces()
    }

    /// The binding `v`.
    pub(super) fn new(v: &Value) -> Binding {
        let spec = v.get("spec").unwrap_or(&Value::Null);
        let actions = spec
            .get("validationActions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Binding {
            name: str_at(v, "/metadata/name").to_string(),
            policy: str_at(spec, "/policyName").to_string(),
            param_ref: spec.get("paramRef").filter(|p| p.is_object()).cloned(),
            resources: Matcher::new(spec.get("matchResources")),
            actions,
        }
    }

    /// The policy bound.
    pub(super) fn policy(&self) -> &str {
        &self.policy
    }
}

/// What the params of a binding are looked up with.
pub(super) trait Params: Send + Sync {
    /// The objects of `api_version`/`kind` named `name` (or matching `selector`) in
    /// `namespace` ("" for cluster-scoped or every namespace).
    fn find(
        &self,
        api_version: &str,
        kind: &str,
        namespace: &str,
        name: Option<&str>,
        selector: Option<&Selector>,
    ) -> futures::future::BoxFuture<'_, Result<Vec<Value>, String>>;
}

/// The params objects a binding is evaluated with (None: the policy takes none), or why it
/// cannot be.
pub(super) type ParamsOf = Result<Vec<Option<Value>>, String>;

/// The params of `binding` of the policy `header` for this write (CollectParams).
pub(super) async fn params_of(
    header: &Header,
    binding: &Binding,
    params: &dyn Params,
    attrs: &Attributes<'_>,
) -> ParamsOf {
    match (&header.param_kind, &binding.param_ref) {
        // A binding without paramRef evaluates its policy with null params, even when the
        // policy has a paramKind.
        (None, _) | (Some(_), None) => Ok(vec![None]),
        (Some((api_version, kind)), Some(r)) => {
            let ns = match str_at(r, "/namespace") {
                "" => attrs.namespace,
                n => n,
            };
            let name = Some(str_at(r, "/name")).filter(|n| !n.is_empty());
            let sel = selector(r.get("selector"));
            match params.find(api_version, kind, ns, name, sel.as_ref()).await {
                Ok(found) if found.is_empty() => {
                    if str_at(r, "/parameterNotFoundAction") == "Allow" {
                        Ok(Vec::new())
                    } else {
                        Err("failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction".to_string())
                    }
                }
                Ok(found) => Ok(found.into_iter().map(Some).collect()),
                Err(e) => Err(format!("failed to configure binding: {e}")),
            }
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::registry::admission::{Equivalents, Operation};
    use serde_json::json;

    /// A resource served at these versions, converted by rewriting apiVersion (also the
    /// mutating policies' tests').
    pub(in crate::registry::admission) struct Versions(
        pub(in crate::registry::admission) Vec<String>,
    );

    impl Equivalents for Versions {
        fn versions(&self) -> &[String] {
            &self.0
        }

        fn convert(&self, mut obj: Value, version: &str) -> Result<Value, String> {
            obj["apiVersion"] = json!(format!("example.com/{version}"));
            Ok(obj)
        }
    }

    fn rules(version: &str) -> Value {
        json!([{"apiGroups": ["example.com"], "apiVersions": [version],
                "operations": ["CREATE"], "resources": ["gadgets"]}])
    }

    #[test]
    fn equivalent_rules_match_other_versions_and_exact_ones_do_not() {
        let two = Versions(vec!["v1".into(), "v2".into()]);
        let attrs = Attributes {
            group: "example.com",
            version: "v2",
            kind: "Gadget",
            resource: "gadgets",
            equivalents: Some(&two),
            ..Attributes::for_tests(Operation::Create)
        };
        let matcher = |extra: Value| {
            let mut m = json!({"resourceRules": rules("v1")});
            m.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            Matcher::new(Some(&m)).matched(&attrs, "", None, None)
        };
        assert_eq!(matcher(json!({})), Some(Some("v1".to_string())));
        assert_eq!(matcher(json!({"matchPolicy": "Exact"})), None);
        // Excluding v1 excludes the v2 write too, under Equivalent.
        assert_eq!(matcher(json!({"excludeResourceRules": rules("v1")})), None);
        // A rule naming the version written wins over an equivalent one.
        assert_eq!(
            matcher(json!({"resourceRules": [rules("v1")[0], rules("v2")[0]]})),
            Some(None)
        );
        // Without other versions, nothing is equivalent.
        let single = Attributes {
            equivalents: None,
            ..attrs
        };
        let m = json!({"resourceRules": rules("v1")});
        assert_eq!(
            Matcher::new(Some(&m)).matched(&single, "", None, None),
            None
        );
    }
}
