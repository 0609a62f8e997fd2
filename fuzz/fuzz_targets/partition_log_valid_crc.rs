#![no_main]
//! See kaas_broker::fuzzing::partition_log_valid_crc.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kaas_broker::fuzzing::partition_log_valid_crc(data);
});
