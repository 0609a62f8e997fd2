//! What the controller asks each broker: are you alive, which groups do you
//! coordinate, which partitions are to move (their replicas want another
//! leader: ListPartitionReassignments).

use std::time::Duration;

use kaas_shared::PartitionReplicas;
use kafka_protocol::messages::{
    ApiKey, ApiVersionsRequest, ListGroupsRequest, ListPartitionReassignmentsRequest,
};
use kafka_protocol::protocol::StrBytes;

use crate::{KafkaClient, Security};

/// Group states that count as active: the group has members.
const ACTIVE_STATES: [&str; 3] = ["PreparingRebalance", "CompletingRebalance", "Stable"];

/// What one probe learned about a broker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProbeResult {
    /// Group ids the broker coordinates (empty if it serves no ListGroups).
    pub groups: Vec<String>,
    /// The partitions whose replicas want another leader (empty if it
    /// serves no ListPartitionReassignments).
    pub moving: Vec<PartitionReplicas>,
}

/// Connects as `security` says (TLS, SASL), asks ApiVersions and, where
/// served, ListGroups and ListPartitionReassignments.
pub async fn probe(
    addr: &str,
    timeout: Duration,
    security: &Security,
) -> anyhow::Result<ProbeResult> {
    tokio::time::timeout(timeout, async {
        let mut client = KafkaClient::connect_as(addr, timeout, security)
            .await?
            .with_client_id("kaas-controller");
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("kaas-controller"))
            .with_client_software_version(StrBytes::from_static_str(env!("CARGO_PKG_VERSION")));
        let versions = client.send(&req, 3).await?;
        anyhow::ensure!(
            versions.error_code == 0,
            "ApiVersions error {}",
            versions.error_code
        );
        let list_groups = versions
            .api_keys
            .iter()
            .find(|k| k.api_key == ApiKey::ListGroups as i16);
        let mut groups = Vec::new();
        if let Some(range) = list_groups {
            let version = range.max_version.min(4);
            // Active groups only: asking for Empty ones would make brokers
            // load every idle group from disk on every probe.
            let req = ListGroupsRequest::default().with_states_filter(
                ACTIVE_STATES
                    .iter()
                    .map(|s| StrBytes::from_static_str(s))
                    .collect(),
            );
            let resp = client.send(&req, version).await?;
            anyhow::ensure!(resp.error_code == 0, "ListGroups error {}", resp.error_code);
            groups = resp
                .groups
                .into_iter()
                .map(|g| g.group_id.0.to_string())
                .collect();
        }
        let mut moving = Vec::new();
        let served = |key: ApiKey| versions.api_keys.iter().any(|k| k.api_key == key as i16);
        if served(ApiKey::ListPartitionReassignments) {
            let req = ListPartitionReassignmentsRequest::default().with_topics(None);
            let resp = client.send(&req, 0).await?;
            // Refused (a principal without Cluster DESCRIBE): no moves are
            // known, and the broker is no less alive.
            for t in resp.topics.into_iter().filter(|_| resp.error_code == 0) {
                for p in t.partitions {
                    moving.push(PartitionReplicas {
                        topic: t.name.to_string(),
                        partition: p.partition_index,
                        replicas: p.replicas.iter().map(|b| b.0).collect(),
                    });
                }
            }
        }
        Ok(ProbeResult { groups, moving })
    })
    .await?
}
