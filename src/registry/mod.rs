//! REST semantics over storage (pkg/registry): one generic store plus per-resource strategies.
//! Sees no HTTP types. May use: storage, api.
