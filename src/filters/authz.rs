//! Authorization (WithAuthorization in k8s): the union of the `--authorization-mode`
//! authorizers, in order, after the privileged-group authorizer that always allows
//! system:masters (pkg/kubeapiserver/authorizer/reload.go). The first authorizer with an
//! opinion decides; when none has one, the request is refused with their reasons.
//! May use: api.

use crate::api::authorizer::{Authorizer, Decision, PolicyRule, Rules};
use crate::api::{RequestInfo, UserInfo};
use std::sync::Arc;

/// The group allowed everything, before any mode is asked.
pub(crate) const PRIVILEGED_GROUP: &str = "system:masters";

/// Allows the privileged group before any mode is asked.
struct PrivilegedGroup;

impl PrivilegedGroup {
    fn allows(user: &UserInfo) -> bool {
        user.groups.iter().any(|g| g == PRIVILEGED_GROUP)
    }
}

/// `--authorization-mode=AlwaysAllow`: everything, for everyone (anonymous users included).
pub(crate) struct AlwaysAllow;

fn star() -> Vec<String> {
    vec!["*".into()]
}

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _: &UserInfo, _: &RequestInfo) -> Decision {
        Decision::allow()
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> Rules {
        Rules {
            resource: vec![PolicyRule {
                verbs: star(),
                api_groups: star(),
                resources: star(),
                ..PolicyRule::default()
            }],
            non_resource: vec![PolicyRule {
                verbs: star(),
                non_resource_urls: star(),
                ..PolicyRule::default()
            }],
            ..Rules::default()
        }
    }
}

/// `--authorization-mode=AlwaysDeny`: no opinion on anything ("Everything is forbidden.").
pub(crate) struct AlwaysDeny;

impl Authorizer for AlwaysDeny {
    fn authorize(&self, _: &UserInfo, _: &RequestInfo) -> Decision {
        Decision::NoOpinion("Everything is forbidden.".into())
    }

    fn rules_for(&self, _: &UserInfo, _: &str) -> Rules {
        Rules::default()
    }
}

/// The privileged-group authorizer, then the modes in order.
pub(crate) struct Union {
    modes: Vec<Arc<dyn Authorizer>>,
}

impl Union {
    /// The union of `modes`, after the privileged group.
    pub(crate) fn new(modes: Vec<Arc<dyn Authorizer>>) -> Union {
        Union { modes }
    }
}

impl Authorizer for Union {
    fn authorize(&self, user: &UserInfo, attrs: &RequestInfo) -> Decision {
        if PrivilegedGroup::allows(user) {
            return Decision::allow();
        }
        let mut reasons = Vec::new();
        for mode in &self.modes {
            match mode.authorize(user, attrs) {
                Decision::NoOpinion(reason) => {
                    if !reason.is_empty() {
                        reasons.push(reason);
                    }
                }
                allowed => return allowed,
            }
        }
        Decision::NoOpinion(reasons.join("\n"))
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> Rules {
        let mut all = Rules::default();
        let mut errors = Vec::new();
        for mode in &self.modes {
            let rules = mode.rules_for(user, namespace);
            all.resource.extend(rules.resource);
            all.non_resource.extend(rules.non_resource);
            all.incomplete |= rules.incomplete;
            if !rules.evaluation_error.is_empty() {
                errors.push(rules.evaluation_error);
            }
        }
        all.evaluation_error = match errors.len() {
            0 | 1 => errors.pop().unwrap_or_default(),
            _ => format!("[{}]", errors.join(", ")),
        };
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn get(p: &str) -> RequestInfo {
        RequestInfo::parse(&http::Method::GET, p, None)
    }

    use crate::api::test_user as user;

    #[test]
    fn privileged_group_first_then_modes_in_order() {
        let deny = Union::new(vec![Arc::new(AlwaysDeny)]);
        let admin = user("admin", &["system:masters"]);
        let bob = user("bob", &["system:authenticated"]);
        assert!(deny.authorize(&admin, &get("/api")).allowed());
        assert_eq!(
            deny.authorize(&bob, &get("/api")),
            Decision::NoOpinion("Everything is forbidden.".into())
        );
        let allow_after_deny = Union::new(vec![Arc::new(AlwaysDeny), Arc::new(AlwaysAllow)]);
        assert!(allow_after_deny
            .authorize(&UserInfo::anonymous(), &get("/api"))
            .allowed());
        let none = Union::new(vec![]);
        assert!(!none.authorize(&bob, &get("/healthz")).allowed());
    }

    #[test]
    fn rules_of_every_mode() {
        let u = Union::new(vec![Arc::new(AlwaysDeny), Arc::new(AlwaysAllow)]);
        let rules = u.rules_for(&user("bob", &[]), "default");
        assert_eq!(rules.resource.len(), 1);
        assert_eq!(rules.non_resource[0].non_resource_urls, vec!["*"]);
        assert!(!rules.incomplete);
    }
}
