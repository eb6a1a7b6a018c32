//! List and watch of the GenericStore: label/field selection, resourceVersion +
//! resourceVersionMatch semantics, limit/continue with kube's opaque continue token, and
//! watch streams with synthetic initial events, watch-list's initial-events-end bookmark and
//! selector transitions (an object leaving the selection is DELETED for the watcher).
//! May use: storage, api.

use super::GenericStore;
use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::api::At;
use crate::registry::codec::memo::Decoded;
use crate::registry::error::{Error, FieldError, Result};
use crate::registry::Context;
use crate::storage::{self, ListRevision, Revision};
use base64::Engine;
use futures::stream::{BoxStream, StreamExt};
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;

/// Message of a 410 for an expired continue token (storage/etcd3/errors.go).
pub(crate) const CONTINUE_EXPIRED_MSG: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// List parameters (metav1.ListOptions as the registry needs them).
#[derive(Debug, Clone, Default)]
pub(crate) struct ListOptions {
    /// labelSelector.
    pub label: LabelSelector,
    /// fieldSelector.
    pub field: FieldSelector,
    /// limit (0 = all).
    pub limit: usize,
    /// continue token.
    pub continue_token: Option<String>,
    /// resourceVersion.
    pub resource_version: Option<String>,
    /// resourceVersionMatch.
    pub resource_version_match: Option<String>,
    /// sendInitialEvents (watch only).
    pub send_initial_events: Option<bool>,
    /// allowWatchBookmarks (watch only).
    pub allow_bookmarks: bool,
    /// Not from the query: the watch skips MODIFIED events that only renew the object
    /// ([`crate::registry::Strategy::is_renewal`]); set for the loopback client's watches that
    /// ask for it ([`crate::api::OmitRenewals`]).
    pub omit_renewals: bool,
    /// Not from the query: a LIST leaves out the objects without ownerReferences that are not
    /// being deleted, and the live watch their ADDED and MODIFIED events
    /// ([`crate::api::CollectorEvents`]).
    pub collector_events: bool,
    /// Not from the query: the response shows only each object's metadata
    /// (PartialObjectMetadataList), so a LIST need not decode the rest of the objects.
    pub metadata_only: bool,
}

/// One page of a list.
#[derive(Debug, Clone, Default)]
pub(crate) struct ListResult {
    /// Matching objects, shared with the memo (`.obj` is the object).
    pub items: Vec<Arc<Decoded>>,
    /// The list's resourceVersion.
    pub resource_version: String,
    /// Token for the next page.
    pub continue_token: Option<String>,
    /// Items after this page (only without selectors).
    pub remaining: Option<i64>,
}

/// One event of a watch as the registry produces it.
#[derive(Debug, Clone)]
pub(crate) enum WatchEvent {
    /// ADDED (objects are shared with the memo, so every watcher reuses one encoding).
    Added(Arc<Decoded>),
    /// MODIFIED.
    Modified(Arc<Decoded>),
    /// DELETED (the last state, with the deletion's resourceVersion).
    Deleted(Arc<Decoded>),
    /// BOOKMARK at a resourceVersion; `initial_events_end` for watch-list's end marker.
    Bookmark {
        /// The resourceVersion reached.
        resource_version: String,
        /// Annotate with `k8s.io/initial-events-end: "true"`.
        initial_events_end: bool,
    },
    /// ERROR (e.g. 410 Expired); the stream ends after it.
    Error(Error),
}

/// How far a watch stream has got: every change of the resource up to [`Self::revision`] has
/// been yielded by the stream or filtered out, so a periodic BOOKMARK may carry it and a
/// client may resume from it. Unset until the initial events are out.
#[derive(Debug, Clone)]
pub(crate) struct WatchProgress(Arc<AtomicI64>);

impl Default for WatchProgress {
    fn default() -> Self {
        WatchProgress(Arc::new(AtomicI64::new(-1)))
    }
}

impl WatchProgress {
    /// The revision the stream is consistent with, once known.
    pub(crate) fn revision(&self) -> Option<Revision> {
        let r = self.0.load(Ordering::Acquire);
        (r >= 0).then_some(r)
    }

    /// Records that the stream has caught up with `rev` (never goes back).
    pub(crate) fn advance(&self, rev: Revision) {
        self.0.fetch_max(rev, Ordering::AcqRel);
    }
}

#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: i64,
    start: String,
}

fn list_options_invalid(errors: Vec<FieldError>) -> Error {
    Error::invalid("meta.k8s.io", "ListOptions", "", errors)
}

fn parse_rv(rv: &str) -> Result<Revision> {
    rv.parse::<Revision>()
        .ok()
        .filter(|r| *r >= 0)
        .ok_or_else(|| Error::BadRequest(format!("invalid resource version: {rv}")))
}

impl GenericStore {
    /// Rejects field selectors on fields the kind does not support.
    fn check_fields(&self, field: &FieldSelector) -> Result<()> {
        for r in &field.requirements {
            let f = r.field.as_str();
            if f != "metadata.name" && f != "metadata.namespace" && !self.strategy.supports_field(f)
            {
                return Err(Error::BadRequest(format!("field label not supported: {f}")));
            }
        }
        Ok(())
    }

    /// Whether an object passes the selectors.
    pub(crate) fn matches(
        &self,
        obj: &Value,
        label: &LabelSelector,
        field: &FieldSelector,
    ) -> bool {
        if !label.is_empty() {
            let labels: BTreeMap<String, String> = obj
                .at("/metadata/labels")
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or("").to_string()))
                        .collect()
                })
                .unwrap_or_default();
            if !label.matches(&labels) {
                return false;
            }
        }
        field.is_empty()
            || field.matches(|f| match f {
                "metadata.name" => obj
                    .at("/metadata/name")
                    .and_then(Value::as_str)
                    .map(String::from),
                "metadata.namespace" => Some(
                    obj.at("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                ),
                other => self.strategy.field(obj, other),
            })
    }

    fn list_revision(&self, opts: &ListOptions) -> Result<ListRevision> {
        let rv = opts.resource_version.as_deref().unwrap_or("");
        let rvm = opts.resource_version_match.as_deref().unwrap_or("");
        let mut errs = Vec::new();
        if !rvm.is_empty() && rv.is_empty() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if !rvm.is_empty() && opts.continue_token.is_some() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden when continue is provided",
            ));
        }
        if rvm == "Exact" && rv == "0" {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        if !matches!(rvm, "" | "Exact" | "NotOlderThan") {
            errs.push(FieldError::not_supported(
                "resourceVersionMatch",
                rvm,
                &["Exact", "NotOlderThan", ""],
            ));
        }
        if opts.send_initial_events.is_some() {
            errs.push(FieldError::forbidden(
                "sendInitialEvents",
                "sendInitialEvents is forbidden for list",
            ));
        }
        if !errs.is_empty() {
            return Err(list_options_invalid(errs));
        }
        Ok(match (rv, rvm) {
            ("", _) => ListRevision::Latest,
            ("0", _) => ListRevision::Any,
            (n, "Exact") => ListRevision::Exact(parse_rv(n)?),
            (n, "NotOlderThan") => ListRevision::NotOlderThan(parse_rv(n)?),
            (n, _) if opts.limit > 0 => ListRevision::Exact(parse_rv(n)?),
            (n, _) => ListRevision::NotOlderThan(parse_rv(n)?),
        })
    }

    fn list_error(&self, err: storage::Error, continuing: bool) -> Error {
        match err {
            storage::Error::Compacted { .. } if continuing => Error::Expired {
                message: CONTINUE_EXPIRED_MSG.into(),
            },
            storage::Error::Compacted { .. } => Error::Expired {
                message: "The resourceVersion for the provided list is too old.".into(),
            },
            e => self.storage_error("", e),
        }
    }

    /// LIST (one page when `limit` is set).
    pub(crate) async fn list(&self, ctx: &Context, opts: &ListOptions) -> Result<ListResult> {
        self.check_fields(&opts.field)?;
        let prefix = self.list_prefix(&ctx.namespace);
        let (mut revision, mut start) = match &opts.continue_token {
            Some(token) => {
                if opts
                    .resource_version
                    .as_deref()
                    .is_some_and(|rv| !rv.is_empty() && rv != "0")
                {
                    return Err(Error::BadRequest(
                        "specifying resource version is not allowed when using continue".into(),
                    ));
                }
                let t = decode_continue(token)?;
                (
                    ListRevision::Exact(t.rv),
                    Some(format!("{prefix}{}", t.start)),
                )
            }
            None => (self.list_revision(opts)?, None),
        };
        let continuing = opts.continue_token.is_some();
        let filtering = !opts.label.is_empty() || !opts.field.is_empty() || opts.collector_events;
        // Field selectors can name fields outside metadata; served forms that differ from the
        // stored one may differ in metadata too (a conversion webhook may change labels).
        let light =
            opts.metadata_only && opts.field.is_empty() && self.strategy.stores_served_form();
        let mut out = ListResult::default();
        let mut list_rev = None;
        'pages: loop {
            let page = self
                .list_storage(
                    &prefix,
                    storage::ListOptions {
                        revision,
                        limit: opts.limit,
                        start_key: start.clone(),
                    },
                )
                .await
                .map_err(|e| self.list_error(e, continuing))?;
            list_rev.get_or_insert(page.revision);
            revision = ListRevision::Exact(page.revision);
            let n = page.items.len();
            for (idx, kv) in page.items.iter().enumerate() {
                let obj = if light {
                    self.decode_metadata(kv)?
                } else {
                    self.decode_shared(kv)?
                };
                if self.matches(&obj.obj, &opts.label, &opts.field)
                    && (!opts.collector_events || collector_keeps(&obj.obj))
                {
                    out.items.push(obj);
                }
                if opts.limit > 0 && out.items.len() >= opts.limit {
                    let more = idx + 1 < n || page.next_key.is_some();
                    if more {
                        let rel = kv.key.strip_prefix(&prefix).unwrap_or(&kv.key);
                        out.continue_token =
                            Some(encode_continue(page.revision, &format!("{rel}\u{0}")));
                        if !filtering {
                            let left = page.remaining.unwrap_or(0) + (n - idx - 1) as i64;
                            out.remaining = (left > 0).then_some(left);
                        }
                    }
                    break 'pages;
                }
            }
            match page.next_key {
                Some(k) if opts.limit > 0 => start = Some(k),
                _ => break,
            }
        }
        out.resource_version = list_rev.unwrap_or(0).to_string();
        Ok(out)
    }

    #[cfg(test)]
    /// WATCH: a stream of events; errors found before streaming are returned, later ones
    /// (a too-old resourceVersion) arrive as an ERROR event.
    pub(crate) async fn watch(
        self: &Arc<Self>,
        ctx: &Context,
        opts: &ListOptions,
    ) -> Result<BoxStream<'static, WatchEvent>> {
        Ok(self.watch_with_progress(ctx, opts).await?.0)
    }

    /// [`Self::watch`] plus the stream's [`WatchProgress`] (for periodic bookmarks).
    pub(crate) async fn watch_with_progress(
        self: &Arc<Self>,
        ctx: &Context,
        opts: &ListOptions,
    ) -> Result<(BoxStream<'static, WatchEvent>, WatchProgress)> {
        let progress = WatchProgress::default();
        self.check_fields(&opts.field)?;
        let rv = opts.resource_version.as_deref().unwrap_or("");
        let rvm = opts.resource_version_match.as_deref().unwrap_or("");
        let mut errs = Vec::new();
        if opts.send_initial_events.is_some() {
            if rvm != "NotOlderThan" {
                errs.push(FieldError::forbidden(
                    "resourceVersionMatch",
                    "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                ));
            }
            if !opts.allow_bookmarks {
                errs.push(FieldError::forbidden(
                    "allowWatchBookmarks",
                    "sendInitialEvents requires setting allowWatchBookmarks to true",
                ));
            }
        } else if !rvm.is_empty() {
            errs.push(FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
            ));
        }
        if !matches!(rvm, "" | "NotOlderThan") {
            errs.push(FieldError::not_supported(
                "resourceVersionMatch",
                rvm,
                &["NotOlderThan"],
            ));
        }
        if !errs.is_empty() {
            return Err(list_options_invalid(errs));
        }
        let prefix = self.list_prefix(&ctx.namespace);
        let send_initial = opts
            .send_initial_events
            .unwrap_or(rv.is_empty() || rv == "0");
        // The initial events are decoded as the client takes them, so a watcher waiting on a
        // slow socket holds the listed keys (shared bytes), not every object decoded.
        let mut initial: Vec<BoxStream<'static, WatchEvent>> = Vec::new();
        let after = if send_initial {
            let revision = match rv {
                "" => ListRevision::Latest,
                "0" => ListRevision::Any,
                n => ListRevision::NotOlderThan(parse_rv(n)?),
            };
            let all = self
                .list_storage(
                    &prefix,
                    storage::ListOptions {
                        revision,
                        limit: 0,
                        start_key: None,
                    },
                )
                .await
                .map_err(|e| self.list_error(e, false))?;
            let store = Arc::clone(self);
            let (label, field) = (opts.label.clone(), opts.field.clone());
            let added = futures::stream::iter(all.items).filter_map(move |kv| {
                let ev = match store.decode_shared(&kv) {
                    Ok(obj) => store
                        .matches(&obj.obj, &label, &field)
                        .then_some(WatchEvent::Added(obj)),
                    Err(e) => Some(WatchEvent::Error(e)),
                };
                futures::future::ready(ev)
            });
            initial.push(added.boxed());
            if opts.send_initial_events == Some(true) {
                initial.push(
                    futures::stream::once(futures::future::ready(WatchEvent::Bookmark {
                        resource_version: all.revision.to_string(),
                        initial_events_end: true,
                    }))
                    .boxed(),
                );
            }
            all.revision
        } else {
            parse_rv(rv)?
        };
        // Renewals written here are marked and not even sent (the watch cache leaves them
        // out); the filter below catches the rest (etcd's events, replays from history).
        let live = if opts.omit_renewals {
            self.storage
                .watch_without_heartbeats(&prefix, Some(after))
                .await
        } else {
            self.storage.watch(&prefix, Some(after)).await
        };
        let live = match live {
            Ok(s) => s,
            Err(e @ storage::Error::Compacted { .. }) => {
                let error = WatchEvent::Error(self.storage_error("", e));
                initial.push(futures::stream::once(futures::future::ready(error)).boxed());
                return Ok((
                    end_at_error(futures::stream::iter(initial).flatten()),
                    progress,
                ));
            }
            Err(e) => return Err(self.storage_error("", e)),
        };
        let store = Arc::clone(self);
        let (label, field, bookmarks, collector_events) = (
            opts.label.clone(),
            opts.field.clone(),
            opts.allow_bookmarks,
            opts.collector_events,
        );
        let seen = progress.clone();
        // Only resources with renewals need the last object of every key remembered (for
        // every other kind that map was a decoded copy of each object the watch ever saw).
        let mut renewals =
            (opts.omit_renewals && self.strategy.has_renewals()).then(Renewals::default);
        let live = live.filter_map(move |ev| {
            // Skipped renewals still count as progress: bookmarks carry their revisions.
            if let Ok(e) = &ev {
                seen.advance(e.revision());
            }
            // The key is taken before the conversion consumes the event.
            let key = (renewals.as_ref())
                .and(ev.as_ref().ok())
                .map(|e| e.key().to_string());
            let out = store.convert_event(ev, &label, &field, bookmarks);
            let out = match (&mut renewals, key) {
                (Some(r), Some(key)) => out.and_then(|ev| r.pass(&*store.strategy, key, ev)),
                _ => out,
            };
            futures::future::ready(out.filter(|ev| !collector_events || collector_acts_on(ev)))
        });
        // Progress starts at `after` only once the initial events are out.
        let start = progress.clone();
        let caught_up = futures::stream::once(async move {
            start.advance(after);
            None
        })
        .filter_map(futures::future::ready);
        let stream = futures::stream::iter(initial)
            .flatten()
            .chain(caught_up)
            .chain(live);
        Ok((end_at_error(stream), progress))
    }

    fn convert_event(
        &self,
        ev: storage::Result<storage::WatchEvent>,
        label: &LabelSelector,
        field: &FieldSelector,
        bookmarks: bool,
    ) -> Option<WatchEvent> {
        // An object that does not decode (a conversion webhook that fails) ends the watch
        // with an ERROR event rather than being skipped.
        macro_rules! decode {
            ($kv:expr) => {
                match self.decode_shared($kv) {
                    Ok(obj) => obj,
                    Err(e) => return Some(WatchEvent::Error(e)),
                }
            };
        }
        match ev {
            Ok(storage::WatchEvent::Created(kv)) => {
                let obj = decode!(&kv);
                self.matches(&obj.obj, label, field)
                    .then_some(WatchEvent::Added(obj))
            }
            Ok(storage::WatchEvent::Updated { kv, .. }) if label.is_empty() && field.is_empty() => {
                // Without selectors the previous object cannot change the event's type.
                Some(WatchEvent::Modified(decode!(&kv)))
            }
            Ok(storage::WatchEvent::Updated { kv, prev, .. }) => {
                let obj = decode!(&kv);
                let old = decode!(&prev);
                match (
                    self.matches(&old.obj, label, field),
                    self.matches(&obj.obj, label, field),
                ) {
                    (true, true) => Some(WatchEvent::Modified(obj)),
                    (false, true) => Some(WatchEvent::Added(obj)),
                    (true, false) => Some(WatchEvent::Deleted(obj)),
                    (false, false) => None,
                }
            }
            Ok(storage::WatchEvent::Deleted { prev, revision }) => {
                let obj = match self.decode_deleted(&prev, revision) {
                    Ok(obj) => obj,
                    Err(e) => return Some(WatchEvent::Error(e)),
                };
                self.matches(&obj.obj, label, field)
                    .then_some(WatchEvent::Deleted(obj))
            }
            Ok(storage::WatchEvent::Progress(rev)) => bookmarks.then(|| WatchEvent::Bookmark {
                resource_version: rev.to_string(),
                initial_events_end: false,
            }),
            Err(e) => Some(WatchEvent::Error(self.storage_error("", e))),
        }
    }
}

/// `events` up to and including its first ERROR event: nothing follows an ERROR.
fn end_at_error(
    events: impl futures::Stream<Item = WatchEvent> + Send + 'static,
) -> BoxStream<'static, WatchEvent> {
    events
        .scan(false, |ended, ev| {
            if *ended {
                return futures::future::ready(None);
            }
            *ended = matches!(ev, WatchEvent::Error(_));
            futures::future::ready(Some(ev))
        })
        .boxed()
}

/// Whether the garbage collector acts on `ev` ([`ListOptions::collector_events`]): an object
/// that is owned or being deleted, and every deletion, bookmark and error. What it leaves
/// out still advances the watch's progress, so bookmarks carry those revisions.
fn collector_acts_on(ev: &WatchEvent) -> bool {
    match ev {
        WatchEvent::Added(o) | WatchEvent::Modified(o) => collector_keeps(&o.obj),
        WatchEvent::Deleted(_) | WatchEvent::Bookmark { .. } | WatchEvent::Error(_) => true,
    }
}

/// Whether the garbage collector acts on `obj`: it is owned or being deleted.
fn collector_keeps(obj: &Value) -> bool {
    let meta = &obj["metadata"];
    let owned = (meta.get("ownerReferences").and_then(Value::as_array))
        .is_some_and(|refs| !refs.is_empty());
    owned || meta.get("deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// A watch's filter of renewals ([`ListOptions::omit_renewals`]): the last object of each key
/// it saw, to compare the next one with. Renewals the store left out never reach it, so the
/// last object may be older than the event's previous one; that gives the same answer, as
/// an object that renews a renewal of `last` renews `last`.
#[derive(Default)]
struct Renewals {
    last: HashMap<String, Arc<Decoded>>,
}

impl Renewals {
    /// `ev` (about `key`), unless it is a MODIFIED event that only renews the object before it.
    fn pass(
        &mut self,
        strategy: &dyn crate::registry::Strategy,
        key: String,
        ev: WatchEvent,
    ) -> Option<WatchEvent> {
        match &ev {
            WatchEvent::Added(o) => {
                self.last.insert(key, o.clone());
            }
            WatchEvent::Modified(o) => {
                let before = self.last.insert(key, o.clone());
                if before.is_some_and(|b| strategy.is_renewal(&b.obj, &o.obj)) {
                    return None;
                }
            }
            WatchEvent::Deleted(_) => {
                self.last.remove(&key);
            }
            WatchEvent::Bookmark { .. } | WatchEvent::Error(_) => {}
        }
        Some(ev)
    }
}

fn encode_continue(rv: Revision, start: &str) -> String {
    let token = ContinueToken {
        v: "meta.k8s.io/v1".into(),
        rv,
        start: start.into(),
    };
    let json = serde_json::to_vec(&token).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
}

fn decode_continue(token: &str) -> Result<ContinueToken> {
    let bad = |why: &str| Error::BadRequest(format!("continue key is not valid: {why}"));
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    let t: ContinueToken = serde_json::from_slice(&bytes)
        .map_err(|_| bad("incorrect encoded start resourceVersion (version meta.k8s.io/v1)"))?;
    if t.v != "meta.k8s.io/v1" {
        return Err(bad("server does not recognize this encoded version"));
    }
    if t.start.is_empty() || t.start.starts_with('/') || t.start.split('/').any(|p| p == "..") {
        return Err(bad("continue key is not valid"));
    }
    if t.rv <= 0 {
        return Err(bad(
            "incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        ));
    }
    Ok(t)
}
