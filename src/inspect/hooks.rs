//! `kapi hooks`: the post-start hooks of an apiserver, from the `poststarthook/<name>` checks of
//! `/readyz?verbose`; for each one not ok, the real reason from `/readyz/poststarthook/<name>`
//! (the aggregate endpoint withholds reasons, the sub-path shows them).
//!
//! STATUS is `ok`; `pending` when the sub-path says `not finished` (the hook has not returned
//! yet, the only non-ok state of a kube-apiserver hook); `failed` for any other reason.
//!
//! # JSON / YAML shape (stable)
//! ```text
//! { "apiservers": [ {
//!       "apiserver": "https://127.0.0.1:6443",
//!       "identity": "apiserver-…" | null,     // with --all-apiservers
//!       "hooks": [ { "name": "start-system-namespaces-controller",
//!                    "status": "ok" | "pending" | "failed",
//!                    "reason": "not finished" | null } ] } ],
//!   "unreachable": [ { "apiserver": "…", "identity": "…" | null, "error": "…" } ] }
//! ```
//! Table columns: HOOK, STATUS, REASON; APISERVER first with `--all-apiservers`; `-o wide`
//! appends APISERVER otherwise. `-o name`: `hook/<name>`.

use serde::Serialize;

use super::healthtext::{parse, sub_path_reason, CheckStatus};
use super::peers::{self, Unreachable};
use super::{Cluster, Error, Result};
use crate::output::{Cell, Tabular, Tone};

/// Prefix of post-start hook checks.
pub(crate) const HOOK_PREFIX: &str = "poststarthook/";

/// What to show.
#[derive(Debug, Clone, Default)]
pub(crate) struct Query {
    /// Only the hooks that are not ok.
    pub failing: bool,
    /// Ask every replica found through identity leases.
    pub all_apiservers: bool,
}

/// State of one hook.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HookStatus {
    /// Finished.
    Ok,
    /// Not finished yet.
    Pending,
    /// Failing for another reason.
    Failed,
}

/// One hook.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Hook {
    /// The hook name (without `poststarthook/`).
    pub name: String,
    /// ok / pending / failed.
    pub status: HookStatus,
    /// The reason from the sub-path, for hooks not ok.
    pub reason: Option<String>,
}

/// The hooks of one replica.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct ApiserverHooks {
    /// The replica's URL.
    pub apiserver: String,
    /// Its identity lease name, with `--all-apiservers`.
    pub identity: Option<String>,
    /// Its hooks in server order.
    pub hooks: Vec<Hook>,
}

/// The `kapi hooks` view.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct HooksView {
    /// Per reached replica.
    pub apiservers: Vec<ApiserverHooks>,
    /// Replicas that could not be asked.
    pub unreachable: Vec<Unreachable>,
    /// Show the APISERVER column first.
    #[serde(skip)]
    pub multi_server: bool,
}

impl HooksView {
    /// True when every hook of every reached replica is ok and none was unreachable.
    pub(crate) fn all_ok(&self) -> bool {
        self.unreachable.is_empty()
            && self
                .apiservers
                .iter()
                .all(|a| a.hooks.iter().all(|h| h.status == HookStatus::Ok))
    }
}

/// Reads the hooks of the kubeconfig server or, with `all_apiservers`, of every replica.
///
/// # Errors
/// Without `--all-apiservers`, any failure to get an answer; with it, only a failure to list
/// identity leases.
pub(crate) async fn collect(
    cluster: &Cluster,
    query: &Query,
) -> Result<(HooksView, Option<String>)> {
    let targets = if query.all_apiservers {
        peers::discover(cluster).await?
    } else {
        peers::single(cluster)
    };
    let mut apiservers = Vec::new();
    let mut unreachable = targets.unreachable;
    for target in &targets.reachable {
        match hooks_of(&target.cluster).await {
            Ok(mut hooks) => {
                if query.failing {
                    hooks.retain(|h| h.status != HookStatus::Ok);
                }
                apiservers.push(ApiserverHooks {
                    apiserver: target.apiserver.clone(),
                    identity: target.identity.clone(),
                    hooks,
                });
            }
            Err(e) if query.all_apiservers => unreachable.push(Unreachable {
                apiserver: target.apiserver.clone(),
                identity: target.identity.clone(),
                error: e.to_string(),
            }),
            Err(e) => return Err(e),
        }
    }
    Ok((
        HooksView {
            apiservers,
            unreachable,
            multi_server: query.all_apiservers,
        },
        targets.note,
    ))
}

/// The hooks of one server.
///
/// # Errors
/// No answer, 401/403, 404.
pub(crate) async fn hooks_of(cluster: &Cluster) -> Result<Vec<Hook>> {
    let (code, body) = cluster.get_text("/readyz?verbose").await?;
    if code == 404 {
        return Err(Error::NotServed {
            server: cluster.server().to_string(),
            what: "/readyz".into(),
            hint: "the server has no readyz endpoint; check that it is a kube-apiserver".into(),
        });
    }
    let mut hooks = Vec::new();
    for check in parse(&body).checks {
        let Some(name) = check.name.strip_prefix(HOOK_PREFIX) else {
            continue;
        };
        if check.status != CheckStatus::Failed {
            hooks.push(Hook {
                name: name.to_string(),
                status: HookStatus::Ok,
                reason: None,
            });
            continue;
        }
        let (status, reason) = match cluster.get_text(&format!("/readyz/{}", check.name)).await {
            Ok((200, _)) => (HookStatus::Ok, None),
            Ok((_, body)) => classify(&sub_path_reason(&body)),
            Err(e) => (HookStatus::Failed, Some(format!("reason unavailable: {e}"))),
        };
        hooks.push(Hook {
            name: name.to_string(),
            status,
            reason,
        });
    }
    Ok(hooks)
}

/// Maps a sub-path reason to a status: `not finished` is pending, anything else failed.
pub(crate) fn classify(reason: &str) -> (HookStatus, Option<String>) {
    let status = if reason == "not finished" {
        HookStatus::Pending
    } else {
        HookStatus::Failed
    };
    (status, Some(reason.to_string()))
}

impl Tabular for HooksView {
    fn headers(&self, wide: bool) -> Vec<&'static str> {
        let mut h = Vec::new();
        if self.multi_server {
            h.push("APISERVER");
        }
        h.extend(["HOOK", "STATUS", "REASON"]);
        if wide && !self.multi_server {
            h.push("APISERVER");
        }
        h
    }

    fn rows(&self, wide: bool) -> Vec<Vec<Cell>> {
        let row = |server: &str, cells: [Cell; 3]| {
            let mut r = Vec::new();
            if self.multi_server {
                r.push(Cell::plain(server));
            }
            r.extend(cells);
            if wide && !self.multi_server {
                r.push(Cell::plain(server));
            }
            r
        };
        let mut rows = Vec::new();
        for a in &self.apiservers {
            for h in &a.hooks {
                let status = match h.status {
                    HookStatus::Ok => Cell::toned("ok", Tone::Good),
                    HookStatus::Pending => Cell::toned("pending", Tone::Warn),
                    HookStatus::Failed => Cell::toned("failed", Tone::Bad),
                };
                let reason = Cell::plain(h.reason.clone().unwrap_or_default());
                rows.push(row(&a.apiserver, [Cell::plain(&h.name), status, reason]));
            }
        }
        for u in &self.unreachable {
            let cells = [
                Cell::plain("-"),
                Cell::toned("unreachable", Tone::Bad),
                Cell::plain(&u.error),
            ];
            rows.push(row(&u.apiserver, cells));
        }
        rows
    }

    fn names(&self) -> Vec<String> {
        self.apiservers
            .iter()
            .flat_map(|a| a.hooks.iter().map(|h| format!("hook/{}", h.name)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{render, Format, Options};

    fn view(multi: bool) -> HooksView {
        HooksView {
            apiservers: vec![ApiserverHooks {
                apiserver: "https://127.0.0.1:6443".into(),
                identity: None,
                hooks: vec![
                    Hook {
                        name: "start-system-namespaces-controller".into(),
                        status: HookStatus::Ok,
                        reason: None,
                    },
                    Hook {
                        name: "slow".into(),
                        status: HookStatus::Pending,
                        reason: Some("not finished".into()),
                    },
                    Hook {
                        name: "broken".into(),
                        status: HookStatus::Failed,
                        reason: Some("etcd down".into()),
                    },
                ],
            }],
            unreachable: vec![],
            multi_server: multi,
        }
    }

    fn out(v: &HooksView, f: Format) -> String {
        let mut buf = Vec::new();
        render(v, f, Options::default(), &mut buf).unwrap();
        String::from_utf8(buf).unwrap()
    }

    #[test]
    fn table_and_wide() {
        let v = view(false);
        assert!(!v.all_ok());
        assert_eq!(
            out(&v, Format::Table),
            "HOOK                                 STATUS    REASON\n\
             start-system-namespaces-controller   ok\n\
             slow                                 pending   not finished\n\
             broken                               failed    etcd down\n"
        );
        assert!(out(&v, Format::Wide).starts_with(
            "HOOK                                 STATUS    REASON         APISERVER\n\
             start-system-namespaces-controller   ok                       https://127.0.0.1:6443\n"
        ));
    }

    #[test]
    fn json_and_name() {
        let got: serde_json::Value =
            serde_json::from_str(&out(&view(false), Format::Json)).unwrap();
        assert_eq!(
            got["apiservers"][0]["hooks"][1],
            serde_json::json!({"name": "slow", "status": "pending", "reason": "not finished"})
        );
        assert_eq!(
            got["apiservers"][0]["hooks"][0]["reason"],
            serde_json::Value::Null
        );
        assert_eq!(got["unreachable"], serde_json::json!([]));
        assert_eq!(
            out(&view(false), Format::Name),
            "hook/start-system-namespaces-controller\nhook/slow\nhook/broken\n"
        );
    }

    #[test]
    fn unreachable_rows() {
        let mut v = view(true);
        v.apiservers[0].hooks.truncate(1);
        v.unreachable.push(Unreachable {
            apiserver: "10.0.0.2:6443".into(),
            identity: None,
            error: "cannot reach".into(),
        });
        assert!(!v.all_ok());
        assert_eq!(
            out(&v, Format::Table),
            "APISERVER                HOOK                                 STATUS        REASON\n\
             https://127.0.0.1:6443   start-system-namespaces-controller   ok\n\
             10.0.0.2:6443            -                                    unreachable   cannot reach\n"
        );
    }

    #[test]
    fn reasons() {
        assert_eq!(classify("not finished").0, HookStatus::Pending);
        assert_eq!(classify("boom").0, HookStatus::Failed);
    }
}
