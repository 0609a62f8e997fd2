use super::*;

fn spec() -> KaasUserSpec {
    serde_json::from_value(serde_json::json!({
        "cluster": "demo",
        "acls": [
            {"resource": {"type": "topic", "name": "orders"},
             "operations": ["Read", "Write", "Describe"]},
            {"resource": {"type": "group", "name": "orders-", "patternType": "prefix"},
             "operations": ["Read"], "host": "10.0.0.1"},
            {"resource": {"type": "topic", "name": "*"},
             "operations": ["Delete"], "permission": "deny"},
        ],
    }))
    .expect("a spec")
}

/// Strimzi's field names; the keys set where they differ, every other
/// key of the user removed, nothing asked where all agree.
#[test]
fn quotas_become_exactly_the_users_keys() {
    let spec: KaasUserSpec = serde_json::from_value(serde_json::json!({
        "cluster": "demo",
        "quotas": {"producerByteRate": 1048576, "requestPercentage": 50,
                   "controllerMutationRate": 2.5},
    }))
    .unwrap();
    let quotas = spec.quotas.as_ref();
    let current = BTreeMap::from([
        ("producer_byte_rate".to_string(), 1024.0),
        ("consumer_byte_rate".to_string(), 2048.0),
        ("request_percentage".to_string(), 50.0),
    ]);
    assert_eq!(
        quota_ops(&current, quotas),
        [
            ("controller_mutation_rate".to_string(), Some(2.5)),
            ("producer_byte_rate".to_string(), Some(1048576.0)),
            ("consumer_byte_rate".to_string(), None),
        ]
    );
    let done = BTreeMap::from([
        ("controller_mutation_rate".to_string(), 2.5),
        ("producer_byte_rate".to_string(), 1048576.0),
        ("request_percentage".to_string(), 50.0),
    ]);
    assert!(quota_ops(&done, quotas).is_empty());
    // No quotas in the spec: every key removed.
    assert_eq!(
        quota_ops(&done, None),
        [
            ("controller_mutation_rate".to_string(), None),
            ("producer_byte_rate".to_string(), None),
            ("request_percentage".to_string(), None),
        ]
    );
    assert!(quota_ops(&BTreeMap::new(), None).is_empty());
}

#[test]
fn a_spec_asks_one_binding_per_operation_in_apaches_codes() {
    let d = desired("alice", &spec());
    assert_eq!(d.len(), 5);
    assert!(d.contains(&Binding {
        resource_type: 3,
        name: "orders-".into(),
        pattern_type: 4,
        principal: "User:alice".into(),
        host: "10.0.0.1".into(),
        operation: 3,
        permission: 3,
    }));
    assert!(d.contains(&Binding {
        resource_type: 2,
        name: "*".into(),
        pattern_type: 3,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: 6,
        permission: 2,
    }));
}

#[test]
fn changes_create_what_is_missing_and_delete_what_is_not_asked() {
    let desired = desired("alice", &spec());
    let mut current: BTreeSet<Binding> = desired.iter().skip(1).cloned().collect();
    let stray = Binding {
        resource_type: 2,
        name: "secrets".into(),
        pattern_type: 3,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: 3,
        permission: 3,
    };
    current.insert(stray.clone());
    let (create, delete) = changes(&current, &desired);
    assert_eq!(create, vec![desired.iter().next().unwrap().clone()]);
    assert_eq!(delete, vec![stray]);
    assert_eq!(changes(&desired, &desired), (vec![], vec![]));
}

#[test]
fn the_jaas_line_is_what_java_clients_read() {
    assert_eq!(
            jaas_config("alice", "pw"),
            "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"alice\" password=\"pw\";"
        );
}
