//! Status and conditions from what one reconcile observed. Pure, so every
//! outcome is tested without an API server.
//!
//! Conditions (metav1.Condition shape):
//!
//! | type | True when | reasons |
//! | --- | --- | --- |
//! | `Ready` | every broker 0..replicas is alive in the published assignment and nothing failed | `AllBrokersReady`, `BrokersNotReady`, `InvalidSpec`, `ApplyFailed`, `PublishFailed` |
//! | `Progressing` | brokers are starting or rolling: fewer alive than replicas, or the StatefulSet has not converged | `RollingOut`, `Converged`, `Blocked` |
//! | `Degraded` | something needs a person: a bad spec, an API error, an unpublishable or trimmed assignment, alive brokers that do not answer ListGroups | `InvalidSpec`, `ApplyFailed`, `PublishFailed`, `AssignmentTrimmed`, `ProbeFailed`, `AsExpected` |
//! | `AssignmentPublished` | the assignment ConfigMap holds the document for what the operator sees now | `Published`, `Trimmed`, `PublishFailed`, `NotPublished` |

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kaas_shared::Assignment;

use crate::crd::KaasClusterStatus;

pub const READY: &str = "Ready";
pub const PROGRESSING: &str = "Progressing";
pub const DEGRADED: &str = "Degraded";
pub const ASSIGNMENT_PUBLISHED: &str = "AssignmentPublished";

/// What happened to the assignment in this reconcile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Publish {
    /// Not attempted (the spec is invalid, or applying resources failed).
    NotAttempted,
    /// The document in the ConfigMap is current. `trimmed` new entries were
    /// left out to stay under the ConfigMap limit (their groups moved).
    Current {
        trimmed: usize,
    },
    Failed(String),
}

/// Everything the conditions depend on.
#[derive(Clone, Debug)]
pub struct Observation<'a> {
    pub generation: Option<i64>,
    pub replicas: i32,
    pub spec_error: Option<String>,
    pub apply_error: Option<String>,
    pub publish: Publish,
    /// The document in the ConfigMap after this reconcile, if any.
    pub assignment: Option<&'a Assignment>,
    /// The StatefulSet has not rolled out its current spec yet.
    pub rolling: bool,
    /// Alive brokers whose ListGroups probe failed.
    pub probe_failures: Vec<i32>,
    pub active_groups: usize,
}

impl Observation<'_> {
    /// Ids `0..replicas` alive in the assignment.
    fn alive(&self) -> Vec<i32> {
        self.assignment
            .map(|a| {
                a.brokers
                    .iter()
                    .filter(|b| b.state.is_alive() && b.id < self.replicas)
                    .map(|b| b.id)
                    .collect()
            })
            .unwrap_or_default()
    }
}

fn ids(ids: &[i32]) -> String {
    ids.iter()
        .map(i32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The status for `obs`, keeping each condition's `lastTransitionTime`
/// from `previous` while its status did not change.
pub fn status(
    obs: &Observation<'_>,
    previous: Option<&KaasClusterStatus>,
    now: &Time,
) -> KaasClusterStatus {
    let alive = obs.alive();
    let not_alive: Vec<i32> = (0..obs.replicas).filter(|i| !alive.contains(i)).collect();
    let failure = obs
        .spec_error
        .as_ref()
        .map(|m| ("InvalidSpec", m.clone()))
        .or_else(|| obs.apply_error.as_ref().map(|m| ("ApplyFailed", m.clone())))
        .or_else(|| match &obs.publish {
            Publish::Failed(m) => Some(("PublishFailed", m.clone())),
            _ => None,
        });

    let ready = match &failure {
        Some((reason, message)) => ("False", *reason, message.clone()),
        None if not_alive.is_empty() => (
            "True",
            "AllBrokersReady",
            format!("all {} brokers are alive in the assignment", obs.replicas),
        ),
        None => (
            "False",
            "BrokersNotReady",
            format!(
                "{} of {} brokers alive; not alive: {}",
                alive.len(),
                obs.replicas,
                ids(&not_alive)
            ),
        ),
    };

    let progressing = match &failure {
        Some((_, message)) => ("False", "Blocked", message.clone()),
        None if obs.rolling || !not_alive.is_empty() => (
            "True",
            "RollingOut",
            if obs.rolling {
                "the StatefulSet is rolling out its current spec".to_owned()
            } else {
                format!("waiting for brokers {} to become ready", ids(&not_alive))
            },
        ),
        None => (
            "False",
            "Converged",
            "every broker runs the current spec".to_owned(),
        ),
    };

    let degraded = match (&failure, &obs.publish) {
        (Some((reason, message)), _) => ("True", *reason, message.clone()),
        (None, Publish::Current { trimmed }) if *trimmed > 0 => (
            "True",
            "AssignmentTrimmed",
            format!(
                "the assignment would exceed the ConfigMap limit; {trimmed} active groups were not pinned and moved to their hash owner"
            ),
        ),
        (None, _) if !obs.probe_failures.is_empty() => (
            "True",
            "ProbeFailed",
            format!(
                "alive brokers {} did not answer ListGroups; their active groups are unknown",
                ids(&obs.probe_failures)
            ),
        ),
        _ => ("False", "AsExpected", "no problems observed".to_owned()),
    };

    let published = match (&obs.publish, obs.assignment) {
        (Publish::Current { trimmed }, Some(a)) => (
            "True",
            if *trimmed > 0 { "Trimmed" } else { "Published" },
            format!(
                "version {}: {} of {} brokers alive, {} group entries",
                a.version,
                a.brokers.iter().filter(|b| b.state.is_alive()).count(),
                a.brokers.len(),
                a.consumer_groups.len()
            ),
        ),
        (Publish::Failed(m), _) => ("False", "PublishFailed", m.clone()),
        _ => (
            "False",
            "NotPublished",
            "the assignment waits for a valid spec and applied resources".to_owned(),
        ),
    };

    let old = previous
        .map(|p| p.conditions.as_slice())
        .unwrap_or_default();
    let condition = |type_: &str, (status, reason, message): (&str, &str, String)| {
        // lastTransitionTime moves only when the status does.
        let last_transition_time = old
            .iter()
            .find(|c| c.type_ == type_ && c.status == status)
            .map_or_else(|| now.clone(), |c| c.last_transition_time.clone());
        Condition {
            type_: type_.to_owned(),
            status: status.to_owned(),
            reason: reason.to_owned(),
            message,
            observed_generation: obs.generation,
            last_transition_time,
        }
    };

    KaasClusterStatus {
        observed_generation: obs.generation,
        conditions: vec![
            condition(READY, ready),
            condition(PROGRESSING, progressing),
            condition(DEGRADED, degraded),
            condition(ASSIGNMENT_PUBLISHED, published),
        ],
        ready_brokers: i32::try_from(alive.len()).unwrap_or(i32::MAX),
        brokers: obs.replicas,
        assignment_version: obs
            .assignment
            .map(|a| a.version)
            .or(previous.and_then(|p| p.assignment_version)),
        active_groups: i32::try_from(obs.active_groups).unwrap_or(i32::MAX),
        group_entries: obs.assignment.map_or(0, |a| {
            i32::try_from(a.consumer_groups.len()).unwrap_or(i32::MAX)
        }),
    }
}

/// A condition of `status` by type.
pub fn condition<'a>(status: &'a KaasClusterStatus, type_: &str) -> Option<&'a Condition> {
    status.conditions.iter().find(|c| c.type_ == type_)
}

#[cfg(test)]
mod tests {
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
}
