//! The KaasCluster controller's reconcile: KaasCluster → owned resources (server-side apply),
//! broker set → assignment ConfigMap, and status.
//!
//! One reconcile does everything for one cluster, in order:
//! 1. semantic spec checks the schema cannot express;
//! 2. server-side apply of the ServiceAccount, Role, RoleBinding, Services,
//!    claim, PodDisruptionBudget and StatefulSet;
//! 3. list the broker pods and the headless Service's EndpointSlices and
//!    decide the broker set ([`crate::observe`]);
//! 4. ask every alive broker for its active groups and the partitions to
//!    move (ListGroups, ListPartitionReassignments: the same probe the
//!    local controller uses);
//! 5. `recompute_with` from the published document and write the ConfigMap
//!    only when the content changed (recompute bumps the version exactly
//!    then);
//! 6. status conditions, and Events for failures and publications.
//!
//! Pod and EndpointSlice changes trigger it at once (broker liveness is
//! what the assignment is about); a periodic requeue keeps the active
//! group list fresh for the next broker-set change.

use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kaas_shared::configmap;
use kaas_shared::{recompute_with, Assignment, BrokerInfo, PartitionReplicas};
use kube::api::{DynamicObject, ListParams, Patch, PatchParams};
use kube::runtime::controller::Action;
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use tracing::{info, warn};

use crate::apply::{apply, apply_dynamic};
use crate::context::{Context, Error, Prober};
use crate::crd::{Authentication, KaasCluster, KaasClusterStatus};
use crate::observe::{self, Slice};
use crate::publish;
use crate::resources::{self, Names, LABEL_INSTANCE, MANAGER};
use crate::secrets::{admin_password, broker_security};
use crate::status::{self, Observation, Publish};

/// Step 2: every owned resource but the assignment ConfigMap. Returns the applied
/// StatefulSet (its status tells whether a rollout is in progress).
async fn apply_resources(kc: &KaasCluster, ctx: &Context) -> Result<StatefulSet, Error> {
    let c = &ctx.client;
    apply(c, &resources::service_account(kc)).await?;
    apply(c, &resources::broker_role(kc)).await?;
    apply(c, &resources::broker_role_binding(kc)).await?;
    apply(c, &resources::headless_service(kc)).await?;
    apply(c, &resources::client_service(kc)).await?;
    if let Some(claim) = resources::claim(kc) {
        apply(c, &claim).await?;
    }
    if let Some(ar) = &ctx.versions.pdb {
        let names = Names::of(kc);
        let api: Api<DynamicObject> = Api::namespaced_with(c.clone(), &names.namespace, ar);
        apply_dynamic(
            &api,
            &names.pdb(),
            "PodDisruptionBudget",
            resources::pdb(kc, &ar.api_version),
        )
        .await?;
    }
    apply(c, &resources::broker_config(kc)).await?;
    // The pods read the admin's password from its Secret: make it first.
    if kc.spec.listener.authentication == Authentication::Scram {
        let names = Names::of(kc);
        admin_password(kc, &Api::namespaced(c.clone(), &names.namespace)).await?;
    }
    apply(c, &resources::statefulset(kc)).await
}

/// Step 3.
async fn observe_brokers(
    kc: &KaasCluster,
    ctx: &Context,
    replicas: i32,
) -> Result<Vec<BrokerInfo>, Error> {
    let names = Names::of(kc);
    let selector = resources::label_selector(&resources::selector_labels(&names));
    let pods = Api::<Pod>::namespaced(ctx.client.clone(), &names.namespace)
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(Error::kube("listing broker pods"))?;
    let mut slices = Vec::new();
    if let Some(ar) = &ctx.versions.endpoint_slice {
        let api: Api<DynamicObject> =
            Api::namespaced_with(ctx.client.clone(), &names.namespace, ar);
        let list = api
            .list(&ListParams::default().labels(&format!(
                "kubernetes.io/service-name={}",
                names.headless_service()
            )))
            .await
            .map_err(Error::kube("listing EndpointSlices"))?;
        for obj in list {
            match serde_json::from_value::<Slice>(obj.data.clone()) {
                Ok(s) => slices.push(s),
                Err(e) => {
                    warn!(slice = %obj.name_any(), error = %e, "ignoring an unreadable EndpointSlice")
                }
            }
        }
    }
    Ok(observe::brokers(kc, replicas, &pods.items, &slices))
}

/// What step 4 learned from the alive brokers.
#[derive(Debug, Default)]
struct Probed {
    /// Active groups of every broker that answered.
    groups: Vec<String>,
    /// The partitions to move, as the first broker that answered lists
    /// them (every broker reads the same volume).
    moving: Vec<PartitionReplicas>,
    /// The alive brokers that did not answer.
    failed: Vec<i32>,
}

/// Step 4: probes every alive broker.
async fn probe_brokers(
    brokers: &[BrokerInfo],
    prober: &Prober,
    security: &kaas_client::Security,
) -> Probed {
    let alive: Vec<&BrokerInfo> = brokers.iter().filter(|b| b.state.is_alive()).collect();
    let answers = join_all(
        alive
            .iter()
            .map(|b| prober(format!("{}:{}", b.host, b.port), security.clone())),
    )
    .await;
    let mut probed = Probed::default();
    let mut moving = None;
    for (b, answer) in alive.iter().zip(answers) {
        match answer {
            Ok(r) => {
                probed.groups.extend(r.groups);
                moving.get_or_insert(r.moving);
            }
            Err(e) => {
                warn!(broker = b.id, error = %e, "ListGroups probe failed");
                probed.failed.push(b.id);
            }
        }
    }
    probed.groups.sort();
    probed.groups.dedup();
    probed.moving = moving.unwrap_or_default();
    probed
}

/// The published document, if any. A ConfigMap that cannot be decoded
/// (edited by hand, say) yields an empty document at its recorded version,
/// so the next publication still carries a higher version than anything
/// brokers may hold.
fn previous_assignment(cm: Option<&ConfigMap>) -> Option<Assignment> {
    let cm = cm?;
    match configmap::decode(cm) {
        Ok(a) => Some(a),
        Err(e) => {
            warn!(configmap = %cm.name_any(), error = %e, "the published assignment is unreadable; replacing it");
            let version = cm
                .data
                .as_ref()
                .and_then(|d| d.get(configmap::VERSION_KEY))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            Some(Assignment {
                version,
                ..Assignment::default()
            })
        }
    }
}

/// Step 5. Returns the document now published and how many new entries
/// were trimmed to fit.
async fn publish_assignment(
    kc: &KaasCluster,
    ctx: &Context,
    observed: &[BrokerInfo],
    probed: &Probed,
) -> Result<(Assignment, usize), Error> {
    let names = Names::of(kc);
    let api: Api<ConfigMap> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let cm = api
        .get_opt(&names.assignment_configmap())
        .await
        .map_err(Error::kube("reading the assignment ConfigMap"))?;
    let previous = previous_assignment(cm.as_ref());
    let next = recompute_with(previous.as_ref(), observed, &probed.groups, &probed.moving);
    if previous.as_ref().is_some_and(|p| p.version == next.version) {
        return Ok((next, 0));
    }
    let (next, trimmed) = publish::fit(previous.as_ref(), next, publish::BUDGET);
    let (data, binary) = configmap::encode(&next);
    apply(
        &ctx.client,
        &resources::assignment_configmap(kc, data, binary),
    )
    .await?;
    let alive: Vec<i32> = next
        .brokers
        .iter()
        .filter(|b| b.state.is_alive())
        .map(|b| b.id)
        .collect();
    info!(
        cluster = %names.cluster,
        namespace = %names.namespace,
        version = next.version,
        previous = previous.as_ref().map(|p| p.version),
        ?alive,
        brokers = next.brokers.len(),
        entries = next.consumer_groups.len(),
        active_groups = probed.groups.len(),
        moved = probed.moving.len(),
        trimmed,
        "published assignment"
    );
    Ok((next, trimmed))
}

fn rolling(sts: &StatefulSet, replicas: i32) -> bool {
    let Some(s) = sts.status.as_ref() else {
        return true;
    };
    s.observed_generation < sts.metadata.generation
        || s.updated_replicas.unwrap_or(0) < replicas
        || s.update_revision.is_some() && s.update_revision != s.current_revision
}

async fn patch_status(
    kc: &KaasCluster,
    ctx: &Context,
    status: &KaasClusterStatus,
) -> Result<(), Error> {
    let names = Names::of(kc);
    let api: Api<KaasCluster> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let patch = serde_json::json!({
        "apiVersion": KaasCluster::api_version(&()),
        "kind": KaasCluster::kind(&()),
        "status": status,
    });
    api.patch_status(
        &names.cluster,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map_err(Error::kube("updating status"))?;
    Ok(())
}

async fn event(ctx: &Context, kc: &KaasCluster, type_: EventType, reason: &str, note: String) {
    let ev = Event {
        type_,
        reason: reason.into(),
        note: Some(note),
        action: "Reconcile".into(),
        secondary: None,
    };
    // Events are best effort: losing one must not fail the reconcile.
    if let Err(e) = ctx.recorder.publish(&ev, &kc.object_ref(&())).await {
        warn!(error = %e, reason, "cannot record an Event");
    }
}

/// Reconciles one KaasCluster. See the module docs for the steps.
pub async fn reconcile(kc: Arc<KaasCluster>, ctx: Arc<Context>) -> Result<Action, Error> {
    let now = Time(k8s_openapi::jiff::Timestamp::now());
    let previous_status = kc.status.clone();
    let mut obs = Observation {
        generation: kc.metadata.generation,
        replicas: kc.spec.replicas,
        spec_error: None,
        apply_error: None,
        publish: Publish::NotAttempted,
        assignment: None,
        rolling: false,
        probe_failures: Vec::new(),
        active_groups: previous_status
            .as_ref()
            .map_or(0, |s| s.active_groups.max(0) as usize),
    };
    let report = |obs: &Observation<'_>| status::status(obs, previous_status.as_ref(), &now);

    if let Err(message) = kc.spec.validate() {
        if previous_status
            .as_ref()
            .and_then(|s| status::condition(s, status::DEGRADED))
            .map(|c| &c.message)
            != Some(&message)
        {
            event(
                &ctx,
                &kc,
                EventType::Warning,
                "InvalidSpec",
                message.clone(),
            )
            .await;
        }
        obs.spec_error = Some(message);
        patch_status(&kc, &ctx, &report(&obs)).await?;
        // Nothing to retry: a spec change triggers the next reconcile.
        return Ok(Action::await_change());
    }

    let sts = match apply_resources(&kc, &ctx).await {
        Ok(sts) => sts,
        Err(e) => {
            event(&ctx, &kc, EventType::Warning, "ApplyFailed", e.to_string()).await;
            obs.apply_error = Some(e.to_string());
            // Best effort: the original error is the one to back off on.
            let _ = patch_status(&kc, &ctx, &report(&obs)).await;
            return Err(e);
        }
    };
    let replicas = sts
        .spec
        .as_ref()
        .and_then(|s| s.replicas)
        .unwrap_or(kc.spec.replicas);
    obs.rolling = rolling(&sts, replicas);

    let published = async {
        let observed = observe_brokers(&kc, &ctx, replicas).await?;
        let probed = match broker_security(&kc, &ctx).await {
            Ok(security) => probe_brokers(&observed, &ctx.prober, &security).await,
            // No probe can connect (a TLS Secret not there yet, say): the
            // assignment is still published, the brokers reported unprobed.
            Err(e) => {
                warn!(error = %e, "cannot connect to the brokers to probe them");
                let alive = observed.iter().filter(|b| b.state.is_alive());
                Probed {
                    failed: alive.map(|b| b.id).collect(),
                    ..Probed::default()
                }
            }
        };
        let (doc, trimmed) = publish_assignment(&kc, &ctx, &observed, &probed).await?;
        Ok::<_, Error>((doc, trimmed, probed.groups.len(), probed.failed))
    }
    .await;
    let doc;
    let result = match published {
        Ok((d, trimmed, groups, failed)) => {
            doc = d;
            let version_changed =
                previous_status.as_ref().and_then(|s| s.assignment_version) != Some(doc.version);
            if version_changed {
                let alive = doc.brokers.iter().filter(|b| b.state.is_alive()).count();
                event(
                    &ctx,
                    &kc,
                    EventType::Normal,
                    "AssignmentPublished",
                    format!(
                        "version {}: {alive} of {} brokers alive",
                        doc.version,
                        doc.brokers.len()
                    ),
                )
                .await;
            }
            if trimmed > 0 {
                event(
                    &ctx,
                    &kc,
                    EventType::Warning,
                    "AssignmentTrimmed",
                    format!("{trimmed} active groups were not pinned to fit the ConfigMap limit"),
                )
                .await;
            }
            obs.publish = Publish::Current { trimmed };
            obs.assignment = Some(&doc);
            obs.active_groups = groups;
            obs.probe_failures = failed;
            Ok(Action::requeue(ctx.settings.resync))
        }
        Err(e) => {
            event(
                &ctx,
                &kc,
                EventType::Warning,
                "PublishFailed",
                e.to_string(),
            )
            .await;
            obs.publish = Publish::Failed(e.to_string());
            Err(e)
        }
    };
    let status = report(&obs);
    if previous_status.as_ref() != Some(&status) {
        patch_status(&kc, &ctx, &status).await?;
    }
    if result.is_ok() {
        ctx.failures().remove(&ObjectRef::from_obj(&*kc));
    }
    result
}

/// Retries a failed reconcile with exponential backoff per cluster:
/// 1 s, 2 s, 4 s, ... up to `max_backoff`. A success resets it.
pub fn error_policy(kc: Arc<KaasCluster>, error: &Error, ctx: Arc<Context>) -> Action {
    let n = {
        let mut failures = ctx.failures();
        let n = failures.entry(ObjectRef::from_obj(&*kc)).or_insert(0);
        *n = n.saturating_add(1);
        *n
    };
    let delay = backoff(n, ctx.settings.max_backoff);
    warn!(cluster = %kc.name_any(), error = %error, failures = n, retry_in = ?delay, "reconcile failed");
    Action::requeue(delay)
}

/// The wait after `failures` consecutive failures.
pub fn backoff(failures: u32, max: Duration) -> Duration {
    let exp = failures.saturating_sub(1).min(16);
    Duration::from_secs(1u64 << exp).min(max)
}

/// The cluster a broker pod belongs to.
pub(crate) fn pod_owner(pod: Pod) -> Option<ObjectRef<KaasCluster>> {
    let cluster = pod.labels().get(LABEL_INSTANCE)?.clone();
    Some(ObjectRef::new(&cluster).within(&pod.namespace()?))
}

/// The cluster whose headless Service (`<cluster>-brokers`) a slice is of.
pub(crate) fn slice_owner(slice: DynamicObject) -> Option<ObjectRef<KaasCluster>> {
    let service = slice.labels().get("kubernetes.io/service-name")?;
    let cluster = service.strip_suffix("-brokers")?;
    Some(ObjectRef::new(cluster).within(&slice.namespace()?))
}

#[cfg(test)]
mod tests;
