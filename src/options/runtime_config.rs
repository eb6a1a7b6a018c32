//! `--runtime-config` (k8s.io/apiserver pkg/server/resourceconfig): turns API group/versions
//! (or single resources) on and off. Keys: `api/all`, `api/ga`, `api/beta`, `api/alpha`,
//! `<group>/<version>` (`api/v1` or `v1` for the core group) and
//! `<group>/<version>/<resource>`; values `true`, `false` or empty (true). The most specific
//! key wins: resource, then group/version, then the version's stage, then `api/all`, then
//! kapi's default.

use std::collections::BTreeMap;

/// A parsed `--runtime-config`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeConfig {
    all: Option<bool>,
    /// By stage: GA, beta, alpha.
    stages: [Option<bool>; 3],
    versions: BTreeMap<(String, String), bool>,
    resources: BTreeMap<(String, String, String), bool>,
}

/// Why a `--runtime-config` entry is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeConfigError {
    #[error("invalid value {value:?} for runtime-config key {key:?}: use true or false")]
    Value { key: String, value: String },
    #[error("invalid runtime-config key {0:?}: use api/all, api/ga, api/beta, api/alpha, <group>/<version> or <group>/<version>/<resource>")]
    Key(String),
    #[error("unknown api group/version in runtime-config: {0}")]
    Unknown(String),
}

/// The stage of a version: 0 GA, 1 beta, 2 alpha.
fn stage(version: &str) -> usize {
    if version.contains("alpha") {
        2
    } else if version.contains("beta") {
        1
    } else {
        0
    }
}

impl RuntimeConfig {
    /// Parses `key=value` entries (each flag value may hold several, comma-separated).
    ///
    /// # Errors
    ///
    /// A value that is not a boolean, or a malformed key.
    pub fn parse<'a>(
        entries: impl IntoIterator<Item = &'a str>,
    ) -> Result<Self, RuntimeConfigError> {
        let mut rc = RuntimeConfig::default();
        for entry in entries.into_iter().flat_map(|e| e.split(',')) {
            let entry = entry.trim();
            if entry.is_empty() {
                continue;
            }
            let (key, value) = entry.split_once('=').unwrap_or((entry, ""));
            let on = match value {
                "" | "true" => true,
                "false" => false,
                _ => {
                    return Err(RuntimeConfigError::Value {
                        key: key.into(),
                        value: value.into(),
                    })
                }
            };
            let parts: Vec<&str> = key.split('/').collect();
            match parts.as_slice() {
                ["api", "all"] => rc.all = Some(on),
                ["api", "ga"] => rc.stages[0] = Some(on),
                ["api", "beta"] => rc.stages[1] = Some(on),
                ["api", "alpha"] => rc.stages[2] = Some(on),
                ["api", v] | [v] if v.starts_with('v') => {
                    rc.versions.insert((String::new(), (*v).to_string()), on);
                }
                [g, v] if !g.is_empty() && !v.is_empty() => {
                    rc.versions.insert(((*g).to_string(), (*v).to_string()), on);
                }
                [g, v, r] if !g.is_empty() && !v.is_empty() && !r.is_empty() => {
                    let g = if *g == "api" { "" } else { g };
                    rc.resources
                        .insert((g.to_string(), (*v).to_string(), (*r).to_string()), on);
                }
                _ => return Err(RuntimeConfigError::Key(key.into())),
            }
        }
        Ok(rc)
    }

    /// Whether nothing was set.
    pub fn is_empty(&self) -> bool {
        *self == RuntimeConfig::default()
    }

    /// Whether `group/version/resource` is served, `default` being kapi's choice.
    pub fn enabled(&self, group: &str, version: &str, resource: &str, default: bool) -> bool {
        let r = (group.to_string(), version.to_string(), resource.to_string());
        if let Some(on) = self.resources.get(&r) {
            return *on;
        }
        if let Some(on) = self.versions.get(&(r.0, r.1)) {
            return *on;
        }
        self.stages[stage(version)].or(self.all).unwrap_or(default)
    }

    /// The group/versions and resources named that are not among `known` (group, version,
    /// resource).
    ///
    /// # Errors
    ///
    /// The first unknown one.
    pub fn check_known(
        &self,
        known: &[(String, String, String)],
    ) -> Result<(), RuntimeConfigError> {
        for (g, v) in self.versions.keys() {
            if !known.iter().any(|(kg, kv, _)| kg == g && kv == v) {
                return Err(RuntimeConfigError::Unknown(gv(g, v)));
            }
        }
        for (g, v, r) in self.resources.keys() {
            if !known
                .iter()
                .any(|(kg, kv, kr)| kg == g && kv == v && kr == r)
            {
                return Err(RuntimeConfigError::Unknown(format!("{}/{r}", gv(g, v))));
            }
        }
        Ok(())
    }
}

fn gv(g: &str, v: &str) -> String {
    if g.is_empty() {
        v.to_string()
    } else {
        format!("{g}/{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_most_specific_key_wins() {
        let rc = RuntimeConfig::parse([
            "api/all=false,api/beta=true",
            "coordination.k8s.io/v1beta1=false",
            "coordination.k8s.io/v1beta1/leasecandidates=true",
            "v1",
        ])
        .unwrap();
        assert!(rc.enabled("", "v1", "configmaps", false));
        assert!(!rc.enabled("rbac.authorization.k8s.io", "v1", "roles", true));
        assert!(rc.enabled("admissionregistration.k8s.io", "v1beta1", "x", false));
        assert!(!rc.enabled("coordination.k8s.io", "v1beta1", "other", true));
        assert!(rc.enabled("coordination.k8s.io", "v1beta1", "leasecandidates", false));
        assert!(RuntimeConfig::default().enabled("a", "v1alpha1", "r", true));
    }

    #[test]
    fn bad_entries_are_named() {
        assert_eq!(
            RuntimeConfig::parse(["api/all=maybe"])
                .unwrap_err()
                .to_string(),
            "invalid value \"maybe\" for runtime-config key \"api/all\": use true or false"
        );
        assert!(matches!(
            RuntimeConfig::parse(["a/b/c/d"]),
            Err(RuntimeConfigError::Key(_))
        ));
        let rc = RuntimeConfig::parse(["example.com/v1=false"]).unwrap();
        let known = vec![(String::new(), "v1".to_string(), "configmaps".to_string())];
        assert_eq!(
            rc.check_known(&known).unwrap_err().to_string(),
            "unknown api group/version in runtime-config: example.com/v1"
        );
    }
}
