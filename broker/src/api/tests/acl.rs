//! The ACL APIs on the wire: SECURITY_DISABLED with no authorizer; with
//! the StandardAuthorizer, creation with Apache's validation, description
//! and deletion by filter, Cluster ALTER / DESCRIBE asked first, and the
//! ACLs shared through the volume with a second broker.

use std::sync::Arc;

use kaas_shared::{Assignment, BrokerInfo};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError as E;

use crate::api::*;
use crate::auth::standard::{parse_super_users, AuthorizerSettings};
use crate::auth::{Action, Operation, Principal, ResourceType};
use crate::broker::{Broker, BrokerConfig};

/// A one-broker cluster, with the StandardAuthorizer (super user
/// `User:admin`) when `standard`.
pub(in crate::api) fn broker(dir: &std::path::Path, standard: bool) -> Arc<Broker> {
    let mut config = BrokerConfig::new(0, dir.into(), "127.0.0.1", 9092);
    if standard {
        config.standard_authorizer = Some(AuthorizerSettings {
            super_users: parse_super_users("User:admin").unwrap(),
            allow_if_no_acl: false,
        });
    }
    let broker = crate::serve::open(config).unwrap();
    broker.apply_assignment(Assignment {
        version: 1,
        brokers: vec![BrokerInfo::alive(0, "127.0.0.1", 9092)],
        ..Default::default()
    });
    broker
}

/// One request from `user` at `version`: its answer.
pub(in crate::api) async fn call_as(
    broker: &Arc<Broker>,
    user: &str,
    version: i16,
    req: RequestKind,
) -> ResponseKind {
    let ctx = RequestContext {
        broker: broker.clone(),
        api_version: version,
        client_id: "test".into(),
        client_addr: "127.0.0.1:1".parse().unwrap(),
        listener: broker.listeners[0].clone(),
        principal: Principal::user(user),
        applied: Default::default(),
    };
    handle(ctx, req).await.expect("a response")
}

fn s(v: &'static str) -> StrBytes {
    StrBytes::from_static_str(v)
}

#[allow(clippy::too_many_arguments)]
fn creation(
    resource_type: i8,
    name: &'static str,
    pattern: i8,
    principal: &'static str,
    operation: i8,
    permission: i8,
) -> create_acls_request::AclCreation {
    create_acls_request::AclCreation::default()
        .with_resource_type(resource_type)
        .with_resource_name(s(name))
        .with_resource_pattern_type(pattern)
        .with_principal(s(principal))
        .with_host(s("*"))
        .with_operation(operation)
        .with_permission_type(permission)
}

const TOPIC: i8 = 2;
const GROUP: i8 = 3;
const CLUSTER: i8 = 4;
const ANY: i8 = 1;
const MATCH: i8 = 2;
const LITERAL: i8 = 3;
const PREFIXED: i8 = 4;
const READ: i8 = 3;
const WRITE: i8 = 4;
const DENY: i8 = 2;
const ALLOW: i8 = 3;

async fn create(
    broker: &Arc<Broker>,
    user: &str,
    c: Vec<create_acls_request::AclCreation>,
) -> Vec<i16> {
    let ResponseKind::CreateAcls(r) = call_as(
        broker,
        user,
        3,
        RequestKind::CreateAcls(CreateAclsRequest::default().with_creations(c)),
    )
    .await
    else {
        panic!("not a CreateAcls response")
    };
    r.results.iter().map(|r| r.error_code).collect()
}

/// (resource type, name, pattern, principal, operation, permission) of
/// every ACL a DescribeAcls answers, or its error.
async fn describe(
    broker: &Arc<Broker>,
    user: &str,
    resource_type: i8,
    name: Option<&'static str>,
    pattern: i8,
) -> Result<Vec<(i8, String, i8, String, i8, i8)>, i16> {
    let ResponseKind::DescribeAcls(r) = call_as(
        broker,
        user,
        3,
        RequestKind::DescribeAcls(
            DescribeAclsRequest::default()
                .with_resource_type_filter(resource_type)
                .with_resource_name_filter(name.map(s))
                .with_principal_filter(None)
                .with_host_filter(None)
                .with_pattern_type_filter(pattern)
                .with_operation(ANY)
                .with_permission_type(ANY),
        ),
    )
    .await
    else {
        panic!("not a DescribeAcls response")
    };
    if r.error_code != 0 {
        return Err(r.error_code);
    }
    Ok(r.resources
        .iter()
        .flat_map(|res| {
            res.acls.iter().map(move |a| {
                (
                    res.resource_type,
                    res.resource_name.to_string(),
                    res.pattern_type,
                    a.principal.to_string(),
                    a.operation,
                    a.permission_type,
                )
            })
        })
        .collect())
}

fn may(broker: &Arc<Broker>, user: &str, op: Operation, t: ResourceType, name: &str) -> bool {
    broker.authorizer.authorize(
        &Principal::user(user),
        "127.0.0.1".parse().unwrap(),
        Action {
            operation: op,
            resource_type: t,
            name,
        },
    )
}

#[tokio::test]
async fn without_an_authorizer_the_acl_apis_answer_security_disabled() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), false);
    assert_eq!(
        describe(&b, "anyone", ANY, None, ANY).await,
        Err(E::SecurityDisabled.code())
    );
    let codes = create(
        &b,
        "anyone",
        vec![creation(TOPIC, "t", LITERAL, "User:a", READ, ALLOW)],
    )
    .await;
    assert_eq!(codes, [E::SecurityDisabled.code()]);
}

#[tokio::test]
async fn acls_are_created_described_enforced_shared_and_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), true);
    // Only a principal with Cluster ALTER / DESCRIBE manages ACLs.
    let codes = create(
        &b,
        "bob",
        vec![creation(TOPIC, "t", LITERAL, "User:bob", READ, ALLOW)],
    )
    .await;
    assert_eq!(codes, [E::ClusterAuthorizationFailed.code()]);
    assert_eq!(
        describe(&b, "bob", ANY, None, ANY).await,
        Err(E::ClusterAuthorizationFailed.code())
    );

    let codes = create(
        &b,
        "admin",
        vec![
            creation(TOPIC, "orders", LITERAL, "User:alice", READ, ALLOW),
            creation(
                CLUSTER,
                "not-the-cluster",
                LITERAL,
                "User:alice",
                READ,
                ALLOW,
            ),
            creation(TOPIC, "ord", PREFIXED, "User:*", WRITE, DENY),
            creation(GROUP, "g", LITERAL, "User:alice", READ, ALLOW),
            creation(TOPIC, "x", MATCH, "User:alice", READ, ALLOW),
            creation(TOPIC, "x", LITERAL, "alice", READ, ALLOW),
        ],
    )
    .await;
    let invalid = E::InvalidRequest.code();
    assert_eq!(codes, [0, invalid, 0, 0, invalid, invalid]);

    // Enforced at once on this broker.
    assert!(may(
        &b,
        "alice",
        Operation::Read,
        ResourceType::Topic,
        "orders"
    ));
    assert!(may(
        &b,
        "alice",
        Operation::Describe,
        ResourceType::Topic,
        "orders"
    ));
    assert!(!may(
        &b,
        "alice",
        Operation::Write,
        ResourceType::Topic,
        "orders"
    ));
    assert!(!may(
        &b,
        "bob",
        Operation::Read,
        ResourceType::Topic,
        "orders"
    ));
    assert!(may(
        &b,
        "admin",
        Operation::Write,
        ResourceType::Topic,
        "orders"
    ));

    // MATCH: the literal and the prefixed ACL that cover "orders".
    let topic_acls = describe(&b, "admin", TOPIC, Some("orders"), MATCH)
        .await
        .unwrap();
    assert_eq!(
        topic_acls,
        [
            (TOPIC, "ord".into(), PREFIXED, "User:*".into(), WRITE, DENY),
            (
                TOPIC,
                "orders".into(),
                LITERAL,
                "User:alice".into(),
                READ,
                ALLOW
            ),
        ]
    );
    assert_eq!(
        describe(&b, "admin", ANY, None, ANY).await.unwrap().len(),
        3
    );

    // A second broker on the volume has them from the file.
    let other = broker(dir.path(), true);
    assert!(may(
        &other,
        "alice",
        Operation::Read,
        ResourceType::Topic,
        "orders"
    ));

    // Delete by filter: every topic ACL; the answer lists what matched.
    let ResponseKind::DeleteAcls(r) = call_as(
        &b,
        "admin",
        3,
        RequestKind::DeleteAcls(DeleteAclsRequest::default().with_filters(vec![
            delete_acls_request::DeleteAclsFilter::default()
                .with_resource_name_filter(None)
                .with_principal_filter(None)
                .with_host_filter(None)
                .with_resource_type_filter(TOPIC)
                .with_pattern_type_filter(ANY)
                .with_operation(ANY)
                .with_permission_type(ANY),
            delete_acls_request::DeleteAclsFilter::default()
                .with_resource_type_filter(0)
                .with_pattern_type_filter(ANY)
                .with_operation(ANY)
                .with_permission_type(ANY),
        ])),
    )
    .await
    else {
        panic!("not a DeleteAcls response")
    };
    assert_eq!(r.filter_results[0].error_code, 0);
    assert_eq!(r.filter_results[0].matching_acls.len(), 2);
    assert_eq!(
        r.filter_results[1].error_code, invalid,
        "UNKNOWN is refused"
    );
    assert!(!may(
        &b,
        "alice",
        Operation::Read,
        ResourceType::Topic,
        "orders"
    ));
    assert_eq!(
        describe(&b, "admin", ANY, None, ANY).await.unwrap(),
        [(GROUP, "g".into(), LITERAL, "User:alice".into(), READ, ALLOW)]
    );
    // The other broker follows at its next look.
    assert!(may(
        &other,
        "alice",
        Operation::Read,
        ResourceType::Topic,
        "orders"
    ));
    other.acls.as_ref().unwrap().refresh().unwrap();
    assert!(!may(
        &other,
        "alice",
        Operation::Read,
        ResourceType::Topic,
        "orders"
    ));
}

/// SCRAM users altered through one broker: described there, followed by a
/// second broker on the volume, and the file on the volume holds keys, not
/// the password.
#[tokio::test]
async fn scram_users_are_shared_through_the_volume_and_hold_no_password() {
    use crate::auth::scram::{salted_password, Mechanism};
    use crate::auth::scram_users::credential;
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), false);
    let other = broker(dir.path(), false);
    let password = "correct horse battery staple";
    let salted = salted_password(Mechanism::ScramSha512, password.as_bytes(), b"salt-1", 4096);
    let req = AlterUserScramCredentialsRequest::default().with_upsertions(vec![
        alter_user_scram_credentials_request::ScramCredentialUpsertion::default()
            .with_name(s("carol"))
            .with_mechanism(Mechanism::ScramSha512.code())
            .with_iterations(4096)
            .with_salt(bytes::Bytes::from_static(b"salt-1"))
            .with_salted_password(salted.into()),
    ]);
    let ResponseKind::AlterUserScramCredentials(r) =
        call_as(&b, "anyone", 0, RequestKind::AlterUserScramCredentials(req)).await
    else {
        panic!("not an AlterUserScramCredentials response")
    };
    assert_eq!(r.results[0].error_code, 0);
    let c = credential(&b.scram_users.current(), "carol", Mechanism::ScramSha512).unwrap();
    assert!(c.matches(password));
    assert!(credential(
        &other.scram_users.current(),
        "carol",
        Mechanism::ScramSha512
    )
    .is_none());
    other.scram_users.refresh().unwrap();
    let c = credential(
        &other.scram_users.current(),
        "carol",
        Mechanism::ScramSha512,
    )
    .unwrap();
    assert!(c.matches(password) && !c.matches("wrong"));
    let on_disk = std::fs::read_to_string(dir.path().join("__cluster/scram_users")).unwrap();
    assert!(
        on_disk.contains("carol") && !on_disk.contains(password),
        "{on_disk}"
    );
}

/// SaslHandshake and SaslAuthenticate that reach KafkaApis (a listener
/// without SASL, or a connection already authenticated) answer
/// ILLEGAL_SASL_STATE, as Apache's do.
#[tokio::test]
async fn sasl_requests_outside_an_exchange_answer_illegal_sasl_state() {
    let dir = tempfile::tempdir().unwrap();
    let b = broker(dir.path(), false);
    let ResponseKind::SaslHandshake(h) = call_as(
        &b,
        "anyone",
        1,
        RequestKind::SaslHandshake(SaslHandshakeRequest::default().with_mechanism(s("PLAIN"))),
    )
    .await
    else {
        panic!("not a SaslHandshake response")
    };
    assert_eq!(h.error_code, E::IllegalSaslState.code());
    let ResponseKind::SaslAuthenticate(a) = call_as(
        &b,
        "anyone",
        2,
        RequestKind::SaslAuthenticate(SaslAuthenticateRequest::default()),
    )
    .await
    else {
        panic!("not a SaslAuthenticate response")
    };
    assert_eq!(a.error_code, E::IllegalSaslState.code());
}
