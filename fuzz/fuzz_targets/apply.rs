//! Server-side apply bodies onto stored objects with managedFields, or apply-create.
//! Input layout: kapi::fuzzing::apply.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kapi::fuzzing::apply(data));
