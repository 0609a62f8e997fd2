//! CreateTopics (key 19). Any broker may create: the shared folder makes
//! creation atomic, so there is no controller to forward to.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::create_topics_response::{
    CreatableTopicConfigs, CreatableTopicResult,
};
use kafka_protocol::messages::{CreateTopicsRequest, CreateTopicsResponse};
use kafka_protocol::protocol::StrBytes;
use tracing::{debug, info};

use super::{replicas, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::storage::{topic_config, TopicError};

pub async fn handle(ctx: &RequestContext, req: CreateTopicsRequest) -> CreateTopicsResponse {
    let broker = &ctx.broker;
    let mut seen: HashMap<String, usize> = HashMap::new();
    for t in &req.topics {
        *seen.entry(t.name.0.to_string()).or_default() += 1;
    }
    // Cluster CREATE, else the topic's CREATE (after the duplicate check).
    let may_create_any = ctx.authorized(Operation::Create, ResourceType::Cluster, CLUSTER_NAME);
    let mut resp = CreateTopicsResponse::default();
    let members = replicas::Members::of(broker);
    let mut quota = ctx.mutation_quota(6);
    for t in req.topics {
        let name = t.name.0.to_string();
        let mut result = CreatableTopicResult::default()
            .with_name(t.name.clone())
            .with_error_message(None);
        let fail = |mut r: CreatableTopicResult, code: i16, msg: String| {
            r.error_code = code;
            r.error_message = Some(StrBytes::from_string(msg));
            r.num_partitions = -1;
            r.replication_factor = -1;
            r
        };
        if seen[&name] > 1 {
            resp.topics.push(fail(
                result,
                Err::InvalidRequest.code(),
                format!("topic '{name}' appears more than once in the request"),
            ));
            continue;
        }
        if !may_create_any && !ctx.authorized(Operation::Create, ResourceType::Topic, &name) {
            resp.topics.push(fail(
                result,
                Err::TopicAuthorizationFailed.code(),
                "Authorization failed.".into(),
            ));
            continue;
        }
        let assigned = match manual_assignment(&members, &t) {
            Ok(assigned) => assigned,
            Err((code, message)) => {
                resp.topics.push(fail(result, code.code(), message));
                continue;
            }
        };
        if t.replication_factor == 0 || t.replication_factor < -1 {
            resp.topics.push(fail(
                result,
                Err::InvalidReplicationFactor.code(),
                format!(
                    "replication factor must be -1 or at least 1, not {}",
                    t.replication_factor
                ),
            ));
            continue;
        }
        let partitions = if !t.assignments.is_empty() {
            t.assignments.len() as i32
        } else if t.num_partitions == -1 {
            broker.config.default_partitions
        } else {
            t.num_partitions
        };
        // Apache's checks of a new topic's configs: no null value, known
        // names, values of their type and range (INVALID_CONFIG, nothing
        // created).
        let nulls: Vec<String> = t
            .configs
            .iter()
            .filter(|c| c.value.is_none())
            .map(|c| c.name.to_string())
            .collect();
        if !nulls.is_empty() {
            resp.topics.push(fail(
                result,
                Err::InvalidConfig.code(),
                format!(
                    "Null value not supported for topic configs: {}",
                    nulls.join(",")
                ),
            ));
            continue;
        }
        let given: BTreeMap<String, String> = t
            .configs
            .iter()
            .filter_map(|c| Some((c.name.to_string(), c.value.as_ref()?.to_string())))
            .collect();
        if let Err(e) = topic_config::validate(&given) {
            resp.topics
                .push(fail(result, Err::InvalidConfig.code(), e.0));
            continue;
        }
        let configs = topic_config::normalized(&given);
        // The controller mutation quota counts the partitions of a topic
        // that would be created (one that exists is answered below).
        if broker.storage.topics.get(&name).is_none() {
            if let Err(throttle_ms) = quota.record(partitions as f64, broker.quotas.now_ms()) {
                debug!(topic = %name, partitions, throttle_ms,
                       "topic creation over the controller mutation quota");
                let e = Err::ThrottlingQuotaExceeded;
                resp.topics.push(fail(result, e.code(), e.to_string()));
                continue;
            }
        }
        match broker
            .storage
            .topics
            .create_assigned(&name, partitions, configs, assigned, req.validate_only)
            .await
        {
            Ok(meta) => {
                if !req.validate_only {
                    info!(topic = %name, partitions, id = %meta.id, "created topic");
                }
                result.topic_id = meta.id;
                result.num_partitions = meta.partitions;
                result.replication_factor = replicas::replication_factor(&meta) as i16;
                // v5+: every config of the new topic, as DescribeConfigs
                // would describe it.
                result.configs = (ctx.api_version >= 5).then(|| {
                    topic_config::describe(&meta.configs, &broker.storage.topic_defaults())
                        .into_iter()
                        .map(|c| {
                            CreatableTopicConfigs::default()
                                .with_name(StrBytes::from_static_str(c.name))
                                .with_value(Some(StrBytes::from_string(c.value)))
                                .with_read_only(false)
                                .with_config_source(c.source.code())
                                .with_is_sensitive(false)
                        })
                        .collect()
                });
                resp.topics.push(result);
            }
            Err(e) => {
                let code = match &e {
                    TopicError::AlreadyExists(_) => Err::TopicAlreadyExists.code(),
                    TopicError::InvalidName(_) => Err::InvalidTopicException.code(),
                    TopicError::InvalidPartitions(_) => Err::InvalidPartitions.code(),
                    TopicError::Unknown(_) => Err::UnknownTopicOrPartition.code(),
                    TopicError::Io(_) => Err::KafkaStorageError.code(),
                };
                resp.topics.push(fail(result, code, e.to_string()));
            }
        }
    }
    resp.throttle_time_ms = quota.throttle_ms(broker.quotas.now_ms()) as i32;
    resp
}

/// A topic's manual assignment as Apache's controller checks it
/// (`ReplicationControlManager.createTopic`): no partition count nor
/// replication factor beside it, each partition once, each assignment
/// valid and as long as the others with a broker alive, the partitions
/// numbered from 0 without a gap. The replicas by partition, none when
/// none were given.
fn manual_assignment(
    members: &replicas::Members,
    t: &CreatableTopic,
) -> Result<BTreeMap<i32, Vec<i32>>, (Err, String)> {
    let mut assigned: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    if t.assignments.is_empty() {
        return Ok(assigned);
    }
    let refused = |m: &str| {
        Err((
            Err::InvalidRequest,
            format!("A manual partition assignment was specified, but {m} was not set to -1."),
        ))
    };
    if t.replication_factor != -1 {
        return refused("replication factor");
    }
    if t.num_partitions != -1 {
        return refused("numPartitions");
    }
    let mut factor = None;
    for a in &t.assignments {
        let p = a.partition_index;
        if assigned.contains_key(&p) {
            return Err((
                Err::InvalidReplicaAssignment,
                format!("Found multiple manual partition assignments for partition {p}"),
            ));
        }
        let brokers: Vec<i32> = a.broker_ids.iter().map(|b| b.0).collect();
        members
            .check(p, &brokers, factor)
            .map_err(|m| (Err::InvalidReplicaAssignment, m))?;
        factor = Some(brokers.len());
        assigned.insert(p, brokers);
    }
    if !assigned.keys().copied().eq(0..assigned.len() as i32) {
        return Err((
            Err::InvalidReplicaAssignment,
            "partitions should be a consecutive 0-based integer sequence".into(),
        ));
    }
    Ok(assigned)
}
