#![no_main]
//! See kaas_broker::fuzzing::framing.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kaas_broker::fuzzing::framing(data);
});
