//! The audit policy (audit.k8s.io/v1 Policy): read from YAML or JSON, checked as upstream's
//! validation checks it, and evaluated per request as upstream's policy checker
//! (k8s.io/apiserver pkg/audit/policy/checker.go) does: the first matching rule decides the
//! level, its omitted stages (united with the policy's) and whether managed fields are
//! dropped; no match means level None. May use: api.

use crate::api::{RequestInfo, UserInfo};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// How much of a request is recorded (audit.k8s.io/v1 Level), in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Level {
    /// Not audited.
    None,
    /// User, verb, object reference, response status, annotations.
    Metadata,
    /// Metadata plus the request object.
    Request,
    /// Request plus the response object.
    RequestResponse,
}

const LEVELS: [(&str, Level); 4] = [
    ("None", Level::None),
    ("Metadata", Level::Metadata),
    ("Request", Level::Request),
    ("RequestResponse", Level::RequestResponse),
];

impl Level {
    /// Its name in the API.
    pub(crate) fn as_str(self) -> &'static str {
        LEVELS
            .iter()
            .find(|(_, l)| *l == self)
            .map_or("None", |(n, _)| n)
    }
}

/// A stage of request handling at which an event is written (audit.k8s.io/v1 Stage).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stage {
    /// As soon as the request is received, before it is handled.
    RequestReceived,
    /// Once the response headers are sent, for long-running requests (watch) only.
    ResponseStarted,
    /// Once the response body is complete.
    ResponseComplete,
    /// When the handler panicked.
    Panic,
}

const STAGES: [(&str, Stage); 4] = [
    ("RequestReceived", Stage::RequestReceived),
    ("ResponseStarted", Stage::ResponseStarted),
    ("ResponseComplete", Stage::ResponseComplete),
    ("Panic", Stage::Panic),
];

impl Stage {
    /// Its name in the API.
    pub(crate) fn as_str(self) -> &'static str {
        STAGES
            .iter()
            .find(|(_, s)| *s == self)
            .map_or("", |(n, _)| n)
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

/// A set of stages (omitStages).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct StageSet(u8);

impl StageSet {
    /// Whether `stage` is in the set.
    pub(crate) fn contains(self, stage: Stage) -> bool {
        self.0 & stage.bit() != 0
    }

    fn union(self, other: StageSet) -> StageSet {
        StageSet(self.0 | other.0)
    }
}

/// What the policy says about one request (upstream's RequestAuditConfig with its level).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RequestConfig {
    /// The level to record at.
    pub level: Level,
    /// Stages for which no event is written.
    pub omit_stages: StageSet,
    /// Whether metadata.managedFields is dropped from request and response objects.
    pub omit_managed_fields: bool,
}

/// Why a policy could not be loaded.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// The file could not be read.
    #[error("cannot read --audit-policy-file {0}")]
    Read(PathBuf, #[source] std::io::Error),
    /// The file is neither YAML nor JSON of the Policy's shape.
    #[error("cannot decode --audit-policy-file {0}")]
    Decode(PathBuf, #[source] serde_yaml::Error),
    /// The file decodes, but a field holds a value the policy does not allow.
    #[error("invalid --audit-policy-file {path}: {problems}")]
    Invalid {
        /// The file.
        path: PathBuf,
        /// `field: problem` for each invalid field, joined with `; `.
        problems: String,
    },
}

/// The policy as written (audit.k8s.io/v1 Policy); strings are checked by [`validate`].
#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct PolicyDoc {
    api_version: String,
    kind: String,
    metadata: Option<serde::de::IgnoredAny>,
    rules: Vec<RuleDoc>,
    omit_stages: Vec<String>,
    omit_managed_fields: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
struct RuleDoc {
    level: String,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    #[serde(rename = "nonResourceURLs")]
    non_resource_urls: Vec<String>,
    omit_stages: Vec<String>,
    omit_managed_fields: Option<bool>,
}

/// Resources of one API group a rule applies to (audit.k8s.io/v1 GroupResources).
#[derive(Debug, Clone, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", default)]
struct GroupResources {
    group: String,
    resources: Vec<String>,
    resource_names: Vec<String>,
}

#[derive(Debug, Clone)]
struct Rule {
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    non_resource_urls: Vec<String>,
    config: RequestConfig,
}

/// A loaded, valid policy.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    rules: Vec<Rule>,
    default: RequestConfig,
}

const API_VERSION: &str = "audit.k8s.io/v1";

impl Policy {
    /// Reads and checks the policy file at `path`. Fields the Policy does not have are
    /// ignored, as upstream's decoder ignores them, with a warning naming them.
    pub(crate) fn load(path: &Path) -> Result<Policy, Error> {
        let bytes = std::fs::read(path).map_err(|e| Error::Read(path.to_path_buf(), e))?;
        Policy::parse(&bytes).map_err(|e| match e {
            ParseError::Decode(e) => Error::Decode(path.to_path_buf(), e),
            ParseError::Invalid(problems) => Error::Invalid {
                path: path.to_path_buf(),
                problems: problems.join("; "),
            },
        })
    }

    fn parse(bytes: &[u8]) -> Result<Policy, ParseError> {
        let mut unknown = Vec::new();
        let de = serde_yaml::Deserializer::from_slice(bytes);
        let doc: PolicyDoc = serde_ignored::deserialize(de, |path| unknown.push(path.to_string()))
            .map_err(ParseError::Decode)?;
        if !unknown.is_empty() {
            tracing::warn!(fields = %unknown.join(", "), "audit policy: unknown fields ignored");
        }
        validate(doc).map_err(ParseError::Invalid)
    }

    /// The level and settings for `user` doing what `info` describes (LevelAndStages in k8s).
    /// `user` is None when the request could not be authenticated.
    pub(crate) fn evaluate(&self, user: Option<&UserInfo>, info: &RequestInfo) -> RequestConfig {
        self.rules
            .iter()
            .find(|r| r.matches(user, info))
            .map_or(self.default, |r| r.config)
    }
}

enum ParseError {
    Decode(serde_yaml::Error),
    Invalid(Vec<String>),
}

fn parse_stages(names: &[String], field: &str, problems: &mut Vec<String>) -> StageSet {
    let mut set = StageSet::default();
    for (i, name) in names.iter().enumerate() {
        match STAGES.iter().find(|(n, _)| n == name) {
            Some((_, stage)) => set = set.union(StageSet(stage.bit())),
            None => problems.push(format!(
                "{field}[{i}]: Invalid value: {name:?}: allowed stages are {}",
                STAGES.map(|(n, _)| n).join(",")
            )),
        }
    }
    set
}

fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253
        && s.split('.').all(|label| {
            !label.is_empty()
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        })
}

/// upstream's ValidatePolicy plus the decoder's apiVersion/kind and at-least-one-rule checks.
fn validate(doc: PolicyDoc) -> Result<Policy, Vec<String>> {
    let mut problems = Vec::new();
    if doc.api_version != API_VERSION {
        problems.push(format!(
            "apiVersion: Unsupported value: {:?}: supported values: {API_VERSION:?}",
            doc.api_version
        ));
    }
    if doc.kind != "Policy" {
        problems.push(format!(
            "kind: Unsupported value: {:?}: supported values: \"Policy\"",
            doc.kind
        ));
    }
    if doc.rules.is_empty() {
        problems.push("rules: Required value: a policy needs at least one rule".into());
    }
    let omit_stages = parse_stages(&doc.omit_stages, "omitStages", &mut problems);
    let default = RequestConfig {
        level: Level::None,
        omit_stages,
        omit_managed_fields: doc.omit_managed_fields,
    };
    let mut rules = Vec::with_capacity(doc.rules.len());
    for (i, r) in doc.rules.into_iter().enumerate() {
        let at = format!("rules[{i}]");
        let level = match LEVELS.iter().find(|(n, _)| *n == r.level) {
            Some((_, level)) => *level,
            None if r.level.is_empty() => {
                problems.push(format!("{at}.level: Required value"));
                Level::None
            }
            None => {
                problems.push(format!(
                    "{at}.level: Unsupported value: {:?}: supported values: {}",
                    r.level,
                    LEVELS.map(|(n, _)| format!("{n:?}")).join(", ")
                ));
                Level::None
            }
        };
        for (j, url) in r.non_resource_urls.iter().enumerate() {
            if url == "*" {
                continue;
            }
            if !url.starts_with('/') {
                problems.push(format!("{at}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL rules must begin with a '/' character"));
            }
            if url[..url.len().saturating_sub(1)].contains('*') {
                problems.push(format!("{at}.nonResourceURLs[{j}]: Invalid value: {url:?}: non-resource URL wildcards '*' must be the final character of the rule"));
            }
        }
        for (j, gr) in r.resources.iter().enumerate() {
            if !gr.group.is_empty() && !is_dns_subdomain(&gr.group) {
                problems.push(format!(
                    "{at}.resources[{j}].group: Invalid value: {:?}: must be a lowercase DNS subdomain (an API group, without a version)",
                    gr.group
                ));
            }
            if !gr.resource_names.is_empty() && gr.resources.is_empty() {
                problems.push(format!(
                    "{at}.resources[{j}].resourceNames: Invalid value: {:?}: using resourceNames requires at least one resource",
                    gr.resource_names
                ));
            }
        }
        if !r.non_resource_urls.is_empty() && (!r.resources.is_empty() || !r.namespaces.is_empty())
        {
            problems.push(format!(
                "{at}.nonResourceURLs: Invalid value: {:?}: rules cannot apply to both regular resources and non-resource URLs",
                r.non_resource_urls
            ));
        }
        let stages = parse_stages(&r.omit_stages, &format!("{at}.omitStages"), &mut problems);
        rules.push(Rule {
            users: r.users,
            user_groups: r.user_groups,
            verbs: r.verbs,
            resources: r.resources,
            namespaces: r.namespaces,
            non_resource_urls: r.non_resource_urls,
            config: RequestConfig {
                level,
                omit_stages: stages.union(omit_stages),
                omit_managed_fields: r.omit_managed_fields.unwrap_or(doc.omit_managed_fields),
            },
        });
    }
    let _ = doc.metadata;
    if problems.is_empty() {
        Ok(Policy { rules, default })
    } else {
        Err(problems)
    }
}

fn has(list: &[String], value: &str) -> bool {
    list.iter().any(|s| s == value)
}

impl Rule {
    /// ruleMatches in k8s.
    fn matches(&self, user: Option<&UserInfo>, info: &RequestInfo) -> bool {
        if !self.users.is_empty() && !user.is_some_and(|u| has(&self.users, &u.name)) {
            return false;
        }
        if !self.user_groups.is_empty()
            && !user.is_some_and(|u| u.groups.iter().any(|g| has(&self.user_groups, g)))
        {
            return false;
        }
        if !self.verbs.is_empty() && !has(&self.verbs, &info.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return self.matches_resource(info);
        }
        if !self.non_resource_urls.is_empty() {
            return !info.is_resource_request
                && self
                    .non_resource_urls
                    .iter()
                    .any(|spec| path_matches(&info.path, spec));
        }
        true
    }

    /// ruleMatchesResource in k8s.
    fn matches_resource(&self, info: &RequestInfo) -> bool {
        if !info.is_resource_request {
            return false;
        }
        // Cluster-scoped requests have the empty namespace, which a rule names as "".
        if !self.namespaces.is_empty() && !has(&self.namespaces, &info.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let (resource, sub) = (info.resource.as_str(), info.subresource.as_str());
        for gr in self
            .resources
            .iter()
            .filter(|gr| gr.group == info.api_group)
        {
            if gr.resources.is_empty() {
                return true;
            }
            if !gr.resource_names.is_empty() && !has(&gr.resource_names, &info.name) {
                continue;
            }
            for res in &gr.resources {
                // With a subresource, the rule must name "resource/subresource".
                let combined = if sub.is_empty() {
                    res == resource
                } else {
                    res.split_once('/') == Some((resource, sub))
                };
                if combined || res == "*" {
                    return true;
                }
                if !sub.is_empty() && res.strip_prefix("*/") == Some(sub) {
                    return true;
                }
                if res.strip_suffix("/*") == Some(resource) {
                    return true;
                }
            }
        }
        false
    }
}

/// pathMatches in k8s: `*`, the exact path, or a prefix ending in `*`.
fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
