//! Query parameters of resource requests (metav1 ListOptions / CreateOptions /
//! UpdateOptions / PatchOptions / DeleteOptions as query strings), parsed the way
//! kube-apiserver's parameter codec does (Go ParseBool, integers, selectors). A parameter
//! that does not parse is an [`Error`], answered by endpoints/status.rs.
//! May use: registry, api.

use crate::api::selectors::{FieldSelector, LabelSelector};
use crate::registry::{Context, FieldValidation, ListOptions};

/// Parsed `name=value` pairs of a query string.
pub(crate) struct Query(Vec<(String, String)>);

/// A query parameter that does not parse. The messages are kube-apiserver's, verbatim.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Error {
    /// A boolean parameter is no Go boolean.
    #[error("strconv.ParseBool: parsing {0:?}: invalid syntax")]
    InvalidBool(String),
    /// An integer parameter is no integer.
    #[error("strconv.ParseInt: parsing {0:?}: invalid syntax")]
    InvalidInt(String),
    /// A label or field selector does not parse (the parser's message).
    #[error("{0}")]
    InvalidSelector(String),
    /// `dryRun` is something other than `All`.
    #[error("{options_kind}.meta.k8s.io \"\" is invalid: dryRun: Unsupported value: {value:?}: supported values: \"All\"")]
    UnsupportedDryRun {
        /// The options kind of the verb (`CreateOptions`...).
        options_kind: &'static str,
        /// The value given.
        value: String,
    },
    /// `fieldValidation` is none of its three values.
    #[error("fieldValidation must be one of \"Ignore\", \"Strict\", or \"Warn\", got {0:?}")]
    UnsupportedFieldValidation(String),
}

impl Query {
    /// Parses a raw query string.
    pub(crate) fn parse(raw: Option<&str>) -> Query {
        Query(
            form_urlencoded::parse(raw.unwrap_or("").as_bytes())
                .map(|(k, v)| (k.into_owned(), v.into_owned()))
                .collect(),
        )
    }

    /// The first value of `key`.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// A boolean like Go's strconv.ParseBool; absent or empty → None.
    pub(crate) fn bool(&self, key: &str) -> Result<Option<bool>, Error> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some("1" | "t" | "T" | "TRUE" | "true" | "True") => Ok(Some(true)),
            Some("0" | "f" | "F" | "FALSE" | "false" | "False") => Ok(Some(false)),
            Some(v) => Err(Error::InvalidBool(v.to_string())),
        }
    }

    /// An integer; absent or empty → None.
    pub(crate) fn int(&self, key: &str) -> Result<Option<i64>, Error> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(v) => v
                .parse()
                .map(Some)
                .map_err(|_| Error::InvalidInt(v.to_string())),
        }
    }

    /// ListOptions of a list or watch.
    pub(crate) fn list_options(&self) -> Result<ListOptions, Error> {
        let label = LabelSelector::parse(self.get("labelSelector").unwrap_or(""))
            .map_err(Error::InvalidSelector)?;
        let field = FieldSelector::parse(self.get("fieldSelector").unwrap_or(""))
            .map_err(Error::InvalidSelector)?;
        let limit = self.int("limit")?.unwrap_or(0).max(0) as usize;
        Ok(ListOptions {
            label,
            field,
            limit,
            continue_token: self
                .get("continue")
                .filter(|c| !c.is_empty())
                .map(String::from),
            resource_version: self.get("resourceVersion").map(String::from),
            resource_version_match: self
                .get("resourceVersionMatch")
                .filter(|v| !v.is_empty())
                .map(String::from),
            send_initial_events: self.bool("sendInitialEvents")?,
            allow_bookmarks: self.bool("allowWatchBookmarks")?.unwrap_or(false),
            // Never from the query (the watch handler sets it for the loopback client).
            omit_renewals: false,
            collector_events: false,
            // Set by the list handler from the Accept header.
            metadata_only: false,
        })
    }

    /// The registry context of a request: namespace, dryRun, fieldValidation.
    pub(crate) fn context(
        &self,
        namespace: &str,
        options_kind: &'static str,
    ) -> Result<Context, Error> {
        let dry_run = match self.get("dryRun") {
            None | Some("") => false,
            Some("All") => true,
            Some(other) => {
                return Err(Error::UnsupportedDryRun {
                    options_kind,
                    value: other.to_string(),
                })
            }
        };
        let field_validation = match self.get("fieldValidation") {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Strict") => FieldValidation::Strict,
            Some("Ignore") => FieldValidation::Ignore,
            Some(other) => return Err(Error::UnsupportedFieldValidation(other.to_string())),
        };
        Ok(Context {
            namespace: namespace.to_string(),
            dry_run,
            field_validation,
            access: None,
            admission: None,
            warnings: Default::default(),
        })
    }
}
