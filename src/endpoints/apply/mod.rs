//! Server-side apply (work in progress).
