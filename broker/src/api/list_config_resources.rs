//! ListConfigResources (key 74; v0 was ListClientMetricsResources): the
//! resources DescribeConfigs can be asked about, as Apache's
//! `KafkaApis.handleListConfigResources` lists them. Cluster
//! DESCRIBE_CONFIGS; v0 lists client-metrics subscriptions (kaas has none);
//! from v1, the types asked for (every type kaas describes when none) in
//! Apache's order: groups with configs of their own, client-metrics
//! subscriptions, the brokers on the request's listener, every topic. A
//! type kaas does not list (BROKER_LOGGER: kaas has no log4j loggers to
//! describe) fails the whole request with UNSUPPORTED_VERSION, as Apache
//! answers a type it does not know.

use kafka_protocol::messages::list_config_resources_response::ConfigResource;
use kafka_protocol::messages::{ListConfigResourcesRequest, ListConfigResourcesResponse};

use super::metadata::listed_brokers;
use super::{str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};

/// `ConfigResource.Type` on the wire.
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;

/// The types kaas lists, in the order Apache lists them.
const LISTED: [i8; 4] = [GROUP, CLIENT_METRICS, BROKER, TOPIC];

pub fn handle(
    ctx: &RequestContext,
    req: ListConfigResourcesRequest,
) -> ListConfigResourcesResponse {
    let response = ListConfigResourcesResponse::default();
    if !ctx.authorized(
        Operation::DescribeConfigs,
        ResourceType::Cluster,
        CLUSTER_NAME,
    ) {
        return response.with_error_code(Err::ClusterAuthorizationFailed.code());
    }
    let wanted: Vec<i8> = match ctx.api_version {
        0 => vec![CLIENT_METRICS],
        _ if req.resource_types.is_empty() => LISTED.to_vec(),
        _ => req.resource_types,
    };
    if wanted.iter().any(|t| !LISTED.contains(t)) {
        return response.with_error_code(Err::UnsupportedVersion.code());
    }
    let mut resources = Vec::new();
    let mut add = |kind: i8, names: Vec<String>| {
        if wanted.contains(&kind) {
            resources.extend(names.into_iter().map(|name| {
                ConfigResource::default()
                    .with_resource_name(str_bytes(name))
                    .with_resource_type(kind)
            }));
        }
    };
    let groups = ctx.broker.group_configs.current();
    add(GROUP, groups.groups.keys().cloned().collect());
    add(CLIENT_METRICS, Vec::new());
    let (brokers, _) = listed_brokers(ctx, false);
    add(BROKER, brokers.iter().map(|b| b.id.to_string()).collect());
    let mut topics: Vec<String> = ctx
        .broker
        .storage
        .topics
        .all()
        .iter()
        .map(|t| t.name.clone())
        .collect();
    topics.sort();
    add(TOPIC, topics);
    response.with_config_resources(resources)
}

#[cfg(test)]
mod tests;
