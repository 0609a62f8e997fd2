#![no_main]
//! See kaas_broker::fuzzing::journal_replay.

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kaas_broker::fuzzing::journal_replay(data);
});
