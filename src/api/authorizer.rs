//! What an authorizer is (k8s.io/apiserver pkg/authorization/authorizer): a decision for a
//! user doing what a request asks, and the rules a user holds (for SelfSubjectRulesReview).
//! The chain's authorization filter, the access-review APIs and RBAC's escalation checks all
//! speak it. Also what TokenReview asks of the authenticator. May use: api.

use super::{RequestInfo, UserInfo};
use std::sync::Arc;

/// An authorization decision, with upstream's reason texts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Go on; the reason says what allowed it (`RBAC: allowed by ...`, or empty).
    Allow(Arc<str>),
    /// This authorizer has no opinion; the next one decides. Refused when none is left.
    /// (None of kapi's authorizers denies outright, as upstream's webhook authorizer can.)
    NoOpinion(String),
}

impl Decision {
    /// Allow, with no reason (the privileged group, AlwaysAllow). Shares one empty reason, so
    /// allowing a request allocates nothing.
    pub(crate) fn allow() -> Decision {
        static EMPTY: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
        Decision::Allow(EMPTY.get_or_init(|| Arc::from("")).clone())
    }

    /// Whether the request may go on.
    pub(crate) fn allowed(&self) -> bool {
        matches!(self, Decision::Allow(_))
    }

    /// The reason text ("" when there is none).
    pub(crate) fn reason(&self) -> &str {
        match self {
            Decision::Allow(r) => r,
            Decision::NoOpinion(r) => r,
        }
    }
}

/// One RBAC PolicyRule (rbac/v1), as rules reviews and escalation checks compare them.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub(crate) struct PolicyRule {
    /// Verbs, `*` for all.
    pub verbs: Vec<String>,
    /// API groups, `*` for all.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    /// Resources (`configmaps`, `configmaps/status`, `*`, `*/status`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Object names; empty means every object.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    /// Non-resource paths, exact or with a trailing `*`.
    #[serde(rename = "nonResourceURLs", skip_serializing_if = "Vec::is_empty")]
    pub non_resource_urls: Vec<String>,
}

/// What a user may do in one namespace (SubjectRulesReviewStatus without its JSON shape).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Rules {
    /// Rules on resources.
    pub resource: Vec<PolicyRule>,
    /// Rules on non-resource paths.
    pub non_resource: Vec<PolicyRule>,
    /// Whether the list may leave out some of what the user may do.
    pub incomplete: bool,
    /// Why resolving failed in part ("" when it did not).
    pub evaluation_error: String,
}

/// Decides whether a user may do what a request asks.
pub(crate) trait Authorizer: Send + Sync {
    /// The decision for `user` doing `attrs`.
    fn authorize(&self, user: &UserInfo, attrs: &RequestInfo) -> Decision;

    /// The rules `user` holds in `namespace`. An authorizer that cannot list them says the
    /// list is incomplete.
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> Rules {
        Rules {
            incomplete: true,
            ..Rules::default()
        }
    }
}

/// Answers "who is this bearer token?" for TokenReview: the user and the audiences the
/// token is valid for among `audiences`, or why it is not accepted.
pub(crate) trait TokenReviewer: Send + Sync {
    /// Authenticates `token` for `audiences`.
    fn review(&self, token: &str, audiences: &[String]) -> Result<(UserInfo, Vec<String>), String>;
}
