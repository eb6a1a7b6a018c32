//! Rendering of views: tables, JSON, YAML, names. Pure: writes to `&mut dyn Write`.
//! May use: nothing internal.
