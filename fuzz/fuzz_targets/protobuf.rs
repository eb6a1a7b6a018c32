//! Protobuf request bodies (`k8s\0` + runtime.Unknown), decoded, then created.
//! Input layout: kapi::fuzzing::protobuf.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kapi::fuzzing::protobuf(data));
