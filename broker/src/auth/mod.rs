//! The authorization hook: a handler asks before it acts, naming Apache's
//! operation and resource (`AclOperation`, `ResourceType`) in the order
//! KafkaApis asks, and answers Apache's error when denied. With no
//! authorizer configured the broker allows everything ([`AllowAll`]), as
//! Apache does with no `authorizer.class.name`; [`standard`] is Apache's
//! StandardAuthorizer over the ACLs of [`acl`]. Pure: no I/O.

pub mod acl;
pub mod scram;
pub mod scram_users;
pub mod ssl_principal;
pub mod standard;

use std::fmt;
use std::net::IpAddr;

/// Apache's `ResourceType` (wire codes in [`ResourceType::code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
    DelegationToken,
    User,
}

impl ResourceType {
    pub const ALL: [ResourceType; 6] = [
        ResourceType::Topic,
        ResourceType::Group,
        ResourceType::Cluster,
        ResourceType::TransactionalId,
        ResourceType::DelegationToken,
        ResourceType::User,
    ];

    /// Apache's code (UNKNOWN 0 and ANY 1 are not resource types).
    pub fn code(self) -> i8 {
        match self {
            ResourceType::Topic => 2,
            ResourceType::Group => 3,
            ResourceType::Cluster => 4,
            ResourceType::TransactionalId => 5,
            ResourceType::DelegationToken => 6,
            ResourceType::User => 7,
        }
    }

    pub fn from_code(code: i8) -> Option<ResourceType> {
        ResourceType::ALL.into_iter().find(|t| t.code() == code)
    }
}

/// Apache's `AclOperation` (wire codes in [`Operation::code`]). `All` is
/// for ACLs: it matches every operation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operation {
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
    CreateTokens,
    DescribeTokens,
}

impl Operation {
    pub const ALL: [Operation; 13] = [
        Operation::All,
        Operation::Read,
        Operation::Write,
        Operation::Create,
        Operation::Delete,
        Operation::Alter,
        Operation::Describe,
        Operation::ClusterAction,
        Operation::DescribeConfigs,
        Operation::AlterConfigs,
        Operation::IdempotentWrite,
        Operation::CreateTokens,
        Operation::DescribeTokens,
    ];

    /// Apache's code (UNKNOWN 0 and ANY 1 are not operations).
    pub fn code(self) -> i8 {
        match self {
            Operation::All => 2,
            Operation::Read => 3,
            Operation::Write => 4,
            Operation::Create => 5,
            Operation::Delete => 6,
            Operation::Alter => 7,
            Operation::Describe => 8,
            Operation::ClusterAction => 9,
            Operation::DescribeConfigs => 10,
            Operation::AlterConfigs => 11,
            Operation::IdempotentWrite => 12,
            Operation::CreateTokens => 13,
            Operation::DescribeTokens => 14,
        }
    }

    pub fn from_code(code: i8) -> Option<Operation> {
        Operation::ALL.into_iter().find(|o| o.code() == code)
    }
}

/// The name of the one Cluster resource (Apache's `CLUSTER_NAME`).
pub const CLUSTER_NAME: &str = "kafka-cluster";

/// Who sent a request: `User:name` (Apache's `KafkaPrincipal`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Principal {
    pub kind: String,
    pub name: String,
}

impl Principal {
    pub fn user(name: &str) -> Principal {
        Principal {
            kind: "User".into(),
            name: name.into(),
        }
    }

    /// The principal of an unauthenticated (PLAINTEXT) connection.
    pub fn anonymous() -> Principal {
        Principal::user("ANONYMOUS")
    }
}

impl fmt::Display for Principal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.kind, self.name)
    }
}

/// One permission asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action<'a> {
    pub operation: Operation,
    pub resource_type: ResourceType,
    pub name: &'a str,
}

pub trait Authorizer: Send + Sync + fmt::Debug {
    /// Whether `principal`, connected from `host`, may do `action`.
    fn authorize(&self, principal: &Principal, host: IpAddr, action: Action<'_>) -> bool;

    /// Whether `principal` may do `operation` on at least one resource of
    /// `resource_type` (Apache's `authorizeByResourceType`: an idempotent
    /// producer without IdempotentWrite that may write some topic).
    fn authorize_any(
        &self,
        principal: &Principal,
        host: IpAddr,
        operation: Operation,
        resource_type: ResourceType,
    ) -> bool;
}

/// Every request allowed: the broker's authorizer until one is configured.
#[derive(Debug, Default)]
pub struct AllowAll;

impl Authorizer for AllowAll {
    fn authorize(&self, _: &Principal, _: IpAddr, _: Action<'_>) -> bool {
        true
    }

    fn authorize_any(&self, _: &Principal, _: IpAddr, _: Operation, _: ResourceType) -> bool {
        true
    }
}

#[cfg(test)]
pub(crate) mod tests;
