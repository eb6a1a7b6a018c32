//! JSON, merge and strategic-merge patches of stored objects (and their status).
//! Input layout: kapi::fuzzing::patch.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kapi::fuzzing::patch(data));
