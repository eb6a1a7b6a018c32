//! Where a write meets admission: mutating admission before BeforeCreate/BeforeUpdate,
//! validating admission after the strategy's validation, as kube-apiserver's handlers and
//! generic store call them. A write without admission in its [`Context`] (no webhook is
//! configured, or the server's own call) costs nothing here.

use super::GenericStore;
use crate::registry::admission::{Attributes, Operation};
use crate::registry::error::Result;
use crate::registry::Context;
use serde_json::Value;

impl GenericStore {
    fn attributes<'a>(
        &'a self,
        ctx: &'a Context,
        operation: Operation,
        name: &'a str,
        old: Option<&'a Value>,
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
            old_object: old,
            schema: match &i.schema {
                crate::registry::strategy::KindSchema::Custom(s) => Some(s),
                crate::registry::strategy::KindSchema::Typed(_) => None,
            },
        }
    }

    /// Mutating admission of `obj` (None for a delete), each patched object decoded again.
    pub(super) async fn admit_mutating(
        &self,
        ctx: &Context,
        operation: Operation,
        name: &str,
        obj: Option<Value>,
        old: Option<&Value>,
    ) -> Result<Option<Value>> {
        let Some(req) = &ctx.admission else {
            return Ok(obj);
        };
        let attrs = self.attributes(ctx, operation, name, old);
        let mut obj = obj;
        let redecode = |v: Value| self.decode_request(ctx, v).map(|(v, _)| v);
        req.mutate(&attrs, &mut obj, &redecode).await?;
        Ok(obj)
    }

    /// Validating admission of `obj` (None for a delete).
    pub(super) async fn admit_validating(
        &self,
        ctx: &Context,
        operation: Operation,
        name: &str,
        obj: Option<&Value>,
        old: Option<&Value>,
    ) -> Result<()> {
        let Some(req) = &ctx.admission else {
            return Ok(());
        };
        req.validate(&self.attributes(ctx, operation, name, old), obj)
            .await
    }

    /// [`Self::admit_mutating`] from inside a storage update function, which cannot await.
    pub(super) fn admit_mutating_now(
        &self,
        ctx: &Context,
        operation: Operation,
        name: &str,
        obj: Value,
        old: Option<&Value>,
    ) -> Result<Value> {
        // Blocking a runtime thread on a webhook is costly: only when one may be called.
        if !ctx
            .admission
            .as_ref()
            .is_some_and(|a| a.chain.has_mutating())
        {
            return Ok(obj);
        }
        let mutated = crate::registry::webhook::wait(async {
            self.admit_mutating(ctx, operation, name, Some(obj), old)
                .await
        })?;
        Ok(mutated.unwrap_or(Value::Null))
    }

    /// [`Self::admit_validating`] from inside a storage update function.
    pub(super) fn admit_validating_now(
        &self,
        ctx: &Context,
        operation: Operation,
        name: &str,
        obj: &Value,
        old: Option<&Value>,
    ) -> Result<()> {
        if !ctx
            .admission
            .as_ref()
            .is_some_and(|a| a.chain.has_validating())
        {
            return Ok(());
        }
        crate::registry::webhook::wait(async {
            self.admit_validating(ctx, operation, name, Some(obj), old)
                .await
        })
    }
}
