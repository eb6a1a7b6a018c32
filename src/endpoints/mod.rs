//! HTTP ↔ REST translation (pkg/endpoints): discovery, handlers, negotiation, Status errors.
//! May use: registry, api.
