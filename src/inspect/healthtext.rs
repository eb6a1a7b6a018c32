//! Parser of the health endpoints' verbose text (k8s.io/apiserver `healthz.go`), e.g.
//!
//! ```text
//! [+]ping ok
//! [-]etcd failed: reason withheld
//! [+]log excluded: ok
//! warn: some health checks cannot be excluded: no matches for "nope"
//! readyz check failed
//! ```
//!
//! A 500 body is always verbose; a 200 body is verbose only when `?verbose` was sent (else just
//! `ok`), so callers always send `?verbose`.

use serde::Serialize;

/// The state of one check, as the aggregate endpoint reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum CheckStatus {
    /// `[+]name ok`.
    Ok,
    /// `[+]name excluded: ok` (skipped through `?exclude=`).
    Excluded,
    /// `[-]name failed: reason withheld`.
    Failed,
}

/// One `[+]` / `[-]` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CheckLine {
    /// The check name, e.g. `poststarthook/start-apiextensions-informers`.
    pub name: String,
    /// Its state.
    pub status: CheckStatus,
}

/// The whole parsed body.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct HealthText {
    /// The checks in the order the server ran them.
    pub checks: Vec<CheckLine>,
    /// `warn:` lines, without the `warn: ` prefix.
    pub warnings: Vec<String>,
    /// The final line's verdict: `Some(true)` for `<name> check passed`, `Some(false)` for
    /// `<name> check failed`, `None` when the body has no final line (e.g. the plain `ok`).
    pub passed: Option<bool>,
}

/// Parses a health body. Unknown lines are ignored so that a newer server stays readable.
pub(crate) fn parse(body: &str) -> HealthText {
    let mut out = HealthText::default();
    for line in body.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(rest) = line.strip_prefix("[+]") {
            if let Some(name) = rest.strip_suffix(" excluded: ok") {
                out.checks.push(CheckLine {
                    name: name.into(),
                    status: CheckStatus::Excluded,
                });
            } else if let Some(name) = rest.strip_suffix(" ok") {
                out.checks.push(CheckLine {
                    name: name.into(),
                    status: CheckStatus::Ok,
                });
            }
        } else if let Some(rest) = line.strip_prefix("[-]") {
            // "failed: reason withheld" today; older servers printed "failed: <reason>".
            let name = rest.split_once(" failed").map_or(rest, |(name, _)| name);
            out.checks.push(CheckLine {
                name: name.into(),
                status: CheckStatus::Failed,
            });
        } else if let Some(w) = line.strip_prefix("warn: ") {
            out.warnings.push(w.to_string());
        } else if line.ends_with(" check passed") {
            out.passed = Some(true);
        } else if line.ends_with(" check failed") {
            out.passed = Some(false);
        }
    }
    out
}

/// Extracts the reason from a per-check sub-path body (`internal server error: <reason>\n`).
pub(crate) fn sub_path_reason(body: &str) -> String {
    let body = body.trim();
    body.strip_prefix("internal server error: ")
        .unwrap_or(body)
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(name: &str, status: CheckStatus) -> CheckLine {
        CheckLine {
            name: name.into(),
            status,
        }
    }

    #[test]
    fn parses_failed_body() {
        let body = "[+]ping ok\n[+]log ok\n[-]etcd failed: reason withheld\n[+]poststarthook/x ok\nreadyz check failed\n";
        let got = parse(body);
        assert_eq!(
            got.checks,
            vec![
                check("ping", CheckStatus::Ok),
                check("log", CheckStatus::Ok),
                check("etcd", CheckStatus::Failed),
                check("poststarthook/x", CheckStatus::Ok),
            ]
        );
        assert_eq!(got.passed, Some(false));
        assert!(got.warnings.is_empty());
    }

    #[test]
    fn parses_excluded_and_warning() {
        let body = "[+]ping ok\n[+]etcd excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check passed\n";
        let got = parse(body);
        assert_eq!(
            got.checks,
            vec![
                check("ping", CheckStatus::Ok),
                check("etcd", CheckStatus::Excluded)
            ]
        );
        assert_eq!(
            got.warnings,
            vec!["some health checks cannot be excluded: no matches for \"nope\"".to_string()]
        );
        assert_eq!(got.passed, Some(true));
    }

    #[test]
    fn plain_ok_has_no_checks() {
        let got = parse("ok");
        assert!(got.checks.is_empty());
        assert_eq!(got.passed, None);
    }

    #[test]
    fn check_names_may_contain_slashes_and_spaces_before_ok() {
        let got = parse("[+]poststarthook/rbac/bootstrap-roles ok\n[-]poststarthook/a/b failed: reason withheld\nhealthz check failed\n");
        assert_eq!(got.checks[0].name, "poststarthook/rbac/bootstrap-roles");
        assert_eq!(
            got.checks[1],
            check("poststarthook/a/b", CheckStatus::Failed)
        );
    }

    #[test]
    fn sub_path_reason_strips_prefix() {
        assert_eq!(
            sub_path_reason("internal server error: not finished\n"),
            "not finished"
        );
        assert_eq!(sub_path_reason("ok"), "ok");
    }
}
