use kafka_protocol::messages::{
    ListConfigResourcesRequest, ListConfigResourcesResponse, RequestKind, ResponseKind,
};

use super::{BROKER, CLIENT_METRICS, GROUP, TOPIC};
use crate::api::tests::broker_configs::alter;
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
