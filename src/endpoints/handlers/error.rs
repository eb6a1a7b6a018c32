//! handlers::Error: why a handler refuses a request before the registry sees it (its URL,
//! options or body do not fit the verb). The messages are kube-apiserver's, verbatim; the
//! Status each one is answered with is chosen in endpoints/status.rs. May use: api.

/// A request a handler refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Error {
    /// `fieldManager` is too long or holds control characters.
    #[error("CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Invalid value: {0:?}: must be less than 128 characters and consist of printable characters")]
    InvalidFieldManager(String),
    /// An apply without `fieldManager`.
    #[error("PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch")]
    MissingFieldManager,
    /// `force` on a patch other than apply.
    #[error("PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch")]
    ForceWithoutApply,
    /// The object's name differs from the URL's.
    #[error("the name of the object ({body}) does not match the name on the URL ({url})")]
    NameMismatch {
        /// The name in the body.
        body: String,
        /// The name in the URL.
        url: String,
    },
    /// An applied configuration that is no object.
    #[error("the applied configuration must be an object")]
    AppliedNotObject,
    /// A review body whose apiVersion or kind is not the URL's.
    #[error("the {field} in the data ({have}) does not match the expected {field} ({want})")]
    TypeMismatch {
        /// `apiVersion` or `kind`.
        field: &'static str,
        /// The body's value.
        have: String,
        /// The URL's value.
        want: String,
    },
    /// `includeObject` of a Table request is none of its values.
    #[error("unrecognized includeObject value: {0:?}")]
    UnknownIncludeObject(String),
}
