//! The `KaasUser` custom resource (`kaas.dev/v1alpha1`): a SCRAM user of a
//! KaasCluster and the ACLs of `User:<name>`, kept on the brokers through
//! the Kafka API (AlterUserScramCredentials, CreateAcls, DeleteAcls) as
//! Strimzi's KafkaUser does. Here: the resource and the pure part (the ACL
//! bindings a spec asks for, what to create and delete); the reconcile is
//! in `user_controller`.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A user of a KaasCluster with a SCRAM listener. The operator makes the
/// Secret `<name>` (keys `username`, `password`, `sasl.jaas.config`) with a
/// random password, gives the user SCRAM-SHA-512 and SCRAM-SHA-256
/// credentials, and keeps exactly these ACLs for `User:<name>`; deleting
/// the KaasUser removes its credentials and ACLs. A user with
/// `authentication: tls` logs in with a client certificate whose common
/// name is `<name>` instead: no Secret, no credentials, only its ACLs.
#[derive(CustomResource, Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "kaas.dev",
    version = "v1alpha1",
    kind = "KaasUser",
    namespaced,
    status = "KaasUserStatus",
    category = "kaas",
    printcolumn = r#"{"name":"Cluster","type":"string","jsonPath":".spec.cluster"}"#,
    printcolumn = r#"{"name":"Status","type":"string","jsonPath":".status.conditions[?(@.type==\"Ready\")].reason"}"#,
    printcolumn = r#"{"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct KaasUserSpec {
    /// The KaasCluster, in the same namespace, with
    /// `listener.authentication: scram`.
    #[schemars(length(min = 1))]
    pub cluster: String,

    /// `scram` (a password in the Secret `<name>`) or `tls` (a client
    /// certificate with CN `<name>`, on a listener of the cluster with
    /// `authentication: tls`; the certificate is the user's to get, from
    /// the CA that listener's Secret names).
    #[serde(default)]
    pub authentication: UserAuthentication,

    /// The ACLs of `User:<metadata.name>`: exactly these, the operator
    /// removes any other.
    #[serde(default)]
    pub acls: Vec<AclRule>,

    /// The user's client quotas (Strimzi's `KafkaUserQuotas`): exactly
    /// these for the entity `user=<metadata.name>`, the operator removes
    /// any other; absent, the user has none of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quotas: Option<UserQuotas>,
}

/// Client quotas of one user, enforced by each broker on the user's
/// requests to it (docs/operations.md, "Client quotas").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UserQuotas {
    /// `producer_byte_rate`: Produce bytes per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub producer_byte_rate: Option<i64>,
    /// `consumer_byte_rate`: Fetch bytes per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub consumer_byte_rate: Option<i64>,
    /// `request_percentage`: percent of one broker thread's time (100 = one
    /// thread).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub request_percentage: Option<i64>,
    /// `controller_mutation_rate`: partitions created or deleted per second
    /// (KIP-599).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_mutation_rate: Option<f64>,
}

impl UserQuotas {
    /// The quota keys and values this asks for.
    pub fn values(&self) -> BTreeMap<String, f64> {
        [
            (
                "producer_byte_rate",
                self.producer_byte_rate.map(|v| v as f64),
            ),
            (
                "consumer_byte_rate",
                self.consumer_byte_rate.map(|v| v as f64),
            ),
            (
                "request_percentage",
                self.request_percentage.map(|v| v as f64),
            ),
            ("controller_mutation_rate", self.controller_mutation_rate),
        ]
        .into_iter()
        .filter_map(|(k, v)| Some((k.to_string(), v?)))
        .collect()
    }
}

/// The AlterClientQuotas operations that make `current` (what the brokers
/// describe for the user) what `spec` asks: each key set to its value,
/// every other key removed (`None`).
pub fn quota_ops(
    current: &BTreeMap<String, f64>,
    spec: Option<&UserQuotas>,
) -> Vec<(String, Option<f64>)> {
    let desired = spec.map(UserQuotas::values).unwrap_or_default();
    let set = desired
        .iter()
        .filter(|(k, v)| current.get(*k) != Some(v))
        .map(|(k, v)| (k.clone(), Some(*v)));
    let removed = current
        .keys()
        .filter(|k| !desired.contains_key(*k))
        .map(|k| (k.clone(), None));
    set.chain(removed).collect()
}

/// See [`KaasUserSpec::authentication`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum UserAuthentication {
    #[default]
    Scram,
    Tls,
}

/// One rule: these operations on these resources, from this host.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AclRule {
    pub resource: AclResource,
    #[schemars(length(min = 1))]
    pub operations: Vec<AclOperation>,
    /// `allow` or `deny`.
    #[serde(default)]
    pub permission: AclPermission,
    /// The client address it applies to, `*` for any.
    #[serde(default = "any_host")]
    pub host: String,
}

fn any_host() -> String {
    "*".into()
}

/// The resources a rule covers.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AclResource {
    #[serde(rename = "type")]
    pub kind: AclResourceType,
    /// A name, a prefix (`patternType: prefix`), or `*` for every one;
    /// `kafka-cluster` for the cluster.
    #[schemars(length(min = 1))]
    pub name: String,
    #[serde(default)]
    pub pattern_type: AclPatternType,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AclResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
}

impl AclResourceType {
    /// Apache's `ResourceType` code.
    pub fn code(self) -> i8 {
        match self {
            Self::Topic => 2,
            Self::Group => 3,
            Self::Cluster => 4,
            Self::TransactionalId => 5,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AclPatternType {
    #[default]
    Literal,
    Prefix,
}

impl AclPatternType {
    /// Apache's `PatternType` code.
    pub fn code(self) -> i8 {
        match self {
            Self::Literal => 3,
            Self::Prefix => 4,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum AclOperation {
    All,
    Read,
    Write,
    Create,
    Delete,
    Alter,
    Describe,
    ClusterAction,
    DescribeConfigs,
    AlterConfigs,
    IdempotentWrite,
}

impl AclOperation {
    /// Apache's `AclOperation` code.
    pub fn code(self) -> i8 {
        match self {
            Self::All => 2,
            Self::Read => 3,
            Self::Write => 4,
            Self::Create => 5,
            Self::Delete => 6,
            Self::Alter => 7,
            Self::Describe => 8,
            Self::ClusterAction => 9,
            Self::DescribeConfigs => 10,
            Self::AlterConfigs => 11,
            Self::IdempotentWrite => 12,
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum AclPermission {
    #[default]
    Allow,
    Deny,
}

impl AclPermission {
    /// Apache's `AclPermissionType` code.
    pub fn code(self) -> i8 {
        match self {
            Self::Deny => 2,
            Self::Allow => 3,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct KaasUserStatus {
    /// `Ready`: the credentials and ACLs are on the cluster.
    #[serde(default)]
    pub conditions: Vec<Condition>,
    /// The principal's name (`User:<username>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// The Secret with the password and a `sasl.jaas.config` line (SCRAM
    /// users).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// One ACL binding in Apache's codes, as the ACL APIs carry it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Binding {
    pub resource_type: i8,
    pub name: String,
    pub pattern_type: i8,
    pub principal: String,
    pub host: String,
    pub operation: i8,
    pub permission: i8,
}

/// The bindings `spec` asks for `User:<user>`, one per operation.
pub fn desired(user: &str, spec: &KaasUserSpec) -> BTreeSet<Binding> {
    spec.acls
        .iter()
        .flat_map(|rule| {
            rule.operations.iter().map(move |op| Binding {
                resource_type: rule.resource.kind.code(),
                name: rule.resource.name.clone(),
                pattern_type: rule.resource.pattern_type.code(),
                principal: format!("User:{user}"),
                host: rule.host.clone(),
                operation: op.code(),
                permission: rule.permission.code(),
            })
        })
        .collect()
}

/// What to create and what to delete so that `current` becomes `desired`.
pub fn changes(
    current: &BTreeSet<Binding>,
    desired: &BTreeSet<Binding>,
) -> (Vec<Binding>, Vec<Binding>) {
    (
        desired.difference(current).cloned().collect(),
        current.difference(desired).cloned().collect(),
    )
}

/// The JAAS line Java clients log in with.
pub fn jaas_config(user: &str, password: &str) -> String {
    format!(
        "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"{user}\" password=\"{password}\";"
    )
}

#[cfg(test)]
mod tests;
