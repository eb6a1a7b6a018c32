//! List/watch query strings: ListOptions, resourceVersion(Match), watch-list, a LIST and a WATCH.
//! Input layout: kapi::fuzzing::query.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kapi::fuzzing::query(data));
