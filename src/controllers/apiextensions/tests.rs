use super::*;
use serde_json::json;

fn crd(name: &str, plural: &str, kind: &str, short: &[&str]) -> CustomResourceDefinition {
    let group = name.split_once('.').unwrap().1;
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "group": group, "scope": "Namespaced",
            "names": {"plural": plural, "singular": plural.trim_end_matches('s'), "kind": kind,
                "listKind": format!("{kind}List"), "shortNames": short},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]
        }
    }))
    .unwrap()
}

fn accepted(mut c: CustomResourceDefinition) -> CustomResourceDefinition {
    c.status = Some(CustomResourceDefinitionStatus {
        accepted_names: Some(c.spec.names.clone()),
        ..Default::default()
    });
    c
}

#[test]
fn fresh_names_are_accepted_and_installing() {
    let c = crd(
        "crontabs.stable.example.com",
        "crontabs",
        "CronTab",
        &["ct"],
    );
    let (names, ok, est) = naming::calculate(&c, &BTreeMap::new());
    assert_eq!(names, c.spec.names);
    assert_eq!(
        (ok.status.as_str(), ok.reason.as_deref()),
        ("True", Some("NoConflicts"))
    );
    assert_eq!(
        (est.status.as_str(), est.reason.as_deref()),
        ("False", Some("Installing"))
    );
}

#[test]
fn taken_names_conflict_with_upstreams_reasons() {
    let holder = accepted(crd(
        "crontabs.stable.example.com",
        "crontabs",
        "CronTab",
        &["ct"],
    ));
    let cache = BTreeMap::from([(holder.name_any(), holder)]);
    let mut c = crd("crontabs2.stable.example.com", "crontabs", "Other", &[]);
    c.spec.names.singular = Some("other".into());
    let (names, ok, est) = naming::calculate(&c, &cache);
    assert_eq!(names.plural, "");
    assert_eq!(names.kind, "Other");
    assert_eq!(ok.status, "False");
    assert_eq!(ok.reason.as_deref(), Some("PluralConflict"));
    assert_eq!(
        ok.message.as_deref(),
        Some("\"crontabs\" is already in use")
    );
    assert_eq!(est.reason.as_deref(), Some("NotAccepted"));

    let c = crd(
        "others.stable.example.com",
        "others",
        "Other",
        &["ct", "crontab"],
    );
    let (_, ok, _) = naming::calculate(&c, &cache);
    assert_eq!(ok.reason.as_deref(), Some("ShortNamesConflict"));
    assert_eq!(
        ok.message.as_deref(),
        Some("[\"ct\" is already in use, \"crontab\" is already in use]")
    );

    let mut c = crd("others.stable.example.com", "others", "CronTab", &[]);
    c.spec.names.list_kind = Some("OtherList".into());
    let (_, ok, _) = naming::calculate(&c, &cache);
    assert_eq!(ok.reason.as_deref(), Some("KindConflict"));

    // Another group is free to use them all.
    let c = crd("crontabs.other.example.com", "crontabs", "CronTab", &["ct"]);
    let (_, ok, _) = naming::calculate(&c, &cache);
    assert_eq!(ok.status, "True");
}

#[test]
fn built_in_names_of_the_group_are_taken() {
    let c = crd("leases.coordination.k8s.io", "leases", "Lease2", &[]);
    let (_, ok, _) = naming::calculate(&c, &BTreeMap::new());
    // Plural and singular both conflict; the last check's reason is kept, as upstream's.
    assert_eq!(ok.reason.as_deref(), Some("SingularConflict"));
    assert_eq!(ok.message.as_deref(), Some("\"lease\" is already in use"));
}

#[test]
fn protected_groups_need_approval() {
    let mut c = crd("things.example.k8s.io", "things", "Thing", &[]);
    let missing = approval_condition(&c).unwrap();
    assert_eq!(missing.reason.as_deref(), Some("MissingAnnotation"));
    assert_eq!(
        missing.message.as_deref(),
        Some("protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111")
    );
    let set = |c: &mut CustomResourceDefinition, v: &str| {
        c.metadata.annotations = Some([(APPROVAL_ANNOTATION.to_string(), v.to_string())].into());
    };
    set(
        &mut c,
        "https://github.com/kubernetes/kubernetes/pull/78458",
    );
    let ok = approval_condition(&c).unwrap();
    assert_eq!(
        (ok.status.as_str(), ok.reason.as_deref()),
        ("True", Some("ApprovedAnnotation"))
    );
    set(&mut c, "unapproved, experimental");
    assert_eq!(
        approval_condition(&c).unwrap().reason.as_deref(),
        Some("UnapprovedAnnotation")
    );
    set(&mut c, "yes please");
    assert_eq!(
        approval_condition(&c).unwrap().reason.as_deref(),
        Some("InvalidAnnotation")
    );
    let other = crd("things.example.com", "things", "Thing", &[]);
    assert!(approval_condition(&other).is_none());
}

#[test]
fn unchanged_conditions_keep_their_transition_time() {
    let mut status = CustomResourceDefinitionStatus::default();
    let mut first = condition("NamesAccepted", "True", "NoConflicts", "no conflicts found");
    first.last_transition_time = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    set_condition(&mut status, first.clone());
    set_condition(
        &mut status,
        condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
    );
    assert_eq!(status.conditions.as_ref().unwrap()[0], first);
    set_condition(
        &mut status,
        condition("NamesAccepted", "False", "PluralConflict", "x"),
    );
    assert_ne!(
        status.conditions.as_ref().unwrap()[0].last_transition_time,
        first.last_transition_time
    );
}
