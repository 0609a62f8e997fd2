use super::*;
use k8s_openapi::jiff::Timestamp;
use kaas_shared::{BrokerInfo, BrokerState};

fn at(secs: i64) -> Time {
    Time(Timestamp::from_second(secs).unwrap())
}

fn doc(states: &[BrokerState]) -> Assignment {
    Assignment {
        version: 4,
        brokers: (0..)
            .zip(states)
            .map(|(id, &state)| BrokerInfo {
                id,
                host: format!("b{id}"),
                port: 9092,
                state,
                listeners: Vec::new(),
            })
            .collect(),
        ..Assignment::default()
    }
}

fn obs(a: Option<&Assignment>) -> Observation<'_> {
    Observation {
        generation: Some(2),
        replicas: 3,
        spec_error: None,
        apply_error: None,
        publish: Publish::Current { trimmed: 0 },
        assignment: a,
        rolling: false,
        probe_failures: vec![],
        active_groups: 7,
    }
}

fn summary(s: &KaasClusterStatus) -> Vec<(String, String, String)> {
    s.conditions
        .iter()
        .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
        .collect()
}

fn expect(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    rows.iter()
        .map(|(a, b, c)| ((*a).into(), (*b).into(), (*c).into()))
        .collect()
}

use BrokerState::{Alive, Dead};

#[test]
fn all_alive_is_ready() {
    let a = doc(&[Alive, Alive, Alive]);
    let s = status(&obs(Some(&a)), None, &at(10));
    assert_eq!(
        summary(&s),
        expect(&[
            ("Ready", "True", "AllBrokersReady"),
            ("Progressing", "False", "Converged"),
            ("Degraded", "False", "AsExpected"),
            ("AssignmentPublished", "True", "Published"),
        ])
    );
    assert_eq!((s.ready_brokers, s.brokers), (3, 3));
    assert_eq!(s.assignment_version, Some(4));
    assert_eq!(s.active_groups, 7);
    assert_eq!(s.observed_generation, Some(2));
    assert!(s
        .conditions
        .iter()
        .all(|c| c.observed_generation == Some(2)));
    let published = condition(&s, ASSIGNMENT_PUBLISHED).unwrap();
    assert_eq!(
        published.message,
        "version 4: 3 of 3 brokers alive, 0 group entries"
    );
}

#[test]
fn starting_brokers_are_progress_not_degradation() {
    let a = doc(&[Alive, Dead, Dead]);
    let s = status(&obs(Some(&a)), None, &at(10));
    assert_eq!(
        summary(&s),
        expect(&[
            ("Ready", "False", "BrokersNotReady"),
            ("Progressing", "True", "RollingOut"),
            ("Degraded", "False", "AsExpected"),
            ("AssignmentPublished", "True", "Published"),
        ])
    );
    assert_eq!(
        condition(&s, READY).unwrap().message,
        "1 of 3 brokers alive; not alive: 1, 2"
    );
    assert_eq!(s.ready_brokers, 1);
}

#[test]
fn a_bad_spec_blocks_everything_with_its_message() {
    let mut o = obs(None);
    o.spec_error = Some("spec.broker.groupMinSessionTimeoutMs (9) must not exceed ...".into());
    o.publish = Publish::NotAttempted;
    let s = status(&o, None, &at(10));
    assert_eq!(
        summary(&s),
        expect(&[
            ("Ready", "False", "InvalidSpec"),
            ("Progressing", "False", "Blocked"),
            ("Degraded", "True", "InvalidSpec"),
            ("AssignmentPublished", "False", "NotPublished"),
        ])
    );
    assert!(condition(&s, DEGRADED)
        .unwrap()
        .message
        .contains("groupMinSessionTimeoutMs"));
}

#[test]
fn failures_and_warnings_show_as_degraded() {
    let a = doc(&[Alive, Alive, Alive]);
    let mut o = obs(Some(&a));
    o.apply_error = Some("StatefulSet demo: forbidden".into());
    let s = status(&o, None, &at(1));
    assert_eq!(condition(&s, DEGRADED).unwrap().reason, "ApplyFailed");
    assert_eq!(condition(&s, READY).unwrap().status, "False");

    let mut o = obs(Some(&a));
    o.publish = Publish::Failed("ConfigMap: conflict".into());
    let s = status(&o, None, &at(1));
    assert_eq!(
        condition(&s, ASSIGNMENT_PUBLISHED).unwrap().reason,
        "PublishFailed"
    );
    assert_eq!(condition(&s, DEGRADED).unwrap().reason, "PublishFailed");

    let mut o = obs(Some(&a));
    o.publish = Publish::Current { trimmed: 12 };
    let s = status(&o, None, &at(1));
    assert_eq!(
        condition(&s, ASSIGNMENT_PUBLISHED).unwrap().reason,
        "Trimmed"
    );
    assert_eq!(condition(&s, DEGRADED).unwrap().reason, "AssignmentTrimmed");
    assert_eq!(condition(&s, READY).unwrap().status, "True");

    let mut o = obs(Some(&a));
    o.probe_failures = vec![2];
    let s = status(&o, None, &at(1));
    let d = condition(&s, DEGRADED).unwrap();
    assert_eq!(
        (d.status.as_str(), d.reason.as_str()),
        ("True", "ProbeFailed")
    );
    assert!(d.message.contains("brokers 2 did not answer"));
}

#[test]
fn rolling_statefulset_is_progressing() {
    let a = doc(&[Alive, Alive, Alive]);
    let mut o = obs(Some(&a));
    o.rolling = true;
    let s = status(&o, None, &at(1));
    assert_eq!(condition(&s, PROGRESSING).unwrap().status, "True");
    assert_eq!(condition(&s, READY).unwrap().status, "True");
}

#[test]
fn transition_times_move_only_with_the_status() {
    let starting = doc(&[Alive, Dead, Dead]);
    let up = doc(&[Alive, Alive, Alive]);
    let s1 = status(&obs(Some(&starting)), None, &at(10));
    let s2 = status(&obs(Some(&starting)), Some(&s1), &at(20));
    assert!(s2
        .conditions
        .iter()
        .all(|c| c.last_transition_time == at(10)));
    let s3 = status(&obs(Some(&up)), Some(&s2), &at(30));
    assert_eq!(condition(&s3, READY).unwrap().last_transition_time, at(30));
    assert_eq!(
        condition(&s3, PROGRESSING).unwrap().last_transition_time,
        at(30)
    );
    // Degraded stayed False (reason unchanged): its time stays.
    assert_eq!(
        condition(&s3, DEGRADED).unwrap().last_transition_time,
        at(10)
    );
    assert_eq!(
        condition(&s3, ASSIGNMENT_PUBLISHED)
            .unwrap()
            .last_transition_time,
        at(10)
    );
}

#[test]
fn brokers_above_replicas_do_not_count_as_ready() {
    // Scale-down 4 → 3 with broker 3 still draining.
    let a = doc(&[Alive, Alive, Alive, BrokerState::Draining]);
    let s = status(&obs(Some(&a)), None, &at(1));
    assert_eq!((s.ready_brokers, s.brokers), (3, 3));
    assert_eq!(condition(&s, READY).unwrap().status, "True");
}
