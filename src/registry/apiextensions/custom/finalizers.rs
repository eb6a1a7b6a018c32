//! The warnings a custom resource's finalizers get (apiextensions-apiserver's
//! generateWarningsFromObj and validateKubeFinalizerName): a finalizer an object gains that is
//! not a qualified name, or not domain-qualified with a path, is accepted with a warning.

use crate::api::selectors::qualified_name_errors;
use crate::api::well_known::{FINALIZER_FOREGROUND, FINALIZER_KUBERNETES, FINALIZER_ORPHAN};
use crate::api::At;
use crate::registry::error::quote;
use serde_json::Value;
use std::collections::BTreeSet;

/// The finalizers Kubernetes itself defines.
const STANDARD: [&str; 3] = [FINALIZER_ORPHAN, FINALIZER_FOREGROUND, FINALIZER_KUBERNETES];

const PATH: &str = "metadata.finalizers";

/// The warnings of the finalizers `obj` has and `old` (on update) had not, in name order.
pub(super) fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    let mut added = names(obj);
    if let Some(old) = old {
        for f in names(old) {
            added.remove(f);
        }
    }
    added.into_iter().flat_map(of_name).collect()
}

/// The finalizers of `obj`, in name order, once each.
fn names(obj: &Value) -> BTreeSet<&str> {
    obj.at("/metadata/finalizers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// validateKubeFinalizerName.
fn of_name(name: &str) -> Vec<String> {
    let quoted = quote(name);
    let mut out: Vec<String> = qualified_name_errors(name)
        .into_iter()
        .map(|m| format!("{PATH}: {quoted}: {m}"))
        .collect();
    if !name.contains('/') && !STANDARD.contains(&name) {
        out.push(if name.contains('.') {
            format!("{PATH}: {quoted}: prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers")
        } else {
            format!("{PATH}: {quoted}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers")
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn finalizers_an_object_gains_are_warned_about_as_upstream_words_it() {
        let obj = json!({"metadata": {"finalizers": [
            "example.com/cleanup", "cleanup", "example.com", "kubernetes", "bad name", "old"]}});
        let old = json!({"metadata": {"finalizers": ["old"]}});
        assert_eq!(
            warnings(&obj, Some(&old)),
            [
                "metadata.finalizers: \"bad name\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
                "metadata.finalizers: \"bad name\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
                "metadata.finalizers: \"cleanup\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
                "metadata.finalizers: \"example.com\": prefer a domain-qualified finalizer name including a path (/) to avoid accidental conflicts with other finalizer writers",
            ]
        );
        // On create every finalizer counts; a well-named one gets nothing.
        assert_eq!(warnings(&old, None).len(), 1);
        assert!(warnings(
            &json!({"metadata": {"finalizers": ["example.com/x"]}}),
            None
        )
        .is_empty());
    }
}
