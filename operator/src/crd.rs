//! The `KaasCluster` custom resource (`kaas.dev/v1alpha1`).
//!
//! Validation lives in the OpenAPI schema (minimum/maximum/pattern/enum,
//! `oneOf` for the storage choice), which every API server since 1.16
//! enforces, so a bad spec is refused at `kubectl apply` with the field's
//! name in the message. CEL rules (`x-kubernetes-validations`) are left out
//! on purpose: servers before 1.25 do not know the field, and kubectl's
//! client-side validation there rejects the whole CRD because of it. The
//! cross-field rules the schema cannot express (session timeout min <= max,
//! one storage choice, distinct listeners) are checked by
//! [`KaasClusterSpec::validate`] and reported in status.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, EnvVar, PodSecurityContext, ResourceRequirements, Toleration,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A kaas cluster: Kafka-protocol brokers sharing one ReadWriteMany volume,
/// coordinated through the assignment ConfigMap the operator publishes.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kaas.dev",
    version = "v1alpha1",
    kind = "KaasCluster",
    namespaced,
    status = "KaasClusterStatus",
    shortname = "kaas",
    category = "kaas",
    printcolumn = r#"{"name":"Replicas","type":"integer","jsonPath":".spec.replicas"}"#,
    printcolumn = r#"{"name":"Ready","type":"integer","jsonPath":".status.readyBrokers"}"#,
    printcolumn = r#"{"name":"Assignment","type":"integer","description":"assignment version","jsonPath":".status.assignmentVersion"}"#,
    printcolumn = r#"{"name":"Groups","type":"integer","description":"active consumer groups","jsonPath":".status.activeGroups"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct KaasClusterSpec {
    /// Number of brokers. Broker ids are the StatefulSet ordinals
    /// 0..replicas, and the count is the routing hash's divisor.
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 1, max = 256))]
    pub replicas: i32,

    /// Container image holding the `kaas-broker` binary (on PATH).
    #[schemars(length(min = 1))]
    pub image: String,

    /// Image pull policy of the broker container.
    #[serde(default)]
    pub image_pull_policy: PullPolicy,

    /// How clients reach the brokers. The brokers call each other, and the
    /// operator reaches them, on this listener.
    #[serde(default)]
    pub listener: ListenerSpec,

    /// More listeners, each on its own port of every broker at the same
    /// advertised host (Apache's named listeners): for example SSL with
    /// client certificates beside a SASL_SSL `listener`. Metadata answers a
    /// client with the addresses of the listener it came in on. One that
    /// authenticates needs `listener.authentication: scram` (the ACL
    /// authorizer and its admin).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub additional_listeners: Vec<AdditionalListener>,

    /// The ACL authorizer, on with `listener.authentication: scram`.
    #[serde(default)]
    pub authorization: AuthorizationSpec,

    /// The shared volume, mounted by every broker at /data.
    pub storage: StorageSpec,

    /// Compute resources of each broker container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,

    /// Broker settings (the Kafka names are in each field's description).
    #[serde(default)]
    pub broker: BrokerSettings,

    /// Additions to the broker pod template.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<PodOverrides>,
}

fn default_replicas() -> i32 {
    3
}

/// Image pull policy.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum PullPolicy {
    Always,
    #[default]
    IfNotPresent,
    Never,
}

impl PullPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Always => "Always",
            Self::IfNotPresent => "IfNotPresent",
            Self::Never => "Never",
        }
    }
}

/// The Kafka listener.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListenerSpec {
    /// Port brokers listen on and advertise.
    #[serde(default = "default_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,

    /// Port of each broker's HTTP endpoints (/healthz, /readyz, /metrics).
    #[serde(default = "default_http_port")]
    #[schemars(range(min = 1, max = 65535))]
    pub http_port: i32,

    /// Address each broker advertises in Metadata and the assignment:
    /// `dns` = `<pod>.<cluster>-brokers.<namespace>.svc` (stable across
    /// restarts; needs cluster DNS), `podIP` = the pod's IP.
    #[serde(default)]
    pub advertise: AdvertiseMode,

    /// Client authentication. `scram`: the listener speaks SASL
    /// (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN) with Apache's ACL authorizer
    /// on; `User:admin` is the super user, its password in the Secret
    /// `<cluster>-admin` (key `password`), which the operator creates with
    /// a random password unless it exists. `none`: no authentication.
    #[serde(default)]
    pub authentication: Authentication,

    /// TLS on the listener (SSL, or SASL_SSL with `authentication: scram`)
    /// from a Secret in the cluster's namespace holding `tls.crt`, `tls.key`
    /// and `ca.crt`, as cert-manager writes them. The certificate must name
    /// the addresses the brokers advertise; brokers re-read the files when
    /// the Secret changes. Unset: no TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ListenerTls>,
}

impl Default for ListenerSpec {
    fn default() -> Self {
        Self {
            port: default_port(),
            http_port: default_http_port(),
            advertise: AdvertiseMode::default(),
            authentication: Authentication::default(),
            tls: None,
        }
    }
}

/// See [`ListenerSpec::tls`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListenerTls {
    /// The Secret with `tls.crt`, `tls.key` and `ca.crt`.
    #[schemars(regex(
        pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
    ))]
    pub secret_name: String,
}

/// See [`ListenerSpec::authentication`] and
/// [`AdditionalListener::authentication`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum Authentication {
    #[default]
    #[serde(rename = "none")]
    None,
    #[serde(rename = "scram")]
    Scram,
    /// Client certificates (additional listeners only): required, chained
    /// to the listener Secret's `ca.crt`; the user is the certificate's
    /// common name (`User:<CN>`), as a KaasUser with `authentication: tls`
    /// names it.
    #[serde(rename = "tls")]
    Tls,
}

/// One more listener of every broker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdditionalListener {
    /// The listener's name (Apache's: `MTLS` of `MTLS://host:9094`),
    /// upper case; not `INTERNAL`, the name `listener` takes beside it.
    #[schemars(regex(pattern = r"^[A-Z][A-Z0-9_]{0,30}$"))]
    pub name: String,

    /// Port brokers listen on and advertise for it.
    #[schemars(range(min = 1, max = 65535))]
    pub port: i32,

    /// `none`, `scram` (SCRAM-SHA-512, SCRAM-SHA-256, PLAIN) or `tls`
    /// (client certificates; needs `tls`).
    #[serde(default)]
    pub authentication: Authentication,

    /// TLS on the listener from its own Secret (`tls.crt`, `tls.key`,
    /// `ca.crt`; the CA client certificates must chain to with
    /// `authentication: tls`). Unset: no TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<ListenerTls>,
}

/// See [`KaasClusterSpec::authorization`].
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthorizationSpec {
    /// `simple`: Apache's StandardAuthorizer, ACLs through the Kafka API
    /// and `KaasUser`s (Strimzi's name for it).
    #[serde(default, rename = "type")]
    pub kind: AuthorizationType,

    /// Principals allowed everything beside `User:admin` (`super.users`):
    /// `User:ops`, or a client certificate's user on a listener with
    /// `authentication: tls` (its common name).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub super_users: Vec<SuperUser>,
}

/// One principal, `Type:name`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct SuperUser(#[schemars(regex(pattern = r"^[A-Za-z]+:[^;]+$"))] pub String);

/// See [`AuthorizationSpec::kind`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AuthorizationType {
    #[default]
    #[serde(rename = "simple")]
    Simple,
}

/// The name [`KaasClusterSpec::listener`] takes when there are additional
/// listeners.
pub const INTERNAL_LISTENER: &str = "INTERNAL";

fn default_port() -> i32 {
    9092
}

fn default_http_port() -> i32 {
    8080
}

/// See [`ListenerSpec::advertise`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AdvertiseMode {
    #[default]
    #[serde(rename = "dns")]
    Dns,
    #[serde(rename = "podIP")]
    PodIp,
}

/// The shared ReadWriteMany volume: either a claim the operator creates
/// (`size`, optionally `storageClassName`) or an `existingClaim`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(extend("oneOf" = [
    {"required": ["size"]},
    {"required": ["existingClaim"]}
]))]
pub struct StorageSpec {
    /// Size of the claim the operator creates, a Kubernetes quantity
    /// such as `100Gi`. Exactly one of `size` and `existingClaim`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$"))]
    pub size: Option<String>,

    /// Storage class of the created claim; it must offer ReadWriteMany.
    /// Unset: the cluster's default class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1))]
    pub storage_class_name: Option<String>,

    /// Name of an existing ReadWriteMany claim in the cluster's namespace
    /// to use instead of creating one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(
        pattern = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
    ))]
    pub existing_claim: Option<String>,
}

/// Broker configuration, passed to `kaas-broker serve`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BrokerSettings {
    /// group.initial.rebalance.delay.ms
    #[serde(default = "default_initial_rebalance_delay")]
    #[schemars(range(min = 0, max = 300_000))]
    pub group_initial_rebalance_delay_ms: i64,

    /// group.min.session.timeout.ms; at most groupMaxSessionTimeoutMs.
    #[serde(default = "default_min_session_timeout")]
    #[schemars(range(min = 1, max = 3_600_000))]
    pub group_min_session_timeout_ms: i32,

    /// group.max.session.timeout.ms
    #[serde(default = "default_max_session_timeout")]
    #[schemars(range(min = 1, max = 3_600_000))]
    pub group_max_session_timeout_ms: i32,

    /// offsets.retention.minutes: committed offsets of an empty group
    /// expire after this long.
    #[serde(default = "default_offsets_retention")]
    #[schemars(range(min = 1, max = 5_256_000))]
    pub offsets_retention_minutes: i64,

    /// num.partitions of auto-created topics.
    #[serde(default = "default_partitions")]
    #[schemars(range(min = 1, max = 10_000))]
    pub default_partitions: i32,

    /// auto.create.topics.enable
    #[serde(default = "default_true")]
    pub auto_create_topics: bool,

    /// Broker log format.
    #[serde(default)]
    pub log_format: LogFormat,
}

impl Default for BrokerSettings {
    fn default() -> Self {
        Self {
            group_initial_rebalance_delay_ms: default_initial_rebalance_delay(),
            group_min_session_timeout_ms: default_min_session_timeout(),
            group_max_session_timeout_ms: default_max_session_timeout(),
            offsets_retention_minutes: default_offsets_retention(),
            default_partitions: default_partitions(),
            auto_create_topics: true,
            log_format: LogFormat::default(),
        }
    }
}

fn default_initial_rebalance_delay() -> i64 {
    3000
}
fn default_min_session_timeout() -> i32 {
    6000
}
fn default_max_session_timeout() -> i32 {
    1_800_000
}
fn default_offsets_retention() -> i64 {
    7 * 24 * 60
}
fn default_partitions() -> i32 {
    1
}
fn default_true() -> bool {
    true
}

/// Log format of the brokers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    Text,
    #[default]
    Json,
}

/// Additions to the broker pods. The operator's own labels, container,
/// volume and probes always win over these.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PodOverrides {
    /// Extra pod labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Extra pod annotations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<PodSecurityContext>,
    /// Extra environment variables of the broker container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Grace period for a broker pod's shutdown (default 30).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 3600))]
    pub termination_grace_period_seconds: Option<i64>,
}

/// What the operator observed and did, as of `observedGeneration`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KaasClusterStatus {
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Ready, Progressing, Degraded, AssignmentPublished (metav1.Condition).
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// Brokers alive in the published assignment.
    #[serde(default)]
    pub ready_brokers: i32,
    /// Brokers in the published assignment, alive or not.
    #[serde(default)]
    pub brokers: i32,
    /// Version of the published assignment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assignment_version: Option<u64>,
    /// Consumer groups with members, as the brokers last reported.
    #[serde(default)]
    pub active_groups: i32,
    /// Explicit group entries in the published assignment.
    #[serde(default)]
    pub group_entries: i32,
}

impl KaasClusterSpec {
    /// Rules the schema cannot express. `Err` carries a message for the
    /// Degraded condition.
    pub fn validate(&self) -> Result<(), String> {
        let b = &self.broker;
        if b.group_min_session_timeout_ms > b.group_max_session_timeout_ms {
            return Err(format!(
                "spec.broker.groupMinSessionTimeoutMs ({}) must not exceed groupMaxSessionTimeoutMs ({})",
                b.group_min_session_timeout_ms, b.group_max_session_timeout_ms
            ));
        }
        self.validate_listeners()?;
        match (&self.storage.size, &self.storage.existing_claim) {
            (Some(_), Some(_)) | (None, None) => {
                return Err("spec.storage needs exactly one of size and existingClaim".into())
            }
            (None, Some(_)) if self.storage.storage_class_name.is_some() => {
                return Err(
                    "spec.storage.storageClassName applies only to a claim the operator creates (size), not to existingClaim".into(),
                )
            }
            _ => {}
        }
        Ok(())
    }

    /// The listeners' names and ports distinct, `tls` only on an additional
    /// listener with TLS, authentication beside a SCRAM `listener` only.
    fn validate_listeners(&self) -> Result<(), String> {
        let l = &self.listener;
        if l.authentication == Authentication::Tls {
            return Err("spec.listener.authentication: tls is for additionalListeners (the operator and the brokers log in on spec.listener: none or scram)".into());
        }
        let mut names = vec![INTERNAL_LISTENER];
        let mut ports = vec![l.port, l.http_port];
        for (i, a) in self.additional_listeners.iter().enumerate() {
            let at = format!("spec.additionalListeners[{i}] ({})", a.name);
            if names.contains(&a.name.as_str()) {
                return Err(format!("{at}: the name is taken"));
            }
            if ports.contains(&a.port) {
                return Err(format!("{at}: port {} is taken", a.port));
            }
            if a.authentication == Authentication::Tls && a.tls.is_none() {
                return Err(format!("{at}: authentication tls needs tls.secretName"));
            }
            if a.authentication != Authentication::None && l.authentication != Authentication::Scram
            {
                return Err(format!(
                    "{at}: a listener that authenticates needs spec.listener.authentication: scram (the ACL authorizer and its admin)"
                ));
            }
            names.push(&a.name);
            ports.push(a.port);
        }
        if !self.authorization.super_users.is_empty() && l.authentication != Authentication::Scram {
            return Err("spec.authorization.superUsers needs spec.listener.authentication: scram (the authorizer is off without it)".into());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
