use super::super::{alter, Alteration, Entity};
use super::*;

/// An entity's parts, a quota key and its value.
type Setting<'a> = (&'a [(&'a str, Option<&'a str>)], &'a str, f64);

fn quotas(set: &[Setting<'_>]) -> ClientQuotas {
    let mut q = ClientQuotas::default();
    let alterations: Vec<Alteration> = set
        .iter()
        .map(|(entity, key, value)| Alteration {
            entity: Entity::of(entity),
            ops: vec![(key.to_string(), Some(*value))],
        })
        .collect();
    for (_, outcome) in alter(&mut q, &alterations, false) {
        outcome.unwrap();
    }
    q
}

fn client<'a>(user: &'a str, client_id: &'a str) -> Client<'a> {
    Client { user, client_id }
}

/// Apache's ClientQuotaManagerTest.testQuotaConfigPrecedence: each of
/// the eight levels wins over the ones below it, for the (user,
/// client id) pairs the test asks about.
#[test]
fn quota_config_precedence() {
    let p = PRODUCER_BYTE_RATE;
    let q = quotas(&[
        (&[(USER, None)], p, 1000.0),
        (&[(CLIENT_ID, None)], p, 2000.0),
        (&[(USER, None), (CLIENT_ID, None)], p, 3000.0),
        (&[(USER, Some("userA"))], p, 4000.0),
        (
            &[(USER, Some("userA")), (CLIENT_ID, Some("client1"))],
            p,
            5000.0,
        ),
        (&[(USER, Some("userB")), (CLIENT_ID, None)], p, 6000.0),
        (
            &[(USER, Some("userB")), (CLIENT_ID, Some("client1"))],
            p,
            7000.0,
        ),
        (&[(USER, None), (CLIENT_ID, Some("client1"))], p, 8000.0),
        (&[(CLIENT_ID, Some("client1"))], p, 9000.0),
    ]);
    let e = Enforcer::default();
    e.install(&q);
    let bound = |user: &str, client_id: &str| {
        let b = &e.bounds.read()[QuotaType::Produce.index()];
        let (u, c) = b.tags(user, client_id);
        b.limit(&u, &c)
    };
    assert_eq!(bound("userA", "client1"), Some(5000.0));
    assert_eq!(bound("userA", "client2"), Some(4000.0));
    assert_eq!(bound("userA", "client3"), Some(4000.0));
    assert_eq!(bound("userA", "client4"), Some(4000.0));
    assert_eq!(bound("userB", "client1"), Some(7000.0));
    assert_eq!(bound("userB", "client2"), Some(6000.0));
    assert_eq!(bound("userB", "client3"), Some(6000.0));
    assert_eq!(bound("userC", "client1"), Some(8000.0));
    assert_eq!(bound("userC", "client2"), Some(3000.0));
    // The user+client-id default gone: the user default.
    let mut q = q;
    alter(
        &mut q,
        &[Alteration {
            entity: Entity::of(&[(USER, None), (CLIENT_ID, None)]),
            ops: vec![(p.to_string(), None)],
        }],
        false,
    );
    e.install(&q);
    assert_eq!(bound("userC", "client2"), Some(1000.0));
}

/// A quota of a user alone is shared by all its clients; a user
/// default is each user's own; a client-id quota ignores users.
#[test]
fn who_shares_a_rate() {
    let e = Enforcer::default();
    e.install(&quotas(&[(
        &[(USER, Some("alice"))],
        PRODUCER_BYTE_RATE,
        100.0,
    )]));
    // 10 s at 100 B/s: 1000 B; two clients of alice's share it.
    assert_eq!(
        e.record(QuotaType::Produce, &client("alice", "a"), 600.0, 0),
        0
    );
    assert!(e.record(QuotaType::Produce, &client("alice", "b"), 600.0, 0) > 0);
    // bob has no quota.
    assert_eq!(e.record(QuotaType::Produce, &client("bob", "a"), 1e9, 0), 0);

    e.install(&quotas(&[(&[(USER, None)], PRODUCER_BYTE_RATE, 100.0)]));
    assert_eq!(
        e.record(QuotaType::Produce, &client("carol", "x"), 900.0, 0),
        0
    );
    assert_eq!(
        e.record(QuotaType::Produce, &client("dave", "x"), 900.0, 0),
        0
    );
    assert!(e.record(QuotaType::Produce, &client("dave", "y"), 200.0, 0) > 0);

    e.install(&quotas(&[(
        &[(CLIENT_ID, Some("x"))],
        PRODUCER_BYTE_RATE,
        100.0,
    )]));
    assert_eq!(
        e.record(QuotaType::Produce, &client("erin", "x"), 900.0, 0),
        0
    );
    assert!(e.record(QuotaType::Produce, &client("frank", "x"), 200.0, 0) > 0);
}

/// Nothing is measured for a quota type without quotas; the types are
/// separate.
#[test]
fn types_without_quotas_cost_nothing() {
    let e = Enforcer::default();
    e.install(&quotas(&[(&[(USER, None)], CONSUMER_BYTE_RATE, 100.0)]));
    assert!(!e.enabled(QuotaType::Produce));
    assert!(e.enabled(QuotaType::Fetch));
    assert_eq!(e.record(QuotaType::Produce, &client("u", "c"), 1e12, 0), 0);
    assert!(e.rates.lock().by_tags.is_empty());
    assert_eq!(
        e.max_in_window(QuotaType::Fetch, &client("u", "c")),
        Some(1000.0)
    );
    assert_eq!(e.max_in_window(QuotaType::Produce, &client("u", "c")), None);
}

/// A fetch taken back leaves the rate as it was.
#[test]
fn unrecord_takes_back() {
    let e = Enforcer::default();
    e.install(&quotas(&[(
        &[(CLIENT_ID, None)],
        CONSUMER_BYTE_RATE,
        100.0,
    )]));
    let c = client("u", "c");
    assert!(e.record(QuotaType::Fetch, &c, 5000.0, 0) > 0);
    e.unrecord(QuotaType::Fetch, &c, 5000.0, 0);
    assert_eq!(e.record(QuotaType::Fetch, &c, 500.0, 0), 0);
}

/// KIP-599: a strict quota takes a mutation while the bucket is not
/// below zero (even one that takes it below), then refuses until it
/// refills; a permissive one takes everything and throttles.
#[test]
fn controller_mutations_are_strict_or_permissive() {
    let e = Enforcer::new(RateConfig {
        samples: 2,
        window_ms: 1000,
    });
    e.install(&quotas(&[(
        &[(USER, None)],
        CONTROLLER_MUTATION_RATE,
        10.0,
    )]));
    let c = client("u", "c");
    let mut q = e.mutation_quota(&c, Strictness::Strict);
    // A bucket of 2 s × 10/s = 20 permits.
    assert_eq!(q.record(15.0, 0), Ok(()));
    assert_eq!(q.record(15.0, 0), Ok(()));
    assert_eq!(q.throttle_ms(0), 0);
    assert_eq!(q.record(1.0, 0), Err(1000));
    assert_eq!(q.throttle_ms(400), 600);
    // Refilled by 1 s: taken again.
    let mut q = e.mutation_quota(&c, Strictness::Strict);
    assert_eq!(q.record(1.0, 1000), Ok(()));
    let mut p = e.mutation_quota(&c, Strictness::Permissive);
    assert_eq!(p.record(50.0, 1000), Ok(()));
    assert_eq!(p.throttle_ms(1000), 5100);
    // Another user has a bucket of its own (a default user quota).
    let other = client("v", "c");
    let mut q = e.mutation_quota(&other, Strictness::Strict);
    assert_eq!(q.record(5.0, 1000), Ok(()));
}

/// Rates idle for an hour are forgotten.
#[test]
fn idle_rates_are_forgotten() {
    let e = Enforcer::default();
    e.install(&quotas(&[(
        &[(CLIENT_ID, None)],
        CONSUMER_BYTE_RATE,
        100.0,
    )]));
    e.record(QuotaType::Fetch, &client("u", "a"), 1.0, 0);
    e.record(QuotaType::Fetch, &client("u", "b"), 1.0, IDLE_MS + 1);
    let rates = e.rates.lock();
    assert_eq!(rates.by_tags.len(), 1);
    assert!(rates.by_tags.keys().all(|(_, _, c)| c == "b"));
}
