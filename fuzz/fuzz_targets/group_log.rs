#![no_main]
//! See kaas_broker::fuzzing::group_log.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kaas_broker::fuzzing::group_log(data);
});
