//! Defaulting (pkg/apiserver/schema/defaulting): a property that is missing, or null where
//! the schema is not nullable, gets a deep copy of its `default`; a non-nullable null under
//! additionalProperties or in a list gets the default of that schema. Upstream applies it
//! after pruning when decoding (request bodies and storage reads alike), with defaults that
//! were themselves pruned once when the CRD was loaded (PruneDefaults, done here at compile
//! time). May use: nothing internal.

use super::compile::Node;
use super::embedded;
use super::objectmeta;
use super::prune::{is_meta_field, Pruner};
use serde_json::Value;

/// Default(x, s).
pub(super) fn apply(x: &mut Value, s: &Node) {
    if !s.defaults_below {
        return;
    }
    match x {
        Value::Object(m) => {
            for (k, prop) in s.properties.iter() {
                let Some(d) = &prop.default else {
                    continue;
                };
                match m.get_mut(&**k) {
                    None => {
                        super::probe::allocates();
                        m.insert(k.to_string(), Value::clone(d));
                    }
                    Some(v) if v.is_null() && !prop.nullable => {
                        super::probe::allocates();
                        *v = Value::clone(d);
                    }
                    Some(_) => {}
                }
            }
            let additional = s.additional.as_ref().and_then(|a| a.schema.as_ref());
            for (k, v) in m.iter_mut() {
                if let Some(prop) = s.property(k) {
                    apply(v, prop);
                } else if let Some(a) = additional {
                    if v.is_null() && !a.nullable {
                        if let Some(d) = &a.default {
                            super::probe::allocates();
                            *v = Value::clone(d);
                        }
                    }
                    apply(v, a);
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = s.items.as_deref() else {
                return;
            };
            for v in items {
                if v.is_null() && !item.nullable {
                    if let Some(d) = &item.default {
                        super::probe::allocates();
                        *v = Value::clone(d);
                    }
                }
                apply(v, item);
            }
        }
        _ => {}
    }
}

/// Where a default sits, for pruning it as upstream does in the default's surrounding object.
#[derive(Clone, Copy)]
struct Place {
    /// Reached through items under preserve-unknown-fields (skipPrune).
    skip: bool,
    /// The apiVersion, kind or metadata of the root or an embedded resource: not pruned,
    /// only coerced.
    meta: Option<&'static str>,
}

/// PruneDefaults, then `defaults_below` for every node.
pub(super) fn prepare(root: &mut Node) {
    prune_defaults(
        root,
        Place {
            skip: false,
            meta: None,
        },
        true,
    );
    mark(root);
}

fn prune_defaults(node: &mut Node, at: Place, root: bool) {
    if let Some(d) = node.default.take() {
        node.default = match at.meta {
            // Coerce with dropping: a non-string apiVersion or kind is dropped, and so is
            // the default.
            Some("apiVersion" | "kind") => d.is_string().then_some(d),
            Some(_) => objectmeta::coerce(&d, true, &mut Vec::new())
                .ok()
                .map(Box::new),
            None => {
                let mut d = d;
                let _ = embedded::coerce(node, &mut d, true, &mut Vec::new());
                let mut pruner = Pruner {
                    nulls: false,
                    track: false,
                    unknown: Vec::new(),
                };
                pruner.run(&mut d, Some(node), at.skip, node.embedded);
                Some(d)
            }
        };
    }
    let keeps_meta = root || node.embedded;
    for (k, prop) in node.properties.iter_mut() {
        let meta = match &**k {
            "apiVersion" if keeps_meta => Some("apiVersion"),
            "kind" if keeps_meta => Some("kind"),
            "metadata" if keeps_meta => Some("metadata"),
            _ => None,
        };
        debug_assert!(meta.is_none() || is_meta_field(k));
        prune_defaults(prop, Place { skip: false, meta }, false);
    }
    if let Some(s) = node.additional.as_mut().and_then(|a| a.schema.as_mut()) {
        prune_defaults(
            s,
            Place {
                skip: false,
                meta: None,
            },
            false,
        );
    }
    let skip = at.skip || node.preserve_unknown;
    if let Some(items) = node.items.as_deref_mut() {
        prune_defaults(items, Place { skip, meta: None }, false);
    }
}

/// Sets `defaults_below`: whether defaulting has anything to do under a node.
fn mark(node: &mut Node) -> bool {
    let mut any = false;
    for (_, prop) in node.properties.iter_mut() {
        any |= prop.default.is_some();
        any |= mark(prop);
    }
    if let Some(s) = node.additional.as_mut().and_then(|a| a.schema.as_mut()) {
        any |= s.default.is_some();
        any |= mark(s);
    }
    if let Some(items) = node.items.as_deref_mut() {
        any |= items.default.is_some();
        any |= mark(items);
    }
    node.defaults_below = any;
    any
}
