//! Label and field selectors (labelSelector=, fieldSelector=): parse, then match.
//! Input layout: kapi::fuzzing::selectors.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kapi::fuzzing::selectors(data));
