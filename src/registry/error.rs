//! registry::Error: why a REST operation failed, in Kubernetes terms (the reasons of
//! apimachinery pkg/api/errors). Translated from storage errors here in the registry and into
//! a metav1 Status only in endpoints/status.rs. May use: storage, api.

/// Result of a registry call.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// One field problem of an Invalid error (field.Error in k8s).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FieldError {
    /// Kind of problem.
    pub kind: FieldErrorKind,
    /// Field path, e.g. `metadata.name` or `data[a b]`.
    pub field: String,
    /// The offending value, rendered as kube does (`"x"` for strings, bare for numbers).
    pub value: Option<String>,
    /// Detail text.
    pub detail: String,
}

/// field.ErrorType in k8s.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FieldErrorKind {
    /// `Invalid value`.
    Invalid,
    /// `Required value`.
    Required,
    /// `Forbidden`.
    Forbidden,
    /// `Unsupported value`.
    NotSupported,
    /// `Too long`.
    TooLong,
    /// `Duplicate value`.
    Duplicate,
    /// `Too many`.
    TooMany,
    /// `Invalid value` of the wrong JSON type (field.TypeInvalid; its own cause reason).
    TypeInvalid,
}

impl FieldErrorKind {
    /// The cause reason (`FieldValueInvalid`...).
    pub(crate) fn reason(self) -> &'static str {
        match self {
            FieldErrorKind::Invalid => "FieldValueInvalid",
            FieldErrorKind::Required => "FieldValueRequired",
            FieldErrorKind::Forbidden => "FieldValueForbidden",
            FieldErrorKind::NotSupported => "FieldValueNotSupported",
            FieldErrorKind::TooLong => "FieldValueTooLong",
            FieldErrorKind::Duplicate => "FieldValueDuplicate",
            FieldErrorKind::TooMany => "FieldValueTooMany",
            FieldErrorKind::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The text kube prints (`Invalid value`...).
    pub(crate) fn text(self) -> &'static str {
        match self {
            FieldErrorKind::Invalid => "Invalid value",
            FieldErrorKind::Required => "Required value",
            FieldErrorKind::Forbidden => "Forbidden",
            FieldErrorKind::NotSupported => "Unsupported value",
            FieldErrorKind::TooLong => "Too long",
            FieldErrorKind::Duplicate => "Duplicate value",
            FieldErrorKind::TooMany => "Too many",
            FieldErrorKind::TypeInvalid => "Invalid value",
        }
    }
}

impl FieldError {
    /// An `Invalid value` error on a string value.
    pub(crate) fn invalid(
        field: impl Into<String>,
        value: &str,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            kind: FieldErrorKind::Invalid,
            field: field.into(),
            value: Some(quote(value)),
            detail: detail.into(),
        }
    }

    /// An `Invalid value` error on a value rendered verbatim (numbers, booleans).
    pub(crate) fn invalid_raw(
        field: impl Into<String>,
        value: impl ToString,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            kind: FieldErrorKind::Invalid,
            field: field.into(),
            value: Some(value.to_string()),
            detail: detail.into(),
        }
    }

    /// A `Required value` error.
    pub(crate) fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            kind: FieldErrorKind::Required,
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }

    /// A `Forbidden` error.
    pub(crate) fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        FieldError {
            kind: FieldErrorKind::Forbidden,
            field: field.into(),
            value: None,
            detail: detail.into(),
        }
    }

    /// A `Too long` error.
    pub(crate) fn too_long(field: impl Into<String>, max: usize) -> Self {
        FieldError {
            kind: FieldErrorKind::TooLong,
            field: field.into(),
            value: None,
            detail: format!("must have at most {max} bytes"),
        }
    }

    /// An `Unsupported value` error listing the supported values.
    pub(crate) fn not_supported(field: impl Into<String>, value: &str, supported: &[&str]) -> Self {
        let list: Vec<String> = supported.iter().map(|s| quote(s)).collect();
        FieldError {
            kind: FieldErrorKind::NotSupported,
            field: field.into(),
            value: Some(quote(value)),
            detail: format!("supported values: {}", list.join(", ")),
        }
    }

    /// The cause message without the field (`Invalid value: "x": detail`).
    pub(crate) fn message(&self) -> String {
        let mut s = self.kind.text().to_string();
        if let Some(v) = &self.value {
            s.push_str(": ");
            s.push_str(v);
        }
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message())
    }
}

/// A Go-style `%q` quoting of a string.
pub(crate) fn quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Why a registry call failed. `resource` is the group-qualified resource
/// (`leases.coordination.k8s.io`), `kind` the Kind, as the Status wants them.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub(crate) enum Error {
    /// 404: the object does not exist.
    #[error("{resource} {name:?} not found")]
    NotFound {
        /// API group.
        group: String,
        /// Plural resource.
        resource: String,
        /// Object name.
        name: String,
    },
    /// 409: the object exists already.
    #[error("{resource} {name:?} already exists")]
    AlreadyExists {
        /// API group.
        group: String,
        /// Plural resource.
        resource: String,
        /// Object name.
        name: String,
        /// The name came from generateName.
        generated: bool,
    },
    /// 409: optimistic concurrency or a precondition failed.
    #[error("operation cannot be fulfilled on {resource} {name:?}: {message}")]
    Conflict {
        /// API group.
        group: String,
        /// Plural resource.
        resource: String,
        /// Object name.
        name: String,
        /// Why.
        message: String,
    },
    /// 422: validation failed.
    #[error("{kind} {name:?} is invalid")]
    Invalid {
        /// API group.
        group: String,
        /// Kind.
        kind: String,
        /// Object name.
        name: String,
        /// The field errors.
        errors: Vec<FieldError>,
    },
    /// 400: the request itself is malformed.
    #[error("bad request: {0}")]
    BadRequest(String),
    /// 403: refused by admission (e.g. NamespaceLifecycle).
    #[error("forbidden: {message}")]
    Forbidden {
        /// API group.
        group: String,
        /// Plural resource.
        resource: String,
        /// Object name (may be empty).
        name: String,
        /// Why.
        message: String,
        /// Causes (e.g. NamespaceTerminating).
        causes: Vec<(String, String, String)>,
    },
    /// 405: the verb is not served for the resource.
    #[error("{verb} is not supported on resources of kind {resource:?}")]
    MethodNotAllowed {
        /// API group.
        group: String,
        /// Plural resource.
        resource: String,
        /// The verb.
        verb: String,
        /// A message other than the usual one (creates of a terminating CRD's objects).
        message: Option<String>,
    },
    /// 410: the resource version or continue token is too old.
    #[error("expired: {message}")]
    Expired {
        /// Message shown to the client.
        message: String,
    },
    /// 413: the object is too large to store.
    #[error("request entity too large: {0}")]
    TooLarge(String),
    /// 504: a requested resourceVersion is newer than the store.
    #[error("too large resource version: {requested}, current: {current}")]
    TooLargeResourceVersion {
        /// Requested.
        requested: i64,
        /// Current.
        current: i64,
    },
    /// 503: the store cannot be reached.
    #[error("storage unavailable: {0}")]
    Unavailable(String),
    /// 500: anything else.
    #[error("internal error: {0}")]
    Internal(String),
    /// Admission refused the write (a webhook's denial, a failed call, a dry run a webhook
    /// cannot take).
    #[error(transparent)]
    Admission(Box<super::admission::Error>),
    /// The caller's transform refused an update with its own error (a patch that does not
    /// apply, a conflicting server-side apply), passed through unchanged for the caller to
    /// answer as it knows how.
    #[error(transparent)]
    Transform(std::sync::Arc<dyn std::error::Error + Send + Sync>),
}

impl From<super::admission::Error> for Error {
    fn from(e: super::admission::Error) -> Self {
        Error::Admission(Box::new(e))
    }
}

impl From<super::webhook::WebhookError> for Error {
    fn from(e: super::webhook::WebhookError) -> Self {
        Error::Internal(e.to_string())
    }
}

impl Error {
    /// This error as the refusal of a storage update function or delete check: it goes through
    /// storage as itself, and the storage boundary (`GenericStore::storage_error`) takes it
    /// back out unchanged.
    pub(crate) fn abort(self) -> crate::storage::Error {
        crate::storage::Error::Aborted(Box::new(self))
    }

    /// [`Error::Transform`]: the caller's own error, refusing an update from its transform.
    pub(crate) fn transform(err: impl std::error::Error + Send + Sync + 'static) -> Self {
        Error::Transform(std::sync::Arc::new(err))
    }

    /// A 422 with one field error.
    pub(crate) fn invalid(group: &str, kind: &str, name: &str, errors: Vec<FieldError>) -> Self {
        Error::Invalid {
            group: group.into(),
            kind: kind.into(),
            name: name.into(),
            errors,
        }
    }
}
