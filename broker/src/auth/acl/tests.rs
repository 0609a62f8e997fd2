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
