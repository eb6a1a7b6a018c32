//! REST semantics over storage (pkg/registry): one generic store plus per-resource strategies.
//! Sees no HTTP types. May use: storage, api.

use crate::storage::Storage;
use std::sync::Arc;

/// Every served resource, over one store.
pub struct Registry {
    #[allow(dead_code)]
    storage: Arc<dyn Storage>,
}

impl Registry {
    /// Builds the registry of all served resources over `storage`.
    pub fn new(storage: Arc<dyn Storage>) -> Self {
        Registry { storage }
    }
}
