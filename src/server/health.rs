//! /healthz, /livez and /readyz, byte-compatible with kube-apiserver
//! (k8s.io/apiserver pkg/server/healthz): ordered named checks, `?verbose`, repeated
//! `?exclude=`, per-check sub-paths showing the real error, and the always-verbose 500 body.
//! May use: api.

use crate::api::{full_body, Body};
use futures::future::BoxFuture;
use std::sync::Arc;
use tokio::time::Instant;

/// A check's function: `Err` carries the reason shown on the check's sub-path.
pub(crate) type CheckFn = Arc<dyn Fn() -> BoxFuture<'static, Result<(), String>> + Send + Sync>;

/// One named health check (healthz.HealthChecker in k8s).
#[derive(Clone)]
pub(crate) struct HealthCheck {
    name: String,
    check: CheckFn,
}

impl HealthCheck {
    /// A check named `name` running `check`.
    pub(crate) fn new(name: impl Into<String>, check: CheckFn) -> Self {
        HealthCheck {
            name: name.into(),
            check,
        }
    }

    /// A check that always passes (`ping`).
    pub(crate) fn ping() -> Self {
        HealthCheck::new("ping", Arc::new(|| Box::pin(async { Ok(()) })))
    }

    #[cfg(test)]
    /// The check's name, e.g. `poststarthook/start-system-namespaces-controller`.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Runs the check.
    pub(crate) async fn run(&self) -> Result<(), String> {
        (self.check)().await
    }

    /// Wraps the check so it passes without running until `deadline` (the livez grace period).
    pub(crate) fn delayed_until(self, deadline: Instant) -> Self {
        let inner = self.check.clone();
        let check: CheckFn = Arc::new(move || {
            if Instant::now() < deadline {
                Box::pin(async { Ok(()) })
            } else {
                inner()
            }
        });
        HealthCheck {
            name: self.name,
            check,
        }
    }
}

/// One endpoint (`healthz`, `livez` or `readyz`) and its frozen, ordered checks.
pub(crate) struct Endpoint {
    name: &'static str,
    checks: Vec<HealthCheck>,
}

impl Endpoint {
    /// An endpoint named `name`; an empty list gets the single check `ping`, as upstream.
    pub(crate) fn new(name: &'static str, checks: Vec<HealthCheck>) -> Self {
        let checks = if checks.is_empty() {
            vec![HealthCheck::ping()]
        } else {
            checks
        };
        Endpoint { name, checks }
    }

    /// Serves `/<name>` (aggregate) or `/<name>/<check>`; `None` when the path is neither.
    pub(crate) async fn serve(
        &self,
        path: &str,
        query: Option<&str>,
    ) -> Option<http::Response<Body>> {
        let rest = path.strip_prefix('/')?.strip_prefix(self.name)?;
        if rest.is_empty() {
            return Some(self.aggregate(query).await);
        }
        let check_name = rest.strip_prefix('/')?;
        let check = self.checks.iter().find(|c| c.name == check_name)?;
        Some(match check.run().await {
            Ok(()) => text(200, "ok".into(), false),
            Err(reason) => text(500, format!("internal server error: {reason}\n"), true),
        })
    }

    async fn aggregate(&self, query: Option<&str>) -> http::Response<Body> {
        let mut verbose = false;
        let mut excluded: Vec<String> = Vec::new();
        for (k, v) in form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match k.as_ref() {
                "verbose" => verbose = true,
                "exclude" if !excluded.iter().any(|e| *e == v) => excluded.push(v.into_owned()),
                _ => {}
            }
        }
        let mut out = String::new();
        let mut failed = false;
        for check in &self.checks {
            if let Some(pos) = excluded.iter().position(|e| *e == check.name) {
                excluded.remove(pos);
                out.push_str(&format!("[+]{} excluded: ok\n", check.name));
                continue;
            }
            match check.run().await {
                Ok(()) => out.push_str(&format!("[+]{} ok\n", check.name)),
                Err(reason) => {
                    tracing::debug!(endpoint = self.name, check = %check.name, %reason, "health check failed");
                    failed = true;
                    out.push_str(&format!("[-]{} failed: reason withheld\n", check.name));
                }
            }
        }
        if !excluded.is_empty() {
            excluded.sort();
            let names: Vec<String> = excluded.iter().map(|n| go_quote(n)).collect();
            tracing::warn!(endpoint = self.name, names = %names.join(","), "some health checks cannot be excluded");
            out.push_str(&format!(
                "warn: some health checks cannot be excluded: no matches for {}\n",
                names.join(",")
            ));
        }
        if failed {
            out.push_str(&format!("{} check failed\n", self.name));
            return text(500, out, true);
        }
        if !verbose {
            return text(200, "ok".into(), true);
        }
        out.push_str(&format!("{} check passed\n", self.name));
        text(200, out, true)
    }
}

/// Go's `%q` for the plain names health checks carry.
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

fn text(code: u16, body: String, nosniff: bool) -> http::Response<Body> {
    let mut builder = http::Response::builder()
        .status(code)
        .header(http::header::CONTENT_TYPE, "text/plain; charset=utf-8");
    if nosniff {
        builder = builder.header("X-Content-Type-Options", "nosniff");
    }
    builder
        .body(full_body(body))
        .unwrap_or_else(|_| http::Response::new(crate::api::empty_body()))
}

/// The three health endpoints of a server.
pub(crate) struct Health {
    endpoints: [Endpoint; 3],
}

impl Health {
    /// Builds /healthz, /livez and /readyz from their check lists.
    pub(crate) fn new(
        healthz: Vec<HealthCheck>,
        livez: Vec<HealthCheck>,
        readyz: Vec<HealthCheck>,
    ) -> Self {
        Health {
            endpoints: [
                Endpoint::new("healthz", healthz),
                Endpoint::new("livez", livez),
                Endpoint::new("readyz", readyz),
            ],
        }
    }

    /// Whether `path` belongs to a health endpoint (exact or a sub-path).
    pub(crate) fn owns(path: &str) -> bool {
        ["/healthz", "/livez", "/readyz"]
            .iter()
            .any(|p| path == *p || path.strip_prefix(p).is_some_and(|r| r.starts_with('/')))
    }

    /// Serves a health path; `None` for unknown sub-paths (they fall through to 404).
    pub(crate) async fn serve(
        &self,
        path: &str,
        query: Option<&str>,
    ) -> Option<http::Response<Body>> {
        for endpoint in &self.endpoints {
            if let Some(resp) = endpoint.serve(path, query).await {
                return Some(resp);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    fn failing(name: &str, reason: &'static str) -> HealthCheck {
        HealthCheck::new(
            name,
            Arc::new(move || Box::pin(async move { Err(reason.to_string()) })),
        )
    }

    fn ok(name: &str) -> HealthCheck {
        HealthCheck::new(name, Arc::new(|| Box::pin(async { Ok(()) })))
    }

    async fn get(e: &Endpoint, path: &str, query: Option<&str>) -> (u16, String, Option<String>) {
        let resp = e.serve(path, query).await.expect("served");
        let code = resp.status().as_u16();
        let nosniff = resp
            .headers()
            .get("x-content-type-options")
            .map(|v| v.to_str().unwrap().to_string());
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        (code, String::from_utf8(body.to_vec()).unwrap(), nosniff)
    }

    #[tokio::test]
    async fn formats_match_kube_apiserver() {
        let e = Endpoint::new("readyz", vec![HealthCheck::ping(), ok("log"), ok("etcd")]);
        assert_eq!(get(&e, "/readyz", None).await.1, "ok");
        assert_eq!(
            get(&e, "/readyz", Some("verbose")).await.1,
            "[+]ping ok\n[+]log ok\n[+]etcd ok\nreadyz check passed\n"
        );
        assert_eq!(
            get(&e, "/readyz", Some("exclude=etcd&exclude=nope&exclude=a&verbose")).await.1,
            "[+]ping ok\n[+]log ok\n[+]etcd excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"a\",\"nope\"\nreadyz check passed\n"
        );
        assert_eq!(get(&e, "/readyz", Some("exclude=nope")).await.1, "ok");
        assert_eq!(get(&e, "/readyz/etcd", None).await.1, "ok");
        assert!(e.serve("/readyz/unknown", None).await.is_none());
        assert!(e.serve("/readyz/", None).await.is_none());
    }

    #[tokio::test]
    async fn failure_is_always_verbose_and_subpath_shows_reason() {
        let e = Endpoint::new(
            "livez",
            vec![
                HealthCheck::ping(),
                failing("poststarthook/x", "not finished"),
            ],
        );
        let (code, body, nosniff) = get(&e, "/livez", None).await;
        assert_eq!(code, 500);
        assert_eq!(
            body,
            "[+]ping ok\n[-]poststarthook/x failed: reason withheld\nlivez check failed\n"
        );
        assert_eq!(nosniff.as_deref(), Some("nosniff"));
        let (code, body, _) = get(&e, "/livez/poststarthook/x", None).await;
        assert_eq!(
            (code, body.as_str()),
            (500, "internal server error: not finished\n")
        );
        let (code, _, _) = get(&e, "/livez", Some("exclude=poststarthook/x")).await;
        assert_eq!(code, 200);
    }

    #[tokio::test]
    async fn grace_period_passes_until_deadline() {
        let later = Instant::now() + std::time::Duration::from_secs(60);
        let check = failing("poststarthook/x", "not finished").delayed_until(later);
        assert!(check.run().await.is_ok());
        let past = failing("poststarthook/x", "not finished").delayed_until(Instant::now());
        assert!(past.run().await.is_err());
    }
}
