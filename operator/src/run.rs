//! Runs both controllers: KaasCluster ([`crate::controller`]) and
//! KaasUser ([`crate::user_controller`]).

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::StatefulSet;
use k8s_openapi::api::core::v1::{ConfigMap, PersistentVolumeClaim, Pod, Service};
use kube::api::DynamicObject;
use kube::runtime::controller::Controller;
use kube::runtime::watcher;
use kube::{Api, Client, Resource};

use crate::context::Context;
use crate::controller::{error_policy, pod_owner, reconcile, slice_owner};
use crate::crd::KaasCluster;
use crate::resources::{LABEL_MANAGED_BY, MANAGER};

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
