//! DeleteTopics (key 20): by name, or by topic id from v6.

use kafka_protocol::messages::delete_topics_response::DeletableTopicResult;
use kafka_protocol::messages::{DeleteTopicsRequest, DeleteTopicsResponse, TopicName};
use kafka_protocol::protocol::StrBytes;
use tracing::{debug, info};

use super::{Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::storage::TopicError;

pub async fn handle(ctx: &RequestContext, req: DeleteTopicsRequest) -> DeleteTopicsResponse {
    let topics = &ctx.broker.storage.topics;
    // Up to v5 topics come by name only; v6 names or ids.
    let targets: Vec<(Option<String>, uuid::Uuid)> = if ctx.api_version >= 6 {
        req.topics
            .iter()
            .map(|t| (t.name.as_ref().map(|n| n.0.to_string()), t.topic_id))
            .collect()
    } else {
        req.topic_names
            .iter()
            .map(|n| (Some(n.0.to_string()), uuid::Uuid::nil()))
            .collect()
    };
    // Cluster DELETE, else the topic's DESCRIBE and DELETE: either missing
    // answers TOPIC_AUTHORIZATION_FAILED before the topic is looked for.
    let may_delete_any = ctx.authorized(Operation::Delete, ResourceType::Cluster, CLUSTER_NAME);
    let may = |op, topic: &str| may_delete_any || ctx.authorized(op, ResourceType::Topic, topic);
    let mut resp = DeleteTopicsResponse::default();
    let mut quota = ctx.mutation_quota(5);
    for (name, id) in targets {
        let mut result = DeletableTopicResult::default().with_topic_id(id);
        let resolved = match &name {
            Some(n) => Some(n.clone()),
            None => topics.get_by_id(id).map(|t| t.name.clone()),
        };
        result.name = resolved
            .clone()
            .map(|n| TopicName(StrBytes::from_string(n)));
        let Some(topic) = resolved else {
            result.error_code = Err::UnknownTopicId.code();
            resp.responses.push(result);
            continue;
        };
        if !may(Operation::Describe, &topic) || !may(Operation::Delete, &topic) {
            // A topic named by id keeps its name from a principal that may
            // not describe it.
            if name.is_none() && !may(Operation::Describe, &topic) {
                result.name = None;
            }
            result.error_code = Err::TopicAuthorizationFailed.code();
            resp.responses.push(result);
            continue;
        }
        // The controller mutation quota counts the topic's partitions.
        if let Some(meta) = topics.get(&topic) {
            let now = ctx.broker.quotas.now_ms();
            if let Err(throttle_ms) = quota.record(meta.partitions as f64, now) {
                debug!(%topic, throttle_ms, "topic deletion over the controller mutation quota");
                let e = Err::ThrottlingQuotaExceeded;
                result.error_code = e.code();
                result.error_message = Some(StrBytes::from_string(e.to_string()));
                resp.responses.push(result);
                continue;
            }
        }
        match topics.delete(&topic).await {
            Ok(meta) => {
                ctx.broker.storage.close_topic(&topic);
                info!(topic = %topic, id = %meta.id, "deleted topic");
                result.topic_id = meta.id;
            }
            Err(e) => {
                result.error_code = match e {
                    TopicError::Unknown(_) => Err::UnknownTopicOrPartition.code(),
                    _ => Err::KafkaStorageError.code(),
                };
                result.error_message = Some(StrBytes::from_string(e.to_string()));
            }
        }
        resp.responses.push(result);
    }
    resp.throttle_time_ms = quota.throttle_ms(ctx.broker.quotas.now_ms()) as i32;
    resp
}
