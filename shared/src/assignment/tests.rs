use super::*;
use crate::route::route;

const EXAMPLE: &str = r#"{"version": 42,
        "brokers": [{"id": 0, "host": "demo-0.demo-brokers.ns.svc", "port": 9092, "state": "alive"},
                    {"id": 1, "host": "demo-1.demo-brokers.ns.svc", "port": 9092, "state": "dead"}],
        "consumerGroups": [{"groupId": "orders", "broker": 0}],
        "partitions": [{"topic": "t", "partition": 3, "broker": 1}]}"#;

#[test]
fn a_broker_answers_each_listener_with_its_own_address() {
    let single = BrokerInfo::alive(0, "b0", 9092);
    assert_eq!(single.endpoint("CLIENT"), Some(("b0", 9092)));
    let json = r#"{"id": 1, "host": "b1.internal", "port": 9093, "state": "alive",
            "listeners": [{"name": "INTERNAL", "host": "b1.internal", "port": 9093},
                          {"name": "CLIENT", "host": "b1.example.com", "port": 19092}]}"#;
    let named: BrokerInfo = serde_json::from_str(json).unwrap();
    assert_eq!(named.endpoint("CLIENT"), Some(("b1.example.com", 19092)));
    assert_eq!(named.endpoint("INTERNAL"), Some(("b1.internal", 9093)));
    assert_eq!(named.endpoint("OTHER"), None);
    // A single listener's document is written as before.
    let written = serde_json::to_string(&single).unwrap();
    assert!(!written.contains("listeners"), "{written}");
}

fn broker(id: BrokerId, state: BrokerState) -> BrokerInfo {
    BrokerInfo {
        id,
        host: format!("b{id}"),
        port: 9092,
        state,
        listeners: Vec::new(),
    }
}

#[test]
fn parses_the_documented_example() {
    let a: Assignment = serde_json::from_str(EXAMPLE).expect("valid example");
    assert_eq!(a.version, 42);
    assert_eq!(a.brokers.len(), 2);
    assert_eq!(a.brokers[1].state, BrokerState::Dead);
    assert_eq!(
        a.consumer_groups,
        vec![GroupEntry {
            group_id: "orders".into(),
            broker: 0
        }]
    );
    assert_eq!(a.partitions[0].partition, 3);
    let back: Assignment =
        serde_json::from_str(&serde_json::to_string(&a).expect("serialises")).expect("roundtrip");
    assert_eq!(back, a);
}

#[test]
fn wire_format_is_camel_case_and_lowercase_states() {
    let a = Assignment {
        partitions_version: 0,
        version: 1,
        brokers: vec![broker(0, BrokerState::Draining)],
        consumer_groups: vec![],
        partitions: vec![],
    };
    let json = serde_json::to_string(&a).expect("serialises");
    assert_eq!(
        json,
        r#"{"version":1,"brokers":[{"id":0,"host":"b0","port":9092,"state":"draining"}],"consumerGroups":[]}"#
    );
    // Optional sections may be absent; unknown fields are tolerated so an
    // older broker can read a newer controller's document.
    let minimal: Assignment =
        serde_json::from_str(r#"{"version":3,"brokers":[],"future":true}"#).expect("parses");
    assert!(minimal.consumer_groups.is_empty() && minimal.partitions.is_empty());
    assert!(serde_json::from_str::<Assignment>(
        r#"{"version":1,"brokers":[{"id":0,"host":"h","port":1,"state":"zombie"}]}"#
    )
    .is_err());
}

#[test]
fn schema_describes_the_wire_format() {
    let schema = serde_json::to_string(&schemars::schema_for!(Assignment)).expect("schema");
    for needle in [
        "consumerGroups",
        "groupId",
        "\"alive\"",
        "\"draining\"",
        "\"dead\"",
    ] {
        assert!(schema.contains(needle), "schema lacks {needle}: {schema}");
    }
}

#[test]
fn routing_answers_from_the_example() {
    let a: Assignment = serde_json::from_str(EXAMPLE).expect("valid example");
    let r = Routing::new(a);
    assert_eq!(r.version(), 42);
    assert_eq!(r.owner_of_group("orders"), Some(0));
    assert_eq!(r.group_entry("orders"), Some(0));
    // Broker 1 is dead: everything lands on 0, including the partition
    // whose explicit entry names the dead broker.
    assert_eq!(r.owner_of_group("anything"), Some(0));
    assert_eq!(r.partition_entry("t", 3), Some(1));
    assert_eq!(r.owner_of_partition("t", 3), Some(0));
    assert_eq!(r.broker(1).map(|b| b.state), Some(BrokerState::Dead));
    assert!(r.broker(7).is_none());
    let alive: Vec<BrokerId> = r.alive_brokers().map(|b| b.id).collect();
    assert_eq!(alive, vec![0]);
    assert_eq!(r.table().ids(), &[0, 1]);
}

#[test]
fn explicit_entries_win_over_hash() {
    let brokers: Vec<BrokerInfo> = (0..5).map(|i| broker(i, BrokerState::Alive)).collect();
    let plain = Routing::new(Assignment {
        version: 1,
        brokers: brokers.clone(),
        ..Assignment::default()
    });
    let hashed = plain.owner_of_group("orders").expect("alive");
    let other = (hashed + 1) % 5;
    let pinned = Routing::new(Assignment {
        partitions_version: 0,
        version: 2,
        brokers,
        consumer_groups: vec![GroupEntry {
            group_id: "orders".into(),
            broker: other,
        }],
        partitions: vec![PartitionEntry {
            topic: "t".into(),
            partition: 0,
            broker: other,
        }],
    });
    assert_eq!(pinned.owner_of_group("orders"), Some(other));
    assert_eq!(pinned.hash_owner_of_group("orders"), Some(hashed));
    assert_eq!(pinned.owner_of_partition("t", 0), Some(other));
    assert_eq!(pinned.partition_entry("t", 1), None);
}

#[test]
fn hash_tier_matches_route_over_the_document() {
    let states = [
        BrokerState::Alive,
        BrokerState::Dead,
        BrokerState::Alive,
        BrokerState::Draining,
        BrokerState::Alive,
    ];
    // Document order deliberately unsorted.
    let brokers: Vec<BrokerInfo> = [3, 0, 4, 1, 2]
        .into_iter()
        .map(|i| broker(i, states[i as usize]))
        .collect();
    let r = Routing::new(Arc::new(Assignment {
        version: 9,
        brokers,
        ..Assignment::default()
    }));
    let ids = [0, 1, 2, 3, 4];
    let alive = |b: BrokerId| states[b as usize].is_alive();
    for i in 0..500 {
        let g = format!("g{i}");
        assert_eq!(r.owner_of_group(&g), route(g.as_bytes(), &ids, alive));
        let key = partition_key("topic", i - 250);
        assert_eq!(
            r.owner_of_partition("topic", i - 250),
            route(key.as_bytes(), &ids, alive)
        );
    }
}

#[test]
fn partition_key_hash_matches_formatted_key() {
    for (t, p) in [("t", 0), ("orders", 17), ("", -1), ("ünï", i32::MIN)] {
        assert_eq!(
            partition_key_hash(t, p),
            fnv1a32(partition_key(t, p).as_bytes())
        );
    }
}

#[test]
fn malformed_documents_do_not_panic_and_first_wins() {
    let a = Assignment {
        partitions_version: 0,
        version: 1,
        brokers: vec![
            broker(2, BrokerState::Dead),
            broker(2, BrokerState::Alive),
            broker(5, BrokerState::Alive),
        ],
        consumer_groups: vec![
            GroupEntry {
                group_id: "g".into(),
                broker: 5,
            },
            GroupEntry {
                group_id: "g".into(),
                broker: 2,
            },
            GroupEntry {
                group_id: "h".into(),
                broker: 99,
            },
        ],
        partitions: vec![],
    };
    let r = Routing::new(a);
    assert_eq!(r.broker(2).map(|b| b.state), Some(BrokerState::Dead));
    assert!(!r.is_alive(2));
    assert_eq!(r.owner_of_group("g"), Some(5));
    // Entry naming an unknown broker falls through to the hash tier.
    assert_eq!(r.owner_of_group("h"), Some(5));

    let empty = Routing::new(Assignment::default());
    assert_eq!(empty.owner_of_group("g"), None);
    assert_eq!(empty.owner_of_partition("t", 0), None);
    assert_eq!(empty.alive_brokers().count(), 0);
}
