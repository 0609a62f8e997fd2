//! From pods and EndpointSlices to the broker set the assignment lists.
//! Pure: the reconcile lists the objects, this decides.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::Pod;
use kaas_shared::{BrokerInfo, BrokerState, Endpoint};
use kube::ResourceExt;
use serde::Deserialize;

use crate::crd::{AdvertiseMode, KaasCluster, INTERNAL_LISTENER};
use crate::resources::Names;

/// The parts of an EndpointSlice the controller reads. The same in
/// `discovery.k8s.io/v1` and `v1beta1`, so both deserialize into it from a
/// `DynamicObject`.
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct Slice {
    #[serde(default)]
    pub address_type: String,
    /// `null` in a slice with no endpoints.
    #[serde(default, deserialize_with = "null_as_empty")]
    pub endpoints: Vec<SliceEndpoint>,
}

fn null_as_empty<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct SliceEndpoint {
    #[serde(default, deserialize_with = "null_as_empty")]
    pub addresses: Vec<String>,
    #[serde(default)]
    pub conditions: SliceConditions,
    #[serde(default)]
    pub target_ref: Option<SliceTarget>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct SliceConditions {
    /// Unset means ready, per the EndpointSlice API.
    pub ready: Option<bool>,
    /// Set while the pod is being deleted (1.20+ behind a gate; 1.22+ on).
    pub terminating: Option<bool>,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
pub struct SliceTarget {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub name: String,
}

/// Per pod name, what the headless Service's slices say about it:
/// `(ready, first address)`. `None` when no slice is known at all (the
/// endpoint slice controller has not caught up, or the server has no
/// EndpointSlice API): pod readiness alone then decides.
pub fn slice_view(slices: &[Slice]) -> Option<BTreeMap<String, (bool, Option<String>)>> {
    if slices.is_empty() {
        return None;
    }
    let mut view = BTreeMap::new();
    // 1.20 also publishes an empty IPv6 slice for a headless Service; only
    // IP slices name pods, FQDN ones do not.
    for s in slices.iter().filter(|s| s.address_type.starts_with("IPv")) {
        for e in &s.endpoints {
            let Some(target) = e.target_ref.as_ref().filter(|t| t.kind == "Pod") else {
                continue;
            };
            let ready =
                e.conditions.ready.unwrap_or(true) && e.conditions.terminating != Some(true);
            let entry = view
                .entry(target.name.clone())
                .or_insert((false, None::<String>));
            // Dual-stack: ready if any family says so.
            entry.0 |= ready;
            if entry.1.is_none() {
                entry.1 = e.addresses.first().cloned();
            }
        }
    }
    Some(view)
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

/// The broker set for the assignment.
///
/// - The set is the StatefulSet's ordinals `0..replicas`, widened to cover
///   any pod still running above it: during a scale-down the leaving
///   brokers stay in the set (draining) until their pods are gone, so the
///   hash divisor changes once, after they stopped serving.
/// - Alive: the pod is Ready, not terminating, and — when slices are known
///   — its endpoint in the headless Service is ready.
/// - Draining: the pod is terminating, or above `replicas`.
/// - Dead: no pod, or not Ready.
/// - Host: the DNS name, or in `podIP` mode the pod's IP once it has one.
pub fn brokers(kc: &KaasCluster, replicas: i32, pods: &[Pod], slices: &[Slice]) -> Vec<BrokerInfo> {
    let names = Names::of(kc);
    let by_ordinal: BTreeMap<i32, &Pod> = pods
        .iter()
        .filter_map(|p| names.ordinal_of(&p.name_any()).map(|o| (o, p)))
        .collect();
    let slices = slice_view(slices);
    let size = by_ordinal
        .keys()
        .next_back()
        .map_or(replicas, |&max| replicas.max(max + 1));
    let port = u16::try_from(kc.spec.listener.port).unwrap_or(9092);
    (0..size.max(0))
        .map(|id| {
            let pod = by_ordinal.get(&id);
            let pod_name = names.pod(id);
            let endpoint = slices.as_ref().map(|v| v.get(&pod_name));
            let state = match pod {
                None => BrokerState::Dead,
                Some(p) if p.metadata.deletion_timestamp.is_some() => BrokerState::Draining,
                Some(_) if id >= replicas => BrokerState::Draining,
                Some(p) => {
                    let endpoint_ready = match endpoint {
                        None => true,
                        Some(e) => e.is_some_and(|(ready, _)| *ready),
                    };
                    if pod_ready(p) && endpoint_ready {
                        BrokerState::Alive
                    } else {
                        BrokerState::Dead
                    }
                }
            };
            let host = match kc.spec.listener.advertise {
                AdvertiseMode::Dns => names.broker_host(id),
                AdvertiseMode::PodIp => pod
                    .and_then(|p| p.status.as_ref()?.pod_ip.clone())
                    .or_else(|| endpoint.flatten().and_then(|(_, a)| a.clone()))
                    .unwrap_or_else(|| names.broker_host(id)),
            };
            // With several listeners, each at the same host: Metadata on
            // one answers with its addresses (`listener` first, the one
            // brokers call each other on).
            let more = &kc.spec.additional_listeners;
            let listeners = if more.is_empty() {
                Vec::new()
            } else {
                std::iter::once((INTERNAL_LISTENER, port))
                    .chain(
                        more.iter()
                            .map(|l| (l.name.as_str(), u16::try_from(l.port).unwrap_or(port))),
                    )
                    .map(|(name, port)| Endpoint {
                        name: name.to_string(),
                        host: host.clone(),
                        port,
                    })
                    .collect()
            };
            BrokerInfo {
                id,
                host,
                port,
                state,
                listeners,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
