use super::*;
use crate::api::authorizer::{Decision, PolicyRule, Rules};
use crate::api::RequestInfo;
use std::sync::Arc;

/// Allows alice to get configmaps in team-a and nothing else; lists that one rule.
struct AliceReadsConfigMaps;

impl Authorizer for AliceReadsConfigMaps {
    fn authorize(&self, user: &UserInfo, a: &RequestInfo) -> Decision {
        if user.name == "alice"
            && a.verb == "get"
            && a.resource == "configmaps"
            && a.namespace == "team-a"
        {
            Decision::Allow(Arc::from("allowed by test"))
        } else if user.name == "mallory" {
            Decision::NoOpinion("mallory is not welcome".into())
        } else {
            Decision::NoOpinion(String::new())
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let mut rules = Rules::default();
        if user.name == "alice" && namespace == "team-a" {
            rules.resource.push(PolicyRule {
                verbs: vec!["get".into()],
                api_groups: vec!["".into()],
                resources: vec!["configmaps".into()],
                ..PolicyRule::default()
            });
        }
        rules
    }
}

fn user(name: &str) -> UserInfo {
    UserInfo {
        name: name.into(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    }
}

fn ask<'a>(u: &'a UserInfo, ns: &'a str) -> Asker<'a> {
    Asker {
        user: u,
        namespace: ns,
        authorizer: &AliceReadsConfigMaps,
        tokens: None,
    }
}

fn ssar(attrs: Value) -> Value {
    json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": attrs})
}

#[test]
fn self_access_review_asks_the_authorizer_for_the_requester() {
    let cm = json!({"resourceAttributes": {"verb": "get", "resource": "configmaps", "namespace": "team-a"}});
    let alice = user("alice");
    let got = Review::Access
        .create(ssar(cm.clone()), &ask(&alice, ""))
        .unwrap();
    assert_eq!(
        got["status"],
        json!({"allowed": true, "reason": "allowed by test"})
    );
    let bob = user("bob");
    let got = Review::Access
        .create(ssar(cm.clone()), &ask(&bob, ""))
        .unwrap();
    assert_eq!(got["status"], json!({"allowed": false}));
    let mallory = user("mallory");
    let got = Review::Access.create(ssar(cm), &ask(&mallory, "")).unwrap();
    assert_eq!(
        got["status"],
        json!({"allowed": false, "reason": "mallory is not welcome"})
    );
}

#[test]
fn access_reviews_are_validated_as_upstream() {
    let bob = user("bob");
    let Err(Error::Invalid { kind, errors, .. }) =
        Review::Access.create(ssar(json!({})), &ask(&bob, ""))
    else {
        panic!("an empty spec must be invalid")
    };
    assert_eq!(kind, "SelfSubjectAccessReview");
    assert_eq!(
        errors[0].to_string(),
        "spec.resourceAttributes: Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"
    );
    let both = json!({"resourceAttributes": {"verb": "get"}, "nonResourceAttributes": {"verb": "get", "path": "/"}});
    let Err(Error::Invalid { errors, .. }) = Review::Access.create(ssar(both), &ask(&bob, ""))
    else {
        panic!("both attributes must be invalid")
    };
    assert!(errors[0]
        .to_string()
        .starts_with("spec.nonResourceAttributes: Invalid value: "));
    assert!(errors[0]
        .to_string()
        .ends_with("cannot be specified in combination with resourceAttributes"));
    // A SubjectAccessReview names its subject.
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                     "spec": {"nonResourceAttributes": {"verb": "get", "path": "/healthz"}}});
    let Err(Error::Invalid { errors, .. }) = Review::SubjectAccess.create(sar, &ask(&bob, ""))
    else {
        panic!("a SubjectAccessReview without a user must be invalid")
    };
    assert_eq!(
        errors[0].to_string(),
        "spec.user: Invalid value: \"\": at least one of user or group must be specified"
    );
}

#[test]
fn subject_access_review_asks_about_its_subject() {
    let bob = user("bob");
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                     "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "configmaps", "namespace": "team-a"}}});
    let got = Review::SubjectAccess.create(sar, &ask(&bob, "")).unwrap();
    assert_eq!(got["status"]["allowed"], true);
    let local = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "LocalSubjectAccessReview",
                       "spec": {"user": "alice", "resourceAttributes": {"verb": "get", "resource": "configmaps", "namespace": "team-a"}}});
    let got = Review::LocalAccess
        .create(local.clone(), &ask(&bob, "team-a"))
        .unwrap();
    assert_eq!(got["status"]["allowed"], true);
    assert_eq!(got["metadata"]["namespace"], "team-a");
    assert!(matches!(
        Review::LocalAccess.create(local, &ask(&bob, "team-b")),
        Err(Error::BadRequest(m)) if m == "spec.resourceAttributes.namespace must match namespace: team-b"
    ));
}

#[test]
fn rules_review_lists_the_authorizers_rules_and_needs_a_namespace() {
    let alice = user("alice");
    let req = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                     "spec": {"namespace": "team-a"}});
    let got = Review::Rules.create(req, &ask(&alice, "")).unwrap();
    assert_eq!(got["spec"], json!({}));
    assert_eq!(
        got["status"],
        json!({"resourceRules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"]}],
               "nonResourceRules": [], "incomplete": false})
    );
    let no_ns = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
                       "spec": {}});
    assert!(matches!(
        Review::Rules.create(no_ns, &ask(&alice, "")),
        Err(Error::BadRequest(m)) if m == "no namespace on request"
    ));
}
