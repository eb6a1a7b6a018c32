//! `kapi health [livez|readyz|healthz|all]`: every check of a health endpoint, read from its
//! verbose text (see reference: k8s.io/apiserver healthz.go), plus the overall verdict.
//!
//! # JSON / YAML shape (stable)
//! ```text
//! { "healthy": true,                      // every endpoint of every replica answered 200
//!   "results": [ {
//!       "apiserver": "https://127.0.0.1:6443",
//!       "identity": "apiserver-…" | null,  // with --all-apiservers
//!       "endpoint": "readyz",
//!       "httpStatus": 200,
//!       "healthy": true,
//!       "checks": [ { "name": "ping", "status": "ok" | "failed" | "excluded" } ],
//!       "warnings": [ "some health checks cannot be excluded: no matches for \"x\"" ] } ],
//!   "unreachable": [ { "apiserver": "…", "identity": "…" | null, "error": "…" } ] }
//! ```
//! Table columns: CHECK, STATUS; APISERVER first with `--all-apiservers`, ENDPOINT before CHECK
//! for `all`; `-o wide` appends the ones not shown. `-o name`: `healthcheck/<endpoint>/<check>`.

use serde::Serialize;

use super::healthtext::{parse, CheckStatus};
use super::peers::{self, Unreachable};
use super::{Cluster, Error, Result};
use crate::output::{Cell, Tabular, Tone};

/// What to check.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query {
    /// Endpoint names without slash: `readyz`, `livez`, `healthz`.
    pub endpoints: Vec<String>,
    /// `--exclude` values, passed as repeated `?exclude=`.
    pub exclude: Vec<String>,
    /// Ask every replica found through identity leases.
    pub all_apiservers: bool,
}

/// One check of one endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Check {
    /// The check name.
    pub name: String,
    /// ok / failed / excluded.
    pub status: CheckStatus,
}

/// One endpoint of one replica.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct EndpointHealth {
    /// The replica's URL.
    pub apiserver: String,
    /// Its identity lease name, with `--all-apiservers`.
    pub identity: Option<String>,
    /// `readyz`, `livez` or `healthz`.
    pub endpoint: String,
    /// The HTTP status of the aggregate endpoint.
    pub http_status: u16,
    /// True when it answered 200.
    pub healthy: bool,
    /// The checks in server order.
    pub checks: Vec<Check>,
    /// `warn:` lines.
    pub warnings: Vec<String>,
}

/// The `kapi health` view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct HealthView {
    /// Every endpoint of every reached replica is healthy and none was unreachable.
    pub healthy: bool,
    /// Per replica and endpoint.
    pub results: Vec<EndpointHealth>,
    /// Replicas that could not be asked (only with `--all-apiservers`).
    pub unreachable: Vec<Unreachable>,
    /// Show the APISERVER column.
    #[serde(skip)]
    pub multi_server: bool,
    /// Show the ENDPOINT column.
    #[serde(skip)]
    pub multi_endpoint: bool,
}

impl HealthView {
    /// Builds the view and its verdict from the parts.
    pub(crate) fn new(
        results: Vec<EndpointHealth>,
        unreachable: Vec<Unreachable>,
        multi_server: bool,
    ) -> Self {
        let healthy =
            unreachable.is_empty() && !results.is_empty() && results.iter().all(|r| r.healthy);
        let mut endpoints: Vec<&str> = results.iter().map(|r| r.endpoint.as_str()).collect();
        endpoints.dedup();
        let multi_endpoint = endpoints.len() > 1;
        HealthView {
            healthy,
            results,
            unreachable,
            multi_server,
            multi_endpoint,
        }
    }
}

/// Reads the endpoints of the kubeconfig server or, with `all_apiservers`, of every replica.
///
/// # Errors
/// Without `--all-apiservers`, any failure to get an answer; with it, only a failure to list
/// identity leases (unreachable replicas are part of the view).
pub(crate) async fn collect(
    cluster: &Cluster,
    query: &Query,
) -> Result<(HealthView, Option<String>)> {
    let targets = if query.all_apiservers {
        peers::discover(cluster).await?
    } else {
        peers::single(cluster)
    };
    let mut results = Vec::new();
    let mut unreachable = targets.unreachable;
    for target in &targets.reachable {
        for endpoint in &query.endpoints {
            match check(&target.cluster, endpoint, &query.exclude).await {
                Ok(mut r) => {
                    r.identity.clone_from(&target.identity);
                    results.push(r);
                }
                Err(e) if query.all_apiservers => {
                    unreachable.push(Unreachable {
                        apiserver: target.apiserver.clone(),
                        identity: target.identity.clone(),
                        error: e.to_string(),
                    });
                    break;
                }
                Err(e) => return Err(e),
            }
        }
    }
    Ok((
        HealthView::new(results, unreachable, query.all_apiservers),
        targets.note,
    ))
}

/// GETs `/<endpoint>?verbose[&exclude=…]` and parses the answer.
///
/// # Errors
/// No answer, 401/403, or 404 (endpoint not served).
pub(crate) async fn check(
    cluster: &Cluster,
    endpoint: &str,
    exclude: &[String],
) -> Result<EndpointHealth> {
    let mut query = form_urlencoded::Serializer::new(String::new());
    for name in exclude {
        query.append_pair("exclude", name);
    }
    let query = query.finish();
    let path = if query.is_empty() {
        format!("/{endpoint}?verbose")
    } else {
        format!("/{endpoint}?verbose&{query}")
    };
    let (code, body) = cluster.get_text(&path).await?;
    if code == 404 {
        return Err(Error::NotServed {
            server: cluster.server().to_string(),
            what: format!("/{endpoint}"),
            hint: "the server has no such health endpoint; check that it is a kube-apiserver"
                .into(),
        });
    }
    let parsed = parse(&body);
    Ok(EndpointHealth {
        apiserver: cluster.server().to_string(),
        identity: None,
        endpoint: endpoint.to_string(),
        http_status: code,
        healthy: code == 200,
        checks: parsed
            .checks
            .into_iter()
            .map(|c| Check {
                name: c.name,
                status: c.status,
            })
            .collect(),
        warnings: parsed.warnings,
    })
}

fn status_cell(status: CheckStatus) -> Cell {
    match status {
        CheckStatus::Ok => Cell::toned("ok", Tone::Good),
        CheckStatus::Excluded => Cell::toned("excluded", Tone::Warn),
        CheckStatus::Failed => Cell::toned("failed", Tone::Bad),
    }
}

impl Tabular for HealthView {
    fn headers(&self, wide: bool) -> Vec<&'static str> {
        let mut h = Vec::new();
        if self.multi_server {
            h.push("APISERVER");
        }
        if self.multi_endpoint {
            h.push("ENDPOINT");
        }
        h.extend(["CHECK", "STATUS"]);
        if wide {
            if !self.multi_endpoint {
                h.push("ENDPOINT");
            }
            if !self.multi_server {
                h.push("APISERVER");
            }
        }
        h
    }

    fn rows(&self, wide: bool) -> Vec<Vec<Cell>> {
        let mut rows = Vec::new();
        let row = |server: &str, endpoint: &str, check: Cell, status: Cell| {
            let mut r = Vec::new();
            if self.multi_server {
                r.push(Cell::plain(server));
            }
            if self.multi_endpoint {
                r.push(Cell::plain(endpoint));
            }
            r.extend([check, status]);
            if wide {
                if !self.multi_endpoint {
                    r.push(Cell::plain(endpoint));
                }
                if !self.multi_server {
                    r.push(Cell::plain(server));
                }
            }
            r
        };
        for res in &self.results {
            for c in &res.checks {
                rows.push(row(
                    &res.apiserver,
                    &res.endpoint,
                    Cell::plain(&c.name),
                    status_cell(c.status),
                ));
            }
        }
        for u in &self.unreachable {
            rows.push(row(
                &u.apiserver,
                "-",
                Cell::plain("-"),
                Cell::toned("unreachable", Tone::Bad),
            ));
        }
        rows
    }

    fn names(&self) -> Vec<String> {
        self.results
            .iter()
            .flat_map(|r| {
                r.checks
                    .iter()
                    .map(move |c| format!("healthcheck/{}/{}", r.endpoint, c.name))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{render, Format, Options};

    fn result(endpoint: &str, checks: &[(&str, CheckStatus)], code: u16) -> EndpointHealth {
        EndpointHealth {
            apiserver: "https://127.0.0.1:6443".into(),
            identity: None,
            endpoint: endpoint.into(),
            http_status: code,
            healthy: code == 200,
            checks: checks
                .iter()
                .map(|(n, s)| Check {
                    name: (*n).into(),
                    status: *s,
                })
                .collect(),
            warnings: vec![],
        }
    }

    fn out(v: &HealthView, f: Format) -> String {
        let mut buf = Vec::new();
        render(v, f, Options::default(), &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn single_endpoint_table_and_verdict() {
        let v = HealthView::new(
            vec![result(
                "readyz",
                &[
                    ("ping", CheckStatus::Ok),
                    ("etcd", CheckStatus::Excluded),
                    ("poststarthook/x", CheckStatus::Failed),
                ],
                500,
            )],
            vec![],
            false,
        );
        assert!(!v.healthy);
        assert_eq!(
            out(&v, Format::Table),
            "CHECK             STATUS\nping              ok\netcd              excluded\npoststarthook/x   failed\n"
        );
        assert_eq!(
            out(&v, Format::Wide),
            "CHECK             STATUS     ENDPOINT   APISERVER\n\
             ping              ok         readyz     https://127.0.0.1:6443\n\
             etcd              excluded   readyz     https://127.0.0.1:6443\n\
             poststarthook/x   failed     readyz     https://127.0.0.1:6443\n"
        );
        assert_eq!(
            out(&v, Format::Name),
            "healthcheck/readyz/ping\nhealthcheck/readyz/etcd\nhealthcheck/readyz/poststarthook/x\n"
        );
    }

    #[test]
    fn all_endpoints_and_unreachable_replica() {
        let v = HealthView::new(
            vec![
                result("livez", &[("ping", CheckStatus::Ok)], 200),
                result("readyz", &[("ping", CheckStatus::Ok)], 200),
            ],
            vec![Unreachable {
                apiserver: "10.0.0.2:6443".into(),
                identity: Some("apiserver-b".into()),
                error: "cannot reach".into(),
            }],
            true,
        );
        assert!(!v.healthy, "an unreachable replica is not healthy");
        assert_eq!(
            out(&v, Format::Table),
            "APISERVER                ENDPOINT   CHECK   STATUS\n\
             https://127.0.0.1:6443   livez      ping    ok\n\
             https://127.0.0.1:6443   readyz     ping    ok\n\
             10.0.0.2:6443            -          -       unreachable\n"
        );
    }

    #[test]
    fn json_shape() {
        let v = HealthView::new(
            vec![result("readyz", &[("ping", CheckStatus::Ok)], 200)],
            vec![],
            false,
        );
        let got: serde_json::Value = serde_json::from_str(&out(&v, Format::Json)).unwrap();
        assert_eq!(
            got,
            serde_json::json!({"healthy": true, "results": [{
                "apiserver": "https://127.0.0.1:6443", "identity": null, "endpoint": "readyz",
                "httpStatus": 200, "healthy": true, "checks": [{"name": "ping", "status": "ok"}],
                "warnings": []}], "unreachable": []})
        );
        assert_eq!(
            out(&v, Format::Yaml),
            "healthy: true\nresults:\n- apiserver: https://127.0.0.1:6443\n  identity: null\n  endpoint: readyz\n  httpStatus: 200\n  healthy: true\n  checks:\n  - name: ping\n    status: ok\n  warnings: []\nunreachable: []\n"
        );
    }
}
