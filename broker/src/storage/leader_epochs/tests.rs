//! Apache's LeaderEpochFileCacheTest, case by case.

use super::*;

fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
    let mut c = LeaderEpochCache::default();
    for &(epoch, start) in entries {
        c.assign(epoch, start);
    }
    c
}

fn entries(c: &LeaderEpochCache) -> Vec<(i32, i64)> {
    c.entries()
        .iter()
        .map(|e| (e.epoch, e.start_offset))
        .collect()
}

const UNDEFINED: (i32, i64) = (UNDEFINED_EPOCH, UNDEFINED_OFFSET);

#[test]
fn should_add_epoch_and_message_offset_to_cache() {
    let c = cache(&[(2, 10)]);
    assert_eq!(c.latest_epoch(), Some(2));
    assert_eq!(entries(&c), [(2, 10)]);
    assert_eq!(c.end_offset_for(2, 11), (2, 11));
}

#[test]
fn should_return_log_end_offset_if_latest_epoch_requested() {
    let c = cache(&[(2, 11), (2, 12)]);
    assert_eq!(c.end_offset_for(2, 14), (2, 14));
}

#[test]
fn should_return_undefined_offset_if_undefined_epoch_requested() {
    let c = cache(&[(2, 11), (3, 12)]);
    assert_eq!(c.end_offset_for(UNDEFINED_EPOCH, 0), UNDEFINED);
}

#[test]
fn should_not_overwrite_log_end_offset_for_a_leader_epoch_once_it_has_been_assigned() {
    let c = cache(&[(2, 9), (2, 10)]);
    assert_eq!(entries(&c), [(2, 9)]);
}

#[test]
fn should_enforce_monotonically_increasing_start_offsets() {
    let c = cache(&[(2, 9), (3, 9)]);
    assert_eq!(entries(&c), [(3, 9)]);
}

#[test]
fn should_not_overwrite_offset_for_a_leader_epoch_once_it_has_been_assigned() {
    let c = cache(&[(2, 6), (2, 10)]);
    assert_eq!(entries(&c), [(2, 6)]);
}

#[test]
fn should_return_unsupported_if_no_epoch_recorded() {
    assert_eq!(LeaderEpochCache::default().end_offset_for(0, 0), UNDEFINED);
}

#[test]
fn should_return_unsupported_if_no_epoch_recorded_and_undefined_epoch_requested() {
    assert_eq!(
        LeaderEpochCache::default().end_offset_for(UNDEFINED_EPOCH, 73),
        UNDEFINED
    );
}

#[test]
fn should_return_first_epoch_if_requested_epoch_less_than_first_epoch() {
    let c = cache(&[(5, 11), (6, 12), (7, 13)]);
    assert_eq!(c.end_offset_for(4, 0), (4, 11));
}

#[test]
fn should_truncate_if_matching_epoch_but_earlier_starting_offset() {
    let c = cache(&[(5, 11), (6, 12), (7, 13), (7, 12)]);
    assert_eq!(c.end_offset_for(5, 0), (5, 12));
    assert_eq!(c.end_offset_for(6, 0), (5, 12));
}

#[test]
fn should_get_first_offset_of_subsequent_epoch_when_offset_requested_for_previous_epoch() {
    let c = cache(&[(1, 11), (1, 12), (2, 13), (2, 14), (3, 15), (3, 16)]);
    assert_eq!(c.end_offset_for(2, 17), (2, 15));
}

#[test]
fn should_return_next_available_epoch_if_there_is_no_exact_epoch_for_the_one_requested() {
    let c = cache(&[(0, 10), (2, 13), (4, 17)]);
    assert_eq!(c.end_offset_for(1, 0), (0, 13));
    assert_eq!(c.end_offset_for(2, 0), (2, 17));
    assert_eq!(c.end_offset_for(3, 0), (2, 17));
}

#[test]
fn should_not_update_epoch_and_start_offset_if_it_did_not_change() {
    let c = cache(&[(2, 6), (2, 7)]);
    assert_eq!(entries(&c), [(2, 6)]);
}

#[test]
fn should_return_invalid_offset_if_epoch_is_requested_which_is_not_currently_tracked() {
    let c = cache(&[(2, 100)]);
    assert_eq!(c.end_offset_for(3, 100), UNDEFINED);
}

#[test]
fn should_support_epochs_that_do_not_start_from_zero() {
    let c = cache(&[(2, 6)]);
    assert_eq!(c.end_offset_for(2, 7), (2, 7));
    assert_eq!(entries(&c), [(2, 6)]);
}

#[test]
fn should_persist_epochs_between_instances() {
    let dir = tempfile::tempdir().unwrap();
    cache(&[(2, 6)]).write(dir.path(), 0).unwrap();
    let read = LeaderEpochCache::read(dir.path(), 0).unwrap().unwrap();
    assert_eq!(entries(&read), [(2, 6)]);
    // Apache's file format, so its tools read ours.
    assert_eq!(
        std::fs::read_to_string(dir.path().join(CHECKPOINT)).unwrap(),
        "0\n1\n2 6\n"
    );
    // Each generation has its own; one never written reads as absent.
    cache(&[(2, 6), (3, 9)]).write(dir.path(), 4).unwrap();
    let fourth = LeaderEpochCache::read(dir.path(), 4).unwrap().unwrap();
    assert_eq!(entries(&fourth), [(2, 6), (3, 9)]);
    assert!(LeaderEpochCache::read(dir.path(), 5).unwrap().is_none());
}

#[test]
fn should_enforce_monotonically_increasing_epochs() {
    let mut c = cache(&[(1, 5), (2, 6)]);
    // An epoch in the past with a later offset: the later epochs go.
    c.assign(1, 7);
    assert_eq!(c.latest_epoch(), Some(1));
    assert_eq!(c.end_offset_for(1, 8), (1, 8));
    assert_eq!(c.end_offset_for(2, 8), UNDEFINED);
    assert_eq!(entries(&c)[0], (1, 7));
}

#[test]
fn should_enforce_offsets_increase_monotonically() {
    let c = cache(&[(2, 6), (3, 5)]);
    assert_eq!(entries(&c), [(3, 5)]);
}

#[test]
fn should_increase_and_track_epochs_as_leaders_change_many_times() {
    let mut c = cache(&[(0, 0), (1, 0)]);
    assert_eq!(c.latest_epoch(), Some(1));
    assert_eq!(c.end_offset_for(1, 0), (1, 0));
    // (0, 0) was replaced by (1, 0): epoch 0 is below the first epoch.
    assert_eq!(c.end_offset_for(0, 0), (0, 0));
    assert_eq!(c.end_offset_for(1, 5), (1, 5));
    assert_eq!(c.end_offset_for(0, 5), (0, 0));
    c.assign(2, 5);
    assert_eq!(c.end_offset_for(2, 10), (2, 10));
    assert_eq!(c.end_offset_for(1, 10), (1, 5));
    assert_eq!(c.end_offset_for(0, 10), (0, 0));
}

#[test]
fn should_increase_and_track_epochs_as_follower_receives_many_messages() {
    let mut c = cache(&[(0, 0), (0, 1), (0, 2)]);
    assert_eq!(c.latest_epoch(), Some(0));
    assert_eq!(c.end_offset_for(0, 3), (0, 3));
    for offset in 3..6 {
        c.assign(1, offset);
    }
    assert_eq!(c.latest_epoch(), Some(1));
    assert_eq!(c.end_offset_for(1, 6), (1, 6));
    for offset in 6..9 {
        c.assign(2, offset);
    }
    assert_eq!(c.latest_epoch(), Some(2));
    assert_eq!(c.end_offset_for(2, 9), (2, 9));
    assert_eq!(c.end_offset_for(0, 9), (0, 3));
    assert_eq!(c.end_offset_for(1, 9), (1, 6));
}

#[test]
fn should_drop_entries_on_epoch_boundary_when_removing_latest_entries() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_end(8);
    assert_eq!(entries(&c), [(2, 6)]);
}

#[test]
fn should_preserve_reset_offset_on_clear_earliest_if_one_exists() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_start(8);
    assert_eq!(entries(&c), [(3, 8), (4, 11)]);
}

#[test]
fn should_update_saved_offset_when_offset_to_clear_to_is_between_epochs() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_start(9);
    assert_eq!(entries(&c), [(3, 9), (4, 11)]);
}

#[test]
fn should_not_clear_anything_if_offset_to_early() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_start(1);
    assert_eq!(entries(&c), [(2, 6), (3, 8), (4, 11)]);
}

#[test]
fn should_not_clear_anything_if_offset_to_first_offset() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_start(6);
    assert_eq!(entries(&c), [(2, 6), (3, 8), (4, 11)]);
}

#[test]
fn should_retain_latest_epoch_on_clear_all_earliest() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_start(11);
    assert_eq!(entries(&c), [(4, 11)]);
}

#[test]
fn should_update_offset_between_epoch_boundaries_on_clear_earliest2() {
    let mut c = cache(&[(0, 0), (1, 7), (2, 10)]);
    c.truncate_from_start(5);
    assert_eq!(entries(&c), [(0, 5), (1, 7), (2, 10)]);
}

#[test]
fn should_retain_latest_epoch_on_clear_all_earliest_and_update_its_offset() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_start(15);
    assert_eq!(entries(&c), [(4, 15)]);
}

#[test]
fn should_drop_entries_between_epoch_boundary_when_removing_newest() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_end(9);
    assert_eq!(c.latest_epoch(), Some(3));
    assert_eq!(entries(&c), [(2, 6), (3, 8)]);
}

#[test]
fn should_not_reset_epoch_history_head_if_undefined_passed() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_start(UNDEFINED_OFFSET);
    assert_eq!(c.entries().len(), 3);
}

#[test]
fn should_not_reset_epoch_history_tail_if_undefined_passed() {
    let mut c = cache(&[(2, 6), (3, 8), (4, 11)]);
    c.truncate_from_end(UNDEFINED_OFFSET);
    assert_eq!(c.entries().len(), 3);
}

#[test]
fn should_fetch_latest_epoch_and_end_offset_of_empty_cache() {
    let mut c = LeaderEpochCache::default();
    assert_eq!(c.latest_epoch(), None);
    assert_eq!(c.end_offset_for(7, 0), UNDEFINED);
    c.truncate_from_start(7);
    c.truncate_from_end(7);
    assert!(c.entries().is_empty());
}

#[test]
fn should_fetch_epoch_for_given_offset() {
    let c = cache(&[(0, 10), (1, 20), (5, 30)]);
    assert_eq!(c.epoch_for_offset(25), Some(1));
    assert_eq!(c.epoch_for_offset(20), Some(1));
    assert_eq!(c.epoch_for_offset(30), Some(5));
    assert_eq!(c.epoch_for_offset(50), Some(5));
    assert_eq!(c.epoch_for_offset(5), None);
}

#[test]
fn a_checkpoint_not_in_apaches_format_is_an_error_naming_what() {
    for (text, says) in [
        ("1\n0\n", "version"),
        ("0\n", "count"),
        ("0\n2\n1 5\n", "fewer"),
        ("0\n1\n1 x\n", "malformed"),
        ("0\n1\n1 2 3\n", "malformed"),
    ] {
        let e = LeaderEpochCache::decode(text).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        assert!(e.to_string().contains(says), "{text:?}: {e}");
    }
    assert_eq!(
        entries(&LeaderEpochCache::decode("0\n2\n3 0\n7 40\n").unwrap()),
        [(3, 0), (7, 40)]
    );
}
