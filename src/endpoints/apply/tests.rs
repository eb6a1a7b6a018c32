//! Server-side apply and managedFields, with expectations from kube-apiserver's behaviour
//! (fieldmanager tests and the managedFields kubectl shows): FieldsV1 shapes, conflicts and
//! their messages, force, pruning of fields no longer applied, list-map and set merging.

use super::*;

fn cm_gvk() -> GroupVersionKind {
    GroupVersionKind::new("", "v1", "ConfigMap")
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}, "data": data})
}

fn entries(obj: &Value) -> Vec<(String, String, Value)> {
    obj["metadata"]["managedFields"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|e| {
                    assert_eq!(e["fieldsType"], "FieldsV1");
                    assert!(e["time"].as_str().is_some_and(|t| t.ends_with('Z')));
                    (
                        e["manager"].as_str().unwrap().into(),
                        e["operation"].as_str().unwrap().into(),
                        e["fieldsV1"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn fields_v1_roundtrip() {
    let cases = [
        json!({"f:data": {"f:a": {}, "f:b": {}}}),
        json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}),
        json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"a\"": {}},
               "f:ownerReferences": {".": {}, "k:{\"uid\":\"u1\"}": {}}}}),
        json!({"f:secrets": {"k:{\"name\":\"s\"}": {".": {}, "f:name": {}}}}),
    ];
    for fv1 in cases {
        let set = fieldpath::from_fields_v1(&fv1);
        assert_eq!(fieldpath::to_fields_v1(&set), fv1);
    }
    let set = fieldpath::from_fields_v1(
        &json!({"f:spec": {"f:list": {"k:{\"a\":\"x\",\"b\":1}": {"f:c": {}}}}}),
    );
    let path = set.iter().next().unwrap();
    assert_eq!(fieldpath::to_string(path), ".spec.list[a=\"x\",b=1].c");
    let set = fieldpath::from_fields_v1(&json!({"f:metadata": {"f:finalizers": {"v:\"f\"": {}}}}));
    assert_eq!(
        fieldpath::to_string(set.iter().next().unwrap()),
        ".metadata.finalizers[=\"f\"]"
    );
}

#[test]
fn create_by_apply_records_the_applied_fields() {
    let mut applied = cm(json!({"k": "v"}));
    applied["metadata"]["labels"] = json!({"app": "a"});
    let out = server_side_apply(None, &applied, "kubectl", false, &cm_gvk()).unwrap();
    assert_eq!(out["data"], json!({"k": "v"}));
    assert_eq!(
        entries(&out),
        vec![(
            "kubectl".into(),
            "Apply".into(),
            json!({"f:data": {"f:k": {}}, "f:metadata": {"f:labels": {"f:app": {}}}})
        )]
    );
    assert_eq!(out["metadata"]["managedFields"][0]["apiVersion"], "v1");
    // Applying the same configuration again changes nothing but is allowed.
    let again = server_side_apply(Some(&out), &applied, "kubectl", false, &cm_gvk()).unwrap();
    assert_eq!(again["data"], out["data"]);
    assert_eq!(entries(&again), entries(&out));
}

#[test]
fn update_records_ownership_like_kubectl_create() {
    let mut obj = cm(json!({"k": "v"}));
    obj["metadata"]["labels"] = json!({"app": "a"});
    update_managed_fields(None, &mut obj, "kubectl-create", "Update", "");
    assert_eq!(
        entries(&obj),
        vec![(
            "kubectl-create".into(),
            "Update".into(),
            json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
        )]
    );
    // A second writer changing one key takes it over; the first keeps the rest.
    let mut next = obj.clone();
    next["data"]["k"] = json!("w");
    next["data"]["n"] = json!("1");
    update_managed_fields(Some(&obj), &mut next, "kubectl-edit", "Update", "");
    let e = entries(&next);
    assert_eq!(e.len(), 2);
    // Owning only the map itself now: a member without children is written `{}`.
    assert_eq!(
        e[0].2,
        json!({"f:data": {}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}})
    );
    assert_eq!(
        e[1],
        (
            "kubectl-edit".into(),
            "Update".into(),
            json!({"f:data": {"f:k": {}, "f:n": {}}})
        )
    );
    // managedFields: [] in the request clears ownership.
    let mut cleared = next.clone();
    cleared["metadata"]["managedFields"] = json!([]);
    update_managed_fields(Some(&next), &mut cleared, "kubectl-edit", "Update", "");
    assert!(cleared["metadata"].get("managedFields").is_none());
}

#[test]
fn conflicts_force_and_shared_ownership() {
    let mut live = cm(json!({"k": "v", "other": "o"}));
    update_managed_fields(None, &mut live, "kubectl-client-side-apply", "Update", "");

    // Same value: no conflict, both own it.
    let shared = server_side_apply(
        Some(&live),
        &cm(json!({"k": "v"})),
        "kubectl",
        false,
        &cm_gvk(),
    )
    .unwrap();
    let e = entries(&shared);
    assert_eq!(
        e.iter().find(|m| m.0 == "kubectl").unwrap().2,
        json!({"f:data": {"f:k": {}}})
    );
    assert!(e
        .iter()
        .find(|m| m.0 == "kubectl-client-side-apply")
        .unwrap()
        .2["f:data"]
        .get("f:k")
        .is_some());

    // Different value: conflict, with kube's message.
    let err = server_side_apply(
        Some(&live),
        &cm(json!({"k": "changed"})),
        "kubectl",
        false,
        &cm_gvk(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        ApplyError::Conflict {
            causes: vec![(
                ".data.k".into(),
                "\"kubectl-client-side-apply\" using v1".into()
            )]
        }
    );
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.k"
    );
    let err = server_side_apply(
        Some(&live),
        &cm(json!({"k": "a", "other": "b"})),
        "kubectl",
        false,
        &cm_gvk(),
    )
    .unwrap_err();
    assert_eq!(
        err.conflict_message().unwrap(),
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using v1:\n- .data.k\n- .data.other"
    );

    // Force: the applier takes the field over.
    let forced = server_side_apply(
        Some(&live),
        &cm(json!({"k": "changed"})),
        "kubectl",
        true,
        &cm_gvk(),
    )
    .unwrap();
    assert_eq!(forced["data"], json!({"k": "changed", "other": "o"}));
    let e = entries(&forced);
    assert_eq!(
        e.iter().find(|m| m.0 == "kubectl").unwrap().2,
        json!({"f:data": {"f:k": {}}})
    );
    let csa = &e
        .iter()
        .find(|m| m.0 == "kubectl-client-side-apply")
        .unwrap()
        .2;
    assert!(csa["f:data"].get("f:k").is_none());
    assert!(csa["f:data"].get("f:other").is_some());

    // Another applier is named without "using".
    let err = server_side_apply(
        Some(&forced),
        &cm(json!({"k": "mine"})),
        "other-applier",
        false,
        &cm_gvk(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        ApplyError::Conflict {
            causes: vec![(".data.k".into(), "\"kubectl\"".into())]
        }
    );
}

#[test]
fn fields_no_longer_applied_are_removed_unless_owned() {
    let first = server_side_apply(
        None,
        &cm(json!({"a": "1", "b": "2"})),
        "kubectl",
        false,
        &cm_gvk(),
    )
    .unwrap();
    let second = server_side_apply(
        Some(&first),
        &cm(json!({"a": "1"})),
        "kubectl",
        false,
        &cm_gvk(),
    )
    .unwrap();
    assert_eq!(second["data"], json!({"a": "1"}));

    // b also written by someone else: it stays.
    let mut shared = first.clone();
    shared["data"]["b"] = json!("3");
    update_managed_fields(Some(&first), &mut shared, "editor", "Update", "");
    let third = server_side_apply(
        Some(&shared),
        &cm(json!({"a": "1"})),
        "kubectl",
        false,
        &cm_gvk(),
    )
    .unwrap();
    assert_eq!(third["data"], json!({"a": "1", "b": "3"}));
}

#[test]
fn objects_without_managed_fields_belong_to_before_first_apply() {
    let live = cm(json!({"k": "v"}));
    let err = server_side_apply(
        Some(&live),
        &cm(json!({"k": "w"})),
        "kubectl",
        false,
        &cm_gvk(),
    )
    .unwrap_err();
    assert_eq!(
        err,
        ApplyError::Conflict {
            causes: vec![(".data.k".into(), "\"before-first-apply\" using v1".into())]
        }
    );
}

#[test]
fn keyed_lists_and_sets_merge() {
    let gvk = GroupVersionKind::new("", "v1", "ServiceAccount");
    let sa = |secrets: Value, finalizers: Value| {
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
               "metadata": {"name": "sa", "finalizers": finalizers}, "secrets": secrets})
    };
    let mut live = sa(json!([{"name": "s1"}]), json!(["a"]));
    update_managed_fields(None, &mut live, "ctl", "Update", "");
    assert_eq!(
        entries(&live)[0].2,
        json!({"f:metadata": {"f:finalizers": {".": {}, "v:\"a\"": {}}}, "f:secrets": {".": {}, "k:{\"name\":\"s1\"}": {}}})
    );
    let out = server_side_apply(
        Some(&live),
        &sa(json!([{"name": "s2"}]), json!(["b"])),
        "applier",
        false,
        &gvk,
    )
    .unwrap();
    assert_eq!(out["secrets"], json!([{"name": "s1"}, {"name": "s2"}]));
    assert_eq!(out["metadata"]["finalizers"], json!(["a", "b"]));
    let mine = entries(&out)
        .into_iter()
        .find(|e| e.0 == "applier")
        .unwrap()
        .2;
    assert_eq!(
        mine,
        json!({"f:metadata": {"f:finalizers": {"v:\"b\"": {}}}, "f:secrets": {"k:{\"name\":\"s2\"}": {}}})
    );

    // Atomic lists are replaced and owned whole.
    let atomic = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"},
                        "imagePullSecrets": [{"name": "r"}]});
    let out = server_side_apply(Some(&out), &atomic, "applier", true, &gvk).unwrap();
    assert_eq!(out["imagePullSecrets"], json!([{"name": "r"}]));
    let mine = entries(&out)
        .into_iter()
        .find(|e| e.0 == "applier")
        .unwrap()
        .2;
    assert_eq!(mine, json!({"f:imagePullSecrets": {}}));
    // The applier dropped s2 and b, which only it owned.
    assert_eq!(out["secrets"], json!([{"name": "s1"}]));
    assert_eq!(out["metadata"]["finalizers"], json!(["a"]));
}

#[test]
fn a_key_the_item_omits_takes_its_default() {
    // A Service port keyed by (port, protocol) without a protocol: TCP, as the OpenAPI default
    // gives structured-merge-diff; the live item with TCP is the same item.
    let gvk = GroupVersionKind::new("", "v1", "Service");
    let svc = |ports: Value| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": "ns"},
               "spec": {"clusterIP": "None", "selector": {"a": "b"}, "ports": ports}})
    };
    let out = server_side_apply(None, &svc(json!([{"port": 80}])), "m", false, &gvk).unwrap();
    assert_eq!(
        entries(&out)[0].2,
        json!({"f:spec": {"f:clusterIP": {}, "f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {
            ".": {}, "f:port": {}}}, "f:selector": {"f:a": {}}}})
    );
    let mut live = out;
    live["spec"]["ports"] = json!([{"port": 80, "protocol": "TCP", "targetPort": 80}]);
    let again = server_side_apply(
        Some(&live),
        &svc(json!([{"port": 80, "name": "http"}])),
        "m",
        false,
        &gvk,
    )
    .unwrap();
    assert_eq!(
        again["spec"]["ports"],
        json!([{"port": 80, "protocol": "TCP", "targetPort": 80, "name": "http"}])
    );
    // Without a default, the key is still required.
    let sa = GroupVersionKind::new("", "v1", "ServiceAccount");
    let no_key = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"},
        "secrets": [{"namespace": "x"}]});
    assert!(server_side_apply(None, &no_key, "m", false, &sa).is_err());
}

#[test]
fn malformed_configurations() {
    let gvk = GroupVersionKind::new("", "v1", "ServiceAccount");
    let no_key = json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"}, "secrets": [{"namespace": "x"}]});
    assert!(
        matches!(server_side_apply(None, &no_key, "m", false, &gvk), Err(ApplyError::Invalid(m)) if m.contains(".secrets"))
    );
    let with_mf = json!({"metadata": {"name": "sa", "managedFields": [{"manager": "x"}]}});
    assert!(matches!(
        server_side_apply(None, &with_mf, "m", false, &gvk),
        Err(ApplyError::BadRequest(_))
    ));
    assert!(matches!(
        server_side_apply(None, &json!([1]), "m", false, &gvk),
        Err(ApplyError::BadRequest(_))
    ));
}

/// Compare as structured-merge-diff defines it: both objects' whole member sets, member by
/// member. [`Types::compare`] must give exactly this while skipping what did not change.
fn compare_whole(types: &Types<'_>, old: &Value, new: &Value) -> (Set, Set) {
    let old_set = types.object_set(old);
    let new_set = types.object_set(new);
    let mut changed: Set = new_set.difference(&old_set).cloned().collect();
    for p in new_set.intersection(&old_set) {
        let (a, b) = (fieldpath::get(old, p), fieldpath::get(new, p));
        let leaf =
            b.is_some_and(|v| !v.is_object() && !v.is_array()) || !typed::has_children(&new_set, p);
        if leaf && a != b {
            changed.insert(p.clone());
        }
    }
    let removed = old_set.difference(&new_set).cloned().collect();
    (changed, removed)
}

#[test]
fn compare_skipping_equal_subtrees_matches_the_whole_comparison() {
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": "l", "namespace": "ns", "resourceVersion": "7",
            "labels": {"a": "1"}, "finalizers": ["f1"],
            "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u1"}]},
        "spec": {"holderIdentity": "h", "leaseDurationSeconds": 15,
            "renewTime": "2026-11-30T10:00:00.000000Z"}});
    let mut variants = vec![json!({}), lease.clone()];
    let edits: Vec<(&str, Value)> = vec![
        ("/spec/renewTime", json!("2026-11-30T10:00:01.000000Z")),
        ("/spec/holderIdentity", Value::Null),
        ("/spec", json!({})),
        ("/spec", Value::Null),
        ("/metadata/labels", json!({})),
        ("/metadata/labels", json!({"a": "2", "b": "3"})),
        ("/metadata/finalizers", json!(["f1", "f2"])),
        ("/metadata/finalizers", json!([])),
        (
            "/metadata/ownerReferences",
            json!([{"apiVersion": "v1", "kind": "ConfigMap", "name": "o2", "uid": "u1"}]),
        ),
        (
            "/metadata/ownerReferences",
            json!([{"apiVersion": "v1", "kind": "Secret", "name": "s", "uid": "u2"}]),
        ),
        ("/metadata/annotations", json!({"x": "y"})),
        (
            "/metadata/managedFields",
            json!([{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]),
        ),
        ("/metadata", json!({"name": "l"})),
        ("/spec", json!("not an object")),
    ];
    for (ptr, v) in &edits {
        let mut o = lease.clone();
        let (parent, key) = ptr.rsplit_once('/').unwrap();
        o.pointer_mut(parent).unwrap()[key] = v.clone();
        variants.push(o);
    }
    let gvk = GroupVersionKind::new("coordination.k8s.io", "v1", "Lease");
    let types = Types::new(&gvk);
    for old in &variants {
        for new in &variants {
            let (mut changed, mut removed) = types.compare(old, new);
            let (mut want_changed, mut want_removed) = compare_whole(&types, old, new);
            // Nobody owns managedFields (strip drops them): the skip may differ only there.
            for s in [
                &mut changed,
                &mut removed,
                &mut want_changed,
                &mut want_removed,
            ] {
                s.retain(|p| !p.starts_with(&["f:metadata".into(), "f:managedFields".into()]));
            }
            assert_eq!(
                (changed, removed),
                (want_changed, want_removed),
                "{old} -> {new}"
            );
        }
    }
}

#[test]
fn an_update_that_moves_no_ownership_keeps_the_list_it_was_sent() {
    let mut first = cm(json!({"a": "1"}));
    update_managed_fields(None, &mut first, "m", "Update", "");
    let mut renewed = first.clone();
    renewed["data"]["a"] = json!("2");
    update_managed_fields(Some(&first), &mut renewed, "m", "Update", "");
    assert_eq!(
        renewed["metadata"]["managedFields"],
        first["metadata"]["managedFields"]
    );
    // A field the manager did not own yet: its set grows.
    let mut grown = renewed.clone();
    grown["data"]["b"] = json!("3");
    update_managed_fields(Some(&renewed), &mut grown, "m", "Update", "");
    assert_eq!(
        entries(&grown),
        vec![(
            "m".to_string(),
            "Update".to_string(),
            json!({"f:data": {".": {}, "f:a": {}, "f:b": {}}})
        )]
    );
    // Another manager takes a field over: both entries change.
    let mut taken = grown.clone();
    taken["data"]["b"] = json!("4");
    update_managed_fields(Some(&grown), &mut taken, "other", "Update", "");
    assert_eq!(
        entries(&taken),
        vec![
            (
                "m".to_string(),
                "Update".to_string(),
                json!({"f:data": {".": {}, "f:a": {}}})
            ),
            (
                "other".to_string(),
                "Update".to_string(),
                json!({"f:data": {"f:b": {}}})
            ),
        ]
    );
}

/// When an update rewrites the list, an entry it neither takes from nor gives to keeps its
/// ownership, its time and its FieldsV1 exactly as stored.
#[test]
fn entries_an_update_does_not_touch_keep_their_fields_as_stored() {
    let mut first = cm(json!({"a": "1"}));
    update_managed_fields(None, &mut first, "m", "Update", "");
    let stored_m = first["metadata"]["managedFields"][0].clone();
    let mut second = first.clone();
    second["data"]["b"] = json!("2");
    update_managed_fields(Some(&first), &mut second, "other", "Update", "");
    let list = second["metadata"]["managedFields"].as_array().unwrap();
    assert_eq!(list.len(), 2, "{list:?}");
    assert_eq!(
        list[0], stored_m,
        "the untouched entry is kept byte for byte"
    );
    assert_eq!(
        stored_m["fieldsV1"],
        json!({"f:data": {".": {}, "f:a": {}}})
    );
    assert_eq!(
        entries(&second)[1],
        (
            "other".to_string(),
            "Update".to_string(),
            json!({"f:data": {"f:b": {}}})
        )
    );
}

#[test]
fn fields_v1_membership_is_read_off_the_object_as_the_decoded_set_has_it() {
    let cases = [
        json!({"f:data": {"f:a": {}, "f:b": {}}}),
        json!({"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:app": {}}}}),
        json!({"f:spec": {"f:list": {"k:{\"a\":\"x\"}": {"f:c": {}}}}, ".": {}}),
        json!({"f:x": {"f:y": null}}),
        json!({}),
        json!("not fields"),
    ];
    for fv1 in cases {
        let set = fieldpath::from_fields_v1(&fv1);
        // Every member, every prefix of one, and paths one step past or beside them.
        let mut candidates: Vec<fieldpath::Path> = vec![vec![], vec!["f:nope".into()]];
        for p in &set {
            for n in 0..=p.len() {
                candidates.push(p[..n].to_vec());
            }
            let mut deeper = p.clone();
            deeper.push("f:deeper".into());
            candidates.push(deeper);
        }
        for p in candidates {
            assert_eq!(
                fieldpath::fields_v1_has(&fv1, &p),
                set.contains(&p),
                "{fv1} has {p:?}"
            );
        }
    }
}

/// The time of the entry at `i`.
fn time_of(obj: &Value, i: usize) -> &str {
    obj["metadata"]["managedFields"][i]["time"]
        .as_str()
        .unwrap()
}

/// `obj` with every managedFields entry's time set to a long-past second.
fn aged(mut obj: Value) -> Value {
    for e in obj["metadata"]["managedFields"].as_array_mut().unwrap() {
        e["time"] = json!("2020-01-01T00:00:00Z");
    }
    obj
}

/// As kube's managedFieldsUpdater (since kubernetes#110058): a write that changes the value of
/// a field its manager already owns (a lease renewal) sets that manager's time; a write that
/// changes nothing keeps it, and another writer's change leaves the first entry's time alone.
#[test]
fn an_update_of_owned_values_sets_the_time_and_a_no_op_keeps_it() {
    let mut first = cm(json!({"a": "1"}));
    update_managed_fields(None, &mut first, "m", "Update", "");
    let first = aged(first);

    let mut renewed = first.clone();
    renewed["data"]["a"] = json!("2");
    update_managed_fields(Some(&first), &mut renewed, "m", "Update", "");
    assert_ne!(time_of(&renewed, 0), "2020-01-01T00:00:00Z", "{renewed}");
    assert_eq!(
        entries(&renewed),
        entries(&first),
        "the same fields stay owned"
    );

    let mut same = first.clone();
    update_managed_fields(Some(&first), &mut same, "m", "Update", "");
    assert_eq!(same, first, "a write that changes nothing keeps the time");

    let mut other = first.clone();
    other["data"]["b"] = json!("3");
    update_managed_fields(Some(&first), &mut other, "other", "Update", "");
    assert_eq!(time_of(&other, 0), "2020-01-01T00:00:00Z", "{other}");
    assert_ne!(time_of(&other, 1), "2020-01-01T00:00:00Z", "{other}");
}

/// An apply that changes the object sets the applier's time, even when it applies the same
/// fields as before; one that changes nothing keeps it.
#[test]
fn an_apply_that_changes_values_sets_the_time_and_a_no_op_keeps_it() {
    let gvk = cm_gvk();
    let applied = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "default"}, "data": {"a": v}});
    let first = aged(server_side_apply(None, &applied("1"), "m", false, &gvk).unwrap());
    let again = server_side_apply(Some(&first), &applied("1"), "m", false, &gvk).unwrap();
    assert_eq!(time_of(&again, 0), "2020-01-01T00:00:00Z", "{again}");
    let changed = server_side_apply(Some(&first), &applied("2"), "m", false, &gvk).unwrap();
    assert_ne!(time_of(&changed, 0), "2020-01-01T00:00:00Z", "{changed}");
    assert_eq!(changed["data"]["a"], "2");
}
