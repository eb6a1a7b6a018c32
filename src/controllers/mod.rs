//! In-process controllers of the control plane (pkg/controlplane), registered as post-start
//! hooks. They are clients: they reach data only through the hook context's loopback client.
//! May use: api, server::hooks (types only), options (their settings).
