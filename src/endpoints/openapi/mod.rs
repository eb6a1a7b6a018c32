//! OpenAPI documents (work in progress).
