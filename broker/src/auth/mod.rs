//! The authorization hook: a handler asks before it acts, naming Apache's
//! operation and resource (`AclOperation`, `ResourceType`) in the order
//! KafkaApis asks, and answers Apache's error when denied. The broker's
//! authorizer allows everything today, as Apache does with no
//! `authorizer.class.name`; StandardAuthorizer's semantics plug in behind
//! the same trait (issue #15). Pure: no I/O.

use std::fmt;
use std::net::IpAddr;

/// Apache's `ResourceType`, the ones the broker's APIs name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ResourceType {
    Topic,
    Group,
    Cluster,
    TransactionalId,
}

/// Apache's `AclOperation`, the ones the broker's APIs ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
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
pub(crate) mod tests {
    use std::collections::HashSet;

    use super::*;

    /// Allows everything but the (operation, resource type, name) denied.
    #[derive(Debug, Default)]
    pub struct DenyOnly(pub HashSet<(Operation, ResourceType, String)>);

    impl DenyOnly {
        pub fn new(denied: &[(Operation, ResourceType, &str)]) -> DenyOnly {
            DenyOnly(
                denied
                    .iter()
                    .map(|(o, r, n)| (*o, *r, n.to_string()))
                    .collect(),
            )
        }
    }

    impl Authorizer for DenyOnly {
        fn authorize(&self, _: &Principal, _: IpAddr, a: Action<'_>) -> bool {
            !self
                .0
                .contains(&(a.operation, a.resource_type, a.name.to_string()))
        }

        fn authorize_any(&self, _: &Principal, _: IpAddr, o: Operation, r: ResourceType) -> bool {
            !self.0.iter().any(|(op, rt, _)| *op == o && *rt == r)
        }
    }

    #[test]
    fn principals_print_as_apache_writes_them() {
        assert_eq!(Principal::anonymous().to_string(), "User:ANONYMOUS");
        assert_eq!(Principal::user("alice").to_string(), "User:alice");
    }
}
