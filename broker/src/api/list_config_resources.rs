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
mod tests {
    use kafka_protocol::messages::{
        ListConfigResourcesRequest, ListConfigResourcesResponse, RequestKind, ResponseKind,
    };

    use super::{BROKER, CLIENT_METRICS, GROUP, TOPIC};
    use crate::api::broker_configs_tests::alter;
    use crate::api::tests::{call_at, one_broker};
    use crate::api::Err;

    const BROKER_LOGGER: i8 = 8;
    const SET: i8 = 0;

    async fn list(
        broker: &std::sync::Arc<crate::broker::Broker>,
        version: i16,
        types: &[i8],
    ) -> ListConfigResourcesResponse {
        let req = ListConfigResourcesRequest::default().with_resource_types(types.to_vec());
        match call_at(broker, version, RequestKind::ListConfigResources(req)).await {
            ResponseKind::ListConfigResources(r) => r,
            other => panic!("{other:?}"),
        }
    }

    fn listed(r: &ListConfigResourcesResponse) -> Vec<(i8, String)> {
        let rows = r.config_resources.iter();
        rows.map(|c| (c.resource_type, c.resource_name.to_string()))
            .collect()
    }

    /// KafkaApisTest's testListConfigResources cases: v0 lists client
    /// metrics only (kaas has none); v1 with no types lists every type it
    /// describes in Apache's order (groups with configs of their own,
    /// client metrics, brokers, topics); a type named twice lists once; the
    /// order asked does not change the order listed.
    #[tokio::test]
    async fn config_resources_are_listed_by_type_in_apaches_order() {
        let dir = tempfile::tempdir().unwrap();
        let (broker, _) = one_broker(dir.path()).await;
        broker
            .storage
            .topics
            .create_blocking("a", 1, Default::default(), false)
            .unwrap();
        let set = [("consumer.session.timeout.ms", SET, Some("50000"))];
        assert_eq!(alter(&broker, GROUP, "g1", &set, false).await, (0, None));

        let v0 = list(&broker, 0, &[]).await;
        assert_eq!((v0.error_code, listed(&v0)), (0, vec![]));
        let own = |t: i8, n: &str| (t, n.to_string());
        let every = list(&broker, 1, &[]).await;
        assert_eq!(every.error_code, 0);
        assert_eq!(
            listed(&every),
            [
                own(GROUP, "g1"),
                own(BROKER, "0"),
                own(TOPIC, "a"),
                own(TOPIC, "t")
            ]
        );
        let topics = list(&broker, 1, &[TOPIC, TOPIC]).await;
        assert_eq!(listed(&topics), [own(TOPIC, "a"), own(TOPIC, "t")]);
        let reordered = list(&broker, 1, &[TOPIC, CLIENT_METRICS, GROUP]).await;
        assert_eq!(
            listed(&reordered),
            [own(GROUP, "g1"), own(TOPIC, "a"), own(TOPIC, "t")]
        );
    }

    /// A type kaas does not list (BROKER_LOGGER, or one no release has)
    /// fails the whole request, as Apache answers a type it does not know:
    /// UNSUPPORTED_VERSION and nothing listed.
    #[tokio::test]
    async fn a_type_kaas_does_not_list_fails_the_whole_request() {
        let dir = tempfile::tempdir().unwrap();
        let (broker, _) = one_broker(dir.path()).await;
        for types in [vec![BROKER_LOGGER], vec![TOPIC, 64, BROKER]] {
            let r = list(&broker, 1, &types).await;
            assert_eq!(
                (r.error_code, listed(&r)),
                (Err::UnsupportedVersion.code(), vec![]),
                "{types:?}"
            );
        }
    }
}
