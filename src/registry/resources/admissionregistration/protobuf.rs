//! The protobuf forms of the group's kinds (client-go's typed clients send them), decoded into
//! the JSON kube-apiserver would serialize: Go field order, `omitempty` left out, required
//! fields present. Embedded rules are inline, as the Go types embed them. The canonical round
//! trip and the defaults run on the result as on any JSON body. May use: api.

use crate::api::protobuf::{message, metadata, Obj, ProtobufError};
use base64::Engine as _;
use k8s_pb::api::admissionregistration::{v1 as pb1, v1beta1 as pb1beta1};
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use serde_json::{Map, Value};

/// A string field without omitempty: present even when empty or unset.
fn always(o: Obj, key: &str, v: &Option<String>) -> Obj {
    o.put(key, Value::from(v.clone().unwrap_or_default()))
}

/// A metav1.LabelSelector: a requirement's key and operator have no omitempty.
fn label_selector(s: &meta::LabelSelector) -> Obj {
    Obj::default().str_map("matchLabels", &s.match_labels).list(
        "matchExpressions",
        &s.match_expressions,
        |q| {
            let o = always(Obj::default(), "key", &q.key);
            always(o, "operator", &q.operator).strs("values", &q.values)
        },
    )
}

/// A metav1.Condition (every field but observedGeneration without omitempty).
fn condition(c: &meta::Condition) -> Obj {
    let o = always(Obj::default(), "type", &c.r#type);
    let o = always(o, "status", &c.status)
        .int("observedGeneration", c.observed_generation)
        .time("lastTransitionTime", &c.last_transition_time);
    always(always(o, "reason", &c.reason), "message", &c.message)
}

/// A RuleWithOperations, its Rule inline.
fn rule_with_operations(o: Obj, r: &pb1::RuleWithOperations) -> Obj {
    let o = o.strs("operations", &r.operations);
    let Some(rule) = &r.rule else {
        return o;
    };
    o.strs("apiGroups", &rule.api_groups)
        .strs("apiVersions", &rule.api_versions)
        .strs("resources", &rule.resources)
        .opt_str("scope", &rule.scope)
}

/// The decoders of the types v1 and v1beta1 both define, with the same fields.
macro_rules! shared_types {
    ($name:ident, $pb:path) => {
        mod $name {
            use super::{always, label_selector, rule_with_operations, Obj};
            use $pb as pb;

            pub(super) fn param_kind(k: &pb::ParamKind) -> Obj {
                Obj::default()
                    .str("apiVersion", &k.api_version)
                    .str("kind", &k.kind)
            }

            pub(super) fn param_ref(r: &pb::ParamRef) -> Obj {
                Obj::default()
                    .str("name", &r.name)
                    .str("namespace", &r.namespace)
                    .obj("selector", r.selector.as_ref().map(label_selector))
                    .opt_str("parameterNotFoundAction", &r.parameter_not_found_action)
            }

            fn named_rule(n: &pb::NamedRuleWithOperations) -> Obj {
                let o = Obj::default().strs("resourceNames", &n.resource_names);
                match &n.rule_with_operations {
                    Some(r) => rule_with_operations(o, r),
                    None => o,
                }
            }

            pub(super) fn match_resources(m: &pb::MatchResources) -> Obj {
                Obj::default()
                    .obj(
                        "namespaceSelector",
                        m.namespace_selector.as_ref().map(label_selector),
                    )
                    .obj(
                        "objectSelector",
                        m.object_selector.as_ref().map(label_selector),
                    )
                    .list("resourceRules", &m.resource_rules, named_rule)
                    .list(
                        "excludeResourceRules",
                        &m.exclude_resource_rules,
                        named_rule,
                    )
                    .opt_str("matchPolicy", &m.match_policy)
            }

            pub(super) fn match_condition(c: &pb::MatchCondition) -> Obj {
                always(
                    always(Obj::default(), "name", &c.name),
                    "expression",
                    &c.expression,
                )
            }

            pub(super) fn variable(v: &pb::Variable) -> Obj {
                always(
                    always(Obj::default(), "name", &v.name),
                    "expression",
                    &v.expression,
                )
            }
        }
    };
}

shared_types!(v1_types, k8s_pb::api::admissionregistration::v1);
shared_types!(v1beta1_types, k8s_pb::api::admissionregistration::v1beta1);

/// A WebhookClientConfig: the CA bundle as base64, as JSON carries `[]byte`.
fn client_config(c: &Option<pb1::WebhookClientConfig>) -> Obj {
    let c = c.clone().unwrap_or_default();
    let service = c.service.as_ref().map(|s| {
        let o = always(Obj::default(), "namespace", &s.namespace);
        always(o, "name", &s.name)
            .opt_str("path", &s.path)
            .opt_int("port", s.port.map(i64::from))
    });
    let ca = c
        .ca_bundle
        .filter(|b| !b.is_empty())
        .map(|b| base64::engine::general_purpose::STANDARD.encode(b));
    Obj::default()
        .opt_str("url", &c.url)
        .obj("service", service)
        .str("caBundle", &ca)
}

/// The fields both webhook kinds share, in Go order up to sideEffects.
macro_rules! webhook_fields {
    ($h:expr) => {{
        let h = $h;
        always(Obj::default(), "name", &h.name)
            .obj("clientConfig", Some(client_config(&h.client_config)))
            .list("rules", &h.rules, |r| {
                rule_with_operations(Obj::default(), r)
            })
            .opt_str("failurePolicy", &h.failure_policy)
            .opt_str("matchPolicy", &h.match_policy)
            .obj(
                "namespaceSelector",
                h.namespace_selector.as_ref().map(label_selector),
            )
            .obj(
                "objectSelector",
                h.object_selector.as_ref().map(label_selector),
            )
            .opt_str("sideEffects", &h.side_effects)
            .opt_int("timeoutSeconds", h.timeout_seconds.map(i64::from))
            .put(
                "admissionReviewVersions",
                h.admission_review_versions
                    .iter()
                    .cloned()
                    .map(Value::String)
                    .collect(),
            )
    }};
}

/// Decodes a MutatingWebhookConfiguration.
pub(super) fn mutating_webhook_configuration(
    raw: &[u8],
) -> Result<Map<String, Value>, ProtobufError> {
    let c = message::<pb1::MutatingWebhookConfiguration>(raw, "MutatingWebhookConfiguration")?;
    Ok(metadata(&c.metadata)
        .list("webhooks", &c.webhooks, |h| {
            webhook_fields!(h)
                .opt_str("reinvocationPolicy", &h.reinvocation_policy)
                .list(
                    "matchConditions",
                    &h.match_conditions,
                    v1_types::match_condition,
                )
        })
        .into_map())
}

/// Decodes a ValidatingWebhookConfiguration.
pub(super) fn validating_webhook_configuration(
    raw: &[u8],
) -> Result<Map<String, Value>, ProtobufError> {
    let c = message::<pb1::ValidatingWebhookConfiguration>(raw, "ValidatingWebhookConfiguration")?;
    Ok(metadata(&c.metadata)
        .list("webhooks", &c.webhooks, |h| {
            webhook_fields!(h).list(
                "matchConditions",
                &h.match_conditions,
                v1_types::match_condition,
            )
        })
        .into_map())
}

/// Decodes a ValidatingAdmissionPolicy (its status too, for the status subresource).
pub(super) fn validating_admission_policy(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    let p = message::<pb1::ValidatingAdmissionPolicy>(raw, "ValidatingAdmissionPolicy")?;
    let s = p.spec.clone().unwrap_or_default();
    let spec = Obj::default()
        .obj("paramKind", s.param_kind.as_ref().map(v1_types::param_kind))
        .obj(
            "matchConstraints",
            s.match_constraints.as_ref().map(v1_types::match_resources),
        )
        .list("validations", &s.validations, |v| {
            always(Obj::default(), "expression", &v.expression)
                .str("message", &v.message)
                .opt_str("reason", &v.reason)
                .str("messageExpression", &v.message_expression)
        })
        .opt_str("failurePolicy", &s.failure_policy)
        .list("auditAnnotations", &s.audit_annotations, |a| {
            always(
                always(Obj::default(), "key", &a.key),
                "valueExpression",
                &a.value_expression,
            )
        })
        .list(
            "matchConditions",
            &s.match_conditions,
            v1_types::match_condition,
        )
        .list("variables", &s.variables, v1_types::variable);
    let status = p.status.as_ref().map(|st| {
        let tc = st.type_checking.as_ref().map(|t| {
            Obj::default().list("expressionWarnings", &t.expression_warnings, |w| {
                always(
                    always(Obj::default(), "fieldRef", &w.field_ref),
                    "warning",
                    &w.warning,
                )
            })
        });
        Obj::default()
            .int("observedGeneration", st.observed_generation)
            .obj("typeChecking", tc)
            .list("conditions", &st.conditions, condition)
    });
    Ok(metadata(&p.metadata)
        .obj("spec", Some(spec))
        .obj("status", status)
        .into_map())
}

/// Decodes a ValidatingAdmissionPolicyBinding.
pub(super) fn validating_admission_policy_binding(
    raw: &[u8],
) -> Result<Map<String, Value>, ProtobufError> {
    let b =
        message::<pb1::ValidatingAdmissionPolicyBinding>(raw, "ValidatingAdmissionPolicyBinding")?;
    let s = b.spec.clone().unwrap_or_default();
    let spec = Obj::default()
        .str("policyName", &s.policy_name)
        .obj("paramRef", s.param_ref.as_ref().map(v1_types::param_ref))
        .obj(
            "matchResources",
            s.match_resources.as_ref().map(v1_types::match_resources),
        )
        .strs("validationActions", &s.validation_actions);
    Ok(metadata(&b.metadata).obj("spec", Some(spec)).into_map())
}

/// Decodes a MutatingAdmissionPolicy (v1beta1).
pub(super) fn mutating_admission_policy(raw: &[u8]) -> Result<Map<String, Value>, ProtobufError> {
    let p = message::<pb1beta1::MutatingAdmissionPolicy>(raw, "MutatingAdmissionPolicy")?;
    let s = p.spec.clone().unwrap_or_default();
    let expression = |e: &Option<String>| always(Obj::default(), "expression", e);
    let spec = Obj::default()
        .obj(
            "paramKind",
            s.param_kind.as_ref().map(v1beta1_types::param_kind),
        )
        .obj(
            "matchConstraints",
            s.match_constraints
                .as_ref()
                .map(v1beta1_types::match_resources),
        )
        .list("variables", &s.variables, v1beta1_types::variable)
        .list("mutations", &s.mutations, |m| {
            always(Obj::default(), "patchType", &m.patch_type)
                .obj(
                    "applyConfiguration",
                    m.apply_configuration
                        .as_ref()
                        .map(|a| expression(&a.expression)),
                )
                .obj(
                    "jsonPatch",
                    m.json_patch.as_ref().map(|j| expression(&j.expression)),
                )
        })
        .opt_str("failurePolicy", &s.failure_policy)
        .list(
            "matchConditions",
            &s.match_conditions,
            v1beta1_types::match_condition,
        )
        .opt_str("reinvocationPolicy", &s.reinvocation_policy);
    Ok(metadata(&p.metadata).obj("spec", Some(spec)).into_map())
}

/// Decodes a MutatingAdmissionPolicyBinding (v1beta1).
pub(super) fn mutating_admission_policy_binding(
    raw: &[u8],
) -> Result<Map<String, Value>, ProtobufError> {
    let b =
        message::<pb1beta1::MutatingAdmissionPolicyBinding>(raw, "MutatingAdmissionPolicyBinding")?;
    let s = b.spec.clone().unwrap_or_default();
    let spec = Obj::default()
        .str("policyName", &s.policy_name)
        .obj(
            "paramRef",
            s.param_ref.as_ref().map(v1beta1_types::param_ref),
        )
        .obj(
            "matchResources",
            s.match_resources
                .as_ref()
                .map(v1beta1_types::match_resources),
        );
    Ok(metadata(&b.metadata).obj("spec", Some(spec)).into_map())
}
