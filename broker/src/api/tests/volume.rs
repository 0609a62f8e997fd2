//! A broker another broker fenced (it took over what this one held, its
//! lock kept by a stalled volume): it acknowledges nothing, tells the
//! controller's probe and clients so, and serves again under a new
//! incarnation once it follows a newer assignment (crate::volume).

use std::sync::Arc;

use kaas_shared::{Assignment, BrokerInfo};
use kafka_protocol::messages::*;

use super::{call_at, name, one_broker};
use crate::api::*;
use crate::storage::batch::tests::encode_batch;
use crate::storage::incarnation::{self, Fence};

fn produce_t() -> RequestKind {
    use produce_request::*;
    let partition = PartitionProduceData::default()
        .with_index(0)
        .with_records(Some(encode_batch(2, 1000).into()));
    let topic = TopicProduceData::default()
        .with_name(name("t"))
        .with_partition_data(vec![partition]);
    RequestKind::Produce(
        ProduceRequest::default()
            .with_acks(-1)
            .with_topic_data(vec![topic]),
    )
}

/// The partition's error and base offset.
async fn produce(broker: &Arc<crate::broker::Broker>) -> (i16, i64) {
    let ResponseKind::Produce(resp) = call_at(broker, 9, produce_t()).await else {
        panic!("not a produce response")
    };
    let p = &resp.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

async fn list_groups_error(broker: &Arc<crate::broker::Broker>) -> i16 {
    let req = RequestKind::ListGroups(ListGroupsRequest::default());
    let ResponseKind::ListGroups(resp) = call_at(broker, 4, req).await else {
        panic!("not a list groups response")
    };
    resp.error_code
}

#[tokio::test]
async fn a_fenced_broker_acknowledges_nothing_until_it_follows_a_newer_assignment() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    assert_eq!(produce(&broker).await, (0, 0));
    assert_eq!(list_groups_error(&broker).await, 0);

    // Broker 1, under assignment version 3, took over what this process
    // held.
    let cluster = broker.storage.cluster_dir();
    let fenced = broker.tenancy.incarnation();
    let fence = Fence {
        by_broker: 1,
        at_version: 3,
    };
    incarnation::fence(&cluster, 0, fenced.id(), fence).unwrap();
    broker.tenancy.check_once();
    assert!(!broker.tenancy.healthy());
    let not_leader = Err::NotLeaderOrFollower.code();
    assert_eq!(produce(&broker).await.0, not_leader);
    assert_eq!(
        list_groups_error(&broker).await,
        Err::CoordinatorNotAvailable.code(),
        "the controller's probe counts it dead"
    );

    // It lets go of every partition at once; it serves again only under an
    // assignment at least as new as the fence's.
    let let_go = || broker.storage.retain_partitions(|_, _| false);
    assert!(!broker
        .tenancy
        .renew_if_fenced(&cluster, 0, 2, &let_go)
        .unwrap());
    assert!(broker.storage.open_partitions().is_empty());
    assert_eq!(produce(&broker).await.0, not_leader);
    broker.apply_assignment(Assignment {
        version: 3,
        brokers: vec![BrokerInfo::alive(0, "127.0.0.1", 9092)],
        ..Default::default()
    });
    assert!(broker
        .tenancy
        .renew_if_fenced(&cluster, 0, 3, &let_go)
        .unwrap());
    assert_ne!(broker.tenancy.incarnation().id(), fenced.id());
    assert!(broker.tenancy.healthy());
    assert_eq!(
        produce(&broker).await,
        (0, 2),
        "after the records acknowledged before the fence"
    );
    assert_eq!(list_groups_error(&broker).await, 0);
}
