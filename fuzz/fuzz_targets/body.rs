//! Create/update bodies in JSON, YAML or protobuf, decoded and validated as the write handlers do.
//! Input layout: kapi::fuzzing::body.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kapi::fuzzing::body(data));
