//! The raw protocol the simulated consumers speak: one connection per
//! member session, every request under a deadline, and the error codes a
//! real client reacts to.

use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kaas_client::KafkaClient;
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    consumer_protocol_assignment, ConsumerProtocolAssignment, ConsumerProtocolSubscription,
    FindCoordinatorRequest, GroupId, ListGroupsRequest, OffsetFetchRequest, TopicName,
};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};

use kafka_protocol::ResponseError as E;

pub const NONE: i16 = 0;
pub const COORDINATOR_LOAD_IN_PROGRESS: i16 = E::CoordinatorLoadInProgress.code();
pub const COORDINATOR_NOT_AVAILABLE: i16 = E::CoordinatorNotAvailable.code();
pub const NOT_COORDINATOR: i16 = E::NotCoordinator.code();
pub const ILLEGAL_GENERATION: i16 = E::IllegalGeneration.code();
pub const UNKNOWN_MEMBER_ID: i16 = E::UnknownMemberId.code();
pub const REBALANCE_IN_PROGRESS: i16 = E::RebalanceInProgress.code();
pub const GROUP_ID_NOT_FOUND: i16 = E::GroupIdNotFound.code();
pub const MEMBER_ID_REQUIRED: i16 = E::MemberIdRequired.code();

/// The topic every group commits offsets for. The soak creates it (commits
/// to a topic that does not exist are refused, as in Apache Kafka) and never
/// produces to it: it exercises groups, not partition logs.
pub const TOPIC: &str = "soak";

pub const FIND_COORDINATOR_V: i16 = 3;
pub const JOIN_V: i16 = 5;
pub const SYNC_V: i16 = 3;
pub const HEARTBEAT_V: i16 = 3;
pub const LEAVE_V: i16 = 3;
pub const COMMIT_V: i16 = 7;
pub const FETCH_V: i16 = 7;
pub const DELETE_V: i16 = 1;
pub const LIST_V: i16 = 4;

/// The code's name as Apache writes it (`NOT_COORDINATOR`), from the
/// `kafka-protocol` crate's `NotCoordinator` (`UNKNOWN(n)` for a code it
/// does not know).
pub fn error_name(code: i16) -> String {
    let Some(e) = E::try_from_code(code) else {
        return match code {
            NONE => "NONE".into(),
            c => format!("code {c}"),
        };
    };
    let mut name = String::new();
    for (i, ch) in format!("{e:?}").chars().enumerate() {
        if ch.is_ascii_uppercase() && i > 0 {
            name.push('_');
        }
        name.push(ch.to_ascii_uppercase());
    }
    name
}

/// Whether `code` tells the client to find the coordinator again.
pub fn is_coordinator_error(code: i16) -> bool {
    matches!(
        code,
        NOT_COORDINATOR | COORDINATOR_NOT_AVAILABLE | COORDINATOR_LOAD_IN_PROGRESS
    )
}

pub fn gid(s: &str) -> GroupId {
    GroupId(StrBytes::from_string(s.to_string()))
}

pub fn sb(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// One connection to one broker.
pub struct Conn {
    client: KafkaClient,
    pub addr: String,
}

impl Conn {
    pub async fn connect(addr: &str, client_id: &str) -> anyhow::Result<Conn> {
        let client = KafkaClient::connect(addr, Duration::from_secs(3))
            .await?
            .with_client_id(client_id);
        Ok(Conn {
            client,
            addr: addr.to_string(),
        })
    }

    /// Sends one request and waits at most `within` for its answer. A
    /// timed-out connection is unusable (the answer may still arrive), so
    /// callers drop it on any error.
    pub async fn call<R: Request>(
        &mut self,
        req: &R,
        version: i16,
        within: Duration,
    ) -> anyhow::Result<R::Response>
    where
        R::Response: Decodable + HeaderVersion,
    {
        match tokio::time::timeout(within, self.client.send(req, version)).await {
            Ok(r) => r,
            Err(_) => anyhow::bail!("no answer from {} within {within:?}", self.addr),
        }
    }
}

/// Asks `via` which broker coordinates `group`: Ok(Ok(host:port)), or
/// Ok(Err(code)) when it answered an error (retry later).
pub async fn find_coordinator(via: &str, group: &str) -> anyhow::Result<Result<String, i16>> {
    let mut c = Conn::connect(via, "soak-find").await?;
    let r = c
        .call(
            &FindCoordinatorRequest::default()
                .with_key(sb(group))
                .with_key_type(0),
            FIND_COORDINATOR_V,
            Duration::from_secs(5),
        )
        .await?;
    if r.error_code != NONE {
        return Ok(Err(r.error_code));
    }
    Ok(Ok(format!("{}:{}", r.host.as_str(), r.port)))
}

/// Committed offsets of `partitions` of [`TOPIC`] for `group`, from `conn`:
/// Ok(offsets in partition order) or Err(error code).
pub async fn fetch_offsets(
    conn: &mut Conn,
    group: &str,
    partitions: i32,
) -> anyhow::Result<Result<Vec<i64>, i16>> {
    let r = conn
        .call(
            &OffsetFetchRequest::default()
                .with_group_id(gid(group))
                .with_topics(Some(vec![OffsetFetchRequestTopic::default()
                    .with_name(TopicName(sb(TOPIC)))
                    .with_partition_indexes((0..partitions).collect())])),
            FETCH_V,
            Duration::from_secs(10),
        )
        .await?;
    if r.error_code != NONE {
        return Ok(Err(r.error_code));
    }
    let mut out = vec![-1; partitions as usize];
    for t in &r.topics {
        for p in &t.partitions {
            if p.error_code != NONE {
                return Ok(Err(p.error_code));
            }
            if let Some(slot) = out.get_mut(p.partition_index as usize) {
                *slot = p.committed_offset;
            }
        }
    }
    Ok(Ok(out))
}

/// Every group id `addr` lists (all states).
pub async fn list_groups(addr: &str) -> anyhow::Result<Vec<String>> {
    let mut c = Conn::connect(addr, "soak-list").await?;
    let r = c
        .call(
            &ListGroupsRequest::default(),
            LIST_V,
            Duration::from_secs(10),
        )
        .await?;
    anyhow::ensure!(
        r.error_code == NONE,
        "ListGroups: {}",
        error_name(r.error_code)
    );
    Ok(r.groups.iter().map(|g| g.group_id.0.to_string()).collect())
}

/// The consumer protocol's encoding: a version, then the struct.
fn versioned<T: Encodable>(t: &T, version: i16) -> Bytes {
    let mut buf = BytesMut::new();
    buf.put_i16(version);
    t.encode(&mut buf, version).expect("encodable");
    buf.freeze()
}

pub fn subscription() -> Bytes {
    versioned(
        &ConsumerProtocolSubscription::default().with_topics(vec![sb(TOPIC)]),
        1,
    )
}

pub fn assignment(partitions: &[i32]) -> Bytes {
    versioned(
        &ConsumerProtocolAssignment::default().with_assigned_partitions(vec![
            consumer_protocol_assignment::TopicPartition::default()
                .with_topic(TopicName(sb(TOPIC)))
                .with_partitions(partitions.to_vec()),
        ]),
        1,
    )
}

/// The partitions of [`TOPIC`] in a SyncGroup assignment (empty when the
/// bytes are empty, as for a member the leader left out).
pub fn decode_assignment(bytes: &Bytes) -> anyhow::Result<Vec<i32>> {
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let mut buf = bytes.clone();
    anyhow::ensure!(buf.remaining() >= 2, "short assignment");
    let version = buf.get_i16();
    let a = ConsumerProtocolAssignment::decode(&mut buf, version.min(3))?;
    Ok(a.assigned_partitions
        .iter()
        .filter(|tp| tp.topic.0.as_str() == TOPIC)
        .flat_map(|tp| tp.partitions.iter().copied())
        .collect())
}

#[cfg(test)]
mod tests;
