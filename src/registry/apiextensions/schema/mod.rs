//! A CRD version's structural schema applied to custom objects: validation, pruning and
//! defaulting, as apiextensions-apiserver's pkg/apiserver/schema does them.

mod compile;
mod default;
mod embedded;
mod formats;
mod gofmt;
mod goregex;
mod listtype;
mod objectmeta;
mod path;
mod probe;
mod prune;
mod ratchet;
mod result;
mod validate;
