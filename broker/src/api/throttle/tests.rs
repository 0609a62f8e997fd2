use super::*;
use crate::broker::BrokerConfig;
use crate::client_quotas::{alter, Alteration, Entity};

/// A request over `request_percentage` is throttled and its response
/// says so; requests of brokers to brokers (WriteTxnMarkers,
/// AddPartitionsToTxn v4+) are never charged, as Apache exempts
/// cluster actions.
#[test]
fn broker_to_broker_requests_are_exempt() {
    let dir = tempfile::tempdir().unwrap();
    let broker =
        crate::serve::open(BrokerConfig::new(0, dir.path().into(), "127.0.0.1", 9092)).unwrap();
    let mut quotas = Default::default();
    let outcome = alter(
        &mut quotas,
        &[Alteration {
            entity: Entity::of(&[(crate::client_quotas::CLIENT_ID, Some("c"))]),
            ops: vec![("request_percentage".into(), Some(1.0))],
        }],
        false,
    );
    assert!(outcome[0].1.is_ok());
    broker.quotas.install(&quotas);
    let client = Client {
        user: "ANONYMOUS",
        client_id: "c",
    };
    let usage = |api_key, api_version| Usage {
        api_key,
        api_version,
        request_bytes: 100,
        // A whole second of one thread: 100 % against a quota of 1 %.
        spent: Duration::from_secs(1),
        produce_throttle: Duration::ZERO,
    };
    let mut markers = ResponseKind::WriteTxnMarkers(Default::default());
    let u = usage(ApiKey::WriteTxnMarkers, 1);
    assert_eq!(
        apply(&broker, &client, &u, Some(&mut markers)),
        Duration::ZERO
    );
    let mut verify = ResponseKind::AddPartitionsToTxn(Default::default());
    let u = usage(ApiKey::AddPartitionsToTxn, 4);
    assert_eq!(
        apply(&broker, &client, &u, Some(&mut verify)),
        Duration::ZERO
    );
    let mut metadata = ResponseKind::Metadata(Default::default());
    let u = usage(ApiKey::Metadata, 12);
    let mute = apply(&broker, &client, &u, Some(&mut metadata));
    assert!(mute > Duration::ZERO);
    assert_eq!(throttle_time(&metadata) as u128, mute.as_millis());
}
