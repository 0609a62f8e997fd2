//! StandardAuthorizer's semantics, ported from Apache's
//! StandardAuthorizerTest, AuthorizerTest and BaseAuthorizerTest under their
//! names.

use std::net::IpAddr;

use crate::auth::acl::{AclBinding, PatternType, Permission};
use crate::auth::standard::{parse_super_users, AuthorizerSettings, StandardAuthorizer};
use crate::auth::{Action, Authorizer, Operation, Principal, ResourceType};

use Operation::*;
use PatternType::{Literal, Prefixed};
use Permission::{Allow, Deny};
use ResourceType::{Cluster, Group, Topic};

fn acl(
    resource_type: ResourceType,
    name: &str,
    pattern: PatternType,
    principal: &str,
    host: &str,
    operation: Operation,
    permission: Permission,
) -> AclBinding {
    AclBinding {
        resource_type,
        name: name.into(),
        pattern,
        principal: principal.into(),
        host: host.into(),
        operation,
        permission,
    }
}

fn authorizer(acls: Vec<AclBinding>) -> StandardAuthorizer {
    authorizer_with(AuthorizerSettings::default(), acls)
}

fn authorizer_with(settings: AuthorizerSettings, acls: Vec<AclBinding>) -> StandardAuthorizer {
    let a = StandardAuthorizer::new(settings);
    a.replace(acls);
    a
}

const LOCALHOST: &str = "127.0.0.1";

fn ip(host: &str) -> IpAddr {
    host.parse().unwrap()
}

/// Whether `user` from `host` may do `op` on the resource.
fn may(
    a: &StandardAuthorizer,
    user: &str,
    host: &str,
    op: Operation,
    t: ResourceType,
    name: &str,
) -> bool {
    a.authorize(
        &Principal::user(user),
        ip(host),
        Action {
            operation: op,
            resource_type: t,
            name,
        },
    )
}

#[test]
fn test_get_configured_super_users() {
    assert!(parse_super_users("").unwrap().is_empty());
    assert!(parse_super_users(" ").unwrap().is_empty());
    let want: Vec<&str> = vec!["User:alice", "User:bob"];
    for value in ["User:bob;User:alice ", ";  User:bob  ;  User:alice "] {
        let got = parse_super_users(value).unwrap();
        assert_eq!(got.iter().map(String::as_str).collect::<Vec<_>>(), want);
    }
    assert_eq!(
        parse_super_users("bob;:alice").unwrap_err(),
        "expected a string in format principalType:principalName but got bob"
    );
}

#[test]
fn test_allow_everyone_if_no_acl_found_config_enabled() {
    let a = authorizer_with(
        AuthorizerSettings {
            allow_if_no_acl: true,
            ..Default::default()
        },
        vec![acl(
            Topic,
            "topic1",
            Literal,
            "User:Alice",
            "*",
            Read,
            Allow,
        )],
    );
    assert!(!may(&a, "Bob", LOCALHOST, Read, Topic, "topic1"));
    assert!(may(&a, "Bob", LOCALHOST, Read, Topic, "topic2"));
}

#[test]
fn test_allow_everyone_if_no_acl_found_config_disabled() {
    let a = authorizer(vec![acl(
        Topic,
        "topic1",
        Literal,
        "User:Alice",
        "*",
        Read,
        Allow,
    )]);
    assert!(!may(&a, "Bob", LOCALHOST, Read, Topic, "topic1"));
    assert!(!may(&a, "Bob", LOCALHOST, Read, Topic, "topic2"));
}

/// testFindResultImplication: which ALLOWs imply Describe and
/// DescribeConfigs, and that a DENY implies nothing.
#[test]
fn test_find_result_implication() {
    let decide = |op: Operation, permission: Permission, asked: Operation| {
        let a = authorizer(vec![acl(
            Topic, "foo_", Prefixed, "User:bob", "*", op, permission,
        )]);
        may(&a, "bob", LOCALHOST, asked, Topic, "foo_bar")
    };
    for op in [Describe, Read, Write, Delete, Alter] {
        assert!(decide(op, Allow, Describe), "{op:?} implies Describe");
    }
    assert!(!decide(Create, Allow, Describe), "Create does not");
    assert!(decide(DescribeConfigs, Allow, DescribeConfigs));
    assert!(decide(AlterConfigs, Allow, DescribeConfigs));
    // A DENY of Read does not deny Describe; with no ALLOW it is still
    // denied, because an ACL covers the resource.
    let a = authorizer(vec![
        acl(Topic, "foo_", Prefixed, "User:bob", "*", Read, Deny),
        acl(Topic, "foo_", Prefixed, "User:bob", "*", Describe, Allow),
    ]);
    assert!(may(&a, "bob", LOCALHOST, Describe, Topic, "foo_bar"));
    assert!(!may(&a, "bob", LOCALHOST, Read, Topic, "foo_bar"));
    let a = authorizer(vec![
        acl(Topic, "foo_", Prefixed, "User:bob", "*", Describe, Deny),
        acl(Topic, "foo_", Prefixed, "User:bob", "*", Read, Allow),
    ]);
    assert!(!may(&a, "bob", LOCALHOST, Describe, Topic, "foo_bar"));
    assert!(may(&a, "bob", LOCALHOST, Read, Topic, "foo_bar"));
}

#[test]
fn test_find_result_principal_matching() {
    let a = authorizer(vec![
        acl(Topic, "foo_", Prefixed, "User:bob", "*", Read, Allow),
        acl(Group, "bar", Literal, "User:*", "*", Read, Deny),
    ]);
    assert!(may(&a, "bob", LOCALHOST, Read, Topic, "foo_bar"));
    assert!(!may(&a, "alice", LOCALHOST, Read, Topic, "foo_bar"));
    assert!(!may(&a, "alice", LOCALHOST, Read, Group, "bar"));
}

#[test]
fn test_simple_authorizations() {
    let a = authorizer(vec![
        acl(Topic, "foo_", Prefixed, "User:bob", "*", Read, Allow),
        acl(Group, "bar", Literal, "User:*", "*", AlterConfigs, Allow),
    ]);
    assert!(may(&a, "bob", LOCALHOST, Read, Topic, "foo_"));
    assert!(may(&a, "fred", LOCALHOST, AlterConfigs, Group, "bar"));
}

#[test]
fn test_deny_precedence_with_operation_all() {
    let a = authorizer(vec![
        acl(Topic, "foo", Literal, "User:alice", "*", All, Deny),
        acl(Topic, "foo", Prefixed, "User:alice", "*", Read, Allow),
        acl(Topic, "foo", Literal, "User:*", "*", All, Deny),
        acl(Topic, "foo", Prefixed, "User:*", "*", Describe, Allow),
    ]);
    assert!(!may(&a, "alice", LOCALHOST, Write, Topic, "foo"));
    assert!(!may(&a, "alice", LOCALHOST, Read, Topic, "foo"));
    assert!(!may(&a, "alice", LOCALHOST, Describe, Topic, "foo"));
    assert!(may(&a, "alice", LOCALHOST, Read, Topic, "foobar"));
    assert!(!may(&a, "bob", LOCALHOST, Describe, Topic, "foo"));
    assert!(!may(&a, "bob", LOCALHOST, Read, Topic, "foo"));
    assert!(!may(&a, "bob", LOCALHOST, Write, Topic, "foo"));
    assert!(may(&a, "bob", LOCALHOST, Describe, Topic, "foobaz"));
    assert!(!may(&a, "bob", LOCALHOST, Read, Topic, "foobaz"));
}

#[test]
fn test_topic_acl_with_operation_all() {
    let a = authorizer(vec![
        acl(Topic, "foo", Literal, "User:*", "*", All, Allow),
        acl(Topic, "bar", Prefixed, "User:alice", "*", All, Allow),
        acl(Topic, "baz", Literal, "User:bob", "*", All, Allow),
    ]);
    assert!(may(&a, "alice", LOCALHOST, Write, Topic, "foo"));
    assert!(may(&a, "alice", LOCALHOST, DescribeConfigs, Topic, "bar"));
    assert!(!may(&a, "alice", LOCALHOST, Describe, Topic, "baz"));
    assert!(may(&a, "bob", LOCALHOST, Write, Topic, "foo"));
    assert!(!may(&a, "bob", LOCALHOST, Read, Topic, "bar"));
    assert!(may(&a, "bob", LOCALHOST, Describe, Topic, "baz"));
    assert!(may(&a, "malory", LOCALHOST, Describe, Topic, "foo"));
    assert!(!may(&a, "malory", LOCALHOST, Write, Topic, "bar"));
    assert!(!may(&a, "malory", LOCALHOST, Read, Topic, "baz"));
}

#[test]
fn test_host_address_acl_validation() {
    let (host1, host2) = ("192.168.1.1", "192.168.1.2");
    let a = authorizer(vec![
        acl(Topic, "foo", Literal, "User:alice", host1, Read, Deny),
        acl(Topic, "foo", Literal, "User:alice", "*", Read, Allow),
        acl(Topic, "bar", Literal, "User:bob", host2, Read, Allow),
        acl(Topic, "bar", Literal, "User:*", LOCALHOST, Describe, Allow),
    ]);
    let row = |user: &str, host: &str| {
        [
            may(&a, user, host, Read, Topic, "foo"),
            may(&a, user, host, Read, Topic, "bar"),
            may(&a, user, host, Describe, Topic, "bar"),
        ]
    };
    assert_eq!(row("alice", LOCALHOST), [true, false, true]);
    assert_eq!(row("alice", host1), [false, false, false]);
    assert_eq!(row("alice", host2), [true, false, false]);
    assert_eq!(row("bob", LOCALHOST), [false, false, true]);
    assert_eq!(row("bob", host1), [false, false, false]);
    assert_eq!(row("bob", host2), [false, true, true]);
}

/// Apache's `addManyAcls`.
fn many_acls() -> Vec<AclBinding> {
    vec![
        acl(Topic, "green2", Literal, "User:*", "*", Read, Allow),
        acl(Topic, "green", Prefixed, "User:bob", "*", Read, Allow),
        acl(Topic, "betamax4", Literal, "User:bob", "*", Read, Allow),
        acl(Topic, "betamax", Literal, "User:bob", "*", Read, Allow),
        acl(Topic, "beta", Prefixed, "User:*", "*", Read, Allow),
        acl(Topic, "alpha", Prefixed, "User:*", "*", Read, Allow),
        acl(Topic, "alp", Prefixed, "User:bob", "*", Read, Deny),
        acl(Group, "*", Literal, "User:bob", "*", Write, Allow),
        acl(Group, "wheel", Literal, "User:*", "*", Write, Deny),
    ]
}

#[test]
fn test_authorization_with_many_acls() {
    let a = authorizer(many_acls());
    assert!(may(&a, "bob", LOCALHOST, Read, Topic, "green1"));
    assert!(!may(&a, "bob", LOCALHOST, Write, Group, "wheel"));
    assert!(!may(&a, "bob", LOCALHOST, Read, Topic, "alpha"));
    assert!(may(&a, "bob", LOCALHOST, Write, Group, "arbitrary"));
    assert!(!may(&a, "bob", LOCALHOST, Read, Topic, "ala"));
}

#[test]
fn test_prefix_acls() {
    let a = authorizer(vec![
        acl(Topic, "fooa", Prefixed, "User:alice", "*", All, Allow),
        acl(Topic, "foobar", Literal, "User:bob", "*", All, Allow),
        acl(Topic, "f", Prefixed, "User:bob", "*", All, Allow),
    ]);
    assert!(may(&a, "bob", LOCALHOST, Write, Topic, "foobarr"));
    assert!(!may(&a, "bob", LOCALHOST, Read, Topic, "goobar"));
    assert!(may(&a, "bob", LOCALHOST, Read, Topic, "fooa"));
    assert!(may(&a, "alice", LOCALHOST, Describe, Topic, "fooa"));
    assert!(!may(&a, "alice", LOCALHOST, Write, Topic, "bar"));
    assert!(!may(&a, "alice", LOCALHOST, Read, Topic, "baz"));
}

/// AuthorizerTest's testSuperUserHasAccess: a super user passes a DENY ALL.
#[test]
fn test_super_user_has_access() {
    let a = authorizer_with(
        AuthorizerSettings {
            super_users: parse_super_users("User:superuser1; User:superuser2").unwrap(),
            allow_if_no_acl: false,
        },
        vec![acl(Topic, "t", Literal, "User:*", "*", All, Deny)],
    );
    assert!(may(&a, "superuser1", LOCALHOST, Read, Topic, "t"));
    assert!(may(
        &a,
        "superuser2",
        LOCALHOST,
        Write,
        Cluster,
        "kafka-cluster"
    ));
    assert!(!may(&a, "alice", LOCALHOST, Read, Topic, "t"));
}

/// AuthorizerTest's testWildCardAcls.
#[test]
fn test_wild_card_acls() {
    let host = "192.168.0.1";
    let a = authorizer(vec![acl(
        Topic,
        "*",
        Literal,
        "User:alice",
        "*",
        Read,
        Allow,
    )]);
    assert!(may(&a, "alice", host, Read, Topic, "foo"));
    assert!(!may(&a, "alice", host, Write, Topic, "foo"));
    let a = authorizer(vec![
        acl(Topic, "*", Literal, "User:alice", "*", Read, Allow),
        acl(Topic, "foo", Literal, "User:alice", host, Write, Allow),
        acl(Topic, "*", Literal, "User:alice", host, Write, Deny),
    ]);
    assert!(
        !may(&a, "alice", host, Write, Topic, "foo"),
        "a wildcard DENY wins"
    );
}

/// AuthorizerTest's testAclInheritance, on the cluster resource.
#[test]
fn test_acl_inheritance() {
    let implied = |granted: Operation, permission: Permission| -> Vec<Operation> {
        let a = authorizer(vec![acl(
            Cluster,
            "kafka-cluster",
            Literal,
            "User:alice",
            "*",
            granted,
            permission,
        )]);
        Operation::ALL
            .into_iter()
            .filter(|op| *op != All)
            .filter(|op| may(&a, "alice", LOCALHOST, *op, Cluster, "kafka-cluster"))
            .collect()
    };
    let every: Vec<Operation> = Operation::ALL.into_iter().filter(|o| *o != All).collect();
    assert_eq!(implied(All, Allow), every);
    assert!(implied(All, Deny).is_empty());
    for op in [Read, Write, Delete, Alter] {
        assert_eq!(implied(op, Allow), [op, Describe]);
    }
    assert_eq!(
        implied(AlterConfigs, Allow),
        [DescribeConfigs, AlterConfigs]
    );
    assert!(implied(Describe, Deny).is_empty());
    assert!(implied(DescribeConfigs, Deny).is_empty());
}

/// AuthorizerTest's testSingleCharacterResourceAcls.
#[test]
fn test_single_character_resource_acls() {
    let a = authorizer(vec![acl(
        Topic,
        "f",
        Literal,
        "User:alice",
        "*",
        Read,
        Allow,
    )]);
    assert!(may(&a, "alice", LOCALHOST, Read, Topic, "f"));
    assert!(!may(&a, "alice", LOCALHOST, Read, Topic, "foo"));
    let a = authorizer(vec![acl(
        Topic,
        "_",
        Prefixed,
        "User:alice",
        "*",
        Read,
        Allow,
    )]);
    assert!(may(&a, "alice", LOCALHOST, Read, Topic, "_foo"));
    assert!(may(&a, "alice", LOCALHOST, Read, Topic, "_"));
    assert!(!may(&a, "alice", LOCALHOST, Read, Topic, "foo_"));
}

/// AuthorizerTest's testAuthorizeWithEmptyResourceName.
#[test]
fn test_authorize_with_empty_resource_name() {
    let a = authorizer(vec![]);
    assert!(!may(&a, "alice", LOCALHOST, Read, Group, ""));
    let a = authorizer(vec![acl(
        Group,
        "*",
        Literal,
        "User:alice",
        "*",
        Read,
        Allow,
    )]);
    assert!(may(&a, "alice", LOCALHOST, Read, Group, ""));
}

/// StandardAuthorizerPropertyTest's four properties, over every prefix of
/// a few names: a matching DENY (prefixed or literal) wins over any ALLOW;
/// a matching ALLOW with only unrelated DENYs allows.
#[test]
fn matching_deny_overrides_all_allow_rules_and_allow_stands_alone() {
    for topic in ["orders", "o", "orders-eu-1", "ünïcödé"] {
        let ends: Vec<usize> = topic
            .char_indices()
            .map(|(i, _)| i)
            .chain([topic.len()])
            .collect();
        let allows: Vec<AclBinding> = ends
            .iter()
            .map(|&e| acl(Topic, &topic[..e], Prefixed, "User:*", "*", Write, Allow))
            .chain([acl(Topic, topic, Literal, "User:*", "*", Write, Allow)])
            .collect();
        for &e in &ends {
            let mut acls = allows.clone();
            acls.push(acl(
                Topic,
                &topic[..e],
                Prefixed,
                "User:*",
                "*",
                Write,
                Deny,
            ));
            assert!(!may(&authorizer(acls), "u", LOCALHOST, Write, Topic, topic));
        }
        let mut acls = allows.clone();
        acls.push(acl(Topic, topic, Literal, "User:*", "*", Write, Deny));
        assert!(!may(&authorizer(acls), "u", LOCALHOST, Write, Topic, topic));
        let mut acls = vec![allows[allows.len() - 1].clone()];
        acls.push(acl(
            Topic,
            "x-unrelated",
            Prefixed,
            "User:*",
            "*",
            Write,
            Deny,
        ));
        assert!(may(&authorizer(acls), "u", LOCALHOST, Write, Topic, topic));
    }
}

/// BaseAuthorizerTest's authorizeByResourceType cases.
fn may_some(a: &StandardAuthorizer, user: &str, op: Operation, t: ResourceType) -> bool {
    a.authorize_any(&Principal::user(user), ip(LOCALHOST), op, t)
}

#[test]
fn test_authorize_by_resource_type_deny_takes_precedence() {
    let a = authorizer(vec![
        acl(Topic, "abc", Literal, "User:alice", "*", Write, Allow),
        acl(Topic, "abc", Literal, "User:alice", "*", Write, Deny),
    ]);
    assert!(!may_some(&a, "alice", Write, Topic));
}

#[test]
fn test_authorize_by_resource_type_prefixed_resource_deny_dominate() {
    let mut acls = vec![acl(
        Topic,
        "abcde",
        Literal,
        "User:alice",
        "*",
        Write,
        Allow,
    )];
    assert!(may_some(&authorizer(acls.clone()), "alice", Write, Topic));
    acls.push(acl(Topic, "abcd", Prefixed, "User:alice", "*", Write, Deny));
    assert!(!may_some(&authorizer(acls.clone()), "alice", Write, Topic));
    acls.push(acl(Topic, "abc", Prefixed, "User:alice", "*", Write, Allow));
    assert!(may_some(&authorizer(acls.clone()), "alice", Write, Topic));
    acls.push(acl(Topic, "a", Prefixed, "User:alice", "*", Write, Deny));
    assert!(!may_some(&authorizer(acls.clone()), "alice", Write, Topic));
    acls.push(acl(Topic, "ab", Prefixed, "User:alice", "*", Write, Allow));
    assert!(!may_some(&authorizer(acls), "alice", Write, Topic));
}

#[test]
fn test_authorize_by_resource_type_wildcard_resource_deny_dominate() {
    let a = authorizer(vec![
        acl(Topic, "abc", Literal, "User:alice", "*", Write, Allow),
        acl(Topic, "abc", Prefixed, "User:alice", "*", Write, Allow),
        acl(Topic, "*", Literal, "User:alice", "*", Write, Deny),
    ]);
    assert!(!may_some(&a, "alice", Write, Topic));
}

#[test]
fn test_authorize_by_resource_type_isolation_unrelated_deny_wont_dominate_allow() {
    let a = authorizer(vec![
        acl(Topic, "abc", Prefixed, "User:alice", "*", Write, Allow),
        acl(Topic, "def", Literal, "User:alice", "*", Write, Deny),
        acl(Group, "abc", Prefixed, "User:alice", "*", Write, Deny),
        acl(Topic, "abc", Literal, "User:bob", "*", Write, Deny),
    ]);
    assert!(may_some(&a, "alice", Write, Topic));
    assert!(!may_some(&a, "alice", Write, Group));
}

#[test]
fn test_authorize_by_resource_type_with_all_operation_ace() {
    let a = authorizer(vec![acl(
        Topic,
        "abc",
        Literal,
        "User:alice",
        "*",
        All,
        Allow,
    )]);
    assert!(may_some(&a, "alice", Write, Topic));
    // Not implied: an ALLOW of Write gives no Describe by type.
    let a = authorizer(vec![acl(
        Topic,
        "abc",
        Literal,
        "User:alice",
        "*",
        Write,
        Allow,
    )]);
    assert!(!may_some(&a, "alice", Describe, Topic));
}

#[test]
fn test_authorize_by_resource_type_super_user_has_access() {
    let a = authorizer_with(
        AuthorizerSettings {
            super_users: parse_super_users("User:superuser1").unwrap(),
            allow_if_no_acl: false,
        },
        vec![acl(Topic, "*", Literal, "User:superuser1", "*", All, Deny)],
    );
    assert!(may_some(&a, "superuser1", Write, Topic));
}

#[test]
fn test_authorize_by_resource_type_no_acl_found_override() {
    let a = authorizer_with(
        AuthorizerSettings {
            allow_if_no_acl: true,
            ..Default::default()
        },
        vec![],
    );
    assert!(may_some(&a, "alice", Read, Topic));
    assert!(may_some(&a, "alice", Write, Topic));
}
