//! One file per served resource: its discovery info and strategy.
//! May use: registry (strategy, error, validation, store helpers), api.

pub(crate) mod admissionregistration;
pub(crate) mod apiregistration;
pub(crate) mod configmaps;
pub(crate) mod customresourcedefinitions;
pub(crate) mod discovery;
pub(crate) mod events;
pub(crate) mod leasecandidates;
pub(crate) mod leases;
pub(crate) mod namespaces;
mod network;
pub(crate) mod rbac;
pub(crate) mod reviews;
pub(crate) mod secrets;
pub(crate) mod serviceaccounts;
pub(crate) mod services;

use super::strategy::Strategy;
use reviews::Review;
use std::sync::Arc;

/// How a built-in resource is served.
pub(crate) enum BuiltIn {
    /// In the generic store, under `<prefix>/<key root>/`.
    Stored(Arc<dyn Strategy>, &'static str),
    /// A create-only review, answered from the request.
    Review(Review),
}

impl BuiltIn {
    /// What the resource is.
    pub(crate) fn info(&self) -> &super::strategy::ResourceInfo {
        match self {
            BuiltIn::Stored(s, _) => s.info(),
            BuiltIn::Review(r) => r.info(),
        }
    }
}

/// Every built-in resource, in discovery order (kube-apiserver's: core first, then
/// apiregistration.k8s.io, which the aggregator lists first (it has the highest group priority,
/// 18000), then the groups in the order of GenericStorageProviders, then discovery.k8s.io, whose
/// priority (16200) is below apiextensions.k8s.io's (16400)).
pub(crate) fn built_in() -> Vec<BuiltIn> {
    let stored = |s: Arc<dyn Strategy>, root| BuiltIn::Stored(s, root);
    vec![
        stored(Arc::new(namespaces::Namespaces), "namespaces"),
        stored(Arc::new(configmaps::ConfigMaps), "configmaps"),
        stored(Arc::new(secrets::Secrets), "secrets"),
        stored(
            Arc::new(serviceaccounts::ServiceAccounts),
            "serviceaccounts",
        ),
        stored(Arc::new(services::Services), "services/specs"),
        stored(Arc::new(events::CoreEvents), "events"),
        stored(
            Arc::new(apiregistration::apiservices::ApiServices),
            "apiregistration.k8s.io/apiservices",
        ),
        stored(Arc::new(events::Events), "events"),
        stored(Arc::new(leases::Leases), "leases"),
        stored(
            Arc::new(leasecandidates::LeaseCandidates),
            "leasecandidates",
        ),
        // In the order of kube-apiserver's discovery, which sorts a version's resources.
        stored(
            Arc::new(rbac::bindings::Bindings::CLUSTER),
            "clusterrolebindings",
        ),
        stored(Arc::new(rbac::roles::Roles::CLUSTER), "clusterroles"),
        stored(
            Arc::new(rbac::bindings::Bindings::NAMESPACED),
            "rolebindings",
        ),
        stored(Arc::new(rbac::roles::Roles::NAMESPACED), "roles"),
        BuiltIn::Review(Review::Subject),
        BuiltIn::Review(Review::Token),
        BuiltIn::Review(Review::LocalAccess),
        BuiltIn::Review(Review::Access),
        BuiltIn::Review(Review::Rules),
        BuiltIn::Review(Review::SubjectAccess),
        // admissionregistration.k8s.io: v1 (preferred) then v1beta1, each sorted.
        stored(
            Arc::new(admissionregistration::webhooks::WebhookConfigurations::MUTATING),
            "mutatingwebhookconfigurations",
        ),
        stored(
            Arc::new(admissionregistration::policies::Policies::VALIDATING),
            "validatingadmissionpolicies",
        ),
        stored(
            Arc::new(admissionregistration::bindings::Bindings::VALIDATING),
            "validatingadmissionpolicybindings",
        ),
        stored(
            Arc::new(admissionregistration::webhooks::WebhookConfigurations::VALIDATING),
            "validatingwebhookconfigurations",
        ),
        stored(
            Arc::new(admissionregistration::policies::Policies::MUTATING),
            "mutatingadmissionpolicies",
        ),
        stored(
            Arc::new(admissionregistration::bindings::Bindings::MUTATING),
            "mutatingadmissionpolicybindings",
        ),
        stored(
            Arc::new(customresourcedefinitions::CustomResourceDefinitions),
            "apiextensions.k8s.io/customresourcedefinitions",
        ),
        stored(
            Arc::new(discovery::endpointslices::EndpointSlices),
            "endpointslices",
        ),
    ]
}

/// The protobuf decoder of a built-in kind (custom resources have none: kube-apiserver
/// serves them as JSON and YAML only).
pub(crate) fn protobuf_decoder(
    gvk: &crate::api::GroupVersionKind,
) -> Option<crate::api::protobuf::Decoder> {
    static INFOS: std::sync::OnceLock<Vec<super::strategy::ResourceInfo>> =
        std::sync::OnceLock::new();
    INFOS
        .get_or_init(|| {
            built_in()
                .iter()
                .map(|b| match b {
                    BuiltIn::Stored(s, _) => s.info().clone(),
                    BuiltIn::Review(r) => r.info().clone(),
                })
                .collect()
        })
        .iter()
        .find(|i| i.group == gvk.group && i.version == gvk.version && i.kind == gvk.kind)
        .and_then(|i| i.protobuf)
        .or_else(|| {
            // Kinds only a subresource takes.
            (gvk.group == "authentication.k8s.io"
                && gvk.version == "v1"
                && gvk.kind == "TokenRequest")
                .then_some(super::tokens::from_protobuf as crate::api::protobuf::Decoder)
        })
}
