//! ACLs as Apache's admin API speaks of them: a binding of a resource
//! pattern (type, name, LITERAL or PREFIXED) to an entry (principal, host,
//! operation, ALLOW or DENY), and the filters DescribeAcls and DeleteAcls
//! match bindings with (`ResourcePatternFilter`, `AccessControlEntryFilter`).
//! Pure: no I/O.

use serde::{Deserialize, Serialize};

use super::{Operation, ResourceType};

/// The one name of a LITERAL pattern that matches every resource.
pub const WILDCARD_RESOURCE: &str = "*";
/// The principal of an entry that matches every user.
pub const WILDCARD_PRINCIPAL: &str = "User:*";
/// The host of an entry that matches every client address.
pub const WILDCARD_HOST: &str = "*";

/// Apache's `PatternType` of a stored ACL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum PatternType {
    Literal,
    Prefixed,
}

impl PatternType {
    pub fn code(self) -> i8 {
        match self {
            PatternType::Literal => 3,
            PatternType::Prefixed => 4,
        }
    }
}

/// Apache's `AclPermissionType` of a stored ACL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Permission {
    Deny,
    Allow,
}

impl Permission {
    pub fn code(self) -> i8 {
        match self {
            Permission::Deny => 2,
            Permission::Allow => 3,
        }
    }

    pub fn from_code(code: i8) -> Option<Permission> {
        match code {
            2 => Some(Permission::Deny),
            3 => Some(Permission::Allow),
            _ => None,
        }
    }
}

/// One ACL: who (`principal`, `host`) may or may not (`permission`) do
/// `operation` on the resources a pattern matches.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct AclBinding {
    #[serde(with = "resource_type_code")]
    pub resource_type: ResourceType,
    pub name: String,
    pub pattern: PatternType,
    /// `Type:name`, e.g. `User:alice`; [`WILDCARD_PRINCIPAL`] for everyone.
    pub principal: String,
    /// A client address as text, or [`WILDCARD_HOST`].
    pub host: String,
    #[serde(with = "operation_code")]
    pub operation: Operation,
    pub permission: Permission,
}

/// What a filter asks of a pattern type (Apache's filter-side
/// `PatternType`s: ANY, MATCH, LITERAL, PREFIXED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatternFilter {
    /// Every pattern type; a name must be equal.
    Any,
    /// Every pattern that would match the name as a resource.
    Match,
    /// This pattern type only; a name must be equal.
    Exactly(PatternType),
}

impl PatternFilter {
    pub fn from_code(code: i8) -> Option<PatternFilter> {
        match code {
            1 => Some(PatternFilter::Any),
            2 => Some(PatternFilter::Match),
            3 => Some(PatternFilter::Exactly(PatternType::Literal)),
            4 => Some(PatternFilter::Exactly(PatternType::Prefixed)),
            _ => None,
        }
    }
}

/// Apache's `AclBindingFilter`: `None` in a field is ANY (or a null name,
/// principal or host).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AclFilter {
    pub resource_type: Option<ResourceType>,
    pub name: Option<String>,
    pub pattern: PatternFilter,
    pub principal: Option<String>,
    pub host: Option<String>,
    pub operation: Option<Operation>,
    pub permission: Option<Permission>,
}

impl AclFilter {
    /// The filter every ACL matches.
    pub fn any() -> AclFilter {
        AclFilter {
            resource_type: None,
            name: None,
            pattern: PatternFilter::Any,
            principal: None,
            host: None,
            operation: None,
            permission: None,
        }
    }

    /// `ResourcePatternFilter.matches` and `AccessControlEntryFilter.matches`.
    pub fn matches(&self, acl: &AclBinding) -> bool {
        let same = |want: &Option<String>, have: &str| want.as_deref().is_none_or(|w| w == have);
        self.resource_type.is_none_or(|t| t == acl.resource_type)
            && match self.pattern {
                PatternFilter::Exactly(p) => p == acl.pattern,
                PatternFilter::Any | PatternFilter::Match => true,
            }
            && match (&self.name, self.pattern) {
                (None, _) => true,
                (Some(name), PatternFilter::Match) => match acl.pattern {
                    PatternType::Literal => *name == acl.name || acl.name == WILDCARD_RESOURCE,
                    PatternType::Prefixed => name.starts_with(&acl.name),
                },
                (Some(name), _) => *name == acl.name,
            }
            && same(&self.principal, &acl.principal)
            && same(&self.host, &acl.host)
            && self.operation.is_none_or(|o| o == acl.operation)
            && self.permission.is_none_or(|p| p == acl.permission)
    }
}

/// The codes a request names an ACL by, before validation.
#[derive(Clone, Copy, Debug)]
pub struct WireAcl<'a> {
    pub resource_type: i8,
    pub name: Option<&'a str>,
    pub pattern: i8,
    pub principal: Option<&'a str>,
    pub host: Option<&'a str>,
    pub operation: i8,
    pub permission: i8,
}

const ANY: i8 = 1;

/// A CreateAcls creation as Apache validates it (`AclApis`,
/// `AclControlManager.validateNewAcl`), with its messages; the principal
/// must also read `Type:name` (Apache checks that only in its clients, and
/// an ACL without one breaks its authorizer).
pub fn binding_from_wire(w: WireAcl<'_>) -> Result<AclBinding, String> {
    let resource_type = ResourceType::from_code(w.resource_type)
        .ok_or_else(|| format!("Invalid resourceType {}", w.resource_type))?;
    let name = w.name.unwrap_or_default();
    if name.is_empty() {
        return Err("Invalid empty resource name".into());
    }
    if resource_type == ResourceType::Cluster && name != super::CLUSTER_NAME {
        return Err(format!(
            "The only valid name for the CLUSTER resource is {}",
            super::CLUSTER_NAME
        ));
    }
    let pattern = match PatternFilter::from_code(w.pattern) {
        Some(PatternFilter::Exactly(p)) => p,
        _ => return Err(format!("Invalid patternType {}", w.pattern)),
    };
    let operation = Operation::from_code(w.operation)
        .ok_or_else(|| format!("Invalid operation {}", w.operation))?;
    let permission = Permission::from_code(w.permission)
        .ok_or_else(|| format!("Invalid permissionType {}", w.permission))?;
    let principal = w.principal.unwrap_or_default();
    if !matches!(principal.split_once(':'), Some((kind, _)) if !kind.is_empty()) {
        return Err(format!(
            "expected a principal in format principalType:principalName but got {principal}"
        ));
    }
    Ok(AclBinding {
        resource_type,
        name: name.to_string(),
        pattern,
        principal: principal.to_string(),
        host: w.host.unwrap_or(WILDCARD_HOST).to_string(),
        operation,
        permission,
    })
}

/// A DescribeAcls or DeleteAcls filter: ANY (1) leaves a field open;
/// UNKNOWN (0) and other codes are refused.
pub fn filter_from_wire(w: WireAcl<'_>) -> Result<AclFilter, String> {
    let open = |code: i8| code == ANY;
    let resource_type = if open(w.resource_type) {
        None
    } else {
        Some(
            ResourceType::from_code(w.resource_type)
                .ok_or_else(|| format!("Invalid resourceType {}", w.resource_type))?,
        )
    };
    let pattern = PatternFilter::from_code(w.pattern)
        .ok_or_else(|| format!("Invalid patternType {}", w.pattern))?;
    let operation = if open(w.operation) {
        None
    } else {
        Some(
            Operation::from_code(w.operation)
                .ok_or_else(|| format!("Invalid operation {}", w.operation))?,
        )
    };
    let permission = if open(w.permission) {
        None
    } else {
        Some(
            Permission::from_code(w.permission)
                .ok_or_else(|| format!("Invalid permissionType {}", w.permission))?,
        )
    };
    Ok(AclFilter {
        resource_type,
        name: w.name.map(str::to_string),
        pattern,
        principal: w.principal.map(str::to_string),
        host: w.host.map(str::to_string),
        operation,
        permission,
    })
}

/// Resource types stored by Apache's code, so the file reads as the wire.
mod resource_type_code {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use super::ResourceType;

    pub fn serialize<S: Serializer>(t: &ResourceType, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i8(t.code())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<ResourceType, D::Error> {
        let code = i8::deserialize(d)?;
        ResourceType::from_code(code)
            .ok_or_else(|| D::Error::custom(format!("unknown resource type {code}")))
    }
}

/// Operations stored by Apache's code.
mod operation_code {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use super::Operation;

    pub fn serialize<S: Serializer>(o: &Operation, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i8(o.code())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Operation, D::Error> {
        let code = i8::deserialize(d)?;
        Operation::from_code(code)
            .ok_or_else(|| D::Error::custom(format!("unknown operation {code}")))
    }
}

#[cfg(test)]
mod tests;
