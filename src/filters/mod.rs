//! The handler-chain filters (pkg/server/filters, pkg/endpoints/filters). May use: api.
