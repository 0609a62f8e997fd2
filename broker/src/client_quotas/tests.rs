//! Apache's ClientQuotaControlManagerTest and ClientQuotasImageTest cases
//! that apply to kaas, by name.

use super::*;

fn set(entity: &[(&str, Option<&str>)], ops: &[(&str, Option<f64>)]) -> Alteration {
    Alteration {
        entity: Entity::of(entity),
        ops: ops.iter().map(|(k, v)| (k.to_string(), *v)).collect(),
    }
}

fn errors(results: Vec<(Entity, Result<(), String>)>) -> Vec<Option<String>> {
    results.into_iter().map(|(_, r)| r.err()).collect()
}

/// testInvalidEntityTypes: the messages for an empty entity, an unknown
/// type, an empty name and IP mixed with users or client ids.
#[test]
fn invalid_entity_types() {
    let mut q = ClientQuotas::default();
    let p = Some(1000.0);
    let results = alter(
        &mut q,
        &[
            set(&[], &[(PRODUCER_BYTE_RATE, p)]),
            set(&[("user2", Some("x"))], &[(PRODUCER_BYTE_RATE, p)]),
            set(&[(USER, Some(""))], &[(PRODUCER_BYTE_RATE, p)]),
            set(
                &[(IP, Some("1.2.3.4")), (USER, Some("u"))],
                &[(CONNECTION_CREATION_RATE, p)],
            ),
            set(
                &[(IP, Some("no such host"))],
                &[(CONNECTION_CREATION_RATE, p)],
            ),
        ],
        false,
    );
    assert_eq!(
        errors(results),
        [
            Some("Invalid empty client quota entity".to_string()),
            Some("Unhandled client quota entity type: user2".to_string()),
            Some("Empty user not supported".to_string()),
            Some(
                "Invalid quota entity combination, IP entity shouldnot be combined with \
                 User or ClientId"
                    .to_string()
            ),
            Some("no such host is not a valid IP or resolvable host.".to_string()),
        ]
    );
    assert_eq!(q, ClientQuotas::default());
}

/// testConfigKeysForEntityTypeWithUser and friends, and
/// validateQuotaKeyValue: keys of another entity kind, non-positive and
/// fractional values, out of range.
#[test]
fn quota_keys_and_values_are_checked() {
    let mut q = ClientQuotas::default();
    let user = [(USER, Some("u"))];
    let check = |q: &mut ClientQuotas, key: &str, value: f64| {
        alter(q, &[set(&user, &[(key, Some(value))])], false)
            .remove(0)
            .1
            .err()
    };
    assert_eq!(
        check(&mut q, CONNECTION_CREATION_RATE, 10.0),
        Some("Invalid configuration key connection_creation_rate".into())
    );
    assert_eq!(
        check(&mut q, "no_such_quota", 10.0),
        Some("Invalid configuration key no_such_quota".into())
    );
    assert_eq!(
        check(&mut q, PRODUCER_BYTE_RATE, 0.0),
        Some("Quota producer_byte_rate must be greater than 0".into())
    );
    assert_eq!(
        check(&mut q, CONSUMER_BYTE_RATE, -5.0),
        Some("Quota consumer_byte_rate must be greater than 0".into())
    );
    assert_eq!(
        check(&mut q, PRODUCER_BYTE_RATE, 10.5),
        Some("producer_byte_rate cannot be a fractional value.".into())
    );
    assert_eq!(
        check(&mut q, PRODUCER_BYTE_RATE, 1e30),
        Some("Proposed value for producer_byte_rate is too large for a LONG.".into())
    );
    // A double may be fractional.
    assert_eq!(check(&mut q, REQUEST_PERCENTAGE, 12.5), None);
    assert_eq!(
        q.get(&Entity::of(&user)),
        Some(&BTreeMap::from([(REQUEST_PERCENTAGE.to_string(), 12.5)]))
    );
}

/// testAlterAndRemove: set, change, remove one key, remove the last (the
/// entity goes); removing a key never set changes nothing; validate_only
/// changes nothing.
#[test]
fn alter_and_remove() {
    let mut q = ClientQuotas::default();
    let alice = [(USER, Some("alice")), (CLIENT_ID, None)];
    let results = alter(
        &mut q,
        &[set(
            &alice,
            &[
                (PRODUCER_BYTE_RATE, Some(1000.0)),
                (CONSUMER_BYTE_RATE, Some(2000.0)),
            ],
        )],
        false,
    );
    assert_eq!(errors(results), [None]);
    let validated = alter(
        &mut q,
        &[set(&alice, &[(PRODUCER_BYTE_RATE, Some(5.0))])],
        true,
    );
    assert_eq!(errors(validated), [None]);
    assert_eq!(
        q.get(&Entity::of(&alice)).unwrap()[PRODUCER_BYTE_RATE],
        1000.0
    );
    alter(
        &mut q,
        &[set(
            &alice,
            &[(PRODUCER_BYTE_RATE, None), (REQUEST_PERCENTAGE, None)],
        )],
        false,
    );
    assert_eq!(
        q.get(&Entity::of(&alice)),
        Some(&BTreeMap::from([(CONSUMER_BYTE_RATE.to_string(), 2000.0)]))
    );
    alter(&mut q, &[set(&alice, &[(CONSUMER_BYTE_RATE, None)])], false);
    assert_eq!(q, ClientQuotas::default());
}

/// One bad key refuses its entity's whole alteration; other entities of
/// the request are applied.
#[test]
fn an_entity_fails_alone_and_whole() {
    let mut q = ClientQuotas::default();
    let results = alter(
        &mut q,
        &[
            set(
                &[(USER, Some("a"))],
                &[(PRODUCER_BYTE_RATE, Some(10.0)), ("bogus", Some(1.0))],
            ),
            set(
                &[(CLIENT_ID, Some("c"))],
                &[(PRODUCER_BYTE_RATE, Some(10.0))],
            ),
        ],
        false,
    );
    assert_eq!(
        errors(results),
        [Some("Invalid configuration key bogus".to_string()), None]
    );
    assert_eq!(q.get(&Entity::of(&[(USER, Some("a"))])), None);
    assert!(q.get(&Entity::of(&[(CLIENT_ID, Some("c"))])).is_some());
}

/// Apache answers an entity altered twice in one request, or a key twice
/// in one alteration, with "Ignoring duplicate entity"; the first
/// alteration of a twice-altered entity stands.
#[test]
fn duplicates_are_ignored_as_apache_does() {
    let mut q = ClientQuotas::default();
    let u = [(USER, Some("u"))];
    let results = alter(
        &mut q,
        &[
            set(&u, &[(PRODUCER_BYTE_RATE, Some(10.0))]),
            set(&u, &[(PRODUCER_BYTE_RATE, Some(20.0))]),
            set(
                &[(CLIENT_ID, Some("c"))],
                &[
                    (PRODUCER_BYTE_RATE, Some(1.0)),
                    (PRODUCER_BYTE_RATE, Some(2.0)),
                ],
            ),
        ],
        false,
    );
    assert_eq!(
        errors(results),
        [
            Some("Ignoring duplicate entity ClientQuotaEntity(entries={user=u})".to_string()),
            Some("Ignoring duplicate entity ClientQuotaEntity(entries={client-id=c})".to_string()),
        ]
    );
    assert_eq!(q.get(&Entity::of(&u)).unwrap()[PRODUCER_BYTE_RATE], 10.0);
    assert_eq!(q.get(&Entity::of(&[(CLIENT_ID, Some("c"))])), None);
}

/// kaas refuses what it does not enforce rather than keep it unenforced.
#[test]
fn quotas_not_enforced_are_refused() {
    let mut q = ClientQuotas::default();
    let results = alter(
        &mut q,
        &[set(
            &[(IP, None)],
            &[(CONNECTION_CREATION_RATE, Some(10.0))],
        )],
        false,
    );
    for e in errors(results) {
        assert!(e.unwrap().contains("does not enforce"));
    }
    assert_eq!(q, ClientQuotas::default());
}

fn component<'a>(entity_type: &'a str, match_type: i8, name: Option<&'a str>) -> Component<'a> {
    Component {
        entity_type,
        match_type,
        name,
    }
}

const EXACT: i8 = 0;
const DEFAULT: i8 = 1;
const SPECIFIED: i8 = 2;

/// ClientQuotasImage.describe: exact names, defaults, any of a type,
/// strict filters, and the filters it refuses.
#[test]
fn describe_matches_as_the_metadata_image_does() {
    let mut q = ClientQuotas::default();
    let r = Some(1000.0);
    alter(
        &mut q,
        &[
            set(&[(USER, Some("alice"))], &[(PRODUCER_BYTE_RATE, r)]),
            set(&[(USER, None)], &[(PRODUCER_BYTE_RATE, r)]),
            set(
                &[(USER, Some("alice")), (CLIENT_ID, Some("app"))],
                &[(CONSUMER_BYTE_RATE, r)],
            ),
            set(&[(CLIENT_ID, None)], &[(REQUEST_PERCENTAGE, Some(50.0))]),
        ],
        false,
    );
    let found = |components: &[Component<'_>], strict: bool| -> Vec<String> {
        let mut v: Vec<String> = describe(&q, components, strict)
            .unwrap()
            .into_iter()
            .map(|q| q.entity.to_string())
            .collect();
        v.sort();
        v
    };
    let e = |s: &str| format!("ClientQuotaEntity(entries={{{s}}})");
    assert_eq!(
        found(&[component(USER, EXACT, Some("alice"))], false),
        [e("client-id=app, user=alice"), e("user=alice")]
    );
    assert_eq!(
        found(&[component(USER, EXACT, Some("alice"))], true),
        [e("user=alice")]
    );
    assert_eq!(
        found(&[component(USER, DEFAULT, None)], false),
        [e("user=null")]
    );
    assert_eq!(
        found(&[component(USER, SPECIFIED, None)], true),
        [e("user=alice"), e("user=null")]
    );
    assert_eq!(
        found(&[component(CLIENT_ID, SPECIFIED, None)], false),
        [e("client-id=app, user=alice"), e("client-id=null")]
    );
    assert_eq!(found(&[], false).len(), 4);
    assert!(found(&[], true).is_empty());

    let refused = |components: &[Component<'_>]| describe(&q, components, false).unwrap_err();
    let invalid = |m: &str| FilterError::InvalidRequest(m.to_string());
    assert_eq!(
        refused(&[component("", EXACT, Some("x"))]),
        invalid("Invalid empty entity type.")
    );
    assert_eq!(
        refused(&[
            component(USER, DEFAULT, None),
            component(USER, SPECIFIED, None)
        ]),
        invalid("Entity type user cannot appear more than once in the filter.")
    );
    assert_eq!(
        refused(&[component("group", SPECIFIED, None)]),
        FilterError::UnsupportedVersion("Unsupported entity type group".into())
    );
    assert_eq!(
        refused(&[component(USER, EXACT, None)]),
        invalid("Request specified MATCH_TYPE_EXACT, but set match string to null.")
    );
    assert_eq!(
        refused(&[component(USER, DEFAULT, Some("x"))]),
        invalid("Request specified MATCH_TYPE_DEFAULT, but also specified a match string.")
    );
    assert_eq!(
        refused(&[component(USER, SPECIFIED, Some("x"))]),
        invalid("Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.")
    );
    assert_eq!(
        refused(&[component(USER, 7, None)]),
        invalid("Unknown match type 7")
    );
    assert_eq!(
        refused(&[
            component(IP, SPECIFIED, None),
            component(USER, SPECIFIED, None)
        ]),
        invalid(
            "Invalid entity filter component combination. IP filter component should not be \
             used with user or clientId filter component."
        )
    );
}

/// The document as the volume keeps it reads back the same.
#[test]
fn the_document_round_trips() {
    let mut q = ClientQuotas::default();
    alter(
        &mut q,
        &[set(
            &[(USER, None), (CLIENT_ID, Some("c"))],
            &[(REQUEST_PERCENTAGE, Some(12.5))],
        )],
        false,
    );
    let json = serde_json::to_string(&q).unwrap();
    assert_eq!(serde_json::from_str::<ClientQuotas>(&json).unwrap(), q);
}
