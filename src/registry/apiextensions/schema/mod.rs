//! A CRD version's structural schema applied to custom objects: validation, pruning and
//! defaulting, as apiextensions-apiserver's pkg/apiserver/schema does them.

mod compile;
mod formats;
mod gofmt;
mod goregex;
mod listtype;
mod path;
mod probe;
mod ratchet;
mod result;
mod validate;
