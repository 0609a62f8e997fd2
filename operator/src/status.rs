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
mod tests;
