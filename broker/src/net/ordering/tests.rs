use super::Overlap::{Alone, Produce, Read};
use super::*;
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::{
    DeleteRecordsRequest, FetchRequest, ListOffsetsRequest, MetadataRequest, OffsetCommitRequest,
    ProduceRequest,
};

#[test]
fn reads_run_beside_reads_and_nothing_else() {
    let mut f = InFlight::default();
    assert!(f.may_start(Read));
    f.started(Read);
    assert!(f.may_start(Read));
    f.started(Read);
    // A write waits for the reads before it: they must not see it.
    assert!(!f.may_start(Alone));
    assert!(!f.may_start(Produce));
    f.answered();
    assert!(!f.may_start(Alone));
    f.answered();
    assert!(f.may_start(Alone));
    f.started(Alone);
    // A read waits for the write before it: it must see it.
    assert!(!f.may_start(Read));
    assert!(!f.may_start(Alone));
    assert!(!f.may_start(Produce));
    f.answered();
    assert!(f.is_empty() && f.may_start(Read));
}

#[test]
fn a_produce_follows_the_previous_produces_append() {
    let mut f = InFlight::default();
    f.started(Produce);
    assert!(!f.may_start(Produce), "the first has not appended yet");
    f.produce_applied();
    assert!(f.may_start(Produce));
    f.started(Produce);
    assert!(!f.may_start(Produce), "the second has not appended yet");
    // Reads of what a Produce wrote wait for it to be durable.
    f.produce_applied();
    assert!(!f.may_start(Read));
    assert!(!f.may_start(Alone));
    f.answered();
    assert!(f.may_start(Produce) && !f.may_start(Read));
    f.answered();
    assert!(f.may_start(Read));
}

#[test]
fn a_produce_that_ends_without_saying_it_appended_counts_as_applied() {
    let mut f = InFlight::default();
    f.started(Produce);
    f.answered();
    assert!(f.may_start(Produce));
    f.started(Produce);
    assert!(!f.may_start(Produce));
}

#[test]
fn a_produce_waits_for_a_read_before_it() {
    let mut f = InFlight::default();
    f.started(Read);
    assert!(!f.may_start(Produce));
    f.answered();
    assert!(f.may_start(Produce));
}

#[test]
fn requests_are_classified_by_what_they_change() {
    let produce = RequestKind::Produce(ProduceRequest::default());
    assert_eq!(overlap_of(&produce, true), Produce);
    let list = RequestKind::ListOffsets(ListOffsetsRequest::default());
    assert_eq!(overlap_of(&list, true), Read);
    for writes in [
        RequestKind::DeleteRecords(DeleteRecordsRequest::default()),
        RequestKind::OffsetCommit(OffsetCommitRequest::default()),
        RequestKind::Fetch(FetchRequest::default()),
    ] {
        assert_eq!(overlap_of(&writes, true), Alone);
    }
    // Metadata creates the topics it names when both sides allow it.
    let named = MetadataRequest::default()
        .with_topics(Some(vec![MetadataRequestTopic::default()]))
        .with_allow_auto_topic_creation(true);
    assert_eq!(
        overlap_of(&RequestKind::Metadata(named.clone()), true),
        Alone
    );
    assert_eq!(
        overlap_of(&RequestKind::Metadata(named.clone()), false),
        Read
    );
    let not_asked = named.with_allow_auto_topic_creation(false);
    assert_eq!(overlap_of(&RequestKind::Metadata(not_asked), true), Read);
    let all = MetadataRequest::default().with_allow_auto_topic_creation(true);
    assert_eq!(overlap_of(&RequestKind::Metadata(all), true), Read);
}

#[test]
fn the_signal_fires_once_or_when_dropped() {
    let (signal, mut rx) = AppliedSignal::new();
    let clone = signal.clone();
    assert!(rx.try_recv().is_err());
    clone.fire();
    assert!(rx.try_recv().is_ok());
    signal.fire();
    let (signal, mut rx) = AppliedSignal::new();
    drop(signal);
    assert!(matches!(
        rx.try_recv(),
        Err(oneshot::error::TryRecvError::Closed)
    ));
}
