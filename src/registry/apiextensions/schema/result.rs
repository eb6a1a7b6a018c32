//! kube-openapi's validate.Result (errors kept unique by message, the MatchCount that picks
//! which anyOf/oneOf branch's errors to report) and apiextensions-apiserver's conversion of its
//! errors into field errors (kubeOpenAPIResultToFieldErrors in
//! pkg/apiserver/validation/validation.go). May use: registry's error types.

use super::super::super::error::{FieldError, FieldErrorKind};
use super::super::gofmt;

/// What a kube-openapi error converts into (by its code).
#[derive(Debug, Clone)]
pub(super) enum Raw {
    /// RequiredFailCode: `Required value`.
    Required,
    /// EnumFailCode: `Unsupported value` with the value and the supported-values detail.
    Enum { value: String, detail: String },
    /// TooLongFailCode: `Too long`.
    TooLong { max: i64 },
    /// MaxItemsFailCode / TooManyPropertiesCode: `Too many`.
    TooMany { actual: i64, max: i64 },
    /// InvalidTypeCode: a TypeInvalid `Invalid value` with the error's value.
    TypeInvalid { value: String },
    /// Any other validation code: `Invalid value` with the error's value.
    Invalid { value: String },
    /// Not an errors.Validation (the junction messages): `Invalid value: ""` on the root path.
    Composite,
}

/// One kube-openapi error.
#[derive(Debug, Clone)]
pub(super) struct RawError {
    /// The error's Name (its path, kube-openapi style).
    pub(super) name: String,
    /// Error(): what keeps errors unique and becomes the detail.
    pub(super) message: String,
    pub(super) raw: Raw,
}

/// A validation result: errors in order, unique by message, and the match count.
#[derive(Debug, Default)]
pub(super) struct Acc {
    pub(super) errors: Vec<RawError>,
    /// MatchCount.
    pub(super) count: usize,
    /// Errors added, duplicates included: whether the result so far is invalid.
    pub(super) added: usize,
}

impl Acc {
    /// AddErrors of one error.
    pub(super) fn push(&mut self, e: RawError) {
        super::probe::allocates();
        self.added += 1;
        if !self.errors.iter().any(|x| x.message == e.message) {
            self.errors.push(e);
        }
    }

    /// Merge: the other's errors (kept unique) and its match count.
    pub(super) fn merge(&mut self, other: Acc) {
        self.count += other.count;
        self.added += other.errors.len();
        for e in other.errors {
            if !self.errors.iter().any(|x| x.message == e.message) {
                self.errors.push(e);
            }
        }
    }

    /// IsValid.
    pub(super) fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }
}

/// The field errors of `errors` below `fld` (None: the nil path of a create).
pub(super) fn to_field_errors(errors: Vec<RawError>, fld: Option<&str>) -> Vec<FieldError> {
    errors.into_iter().map(|e| to_field_error(e, fld)).collect()
}

fn to_field_error(e: RawError, fld: Option<&str>) -> FieldError {
    let root = || fld.map_or_else(|| "<nil>".to_string(), str::to_string);
    let field = if matches!(e.raw, Raw::Composite) || e.name.is_empty() || e.name == "." {
        root()
    } else {
        let name = e.name.strip_prefix('.').unwrap_or(&e.name);
        match fld {
            Some(f) => format!("{f}.{name}"),
            None => name.to_string(),
        }
    };
    let (kind, value, detail) = match e.raw {
        Raw::Required => (FieldErrorKind::Required, None, String::new()),
        Raw::Enum { value, detail } => (FieldErrorKind::NotSupported, Some(value), detail),
        Raw::TooLong { max } => (
            FieldErrorKind::TooLong,
            None,
            format!("may not be more than {max} {}", plural(max, "byte")),
        ),
        Raw::TooMany { actual, max } => (
            FieldErrorKind::TooMany,
            (actual >= 0).then(|| actual.to_string()),
            format!("must have at most {max} {}", plural(max, "item")),
        ),
        Raw::TypeInvalid { value } => (FieldErrorKind::TypeInvalid, Some(value), e.message),
        Raw::Invalid { value } => (FieldErrorKind::Invalid, Some(value), e.message),
        Raw::Composite => (FieldErrorKind::Invalid, Some(gofmt::quote("")), e.message),
    };
    FieldError {
        kind,
        field,
        value,
        detail,
    }
}

/// `bytes`/`byte`, `items`/`item` as field.TooLong and field.TooMany choose.
fn plural(n: i64, word: &str) -> String {
    if n == 1 {
        word.to_string()
    } else {
        format!("{word}s")
    }
}
