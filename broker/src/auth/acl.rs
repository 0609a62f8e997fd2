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
mod tests {
    use super::*;

    fn acl(pattern: PatternType, name: &str) -> AclBinding {
        AclBinding {
            resource_type: ResourceType::Topic,
            name: name.into(),
            pattern,
            principal: "User:alice".into(),
            host: "*".into(),
            operation: Operation::Read,
            permission: Permission::Allow,
        }
    }

    fn filter(pattern: PatternFilter, name: &str) -> AclFilter {
        AclFilter {
            name: Some(name.into()),
            pattern,
            ..AclFilter::any()
        }
    }

    /// ResourcePatternFilterTest's cases on names and pattern types.
    #[test]
    fn resource_pattern_filters_match_as_apaches() {
        use PatternFilter::*;
        use PatternType::*;
        // shouldMatchLiteralWildcardIfFilterHasPatternTypeOfMatch
        assert!(filter(Match, "Name").matches(&acl(Literal, "*")));
        // shouldNotMatchLiteralWildcardIfFilterHasPatternTypeOfAny
        assert!(!filter(Any, "Name").matches(&acl(Literal, "*")));
        // shouldMatchPrefixedIfNamePrefixedAnyFilterTypeIsMatch
        assert!(filter(Match, "Name").matches(&acl(Prefixed, "Na")));
        // shouldNotMatchIfBothPrefixedAndFilterIsPrefixOfResource
        assert!(!filter(Exactly(Prefixed), "Na").matches(&acl(Prefixed, "Name")));
        // shouldMatchWhereResourceTypeIsAny / ...NameIsAny
        assert!(AclFilter::any().matches(&acl(Prefixed, "Name")));
        // shouldNotMatchIfDifferentName
        assert!(!filter(Exactly(Literal), "Different").matches(&acl(Literal, "Name")));
        // shouldNotMatchIfDifferentNameCase
        assert!(!filter(Exactly(Literal), "NAME").matches(&acl(Literal, "Name")));
        // shouldNotMatchIfDifferentPatternType
        assert!(!filter(Exactly(Literal), "Name").matches(&acl(Prefixed, "Name")));
        // shouldMatchLiteralIfExactMatch / shouldMatchPrefixedIfExactMatch
        assert!(filter(Exactly(Literal), "Name").matches(&acl(Literal, "Name")));
        assert!(filter(Exactly(Prefixed), "Name").matches(&acl(Prefixed, "Name")));
        // shouldMatchLiteralIfNameMatchesAndFilterIsOnPatternTypeAny
        assert!(filter(Any, "Name").matches(&acl(Literal, "Name")));
        // shouldNotMatchPrefixedIfNamePrefixedAnyFilterTypeIsAny
        assert!(!filter(Any, "Name").matches(&acl(Prefixed, "Na")));
        // A MATCH filter is not a prefix search.
        assert!(!filter(Match, "Na").matches(&acl(Literal, "Name")));
        let mut other_type = acl(Literal, "Name");
        other_type.resource_type = ResourceType::Group;
        let topic_filter = AclFilter {
            resource_type: Some(ResourceType::Topic),
            ..AclFilter::any()
        };
        assert!(!topic_filter.matches(&other_type));
    }

    /// AccessControlEntryFilter: principals and hosts are compared as
    /// strings (a `User:*` filter matches only `User:*` entries).
    #[test]
    fn entry_filters_compare_exactly() {
        let f = AclFilter {
            principal: Some("User:*".into()),
            ..AclFilter::any()
        };
        assert!(!f.matches(&acl(PatternType::Literal, "t")));
        let f = AclFilter {
            principal: Some("User:alice".into()),
            operation: Some(Operation::Read),
            permission: Some(Permission::Allow),
            host: Some("*".into()),
            ..AclFilter::any()
        };
        assert!(f.matches(&acl(PatternType::Literal, "t")));
        let f = AclFilter {
            operation: Some(Operation::Write),
            ..AclFilter::any()
        };
        assert!(!f.matches(&acl(PatternType::Literal, "t")));
    }

    fn wire<'a>(resource_type: i8, name: &'a str, pattern: i8, principal: &'a str) -> WireAcl<'a> {
        WireAcl {
            resource_type,
            name: Some(name),
            pattern,
            principal: Some(principal),
            host: Some("*"),
            operation: 3,
            permission: 3,
        }
    }

    /// AclControlManagerTest's testValidateNewAcl, and AclApis' checks.
    #[test]
    fn test_validate_new_acl() {
        assert!(binding_from_wire(wire(2, "t", 3, "User:alice")).is_ok());
        let refused = |w: WireAcl<'_>| binding_from_wire(w).unwrap_err();
        assert_eq!(refused(wire(1, "t", 3, "User:a")), "Invalid resourceType 1");
        assert_eq!(refused(wire(0, "t", 3, "User:a")), "Invalid resourceType 0");
        assert_eq!(refused(wire(2, "t", 2, "User:a")), "Invalid patternType 2");
        assert_eq!(refused(wire(2, "t", 1, "User:a")), "Invalid patternType 1");
        assert_eq!(
            refused(wire(2, "", 3, "User:a")),
            "Invalid empty resource name"
        );
        assert_eq!(
            refused(wire(4, "other", 3, "User:a")),
            "The only valid name for the CLUSTER resource is kafka-cluster"
        );
        assert!(binding_from_wire(wire(4, "kafka-cluster", 3, "User:a")).is_ok());
        assert_eq!(
            refused(WireAcl {
                operation: 1,
                ..wire(2, "t", 3, "User:a")
            }),
            "Invalid operation 1"
        );
        assert_eq!(
            refused(WireAcl {
                permission: 1,
                ..wire(2, "t", 3, "User:a")
            }),
            "Invalid permissionType 1"
        );
        assert!(refused(wire(2, "t", 3, "alice")).starts_with("expected a principal"));
    }

    /// AclControlManagerTest's testValidateFilter: UNKNOWN is refused, ANY
    /// leaves a field open.
    #[test]
    fn test_validate_filter() {
        let any = WireAcl {
            resource_type: 1,
            name: None,
            pattern: 1,
            principal: None,
            host: None,
            operation: 1,
            permission: 1,
        };
        assert_eq!(filter_from_wire(any).unwrap(), AclFilter::any());
        assert!(filter_from_wire(WireAcl { pattern: 0, ..any }).is_err());
        assert!(filter_from_wire(WireAcl {
            resource_type: 0,
            ..any
        })
        .is_err());
        assert!(filter_from_wire(WireAcl {
            operation: 0,
            ..any
        })
        .is_err());
        assert!(filter_from_wire(WireAcl {
            permission: 0,
            ..any
        })
        .is_err());
        let f = filter_from_wire(WireAcl {
            pattern: 2,
            name: Some("x"),
            ..any
        })
        .unwrap();
        assert_eq!(f.pattern, PatternFilter::Match);
    }

    #[test]
    fn codes_round_trip_and_bindings_store_as_codes() {
        for o in Operation::ALL {
            assert_eq!(Operation::from_code(o.code()), Some(o));
        }
        for t in ResourceType::ALL {
            assert_eq!(ResourceType::from_code(t.code()), Some(t));
        }
        assert_eq!(Operation::from_code(1), None, "ANY is a filter's");
        assert_eq!(ResourceType::from_code(0), None, "UNKNOWN");
        let a = acl(PatternType::Prefixed, "orders-");
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.contains("\"resource_type\":2"), "{json}");
        assert!(json.contains("\"operation\":3"), "{json}");
        assert_eq!(serde_json::from_str::<AclBinding>(&json).unwrap(), a);
    }
}
