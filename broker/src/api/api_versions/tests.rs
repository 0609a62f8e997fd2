use std::collections::BTreeMap;

use kafka_protocol::messages::ApiKey;

use super::advertised;

/// The ApiVersions answer of an Apache Kafka 4.1 broker (key: min, max),
    /// as kafka-python 3.0 records it to tell releases apart.
    #[rustfmt::skip]
    const KAFKA_4_1: &[(i16, i16, i16)] = &[
        (0, 0, 13), (1, 4, 18), (2, 1, 10), (3, 0, 13), (8, 2, 9), (9, 1, 9),
        (10, 0, 6), (11, 0, 9), (12, 0, 4), (13, 0, 5), (14, 0, 5), (15, 0, 6),
        (16, 0, 5), (17, 0, 1), (18, 0, 4), (19, 2, 7), (20, 1, 6), (21, 0, 2),
        (22, 0, 5), (23, 2, 4), (24, 0, 5), (25, 0, 4), (26, 0, 5), (27, 1, 1),
        (28, 0, 5), (29, 1, 3), (30, 1, 3), (31, 1, 3), (32, 1, 4), (33, 0, 2),
        (34, 1, 2), (35, 1, 4), (36, 0, 2), (37, 0, 3), (38, 1, 3), (39, 1, 2),
        (40, 1, 2), (41, 1, 3), (42, 0, 2), (43, 0, 2), (44, 0, 1), (45, 0, 1),
        (46, 0, 0), (47, 0, 0), (48, 0, 1), (49, 0, 1), (50, 0, 0), (51, 0, 0),
        (55, 0, 2), (57, 0, 2), (60, 0, 2), (61, 0, 0), (64, 0, 0), (65, 0, 0),
        (66, 0, 2), (68, 0, 1), (69, 0, 1), (74, 0, 1), (75, 0, 0), (76, 1, 1),
        (77, 1, 1), (78, 1, 1), (79, 1, 1), (80, 0, 0), (81, 0, 0), (83, 0, 0),
        (84, 0, 0), (85, 0, 0), (86, 0, 0), (87, 0, 0), (90, 0, 0), (91, 0, 0),
        (92, 0, 0),
    ];

/// What Apache 4.1 serves that kaas does not (yet), each with why.
const NOT_SERVED: &[(ApiKey, &str)] = &[
    (ApiKey::CreateDelegationToken, "delegation tokens"),
    (ApiKey::RenewDelegationToken, "delegation tokens"),
    (ApiKey::ExpireDelegationToken, "delegation tokens"),
    (ApiKey::DescribeDelegationToken, "delegation tokens"),
    (
        ApiKey::UpdateFeatures,
        "features are fixed: transaction.version 2",
    ),
    (
        ApiKey::UnregisterBroker,
        "brokers are the operator's assignment",
    ),
    (ApiKey::AddRaftVoter, "no KRaft quorum"),
    (ApiKey::RemoveRaftVoter, "no KRaft quorum"),
    (ApiKey::ShareGroupHeartbeat, "issue #36: share groups"),
    (ApiKey::ShareGroupDescribe, "issue #36: share groups"),
    (ApiKey::ShareFetch, "issue #36: share groups"),
    (ApiKey::ShareAcknowledge, "issue #36: share groups"),
    (ApiKey::InitializeShareGroupState, "issue #36: share groups"),
    (ApiKey::ReadShareGroupState, "issue #36: share groups"),
    (ApiKey::WriteShareGroupState, "issue #36: share groups"),
    (ApiKey::DeleteShareGroupState, "issue #36: share groups"),
    (
        ApiKey::ReadShareGroupStateSummary,
        "issue #36: share groups",
    ),
    (ApiKey::DescribeShareGroupOffsets, "issue #36: share groups"),
    (ApiKey::AlterShareGroupOffsets, "issue #36: share groups"),
    (ApiKey::DeleteShareGroupOffsets, "issue #36: share groups"),
];

/// ApiVersions promises one release: every API kaas advertises has
/// Apache 4.1's range (clients read the release from the highest
/// versions and ask for its APIs), and every API of 4.1 kaas leaves out
/// is one it names here. The one difference: Produce from v3, which is
/// what Apache serves too (it advertises v0 for old librdkafkas,
/// KAFKA-18659, and refuses v0 to v2).
#[test]
fn api_versions_are_apache_4_1s() {
    let release: BTreeMap<i16, (i16, i16)> = KAFKA_4_1
        .iter()
        .map(|(k, lo, hi)| (*k, (*lo, *hi)))
        .collect();
    let ours: BTreeMap<i16, (i16, i16)> = advertised()
        .api_keys
        .iter()
        .map(|v| (v.api_key, (v.min_version, v.max_version)))
        .collect();
    for (key, range) in &ours {
        let expected = match ApiKey::try_from(*key) {
            Ok(ApiKey::Produce) => Some((3, 13)),
            _ => release.get(key).copied(),
        };
        assert_eq!(Some(*range), expected, "{:?}", ApiKey::try_from(*key));
    }
    let mut left_out: Vec<i16> = release
        .keys()
        .filter(|k| !ours.contains_key(k))
        .copied()
        .collect();
    let mut named: Vec<i16> = NOT_SERVED.iter().map(|(k, _)| *k as i16).collect();
    left_out.sort();
    named.sort();
    assert_eq!(left_out, named);
}
