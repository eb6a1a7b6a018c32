//! Impersonation (k8s.io/apiserver pkg/endpoints/filters/impersonation.go): a request with
//! `Impersonate-User`, `-Group`, `-Uid` or `-Extra-<key>` headers acts as that user, once the
//! authorizer allows the requester to `impersonate` each of them. May use: api.

use crate::api::authorizer::Authorizer;
use crate::api::{RequestInfo, Status, UserInfo};
use http::HeaderMap;
use std::collections::BTreeMap;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const SERVICE_ACCOUNT_PREFIX: &str = "system:serviceaccount:";

/// Whether a request asks to impersonate anyone.
pub(crate) fn requested(headers: &HeaderMap) -> bool {
    headers.keys().any(|k| {
        let k = k.as_str();
        k == USER || k == GROUP || k == UID || k.starts_with(EXTRA_PREFIX)
    })
}

fn values<'a>(headers: &'a HeaderMap, name: &str) -> Vec<&'a str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect()
}

/// What one impersonation asks for, as the authorizer sees it.
fn attributes(resource: &str, group: &str, name: &str, namespace: &str, sub: &str) -> RequestInfo {
    RequestInfo {
        is_resource_request: true,
        verb: "impersonate".into(),
        api_group: group.into(),
        resource: resource.into(),
        subresource: sub.into(),
        name: name.into(),
        namespace: namespace.into(),
        ..RequestInfo::default()
    }
}

/// A percent-encoded extra key (`Impersonate-Extra-` headers cannot carry every character).
fn unescape(key: &str) -> String {
    percent_encoding::percent_decode_str(key)
        .decode_utf8()
        .map_or_else(|_| key.to_string(), |k| k.into_owned())
}

/// The user `requester` acts as, when every impersonation it asks for is allowed; the
/// Status to answer otherwise (400 for a malformed request, 403 naming what was refused).
pub(crate) fn impersonate(
    headers: &HeaderMap,
    requester: &UserInfo,
    authorizer: &dyn Authorizer,
) -> Result<UserInfo, Box<Status>> {
    let name = values(headers, USER).first().copied().unwrap_or("");
    let groups: Vec<&str> = values(headers, GROUP);
    let uid = values(headers, UID).first().copied().unwrap_or("");
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (key, value) in headers {
        if let Some(k) = key.as_str().strip_prefix(EXTRA_PREFIX) {
            if let Ok(v) = value.to_str() {
                extra.entry(unescape(k)).or_default().push(v.to_string());
            }
        }
    }
    if name.is_empty() {
        let mut asked: Vec<String> = groups.iter().map(|g| format!("group {g:?}")).collect();
        if !uid.is_empty() {
            asked.push(format!("uid {uid:?}"));
        }
        asked.extend(extra.keys().map(|k| format!("extra {k:?}")));
        return Err(Box::new(Status::failure(
            400,
            "BadRequest",
            format!(
                "requested [{}] without impersonating a user",
                asked.join(" ")
            ),
        )));
    }
    let mut checks = Vec::new();
    let mut user_groups: Vec<String> = Vec::new();
    match name
        .strip_prefix(SERVICE_ACCOUNT_PREFIX)
        .and_then(|r| r.split_once(':'))
    {
        Some((ns, sa)) => {
            checks.push(attributes("serviceaccounts", "", sa, ns, ""));
            if groups.is_empty() {
                user_groups = vec![
                    "system:serviceaccounts".into(),
                    format!("system:serviceaccounts:{ns}"),
                ];
            }
        }
        None => checks.push(attributes("users", "", name, "", "")),
    }
    for g in &groups {
        checks.push(attributes("groups", "", g, "", ""));
        user_groups.push(g.to_string());
    }
    if !uid.is_empty() {
        checks.push(attributes("uids", "authentication.k8s.io", uid, "", ""));
    }
    for (key, vals) in &extra {
        for v in vals {
            checks.push(attributes(
                "userextras",
                "authentication.k8s.io",
                v,
                "",
                key,
            ));
        }
    }
    for attrs in &checks {
        let decision = authorizer.authorize(requester, attrs);
        if !decision.allowed() {
            return Err(Box::new(Status::forbidden(
                &requester.name,
                attrs,
                decision.reason(),
            )));
        }
    }
    let (authenticated, unauthenticated) = ("system:authenticated", "system:unauthenticated");
    if name == "system:anonymous" {
        if !user_groups.iter().any(|g| g == unauthenticated) {
            user_groups.push(unauthenticated.into());
        }
    } else if !user_groups
        .iter()
        .any(|g| g == authenticated || g == unauthenticated)
    {
        user_groups.push(authenticated.into());
    }
    Ok(UserInfo {
        name: name.to_string(),
        uid: uid.to_string(),
        groups: user_groups,
        extra,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::authorizer::Decision;

    /// Lets `admin` impersonate anyone and `bob` impersonate user alice only.
    struct Impersonators;

    impl Authorizer for Impersonators {
        fn authorize(&self, user: &UserInfo, a: &RequestInfo) -> Decision {
            let ok = user.name == "admin"
                || (user.name == "bob" && a.resource == "users" && a.name == "alice");
            if ok && a.verb == "impersonate" {
                Decision::allow()
            } else {
                Decision::NoOpinion(String::new())
            }
        }
    }

    fn user(name: &str) -> UserInfo {
        UserInfo {
            name: name.into(),
            groups: vec!["system:authenticated".into()],
            ..UserInfo::default()
        }
    }

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    #[test]
    fn acts_as_the_user_with_upstreams_groups() {
        let h = headers(&[("Impersonate-User", "alice")]);
        assert!(requested(&h));
        let got = impersonate(&h, &user("bob"), &Impersonators).unwrap();
        assert_eq!(
            (got.name.as_str(), got.groups.clone()),
            ("alice", vec!["system:authenticated".to_string()])
        );
        let h = headers(&[
            ("Impersonate-User", "system:serviceaccount:ci:builder"),
            ("Impersonate-Extra-Scopes%2Fv1", "a"),
            ("Impersonate-Uid", "u-1"),
        ]);
        let got = impersonate(&h, &user("admin"), &Impersonators).unwrap();
        assert_eq!(
            got.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ci",
                "system:authenticated"
            ]
        );
        assert_eq!(got.extra["scopes/v1"], ["a"]);
        assert_eq!(got.uid, "u-1");
        let h = headers(&[("Impersonate-User", "carol"), ("Impersonate-Group", "devs")]);
        let got = impersonate(&h, &user("admin"), &Impersonators).unwrap();
        assert_eq!(got.groups, ["devs", "system:authenticated"]);
    }

    #[test]
    fn each_impersonation_is_authorized() {
        let h = headers(&[("Impersonate-User", "carol")]);
        let err = impersonate(&h, &user("bob"), &Impersonators).unwrap_err();
        assert_eq!(err.code, 403);
        assert_eq!(
            err.message,
            r#"users "carol" is forbidden: User "bob" cannot impersonate resource "users" in API group "" at the cluster scope"#
        );
        let h = headers(&[
            ("Impersonate-User", "alice"),
            ("Impersonate-Group", "system:masters"),
        ]);
        let err = impersonate(&h, &user("bob"), &Impersonators).unwrap_err();
        assert_eq!(
            err.message,
            r#"groups "system:masters" is forbidden: User "bob" cannot impersonate resource "groups" in API group "" at the cluster scope"#
        );
        let h = headers(&[("Impersonate-Group", "devs")]);
        let err = impersonate(&h, &user("admin"), &Impersonators).unwrap_err();
        assert_eq!(err.code, 400);
        assert_eq!(
            err.message,
            r#"requested [group "devs"] without impersonating a user"#
        );
    }
}
