use super::*;
use crate::{recompute, BrokerInfo, GroupEntry};

fn brokers(n: i32) -> Vec<BrokerInfo> {
    (0..n)
        .map(|id| BrokerInfo::alive(id, format!("demo-{id}.demo-brokers.ns.svc"), 9092))
        .collect()
}

fn configmap(data: BTreeMap<String, String>, binary: BTreeMap<String, ByteString>) -> ConfigMap {
    ConfigMap {
        data: Some(data),
        binary_data: Some(binary),
        ..ConfigMap::default()
    }
}

#[test]
fn roundtrips_and_summarises() {
    let a = Assignment {
        partitions_version: 0,
        version: 7,
        brokers: brokers(2),
        consumer_groups: vec![GroupEntry {
            group_id: "orders".into(),
            broker: 1,
        }],
        partitions: vec![],
    };
    let (data, binary) = encode(&a);
    assert_eq!(data[VERSION_KEY], "7");
    assert_eq!(data[BROKERS_KEY], "0=alive 1=alive");
    assert_eq!(data[GROUP_ENTRIES_KEY], "1");
    assert_eq!(encode(&a), (data.clone(), binary.clone()), "deterministic");
    assert_eq!(decode(&configmap(data, binary)).unwrap(), a);
}

#[test]
fn reads_plain_json_and_reports_what_is_wrong() {
    let json = r#"{"version":3,"brokers":[{"id":0,"host":"h","port":1,"state":"dead"}]}"#;
    let cm = configmap(
        BTreeMap::from([(JSON_KEY.to_owned(), json.to_owned())]),
        BTreeMap::new(),
    );
    assert_eq!(decode(&cm).unwrap().version, 3);
    assert!(matches!(
        decode(&ConfigMap::default()),
        Err(DecodeError::Missing)
    ));
    let garbage = configmap(
        BTreeMap::new(),
        BTreeMap::from([(GZIP_KEY.to_owned(), ByteString(b"not gzip".to_vec()))]),
    );
    assert!(matches!(decode(&garbage), Err(DecodeError::Gzip(_))));
    let bad = configmap(
        BTreeMap::from([(JSON_KEY.to_owned(), "{\"version\":true}".to_owned())]),
        BTreeMap::new(),
    );
    let msg = decode(&bad).unwrap_err().to_string();
    assert!(msg.contains("not a valid assignment"), "{msg}");
}

/// The case the format exists for: 100,000 active groups and a 3→4
/// scale, which pins the ~75% whose hash owner changes.
#[test]
fn a_scale_up_with_100k_active_groups_fits_a_configmap() {
    for (style, ids) in [
        (
            "counter",
            (0..100_000)
                .map(|i| format!("group-{i}"))
                .collect::<Vec<_>>(),
        ),
        (
            "service",
            (0..100_000u64)
                .map(|i| {
                    let svc =
                        ["orders", "payments", "billing", "search", "audit"][(i % 5) as usize];
                    let env = ["prod", "staging"][(i % 2) as usize];
                    // A spread-out number, as real deployments' suffixes are.
                    let n = i.wrapping_mul(2_654_435_761) % 10_000_000;
                    format!("{svc}-{env}-consumer-{n}")
                })
                .collect(),
        ),
    ] {
        let v1 = recompute(None, &brokers(3), &ids);
        let v2 = recompute(Some(&v1), &brokers(4), &ids);
        assert!(
            v2.consumer_groups.len() > 70_000,
            "{style}: {}",
            v2.consumer_groups.len()
        );
        let plain = serde_json::to_vec(&v2).unwrap().len();
        assert!(
            plain > CONFIGMAP_LIMIT,
            "{style}: the plain JSON would not fit"
        );
        let (data, binary) = encode(&v2);
        let size = encoded_size(&data, &binary);
        assert!(size < CONFIGMAP_LIMIT / 2, "{style}: {size} bytes encoded");
        assert_eq!(decode(&configmap(data, binary)).unwrap(), v2);
    }
}
