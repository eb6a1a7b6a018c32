//! The naming controller's decision (pkg/controller/status/naming_controller.go
//! calculateNamesAndConditions): which of the requested names a CRD may have, given the names
//! the other CRDs of its group hold (and the built-in resources of that group), and the
//! NamesAccepted and initial Established conditions.

use super::condition;
use crate::registry::resources;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceDefinition, CustomResourceDefinitionCondition, CustomResourceDefinitionNames,
};
use kube::ResourceExt;
use std::collections::{BTreeMap, HashSet};

/// The names taken in `group` by others than `crd`: (resource names, kinds).
fn taken(
    crd: &CustomResourceDefinition,
    cache: &BTreeMap<String, CustomResourceDefinition>,
) -> (HashSet<String>, HashSet<String>) {
    let (mut resources, mut kinds) = (HashSet::new(), HashSet::new());
    for other in cache.values() {
        if other.spec.group != crd.spec.group || other.name_any() == crd.name_any() {
            continue;
        }
        let Some(n) = other
            .status
            .as_ref()
            .and_then(|s| s.accepted_names.as_ref())
        else {
            continue;
        };
        resources.insert(n.plural.clone());
        resources.extend(n.singular.clone());
        resources.extend(n.short_names.iter().flatten().cloned());
        kinds.insert(n.kind.clone());
        kinds.extend(n.list_kind.clone());
    }
    for b in resources::built_in() {
        let i = b.info();
        if i.group != crd.spec.group.as_str() {
            continue;
        }
        resources.insert(i.resource.to_string());
        resources.insert(i.singular.to_string());
        resources.extend(i.short_names.iter().map(str::to_string));
        kinds.insert(i.kind.to_string());
        kinds.insert(format!("{}List", i.kind));
    }
    resources.retain(|n| !n.is_empty());
    kinds.retain(|n| !n.is_empty());
    (resources, kinds)
}

/// equalToAcceptedOrFresh.
fn fresh(requested: &str, accepted: &str, used: &HashSet<String>) -> Result<(), String> {
    if requested == accepted || !used.contains(requested) {
        Ok(())
    } else {
        Err(format!("{requested:?} is already in use"))
    }
}

/// The accepted names, NamesAccepted and Established conditions `crd` should have.
pub(super) fn calculate(
    crd: &CustomResourceDefinition,
    cache: &BTreeMap<String, CustomResourceDefinition>,
) -> (
    CustomResourceDefinitionNames,
    CustomResourceDefinitionCondition,
    CustomResourceDefinitionCondition,
) {
    let (resources, kinds) = taken(crd, cache);
    let requested = &crd.spec.names;
    let accepted = crd
        .status
        .as_ref()
        .and_then(|s| s.accepted_names.clone())
        .unwrap_or_default();
    let mut names = accepted.clone();
    let mut conflict: Option<(&str, String)> = None;
    let s = |o: &Option<String>| o.clone().unwrap_or_default();

    match fresh(&requested.plural, &accepted.plural, &resources) {
        Ok(()) => names.plural = requested.plural.clone(),
        Err(e) => conflict = Some(("PluralConflict", e)),
    }
    match fresh(&s(&requested.singular), &s(&accepted.singular), &resources) {
        Ok(()) => names.singular = requested.singular.clone(),
        Err(e) => conflict = Some(("SingularConflict", e)),
    }
    if requested.short_names != accepted.short_names {
        let held: HashSet<&String> = accepted.short_names.iter().flatten().collect();
        let errs: Vec<String> = requested
            .short_names
            .iter()
            .flatten()
            .filter(|n| !held.contains(n))
            .filter_map(|n| fresh(n, "", &resources).err())
            .collect();
        if errs.is_empty() {
            names.short_names = requested.short_names.clone();
        } else {
            conflict = Some(("ShortNamesConflict", aggregate(&errs)));
        }
    }
    match fresh(&requested.kind, &accepted.kind, &kinds) {
        Ok(()) => names.kind = requested.kind.clone(),
        Err(e) => conflict = Some(("KindConflict", e)),
    }
    match fresh(&s(&requested.list_kind), &s(&accepted.list_kind), &kinds) {
        Ok(()) => names.list_kind = requested.list_kind.clone(),
        Err(e) => conflict = Some(("ListKindConflict", e)),
    }
    names.categories = requested.categories.clone();

    let names_accepted = match &conflict {
        Some((reason, message)) => condition("NamesAccepted", "False", reason, message),
        None => condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
    };
    let old_established = crd
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Established"))
        .cloned();
    let mut established = old_established.unwrap_or_else(|| {
        condition(
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        )
    });
    if established.status != "True" && conflict.is_none() {
        established = condition(
            "Established",
            "False",
            "Installing",
            "the initial names have been accepted",
        );
    }
    (names, names_accepted, established)
}

/// utilerrors.NewAggregate(errs).Error(): one error bare, more in brackets.
fn aggregate(errs: &[String]) -> String {
    if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    }
}
