//! The cap on update entries in managedFields, as kube's capManagersManager: an object keeps
//! at most ten entries from updates (appliers are not counted); beyond that, the oldest are
//! merged, per API version, into an `ancient-changes` entry. Only updates cap (an apply
//! leaves the list as long as it is).

use super::{Identity, Manager};
use std::collections::HashMap;

/// kube's DefaultMaxUpdateManagers.
pub(super) const MAX_UPDATE_MANAGERS: usize = 10;
/// The manager the oldest update entries are merged into.
pub(super) const ANCIENT_CHANGES: &str = "ancient-changes";

/// Merges the oldest update entries of `managers` until at most [`MAX_UPDATE_MANAGERS`] are
/// left, as capUpdateManagers does: oldest first (by the second of their time, no time
/// counting as the oldest, then by their manager identifier), the first entry of each API
/// version stays as it is until a second one of that version is merged; then the first
/// becomes the version's `ancient-changes` bucket (unless the bucket exists already) and
/// every later one is merged into the bucket, which takes the merged entry's time. Returns
/// whether anything was merged. Entries that own nothing do not count (kube has dropped
/// them by then).
pub(super) fn cap_update_managers(managers: &mut Vec<Manager<'_>>) -> bool {
    let mut updaters: Vec<usize> = (0..managers.len())
        .filter(|&i| managers[i].operation != "Apply" && !managers[i].owns_nothing())
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return false;
    }
    updaters.sort_by_cached_key(|&i| {
        (
            seconds(managers[i].time.as_deref()),
            identifier(&managers[i]),
        )
    });
    let mut first_of: HashMap<String, usize> = HashMap::new();
    let mut gone = vec![false; managers.len()];
    let mut left = updaters.len();
    for &i in &updaters {
        if left <= MAX_UPDATE_MANAGERS {
            break;
        }
        let version = managers[i].api_version.clone();
        let Some(&first) = first_of.get(&version) else {
            first_of.insert(version, i);
            continue;
        };
        let bucket = Identity {
            manager: ANCIENT_CHANGES,
            operation: "Update",
            api_version: &version,
            subresource: "",
        };
        let existing =
            (0..managers.len()).find(|&j| !gone[j] && managers[j].identity().same(&bucket));
        let b = match existing {
            Some(j) => j,
            None if !gone[first] => {
                // The version's first entry becomes the bucket, fields and all.
                rename_to_bucket(&mut managers[first]);
                first
            }
            None => {
                // The first entry was the bucket, merged away into itself (below); kube would
                // fail here on the missing entry. This one becomes the bucket instead.
                rename_to_bucket(&mut managers[i]);
                continue;
            }
        };
        let merged = managers[i].set_mut().clone();
        managers[b].set_mut().extend(merged);
        managers[b].time = managers[i].time.clone();
        // kube deletes the merged entry by its identifier, which is the bucket's own when the
        // bucket is the entry being merged: then the bucket goes too.
        gone[i] = true;
        left -= 1;
    }
    let mut at = 0;
    managers.retain(|_| {
        at += 1;
        !gone[at - 1]
    });
    true
}

fn rename_to_bucket(m: &mut Manager<'_>) {
    m.manager = ANCIENT_CHANGES.into();
    m.operation = "Update".into();
    m.subresource = String::new();
}

/// Unix seconds of a managedFields time; 0 when there is none (or it does not parse).
fn seconds(time: Option<&str>) -> i64 {
    time.and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map_or(0, |t| t.timestamp())
}

/// BuildManagerIdentifier: the JSON of the entry's manager, operation, apiVersion (not for
/// appliers) and subresource (when set), in ManagedFieldsEntry's field order.
fn identifier(m: &Manager<'_>) -> String {
    let s = |v: &str| serde_json::to_string(v).unwrap_or_default();
    let mut out = format!(
        "{{\"manager\":{},\"operation\":{}",
        s(&m.manager),
        s(&m.operation)
    );
    if m.operation != "Apply" && !m.api_version.is_empty() {
        out.push_str(&format!(",\"apiVersion\":{}", s(&m.api_version)));
    }
    if !m.subresource.is_empty() {
        out.push_str(&format!(",\"subresource\":{}", s(&m.subresource)));
    }
    out.push('}');
    out
}

#[cfg(test)]
mod tests {
    use super::super::update_managed_fields;
    use serde_json::{json, Value};

    /// A ConfigMap whose data key `kNN` is owned by update manager `mNN` (written NN minutes
    /// after midnight), NN in `updaters`, plus one applier that owns `applied`.
    fn owned(updaters: std::ops::Range<usize>) -> Value {
        let mut data = serde_json::Map::new();
        let mut entries = vec![json!({
            "manager": "kubectl", "operation": "Apply", "apiVersion": "v1",
            "time": "2019-01-01T00:00:00Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:applied": {}}},
        })];
        data.insert("applied".into(), json!("a"));
        for n in updaters {
            data.insert(format!("k{n:02}"), json!("v"));
            entries.push(json!({
                "manager": format!("m{n:02}"), "operation": "Update", "apiVersion": "v1",
                "time": format!("2020-01-01T00:{n:02}:00Z"), "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {format!("f:k{n:02}"): {}}},
            }));
        }
        json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "namespace": "default", "managedFields": entries},
            "data": data})
    }

    /// `old` after update manager `mNN` sets data key `kNN`.
    fn written_by(old: &Value, n: usize) -> Value {
        let mut new = old.clone();
        new["data"][format!("k{n:02}")] = json!("v");
        update_managed_fields(Some(old), &mut new, &format!("m{n:02}"), "Update", "");
        new
    }

    fn managers(obj: &Value) -> Vec<String> {
        obj["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["manager"].as_str().unwrap().to_string())
            .collect()
    }

    /// Twelve update entries: the oldest three merge into `ancient-changes` (the first one
    /// becomes it, the next two are merged in and it takes the last one's time); the applier
    /// is neither counted nor merged.
    #[test]
    fn more_than_ten_update_entries_merge_the_oldest_into_ancient_changes() {
        let old = owned(0..11);
        let new = written_by(&old, 11);
        let mut expected = vec!["kubectl".to_string(), "ancient-changes".into()];
        expected.extend((3..12).map(|n| format!("m{n:02}")));
        assert_eq!(managers(&new), expected);
        let bucket = &new["metadata"]["managedFields"][1];
        assert_eq!(bucket["operation"], "Update");
        assert_eq!(bucket["apiVersion"], "v1");
        assert_eq!(bucket["time"], "2020-01-01T00:02:00Z");
        assert_eq!(
            bucket["fieldsV1"],
            json!({"f:data": {"f:k00": {}, "f:k01": {}, "f:k02": {}}})
        );
    }

    /// Ten update entries are left as they are, and so are eleven when the bucket of their
    /// version exists: the oldest then merges into it and the first stays.
    #[test]
    fn ten_update_entries_stay_and_an_existing_bucket_takes_the_merges() {
        let old = owned(0..9);
        let new = written_by(&old, 9);
        let mut expected = vec!["kubectl".to_string()];
        expected.extend((0..10).map(|n| format!("m{n:02}")));
        assert_eq!(managers(&new), expected);

        let mut old = owned(0..10);
        old["metadata"]["managedFields"][1]["manager"] = json!("ancient-changes");
        let new = written_by(&old, 10);
        // The bucket (00:00) is the oldest entry, so it is the version's first; the next,
        // m01, is merged into it, and ten update entries are left.
        let list = new["metadata"]["managedFields"].as_array().unwrap();
        assert_eq!(list.len(), 11, "{list:?}");
        let bucket = list
            .iter()
            .find(|e| e["manager"] == "ancient-changes")
            .unwrap();
        assert_eq!(
            bucket["fieldsV1"],
            json!({"f:data": {"f:k00": {}, "f:k01": {}}})
        );
        assert_eq!(bucket["time"], "2020-01-01T00:01:00Z");
    }
}
