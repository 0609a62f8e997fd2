use super::*;

#[test]
fn empty_assignment_decodes_as_empty() {
    let bytes = empty_consumer_assignment(1);
    assert_eq!(consumer_protocol_version(&bytes), Some(1));
    let mut body = bytes.slice(2..);
    let a = ConsumerProtocolAssignment::decode(&mut body, 1).unwrap();
    assert!(a.assigned_partitions.is_empty());
    assert!(a.user_data.is_none());
    assert_eq!(body.remaining(), 0);
}

#[test]
fn subscription_topics_round_trip_and_garbage() {
    let m = encode_subscription(&["a", "b"]);
    assert_eq!(subscription_topics(&m), Some(vec!["a".into(), "b".into()]));
    assert_eq!(subscription_topics(&[0, 0, 0, 0, 0, 9]), None);
    assert_eq!(subscription_topics(&[1]), None);
}
