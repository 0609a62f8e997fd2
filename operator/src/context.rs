//! What both controllers share: their context (the client, the recorder,
//! the API versions the server serves, the broker prober, the operator's
//! settings) and their error.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use kaas_client::probe::ProbeResult;
use kube::api::{ApiResource, GroupVersionKind};
use kube::runtime::events::{Recorder, Reporter};
use kube::runtime::reflector::ObjectRef;
use kube::Client;
use parking_lot::{Mutex, MutexGuard};

use crate::crd::KaasCluster;
use crate::resources::MANAGER;

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
    pub(crate) fn kube(what: impl Into<String>) -> impl FnOnce(kube::Error) -> Error {
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

    pub(crate) fn failures(&self) -> MutexGuard<'_, HashMap<ObjectRef<KaasCluster>, u32>> {
        self.failures.lock()
    }
}
