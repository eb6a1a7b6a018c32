//! A CRD version's structural schema applied to custom objects: validation, pruning and
//! defaulting, as apiextensions-apiserver's pkg/apiserver/schema and pkg/apiserver/validation
//! (with k8s.io/kube-openapi's validator) do them in kube-apiserver 1.35.
//!
//! [`Schema::compile`] runs once per CRD version; everything after is a walk over the object
//! that allocates only for what it reports. Upstream's order on a write is:
//!
//! 1. decoding: the root's apiVersion, kind and metadata are kept aside (metadata read as
//!    ObjectMeta by the registry, as for any resource), then [`Schema::coerce`] prunes unknown
//!    fields, drops non-nullable nulls and reads embedded resources' metadata as ObjectMeta;
//!    the unknown field paths it returns are what fieldValidation Strict rejects and Warn
//!    reports (`unknown field "<path>"`), after the root metadata's own;
//! 2. [`Schema::default`];
//! 3. [`Schema::validate`] on create, [`Schema::validate_update`] (ratcheting) on update,
//!    [`Schema::validate_status_update`] on the status subresource — on top of the registry's
//!    ObjectMeta and TypeMeta checks.
//!
//! Storage reads decode the same way (with malformed metadata dropped rather than refused).
//!
//! The root's metadata is validated against whatever the schema says of it; CRD validation
//! lets a schema say only name and generateName constraints there
//! (pkg/apiserver/schema/validation.go), so those are the only ones that ever apply.
//!
//! Where Go's libraries are approximated rather than reproduced: the `email` (net/mail) and
//! `uri` (net/url) formats accept the common shapes; the text of a regex that does not compile
//! (the CRD API compiles patterns first, so this needs a pattern Go accepts and the regex crate
//! does not), and of Go's JSON and time parse errors for embedded metadata of the wrong type;
//! `%q` outside ASCII knows the separators, format and private-use characters, not every
//! unassigned one.
//!
//! Not done here: CEL `x-kubernetes-validations` (the sibling module `cel`), conversion
//! between versions, server-side apply's list merging (endpoints::apply, from the schema's
//! JSON), and the scale subresource's checks.
//! May use: api, registry's error types and validation helpers.

mod compile;
mod default;
mod embedded;
mod formats;
mod listtype;
mod objectmeta;
mod path;
mod probe;
mod prune;
mod ratchet;
mod result;
mod validate;
pub(crate) use formats::go_duration_nanos;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_crontab;
#[cfg(test)]
mod tests_decode;

use super::super::error::FieldError;
use compile::Node;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::JSONSchemaProps;
use path::Path;
use prune::Pruner;
use result::Acc;
use serde_json::Value;

/// A CRD version's schema, compiled for applying to its objects.
#[derive(Debug)]
pub(crate) struct Schema {
    root: Node,
}

/// How [`Schema::coerce`] treats what it cannot keep.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct CoerceOptions {
    /// Return the paths of the fields pruned (fieldValidation Strict or Warn).
    pub(crate) track_unknown: bool,
    /// Drop an embedded resource's metadata field of the wrong type instead of failing (how
    /// storage reads decode).
    pub(crate) drop_invalid_metadata: bool,
}

impl Schema {
    /// Compiles the schema of a CRD version, assumed structural (validated with the CRD).
    pub(crate) fn compile(props: &JSONSchemaProps) -> Schema {
        let mut root = Node::compile(props);
        default::prepare(&mut root);
        Schema { root }
    }

    /// The decoding step after the root's TypeMeta and ObjectMeta are set aside: prunes
    /// unknown fields (PruneWithOptions at the resource root), drops nulls the schema neither
    /// allows nor defaults, and reads every embedded resource's metadata as ObjectMeta.
    /// Returns the unknown field paths (empty unless tracked): the pruned ones sorted, then the
    /// embedded metadata's sorted.
    ///
    /// # Errors
    ///
    /// An embedded resource's apiVersion, kind or metadata of the wrong type, unless
    /// `drop_invalid_metadata`.
    pub(crate) fn coerce(
        &self,
        obj: &mut Value,
        opts: CoerceOptions,
    ) -> Result<Vec<String>, FieldError> {
        let mut pruner = Pruner {
            nulls: true,
            track: opts.track_unknown,
            unknown: Vec::new(),
        };
        pruner.run(obj, Some(&self.root), false, true);
        let mut unknown = pruner.unknown;
        unknown.sort_unstable();
        let mut meta = Vec::new();
        embedded::coerce(&self.root, obj, opts.drop_invalid_metadata, &mut meta)?;
        if opts.track_unknown {
            meta.sort_unstable();
            unknown.append(&mut meta);
        }
        Ok(unknown)
    }

    #[cfg(test)]
    /// Pruning alone (PruneWithOptions at the resource root): the pruned paths, sorted, when
    /// `track`.
    pub(crate) fn prune(&self, obj: &mut Value, track: bool) -> Vec<String> {
        let mut pruner = Pruner {
            nulls: false,
            track,
            unknown: Vec::new(),
        };
        pruner.run(obj, Some(&self.root), false, true);
        pruner.unknown.sort_unstable();
        pruner.unknown
    }

    #[cfg(test)]
    /// PruneNonNullableNullsWithoutDefaults alone.
    pub(crate) fn prune_nulls(&self, obj: &mut Value) {
        prune::prune_nulls(obj, Some(&self.root));
    }

    /// Applies the schema's defaults (deep copies) to `obj`.
    pub(crate) fn default(&self, obj: &mut Value) {
        default::apply(obj, &self.root);
    }

    /// Create validation: the schema (kube-openapi), embedded resources' TypeMeta and
    /// ObjectMeta, and list-type uniqueness, in upstream's order.
    pub(crate) fn validate(&self, obj: &Value) -> Vec<FieldError> {
        let mut errs = openapi(&self.root, obj, None, None);
        embedded::validate(&self.root, obj, &mut errs);
        listtype::validate(&self.root, obj, &mut errs);
        errs
    }

    /// Update validation with ratcheting: errors of values unchanged from `old` are dropped
    /// (and list-type errors only count when `old` had none).
    pub(crate) fn validate_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = openapi(&self.root, new, Some(old), None);
        embedded::validate(&self.root, new, &mut errs);
        let mut old_lists = Vec::new();
        listtype::validate(&self.root, old, &mut old_lists);
        if old_lists.is_empty() {
            listtype::validate(&self.root, new, &mut errs);
        }
        errs
    }

    /// Status subresource validation: `status` against its own schema (errors under
    /// `status.`, messages relative to it), ratcheting against the old status, and
    /// list-type uniqueness when the old object had no list-type errors.
    pub(crate) fn validate_status_update(&self, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let (Some(status), Some(node)) = (new.get("status"), self.root.property("status")) {
            let old_status = old.get("status").unwrap_or(&Value::Null);
            errs = openapi(node, status, Some(old_status), Some("status"));
        }
        let mut new_lists = Vec::new();
        listtype::validate(&self.root, new, &mut new_lists);
        if !new_lists.is_empty() {
            let mut old_lists = Vec::new();
            listtype::validate(&self.root, old, &mut old_lists);
            if old_lists.is_empty() {
                errs.append(&mut new_lists);
            }
        }
        errs
    }
}

/// kube-openapi validation of `data` against `node`, as field errors below `fld`.
fn openapi(node: &Node, data: &Value, old: Option<&Value>, fld: Option<&str>) -> Vec<FieldError> {
    let mut acc = Acc::default();
    validate::validate(node, data, &Path::ROOT, old, &mut acc);
    result::to_field_errors(acc.errors, fld)
}
