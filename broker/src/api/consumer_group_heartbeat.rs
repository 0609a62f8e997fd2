//! ConsumerGroupHeartbeat (key 68): the KIP-848 consumer protocol. The
//! coordinator's pure heartbeat (`group::consumer::heartbeat`) runs under
//! the group manager; the subscribed topics it resolves are read here,
//! before the manager's lock.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use kafka_protocol::messages::consumer_group_heartbeat_response::{Assignment, TopicPartitions};
use kafka_protocol::messages::{ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse};
use kafka_protocol::ResponseError;

use super::{group_error, str_bytes, Err::GroupAuthorizationFailed, RequestContext};
use crate::auth::{Action, Authorizer, Operation, Principal, ResourceType};
use crate::group::assignor::MemberAssignment;
use crate::group::consumer::heartbeat::{HeartbeatError, HeartbeatRequest, TopicsView};
use crate::group::consumer::records::TopicMetadata;
use crate::group::manager::ConsumerHeartbeat;
use crate::storage::topics::TopicMeta;

pub async fn handle(
    ctx: &RequestContext,
    req: ConsumerGroupHeartbeatRequest,
) -> ConsumerGroupHeartbeatResponse {
    let request = HeartbeatRequest {
        group_id: req.group_id.0.to_string(),
        member_id: req.member_id.to_string(),
        member_epoch: req.member_epoch,
        instance_id: req.instance_id.map(|s| s.to_string()),
        rack_id: req.rack_id.map(|s| s.to_string()),
        rebalance_timeout_ms: req.rebalance_timeout_ms,
        subscribed_topic_names: req
            .subscribed_topic_names
            .map(|names| names.into_iter().map(|n| n.0.to_string()).collect()),
        // "" (librdkafka's when it has none) is no regex.
        subscribed_topic_regex: req.subscribed_topic_regex.map(|s| s.to_string()),
        server_assignor: req.server_assignor.map(|s| s.to_string()),
        owned: req.topic_partitions.map(|tps| {
            let mut owned = MemberAssignment::new();
            for tp in tps {
                owned.entry(tp.topic_id).or_default().extend(tp.partitions);
            }
            owned
        }),
        client_id: ctx.client_id.clone(),
        client_host: format!("/{}", ctx.client_addr.ip()),
    };
    let answer = async {
        ctx.require(
            Operation::Read,
            ResourceType::Group,
            &request.group_id,
            GroupAuthorizationFailed,
        )?;
        let topics = TopicsNow::read(ctx);
        ctx.broker
            .groups
            .request(ConsumerHeartbeat {
                request,
                topics: Box::new(topics),
            })
            .await
    };
    match answer.await {
        Ok(Ok(r)) => ConsumerGroupHeartbeatResponse::default()
            .with_member_id(Some(str_bytes(r.member_id)))
            .with_member_epoch(r.member_epoch)
            .with_heartbeat_interval_ms(r.heartbeat_interval_ms)
            .with_assignment(r.assignment.map(assignment)),
        Ok(Err(HeartbeatError { code, message })) => error(code, Some(message)),
        Err(e) => error(group_error(e), None),
    }
}

/// Apache's error answer: the code and a message, nothing else.
fn error(code: i16, message: Option<String>) -> ConsumerGroupHeartbeatResponse {
    let message = message.or_else(|| ResponseError::try_from_code(code).map(|e| e.to_string()));
    ConsumerGroupHeartbeatResponse::default()
        .with_error_code(code)
        .with_error_message(message.map(str_bytes))
}

fn assignment(partitions: MemberAssignment) -> Assignment {
    Assignment::default().with_topic_partitions(
        partitions
            .into_iter()
            .map(|(topic_id, ps)| {
                TopicPartitions::default()
                    .with_topic_id(topic_id)
                    .with_partitions(ps.into_iter().collect())
            })
            .collect(),
    )
}

/// The topics that exist, as the registry listed them (sorted by name).
/// How old the topics a heartbeat sees may be: a topic created, grown or
/// deleted through another broker bumps the group epoch within this (and
/// the next heartbeat); reading the shared counter on every heartbeat cost
/// half of its CPU.
const TOPICS_MAX_AGE: Duration = Duration::from_millis(500);

/// The topics that exist, read once per request, as the requesting
/// principal may see them through a regex.
pub(super) struct TopicsNow {
    version: i64,
    by_name: Arc<HashMap<String, Arc<TopicMeta>>>,
    describer: Describer,
}

/// Who asks: a regex resolves only to topics it may describe.
struct Describer {
    authorizer: Arc<dyn Authorizer>,
    principal: Principal,
    host: IpAddr,
}

impl TopicsNow {
    pub(super) fn read(ctx: &RequestContext) -> TopicsNow {
        let (version, by_name) = ctx.broker.storage.topics.versioned_within(TOPICS_MAX_AGE);
        TopicsNow {
            version,
            by_name,
            describer: Describer {
                authorizer: ctx.broker.authorizer.clone(),
                principal: ctx.principal.clone(),
                host: ctx.client_addr.ip(),
            },
        }
    }
}

impl TopicsView for TopicsNow {
    fn topic(&self, name: &str) -> Option<TopicMetadata> {
        let t = self.by_name.get(name)?;
        Some(TopicMetadata {
            id: t.id,
            name: t.name.clone(),
            num_partitions: t.partitions,
        })
    }

    fn exists(&self, name: &str) -> bool {
        self.by_name.contains_key(name)
    }

    fn unchanged(&self, m: &TopicMetadata) -> bool {
        self.by_name
            .get(&m.name)
            .is_some_and(|t| t.id == m.id && t.partitions == m.num_partitions)
    }

    fn names_for_regex(&self) -> Vec<String> {
        let d = &self.describer;
        self.by_name
            .keys()
            .filter(|name| {
                let action = Action {
                    operation: Operation::Describe,
                    resource_type: ResourceType::Topic,
                    name,
                };
                d.authorizer.authorize(&d.principal, d.host, action)
            })
            .cloned()
            .collect()
    }

    fn version(&self) -> i64 {
        self.version
    }
}
