//! Where a write meets admission: mutating admission before BeforeCreate/BeforeUpdate,
//! validating admission after the strategy's validation, as kube-apiserver's handlers and
//! generic store call them. A write without admission in its [`Context`] (no webhook is
//! configured, or the server's own call) costs nothing here.

use super::GenericStore;
use crate::registry::admission::{Attributes, Operation};
use crate::registry::codec::memo::{Decoded, Encoded};
use crate::registry::error::Result;
use crate::registry::Context;
use serde_json::Value;
use std::sync::OnceLock;

/// The object before a write, with its JSON when the memo made it already (sent to webhooks
/// as it is rather than encoded again).
#[derive(Clone, Copy)]
pub(super) struct Old<'a> {
    obj: &'a Value,
    json: Option<&'a [u8]>,
}

impl<'a> From<&'a Value> for Old<'a> {
    fn from(obj: &'a Value) -> Self {
        Old { obj, json: None }
    }
}

impl<'a> From<&'a Decoded> for Old<'a> {
    fn from(d: &'a Decoded) -> Self {
        Old {
            obj: &d.obj,
            json: Some(d.json()),
        }
    }
}

impl GenericStore {
    fn attributes<'a>(
        &'a self,
        ctx: &'a Context,
        operation: Operation,
        name: &'a str,
        old: Option<Old<'a>>,
        stored: Option<&'a OnceLock<Encoded>>,
    ) -> Attributes<'a> {
        let i = self.strategy.info();
        Attributes {
            operation,
            group: &i.group,
            version: &i.version,
            kind: &i.kind,
            resource: &i.resource,
            namespace: &ctx.namespace,
            name,
            dry_run: ctx.dry_run,
            old_object: old.map(|o| o.obj),
            old_json: old.and_then(|o| o.json),
            object_stored: stored.filter(|_| self.strategy.stores_served_form()),
            schema: match &i.schema {
                crate::registry::strategy::KindSchema::Custom(s) => Some(s),
                crate::registry::strategy::KindSchema::Typed(_) => None,
            },
            request_version: None,
            equivalents: self.strategy.equivalents(),
        }
    }

    /// Mutating admission of `obj` (None for a delete), each patched object decoded again.
    pub(super) async fn admit_mutating(
        &self,
        ctx: &Context,
        operation: Operation,
        name: &str,
        obj: Option<Value>,
        old: Option<Old<'_>>,
    ) -> Result<Option<Value>> {
        let Some(req) = &ctx.admission else {
            return Ok(obj);
        };
        let attrs = self.attributes(ctx, operation, name, old, None);
        let mut obj = obj;
        let redecode = |v: Value| self.decode_request(ctx, v).map(|(v, _)| v);
        req.mutate(&attrs, &mut obj, &redecode).await?;
        Ok(obj)
    }

    /// Validating admission of `obj` (None for a delete). `stored`, when given, is where a
    /// webhook's review leaves the stored encoding of `obj` it was sent: the write then stores
    /// it ([`GenericStore::encode_for_write_from`]) rather than encoding `obj` again.
    pub(super) async fn admit_validating(
        &self,
        ctx: &Context,
        operation: Operation,
        name: &str,
        (obj, stored): (Option<&Value>, Option<&OnceLock<Encoded>>),
        old: Option<Old<'_>>,
    ) -> Result<()> {
        let Some(req) = &ctx.admission else {
            return Ok(());
        };
        req.validate(&self.attributes(ctx, operation, name, old, stored), obj)
            .await
    }

    /// Whether admission of a write in `ctx` may call a webhook (and so wait on the network).
    pub(super) fn may_call_webhooks(&self, ctx: &Context) -> bool {
        ctx.admission
            .as_ref()
            .is_some_and(|a| a.chain.has_webhooks())
    }
}
