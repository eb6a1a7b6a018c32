//! Protobuf request bodies (work in progress).
