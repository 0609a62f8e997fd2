//! Follows the assignment published as a Kubernetes ConfigMap: the source
//! `kaas-broker serve --assignment-configmap NAME` uses instead of the file.
//!
//! The operator writes the document in the format of
//! [`kaas_shared::configmap`]; this module watches the ConfigMap and offers
//! every version to the broker, exactly as [`super::file_source`] does for
//! `<data>/__cluster/assignment.json`.

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kaas_shared::configmap::decode;
use kaas_shared::Assignment;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

/// Where the assignment ConfigMap lives.
#[derive(Debug, Clone)]
pub struct ConfigMapSource {
    pub namespace: String,
    pub name: String,
}

impl ConfigMapSource {
    /// The ConfigMap `name`; with no namespace, the one the client config
    /// names (in-cluster: the pod's own, from its service account).
    pub async fn connect(
        name: String,
        namespace: Option<String>,
    ) -> anyhow::Result<(Client, ConfigMapSource)> {
        // Config::infer: KUBECONFIG / ~/.kube/config if present, else the
        // in-cluster service account. A broker pod has the latter.
        let config = kube::Config::infer().await?;
        let namespace = namespace.unwrap_or_else(|| config.default_namespace.clone());
        let client = Client::try_from(config)?;
        Ok((client, ConfigMapSource { namespace, name }))
    }
}

/// Watches the ConfigMap until `shutdown`, calling `offer` with every
/// document it carries (the broker's view ignores versions it already has,
/// so replays after a watch restart are harmless).
///
/// Never gives up: API errors are retried with kube's default backoff and
/// logged once per distinct message, as the file source does. A deleted
/// ConfigMap leaves the broker on the last document it had.
///
/// Besides the watch, the ConfigMap is read every [`CONFIRM_INTERVAL`]:
/// a watch says nothing while nothing changes, and a broker must know
/// that the assignment it follows is still the one published (`offer` is
/// called with it each time; [`crate::volume::Tenancy::assignment_confirmed`]).
pub async fn follow(
    client: Client,
    source: ConfigMapSource,
    shutdown: CancellationToken,
    mut offer: impl FnMut(Assignment),
) {
    let api: Api<ConfigMap> = Api::namespaced(client, &source.namespace);
    // A field selector on the name: the broker's Role grants get/list/watch
    // on this one ConfigMap only (resourceNames), which the API server
    // authorises for a list/watch only when it names the object this way.
    let config = watcher::Config::default().fields(&format!("metadata.name={}", source.name));
    let mut last_error: Option<String> = None;
    let mut confirm = tokio::time::interval(CONFIRM_INTERVAL);
    loop {
        let mut stream = watcher(api.clone(), config.clone())
            .default_backoff()
            .applied_objects()
            .boxed();
        loop {
            let next = tokio::select! {
                _ = shutdown.cancelled() => return,
                next = stream.try_next() => next.map_err(|e| e.to_string()),
                _ = confirm.tick() => api
                    .get(&source.name)
                    .await
                    .map(Some)
                    .map_err(|e| format!("reading the ConfigMap: {e}")),
            };
            let problem = match next {
                Ok(Some(cm)) => match decode(&cm) {
                    Ok(a) => {
                        if last_error.take().is_some() {
                            info!(configmap = %source.name, "following the assignment ConfigMap again");
                        }
                        offer(a);
                        continue;
                    }
                    Err(e) => e.to_string(),
                },
                Err(e) => e,
                // The watcher retries forever, so this is not expected;
                // start a new one rather than stop following.
                Ok(None) => break,
            };
            if last_error.as_deref() != Some(problem.as_str()) {
                warn!(configmap = %source.name, namespace = %source.namespace, error = %problem,
                    "cannot follow the assignment ConfigMap");
                last_error = Some(problem);
            }
        }
    }
}

/// How often the ConfigMap is read besides the watch.
pub const CONFIRM_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);
