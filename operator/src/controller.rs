//! The reconcile loop: KaasCluster → owned resources (server-side apply),
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

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::{join_all, BoxFuture};
use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Secret, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kaas_client::probe::ProbeResult;
use kaas_shared::configmap;
use kaas_shared::{recompute_with, Assignment, BrokerInfo, PartitionReplicas};
use kube::api::{
    ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::events::{Event, EventType, Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::runtime::watcher;
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tracing::{info, warn};

use crate::crd::{Authentication, KaasCluster, KaasClusterStatus};
use crate::observe::{self, Slice};
use crate::publish;
use crate::resources::{self, Names, LABEL_INSTANCE, LABEL_MANAGED_BY, MANAGER};
use crate::status::{self, Observation, Publish};

/// A reconcile failure. Each one is also in status (Degraded) and an Event.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{what}: {source}")]
    Kube {
        what: String,
        #[source]
        source: kube::Error,
    },
}

impl Error {
    fn kube(what: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
        let what = what.into();
        move |source| Error::Kube { what, source }
    }
}

/// Asks one broker (`host:port`), connecting as the given security (the
/// cluster's: its admin login on a SCRAM listener), for the groups it
/// coordinates that have members and the partitions to move. Injected so
/// unit tests need no brokers.
pub type Prober = Arc<
    dyn Fn(String, kaas_client::Security) -> BoxFuture<'static, anyhow::Result<ProbeResult>>
        + Send
        + Sync,
>;

/// The real prober: ApiVersions, ListGroups (active states) and
/// ListPartitionReassignments on the broker.
pub fn kafka_prober(timeout: Duration) -> Prober {
    Arc::new(move |addr: String, security: kaas_client::Security| {
        Box::pin(async move { kaas_client::probe::probe(&addr, timeout, &security).await })
    })
}

/// API versions that differ between servers. Decided once at startup.
#[derive(Clone, Debug)]
pub struct ApiVersions {
    /// `discovery.k8s.io/v1` (1.21+) or `v1beta1`; `None` if neither is
    /// served (pod readiness alone then decides).
    pub endpoint_slice: Option<ApiResource>,
    /// `policy/v1` (1.21+) or `v1beta1`; `None`: no budget is created.
    pub pdb: Option<ApiResource>,
}

impl ApiVersions {
    /// What this server serves, newest first.
    pub async fn discover(client: &Client) -> Result<Self, kube::Error> {
        let discovery = kube::discovery::Discovery::new(client.clone())
            .filter(&["discovery.k8s.io", "policy"])
            .run()
            .await?;
        let pick = |group: &str, kind: &str, plural: &str| {
            let g = discovery.get(group)?;
            let version = ["v1", "v1beta1"]
                .into_iter()
                .find(|v| g.versions().any(|x| x == *v))?;
            Some(ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk(group, version, kind),
                plural,
            ))
        };
        Ok(Self {
            endpoint_slice: pick("discovery.k8s.io", "EndpointSlice", "endpointslices"),
            pdb: pick("policy", "PodDisruptionBudget", "poddisruptionbudgets"),
        })
    }

    /// The current APIs (Kubernetes 1.21+), without asking the server.
    pub fn current() -> Self {
        Self {
            endpoint_slice: Some(ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("discovery.k8s.io", "v1", "EndpointSlice"),
                "endpointslices",
            )),
            pdb: Some(ApiResource::from_gvk_with_plural(
                &GroupVersionKind::gvk("policy", "v1", "PodDisruptionBudget"),
                "poddisruptionbudgets",
            )),
        }
    }
}

/// Operator settings.
#[derive(Clone, Debug)]
pub struct Settings {
    /// Requeue interval of a healthy cluster: how fresh the active group
    /// list is when the broker set next changes.
    pub resync: Duration,
    /// Longest wait after repeated failures.
    pub max_backoff: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            resync: Duration::from_secs(10),
            max_backoff: Duration::from_secs(300),
        }
    }
}

/// Shared by every reconcile.
pub struct Context {
    pub client: Client,
    pub recorder: Recorder,
    pub versions: ApiVersions,
    pub prober: Prober,
    pub settings: Settings,
    /// Consecutive failures per cluster, for exponential backoff.
    failures: Mutex<HashMap<ObjectRef<KaasCluster>, u32>>,
}

impl Context {
    pub fn new(client: Client, versions: ApiVersions, prober: Prober, settings: Settings) -> Self {
        let reporter = Reporter {
            controller: MANAGER.into(),
            instance: std::env::var("POD_NAME").ok(),
        };
        Self {
            recorder: Recorder::new(client.clone(), reporter),
            client,
            versions,
            prober,
            settings,
            failures: Mutex::default(),
        }
    }

    fn failures(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectRef<KaasCluster>, u32>> {
        // A panic elsewhere cannot leave the map inconsistent: recover it.
        self.failures
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Annotation holding a digest of what the operator last applied.
pub const APPLIED_DIGEST: &str = "kaas.dev/applied-digest";

/// `obj` with [`APPLIED_DIGEST`] set to the digest of its content.
fn with_digest(mut obj: serde_json::Value) -> (serde_json::Value, String) {
    use sha2::Digest;
    let digest = format!("{:x}", sha2::Sha256::digest(obj.to_string().as_bytes()));
    obj["metadata"]["annotations"][APPLIED_DIGEST] = serde_json::Value::String(digest.clone());
    (obj, digest)
}

/// Server-side applies `obj`, unless the live object carries the digest of
/// exactly this content already.
///
/// Why not apply unconditionally, as SSA allows: some servers (1.20, and
/// later ones for some fields) bump the resourceVersion on every apply even
/// when nothing changed, so each reconcile would wake the controller again
/// through its watch on owned objects — a hot loop. The price: a field
/// someone else edits is put back on the next spec change, not at once.
async fn apply_dynamic(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    obj: serde_json::Value,
) -> Result<DynamicObject, Error> {
    let (obj, digest) = with_digest(obj);
    let live = api
        .get_opt(name)
        .await
        .map_err(Error::kube(format!("reading {what} {name}")))?;
    if let Some(live) = live {
        if live.annotations().get(APPLIED_DIGEST) == Some(&digest) {
            return Ok(live);
        }
    }
    api.patch(
        name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&obj),
    )
    .await
    .map_err(Error::kube(format!("applying {what} {name}")))
}

/// [`apply_dynamic`] for a typed object.
async fn apply<K>(client: &Client, obj: &K) -> Result<K, Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned,
    K::DynamicType: Default,
{
    let dt = K::DynamicType::default();
    let ar = ApiResource::erase::<K>(&dt);
    let name = obj.meta().name.clone().unwrap_or_default();
    let ns = obj.meta().namespace.clone().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
    let value = serde_json::to_value(obj).expect("k8s objects serialise");
    let applied = apply_dynamic(&api, &name, &K::kind(&dt), value).await?;
    let value = serde_json::to_value(applied).expect("a DynamicObject serialises");
    serde_json::from_value(value).map_err(|e| Error::Kube {
        what: format!("reading back {} {name}", K::kind(&dt)),
        source: kube::Error::SerdeError(e),
    })
}

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

/// How the operator connects to the cluster's brokers: over TLS trusting
/// the listener Secret's `ca.crt`; on a SCRAM listener as `User:admin`,
/// whose password is in the admin Secret. That Secret is made first, with a
/// random password, when it does not exist (never overwritten: the brokers
/// wrote its credentials to the volume).
pub(crate) async fn broker_security(
    kc: &KaasCluster,
    ctx: &Context,
) -> Result<kaas_client::Security, Error> {
    let names = Names::of(kc);
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let sasl = match kc.spec.listener.authentication {
        // `tls` is refused on `listener` (`KaasClusterSpec::validate`).
        Authentication::None | Authentication::Tls => None,
        Authentication::Scram => Some(kaas_client::SaslCredentials {
            mechanism: "SCRAM-SHA-512".into(),
            user: "admin".into(),
            password: admin_password(kc, &api).await?,
        }),
    };
    let tls = match &kc.spec.listener.tls {
        None => None,
        Some(tls) => {
            let secret = api
                .get(&tls.secret_name)
                .await
                .map_err(Error::kube(format!(
                    "reading the TLS Secret {}",
                    tls.secret_name
                )))?;
            let ca = secret_value(&secret, "ca.crt")
                .ok_or_else(|| missing_key(&tls.secret_name, "ca.crt"))?;
            Some(
                kaas_client::ClientTls::trusting_pem(ca.as_bytes()).map_err(|e| Error::Kube {
                    what: format!("reading ca.crt of the TLS Secret {}", tls.secret_name),
                    source: kube::Error::Service(e.into()),
                })?,
            )
        }
    };
    Ok(kaas_client::Security { tls, sasl })
}

/// The admin's password from its Secret, made first when absent.
async fn admin_password(kc: &KaasCluster, api: &Api<Secret>) -> Result<String, Error> {
    let secret_name = Names::of(kc).admin_secret();
    let existing = api
        .get_opt(&secret_name)
        .await
        .map_err(Error::kube("reading the admin Secret"))?;
    let secret = match existing {
        Some(s) => s,
        None => {
            let made = resources::admin_secret(kc, &kaas_client::scram::nonce());
            match api.create(&PostParams::default(), &made).await {
                Ok(s) => s,
                // Made meanwhile by another writer: use theirs.
                Err(kube::Error::Api(e)) if e.code == 409 => api
                    .get(&secret_name)
                    .await
                    .map_err(Error::kube("reading the admin Secret"))?,
                Err(e) => return Err(Error::kube("creating the admin Secret")(e)),
            }
        }
    };
    secret_value(&secret, resources::ADMIN_PASSWORD_KEY)
        .ok_or_else(|| missing_key(&secret_name, resources::ADMIN_PASSWORD_KEY))
}

/// A Secret's value as text (`data`, or `stringData` as a create echoes it).
pub(crate) fn secret_value(secret: &Secret, key: &str) -> Option<String> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(key).cloned())
        })
}

fn missing_key(secret: &str, key: &str) -> Error {
    Error::Kube {
        what: format!("reading the Secret {secret}"),
        source: kube::Error::Service(format!("it has no `{key}` key").into()),
    }
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
fn pod_owner(pod: Pod) -> Option<ObjectRef<KaasCluster>> {
    let cluster = pod.labels().get(LABEL_INSTANCE)?.clone();
    Some(ObjectRef::new(&cluster).within(&pod.namespace()?))
}

/// The cluster whose headless Service (`<cluster>-brokers`) a slice is of.
fn slice_owner(slice: DynamicObject) -> Option<ObjectRef<KaasCluster>> {
    let service = slice.labels().get("kubernetes.io/service-name")?;
    let cluster = service.strip_suffix("-brokers")?;
    Some(ObjectRef::new(cluster).within(&slice.namespace()?))
}

/// Runs the controller for one namespace (`None`: all) until SIGTERM.
pub async fn run(client: Client, namespace: Option<String>, ctx: Arc<Context>) {
    fn api<K>(client: &Client, ns: Option<&str>) -> Api<K>
    where
        K: Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        match ns {
            Some(ns) => Api::namespaced(client.clone(), ns),
            None => Api::all(client.clone()),
        }
    }
    let ns = namespace.as_deref();
    let managed = watcher::Config::default().labels(&format!("{LABEL_MANAGED_BY}={MANAGER}"));

    // Status writes come back as watch events and trigger one more
    // reconcile each; it finds nothing to change and writes nothing (status
    // is only patched when it differs), so that settles.
    let mut controller =
        Controller::new(api::<KaasCluster>(&client, ns), watcher::Config::default())
            .owns(api::<StatefulSet>(&client, ns), managed.clone())
            .owns(api::<Service>(&client, ns), managed.clone())
            .owns(api::<ConfigMap>(&client, ns), managed.clone())
            .owns(api::<PersistentVolumeClaim>(&client, ns), managed.clone())
            .watches(api::<Pod>(&client, ns), managed, pod_owner);
    if let Some(ar) = ctx.versions.endpoint_slice.clone() {
        let slices: Api<DynamicObject> = match ns {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
            None => Api::all_with(client.clone(), &ar),
        };
        // Slices carry the Service's name, not our labels (1.20 does not
        // copy them), so select what the EndpointSlice controller manages.
        let wc = watcher::Config::default()
            .labels("endpointslice.kubernetes.io/managed-by=endpointslice-controller.k8s.io");
        controller = controller.watches_with(slices, ar, wc, slice_owner);
    }
    let clusters = controller
        .shutdown_on_signal()
        .run(reconcile, error_policy, ctx.clone())
        .for_each(|result| async move {
            if let Err(e) = result {
                // Failed reconciles are already logged by error_policy.
                tracing::debug!(error = %e, "reconcile");
            }
        });
    let users = Controller::new(
        api::<crate::user::KaasUser>(&client, ns),
        watcher::Config::default(),
    )
    .shutdown_on_signal()
    .run(
        crate::user_controller::reconcile,
        crate::user_controller::error_policy,
        ctx,
    )
    .for_each(|result| async move {
        if let Err(e) = result {
            tracing::debug!(error = %e, "KaasUser reconcile");
        }
    });
    futures::future::join(clusters, users).await;
}
