//! The embedded consumer protocol ("consumer" protocol type): a 2-byte version
//! header followed by a ConsumerProtocolSubscription / Assignment struct.
//! Codec from the `kafka-protocol` crate, never hand-written.

use std::collections::HashSet;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription};
use kafka_protocol::protocol::{Decodable, Encodable};

/// `ConsumerProtocol.PROTOCOL_TYPE`.
pub const CONSUMER_PROTOCOL_TYPE: &str = "consumer";

/// Highest ConsumerProtocol version the codec knows.
const MAX_CONSUMER_PROTOCOL_VERSION: i16 = 3;

/// The version header of an embedded consumer protocol message.
pub fn consumer_protocol_version(metadata: &[u8]) -> Option<i16> {
    if metadata.len() < 2 {
        return None;
    }
    Some(i16::from_be_bytes([metadata[0], metadata[1]]))
}

/// Topics of a subscription. Apache parses the body with version 0, the prefix
/// every later version extends, so future versions still parse.
pub fn subscription_topics(metadata: &[u8]) -> Option<Vec<String>> {
    let mut buf = Bytes::copy_from_slice(metadata);
    if buf.remaining() < 2 {
        return None;
    }
    let _version = buf.get_i16();
    let sub = ConsumerProtocolSubscription::decode(&mut buf, 0).ok()?;
    Some(sub.topics.into_iter().map(|t| t.to_string()).collect())
}

/// Union of topics over every member's subscription; None if any fails to parse.
pub fn subscribed_topics<'a>(metadatas: impl Iterator<Item = &'a [u8]>) -> Option<HashSet<String>> {
    let mut all = HashSet::new();
    for m in metadatas {
        all.extend(subscription_topics(m)?);
    }
    Some(all)
}

/// A whole subscription, read at its own version (a newer one than the
/// codec knows is read as the newest it knows, as Apache's
/// `ConsumerProtocol` does).
pub fn decode_subscription(metadata: &[u8]) -> Option<ConsumerProtocolSubscription> {
    let version = consumer_protocol_version(metadata)?;
    if version < 0 {
        return None;
    }
    let mut body = Bytes::copy_from_slice(&metadata[2..]);
    ConsumerProtocolSubscription::decode(&mut body, version.min(MAX_CONSUMER_PROTOCOL_VERSION)).ok()
}

/// An assignment (empty bytes: a member that has none yet).
pub fn decode_assignment(bytes: &[u8]) -> Option<ConsumerProtocolAssignment> {
    if bytes.is_empty() {
        return Some(ConsumerProtocolAssignment::default());
    }
    let version = consumer_protocol_version(bytes)?;
    if version < 0 {
        return None;
    }
    let mut body = Bytes::copy_from_slice(&bytes[2..]);
    ConsumerProtocolAssignment::decode(&mut body, version.min(MAX_CONSUMER_PROTOCOL_VERSION)).ok()
}

/// An assignment of `partitions` (topic name → partitions) encoded in
/// `version` (clamped to what the codec knows): what a classic member
/// reads from SyncGroup.
pub fn encode_assignment<'a>(
    partitions: impl IntoIterator<Item = (&'a str, Vec<i32>)>,
    version: i16,
) -> Bytes {
    use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition;
    use kafka_protocol::messages::TopicName;
    use kafka_protocol::protocol::StrBytes;
    let version = version.clamp(0, MAX_CONSUMER_PROTOCOL_VERSION);
    let assignment = ConsumerProtocolAssignment::default().with_assigned_partitions(
        partitions
            .into_iter()
            .map(|(topic, ps)| {
                TopicPartition::default()
                    .with_topic(TopicName(StrBytes::from_string(topic.to_string())))
                    .with_partitions(ps)
            })
            .collect(),
    );
    let mut buf = BytesMut::new();
    buf.put_i16(version);
    match assignment.encode(&mut buf, version) {
        Ok(()) => buf.freeze(),
        // Cannot happen for an in-range version.
        Err(_) => empty_consumer_assignment(version),
    }
}

/// A valid, empty ConsumerProtocolAssignment, encoded in `version` (clamped to
/// what the codec knows) so a Java consumer can deserialize it: an empty byte
/// array makes `ConsumerProtocol.deserializeAssignment` fail on the header.
pub fn empty_consumer_assignment(version: i16) -> Bytes {
    let version = version.clamp(0, MAX_CONSUMER_PROTOCOL_VERSION);
    let assignment = ConsumerProtocolAssignment::default();
    let mut buf = BytesMut::new();
    buf.put_i16(version);
    if assignment.encode(&mut buf, version).is_err() {
        // Cannot happen for an in-range version; fall back to the v0 layout
        // (empty partition array, null user data).
        let mut v0 = BytesMut::new();
        v0.put_i16(0);
        v0.put_i32(0);
        v0.put_i32(-1);
        return v0.freeze();
    }
    buf.freeze()
}

#[cfg(test)]
pub(crate) fn encode_subscription(topics: &[&str]) -> Bytes {
    use kafka_protocol::protocol::StrBytes;
    let sub = ConsumerProtocolSubscription::default().with_topics(
        topics
            .iter()
            .map(|t| StrBytes::from_string(t.to_string()))
            .collect(),
    );
    let mut buf = BytesMut::new();
    buf.put_i16(0);
    sub.encode(&mut buf, 0).expect("encode subscription");
    buf.freeze()
}

#[cfg(test)]
mod tests;
