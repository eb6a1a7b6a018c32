//! Validation of CustomResourceDefinitions, as apiextensions-apiserver's
//! pkg/apis/apiextensions/validation does it.

mod regexp;
