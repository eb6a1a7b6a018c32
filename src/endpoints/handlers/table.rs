//! meta.k8s.io Table and PartialObjectMetadata responses (handlers/response.go `asTable`,
//! `asPartialObjectMetadata`): rows from the strategy's printer, `includeObject`
//! None|Metadata|Object. May use: registry, api.

use super::error::Error;
use crate::registry::GenericStore;
use serde_json::{json, Value};

/// includeObject of a Table request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Include {
    None,
    Metadata,
    Object,
}

/// Parses `includeObject` (default Metadata).
pub(crate) fn include(v: Option<&str>) -> Result<Include, Error> {
    match v {
        None | Some("") | Some("Metadata") => Ok(Include::Metadata),
        Some("None") => Ok(Include::None),
        Some("Object") => Ok(Include::Object),
        Some(other) => Err(Error::UnknownIncludeObject(other.to_string())),
    }
}

/// PartialObjectMetadata of an object.
pub(crate) fn partial(obj: &Value, version: &str) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A Table of `objects` with `list_meta` as its metadata.
pub(crate) fn table(
    store: &GenericStore,
    objects: &[Value],
    list_meta: Value,
    version: &str,
    inc: Include,
    columns: bool,
) -> Value {
    let strategy = store.strategy();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut row = json!({ "cells": strategy.cells(o) });
            match inc {
                Include::None => {}
                Include::Metadata => row["object"] = partial(o, version),
                Include::Object => row["object"] = o.clone(),
            }
            row
        })
        .collect();
    let defs = if columns {
        serde_json::to_value(strategy.columns()).unwrap_or(Value::Null)
    } else {
        json!([])
    };
    json!({
        "kind": "Table",
        "apiVersion": format!("meta.k8s.io/{version}"),
        "metadata": list_meta,
        "columnDefinitions": defs,
        "rows": rows,
    })
}
