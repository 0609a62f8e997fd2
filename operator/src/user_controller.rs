//! Reconciles `KaasUser`s: the user's Secret (made once, with a random
//! password), its SCRAM-SHA-512 and SCRAM-SHA-256 credentials, exactly its
//! ACLs and exactly its client quotas, written through the Kafka API as the
//! cluster's admin; on deletion (a finalizer) its ACLs, quotas and
//! credentials are removed first.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kaas_client::scram::Mechanism;
use kaas_client::KafkaClient;
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::delete_acls_request::DeleteAclsFilter;
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest,
    DescribeUserScramCredentialsRequest,
};
use kafka_protocol::protocol::StrBytes;
use kube::api::{ObjectMeta, Patch, PatchParams, PostParams};
use kube::runtime::controller::Action;
use kube::runtime::finalizer::{finalizer, Event};
use kube::{Api, Resource, ResourceExt};
use tracing::info;

use crate::context::Context;
use crate::crd::{Authentication, KaasCluster};
use crate::resources::{Names, MANAGER};
use crate::secrets::broker_security;
use crate::user::{self, Binding, KaasUser, KaasUserStatus, UserAuthentication};

/// Removes the user's credentials and ACLs before the KaasUser goes.
pub const FINALIZER: &str = "kaas.dev/user-cleanup";
/// How often a user is looked at again (credentials or ACLs changed by hand
/// are put back).
const RESYNC: Duration = Duration::from_secs(60);
const TIMEOUT: Duration = Duration::from_secs(10);
/// Apache's RESOURCE_NOT_FOUND: deleting a credential that is not there.
const RESOURCE_NOT_FOUND: i16 = kafka_protocol::ResponseError::ResourceNotFound.code();

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Kube(#[from] crate::context::Error),
    #[error("{0}")]
    Kafka(String),
    #[error("{0}")]
    NotReady(String),
}

fn kube(what: &str) -> impl FnOnce(kube::Error) -> Error + '_ {
    move |source| {
        Error::Kube(crate::context::Error::Kube {
            what: what.to_string(),
            source,
        })
    }
}

fn kafka(what: &str) -> impl FnOnce(anyhow::Error) -> Error + '_ {
    move |e| Error::Kafka(format!("{what}: {e:#}"))
}

/// Reconciles one KaasUser, behind the finalizer.
pub async fn reconcile(u: Arc<KaasUser>, ctx: Arc<Context>) -> Result<Action, Error> {
    let ns = u.namespace().unwrap_or_else(|| "default".into());
    let api: Api<KaasUser> = Api::namespaced(ctx.client.clone(), &ns);
    finalizer(&api, FINALIZER, u, |event| async {
        match event {
            Event::Apply(u) => apply(&u, &ctx).await,
            Event::Cleanup(u) => cleanup(&u, &ctx).await,
        }
    })
    .await
    .map_err(|e| match e {
        kube::runtime::finalizer::Error::ApplyFailed(e)
        | kube::runtime::finalizer::Error::CleanupFailed(e) => e,
        other => Error::NotReady(other.to_string()),
    })
}

/// Retries soon after a failure; a cluster that is not there or not ready
/// yet is looked at less often (its own changes do not wake users).
pub fn error_policy(u: Arc<KaasUser>, error: &Error, _ctx: Arc<Context>) -> Action {
    tracing::warn!(user = %u.name_any(), error = %error, "KaasUser reconcile failed");
    Action::requeue(match error {
        Error::NotReady(_) => Duration::from_secs(15),
        _ => Duration::from_secs(5),
    })
}

async fn apply(u: &KaasUser, ctx: &Context) -> Result<Action, Error> {
    let result = put_on_the_cluster(u, ctx).await;
    let (status, reason, message) = match &result {
        Ok(()) => (
            "True",
            "Applied",
            "credentials, ACLs and quotas are on the cluster".to_string(),
        ),
        Err(e @ Error::NotReady(_)) => ("False", "ClusterNotReady", e.to_string()),
        Err(e) => ("False", "Failed", e.to_string()),
    };
    patch_status(u, ctx, status, reason, &message).await?;
    result.map(|()| Action::requeue(RESYNC))
}

/// The cluster of `u`, if it has a SCRAM listener.
async fn cluster_of(u: &KaasUser, ctx: &Context) -> Result<Option<KaasCluster>, Error> {
    let ns = u.namespace().unwrap_or_else(|| "default".into());
    let api: Api<KaasCluster> = Api::namespaced(ctx.client.clone(), &ns);
    api.get_opt(&u.spec.cluster)
        .await
        .map_err(kube("reading the KaasCluster"))
}

async fn put_on_the_cluster(u: &KaasUser, ctx: &Context) -> Result<(), Error> {
    let name = u.name_any();
    let Some(kc) = cluster_of(u, ctx).await? else {
        return Err(Error::NotReady(format!(
            "KaasCluster {} does not exist",
            u.spec.cluster
        )));
    };
    if kc.spec.listener.authentication != Authentication::Scram {
        return Err(Error::NotReady(format!(
            "KaasCluster {} has no SCRAM listener (spec.listener.authentication: scram)",
            u.spec.cluster
        )));
    }
    let mut admin = admin_client(&kc, ctx).await?;
    match u.spec.authentication {
        UserAuthentication::Scram => {
            let password = user_secret(u, ctx).await?;
            put_scram_credentials(&mut admin, &name, &password).await?;
        }
        UserAuthentication::Tls => {
            let tls_listener = kc
                .spec
                .additional_listeners
                .iter()
                .any(|l| l.authentication == Authentication::Tls);
            if !tls_listener {
                return Err(Error::NotReady(format!(
                    "KaasCluster {} has no listener with authentication: tls",
                    u.spec.cluster
                )));
            }
        }
    }
    put_acls(&mut admin, u).await?;
    put_quotas(&mut admin, &name, u.spec.quotas.as_ref()).await
}

/// The user's client quotas made exactly `quotas` (none: all removed).
async fn put_quotas(
    admin: &mut KafkaClient,
    name: &str,
    quotas: Option<&user::UserQuotas>,
) -> Result<(), Error> {
    use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
    use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
    use kafka_protocol::messages::{AlterClientQuotasRequest, DescribeClientQuotasRequest};
    let user = StrBytes::from_string(name.to_string());
    let described = admin
        .send(
            &DescribeClientQuotasRequest::default()
                .with_components(vec![ComponentData::default()
                    .with_entity_type(StrBytes::from_static_str("user"))
                    .with_match_type(0)
                    .with_match(Some(user.clone()))])
                .with_strict(true),
            1,
        )
        .await
        .map_err(kafka("DescribeClientQuotas"))?;
    if described.error_code != 0 {
        return Err(Error::Kafka(format!(
            "describing the quotas: error {} {}",
            described.error_code,
            described.error_message.as_deref().unwrap_or("")
        )));
    }
    let current: BTreeMap<String, f64> = described
        .entries
        .unwrap_or_default()
        .iter()
        .flat_map(|e| e.values.iter().map(|v| (v.key.to_string(), v.value)))
        .collect();
    let ops = user::quota_ops(&current, quotas);
    if ops.is_empty() {
        return Ok(());
    }
    let entry = EntryData::default()
        .with_entity(vec![EntityData::default()
            .with_entity_type(StrBytes::from_static_str("user"))
            .with_entity_name(Some(user))])
        .with_ops(
            ops.into_iter()
                .map(|(key, value)| {
                    OpData::default()
                        .with_key(StrBytes::from_string(key))
                        .with_value(value.unwrap_or(0.0))
                        .with_remove(value.is_none())
                })
                .collect(),
        );
    let r = admin
        .send(
            &AlterClientQuotasRequest::default().with_entries(vec![entry]),
            1,
        )
        .await
        .map_err(kafka("AlterClientQuotas"))?;
    if let Some(bad) = r.entries.iter().find(|e| e.error_code != 0) {
        return Err(Error::Kafka(format!(
            "setting the quotas: error {} {}",
            bad.error_code,
            bad.error_message.as_deref().unwrap_or("")
        )));
    }
    info!(user = %name, "quotas set");
    Ok(())
}

/// The user's SCRAM credentials, each mechanism written when it is missing.
async fn put_scram_credentials(
    admin: &mut KafkaClient,
    name: &str,
    password: &str,
) -> Result<(), Error> {
    let name = name.to_string();
    let described = admin
        .send(
            &DescribeUserScramCredentialsRequest::default().with_users(Some(vec![
                UserName::default().with_name(StrBytes::from_string(name.clone())),
            ])),
            0,
        )
        .await
        .map_err(kafka("DescribeUserScramCredentials"))?;
    let have: BTreeSet<i8> = described
        .results
        .iter()
        .flat_map(|r| r.credential_infos.iter().map(|c| c.mechanism))
        .collect();
    // One mechanism per request: Apache refuses a user altered twice in one.
    let missing = [Mechanism::ScramSha512, Mechanism::ScramSha256]
        .into_iter()
        .filter(|m| !have.contains(&m.code()));
    for m in missing {
        let salt = kaas_client::scram::nonce().into_bytes();
        let salted = kaas_client::scram::salted_password(m, password.as_bytes(), &salt, 4096);
        let upsertion = ScramCredentialUpsertion::default()
            .with_name(StrBytes::from_string(name.clone()))
            .with_mechanism(m.code())
            .with_iterations(4096)
            .with_salt(salt.into())
            .with_salted_password(salted.into());
        let r = admin
            .send(
                &AlterUserScramCredentialsRequest::default().with_upsertions(vec![upsertion]),
                0,
            )
            .await
            .map_err(kafka("AlterUserScramCredentials"))?;
        if let Some(bad) = r.results.iter().find(|r| r.error_code != 0) {
            return Err(Error::Kafka(format!(
                "AlterUserScramCredentials: error {} {}",
                bad.error_code,
                bad.error_message.as_deref().unwrap_or("")
            )));
        }
        info!(user = %name, mechanism = m.name(), "SCRAM credential written");
    }
    Ok(())
}

/// Exactly the ACLs the spec asks, for `User:<name>`.
async fn put_acls(admin: &mut KafkaClient, u: &KaasUser) -> Result<(), Error> {
    let name = u.name_any();
    let current = acls_of(admin, &name).await?;
    let (create, delete) = user::changes(&current, &user::desired(&name, &u.spec));
    if !create.is_empty() {
        let creations = create
            .iter()
            .map(|b| {
                AclCreation::default()
                    .with_resource_type(b.resource_type)
                    .with_resource_name(StrBytes::from_string(b.name.clone()))
                    .with_resource_pattern_type(b.pattern_type)
                    .with_principal(StrBytes::from_string(b.principal.clone()))
                    .with_host(StrBytes::from_string(b.host.clone()))
                    .with_operation(b.operation)
                    .with_permission_type(b.permission)
            })
            .collect();
        let r = admin
            .send(&CreateAclsRequest::default().with_creations(creations), 3)
            .await
            .map_err(kafka("CreateAcls"))?;
        if let Some(bad) = r.results.iter().find(|r| r.error_code != 0) {
            return Err(Error::Kafka(format!(
                "CreateAcls: error {} {}",
                bad.error_code,
                bad.error_message.as_deref().unwrap_or("")
            )));
        }
    }
    if !delete.is_empty() {
        delete_acls(admin, delete.iter().map(exact_filter).collect()).await?;
    }
    if !create.is_empty() || !delete.is_empty() {
        info!(user = %name, created = create.len(), deleted = delete.len(), "ACLs updated");
    }
    Ok(())
}

/// The user's ACLs on the cluster.
async fn acls_of(admin: &mut KafkaClient, user: &str) -> Result<BTreeSet<Binding>, Error> {
    let r = admin
        .send(
            // Every filter field set: kafka-protocol's defaults are the
            // empty string, which matches no name and no host, not null.
            &DescribeAclsRequest::default()
                .with_resource_type_filter(1)
                .with_resource_name_filter(None)
                .with_pattern_type_filter(1)
                .with_principal_filter(Some(StrBytes::from_string(format!("User:{user}"))))
                .with_host_filter(None)
                .with_operation(1)
                .with_permission_type(1),
            3,
        )
        .await
        .map_err(kafka("DescribeAcls"))?;
    if r.error_code != 0 {
        return Err(Error::Kafka(format!(
            "DescribeAcls: error {} {}",
            r.error_code,
            r.error_message.as_deref().unwrap_or("")
        )));
    }
    Ok(r.resources
        .iter()
        .flat_map(|res| {
            res.acls.iter().map(move |a| Binding {
                resource_type: res.resource_type,
                name: res.resource_name.to_string(),
                pattern_type: res.pattern_type,
                principal: a.principal.to_string(),
                host: a.host.to_string(),
                operation: a.operation,
                permission: a.permission_type,
            })
        })
        .collect())
}

/// DeleteAcls with `filters`; a filter the brokers refuse is an error.
async fn delete_acls(admin: &mut KafkaClient, filters: Vec<DeleteAclsFilter>) -> Result<(), Error> {
    let r = admin
        .send(&DeleteAclsRequest::default().with_filters(filters), 3)
        .await
        .map_err(kafka("DeleteAcls"))?;
    match r.filter_results.iter().find(|f| f.error_code != 0) {
        Some(bad) => Err(Error::Kafka(format!(
            "DeleteAcls: error {} {}",
            bad.error_code,
            bad.error_message.as_deref().unwrap_or("")
        ))),
        None => Ok(()),
    }
}

fn exact_filter(b: &Binding) -> DeleteAclsFilter {
    DeleteAclsFilter::default()
        .with_resource_type_filter(b.resource_type)
        .with_resource_name_filter(Some(StrBytes::from_string(b.name.clone())))
        .with_pattern_type_filter(b.pattern_type)
        .with_principal_filter(Some(StrBytes::from_string(b.principal.clone())))
        .with_host_filter(Some(StrBytes::from_string(b.host.clone())))
        .with_operation(b.operation)
        .with_permission_type(b.permission)
}

/// The user's password, from its Secret, made first (owned by the
/// KaasUser, never overwritten) when absent.
async fn user_secret(u: &KaasUser, ctx: &Context) -> Result<String, Error> {
    let name = u.name_any();
    let ns = u.namespace().unwrap_or_else(|| "default".into());
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &ns);
    let secret = match api
        .get_opt(&name)
        .await
        .map_err(kube("reading the user's Secret"))?
    {
        Some(s) => s,
        None => {
            let password = kaas_client::scram::nonce();
            let made = Secret {
                metadata: ObjectMeta {
                    name: Some(name.clone()),
                    namespace: Some(ns.clone()),
                    owner_references: u.controller_owner_ref(&()).map(|o| vec![o]),
                    labels: Some(BTreeMap::from([(
                        crate::resources::LABEL_MANAGED_BY.to_string(),
                        MANAGER.to_string(),
                    )])),
                    ..ObjectMeta::default()
                },
                string_data: Some(BTreeMap::from([
                    ("username".to_string(), name.clone()),
                    ("password".to_string(), password.clone()),
                    (
                        "sasl.jaas.config".to_string(),
                        user::jaas_config(&name, &password),
                    ),
                ])),
                type_: Some("Opaque".into()),
                ..Secret::default()
            };
            match api.create(&PostParams::default(), &made).await {
                Ok(s) => s,
                Err(kube::Error::Api(e)) if e.code == 409 => api
                    .get(&name)
                    .await
                    .map_err(kube("reading the user's Secret"))?,
                Err(e) => return Err(kube("creating the user's Secret")(e)),
            }
        }
    };
    crate::secrets::secret_value(&secret, "password")
        .ok_or_else(|| Error::NotReady(format!("the Secret {name} has no `password` key")))
}

/// A client logged in as the cluster's admin, on the first alive broker of
/// the published assignment that answers.
async fn admin_client(kc: &KaasCluster, ctx: &Context) -> Result<KafkaClient, Error> {
    let names = Names::of(kc);
    let security = broker_security(kc, ctx).await?;
    let cm = Api::<ConfigMap>::namespaced(ctx.client.clone(), &names.namespace)
        .get_opt(&names.assignment_configmap())
        .await
        .map_err(kube("reading the assignment ConfigMap"))?;
    let assignment = cm
        .as_ref()
        .and_then(|cm| kaas_shared::configmap::decode(cm).ok())
        .ok_or_else(|| Error::NotReady("no assignment published yet".into()))?;
    let mut last = None;
    for b in assignment.brokers.iter().filter(|b| b.state.is_alive()) {
        match KafkaClient::connect_as(&format!("{}:{}", b.host, b.port), TIMEOUT, &security).await {
            Ok(c) => return Ok(c),
            Err(e) => last = Some(format!("broker {}: {e:#}", b.id)),
        }
    }
    Err(Error::NotReady(
        last.unwrap_or_else(|| "no broker alive".into()),
    ))
}

async fn cleanup(u: &KaasUser, ctx: &Context) -> Result<Action, Error> {
    let name = u.name_any();
    // A cluster that is gone (or never had SASL) holds nothing of the user.
    let Some(kc) = cluster_of(u, ctx).await? else {
        return Ok(Action::await_change());
    };
    if kc.spec.listener.authentication != Authentication::Scram {
        return Ok(Action::await_change());
    }
    let mut admin = admin_client(&kc, ctx).await?;
    let all_of_user = DeleteAclsFilter::default()
        .with_resource_type_filter(1)
        .with_resource_name_filter(None)
        .with_pattern_type_filter(1)
        .with_host_filter(None)
        .with_principal_filter(Some(StrBytes::from_string(format!("User:{name}"))))
        .with_operation(1)
        .with_permission_type(1);
    delete_acls(&mut admin, vec![all_of_user]).await?;
    put_quotas(&mut admin, &name, None).await?;
    for m in [Mechanism::ScramSha512, Mechanism::ScramSha256] {
        let deletion = ScramCredentialDeletion::default()
            .with_name(StrBytes::from_string(name.clone()))
            .with_mechanism(m.code());
        let r = admin
            .send(
                &AlterUserScramCredentialsRequest::default().with_deletions(vec![deletion]),
                0,
            )
            .await
            .map_err(kafka("AlterUserScramCredentials"))?;
        if let Some(bad) = r
            .results
            .iter()
            .find(|r| r.error_code != 0 && r.error_code != RESOURCE_NOT_FOUND)
        {
            return Err(Error::Kafka(format!(
                "deleting the credentials: error {} {}",
                bad.error_code,
                bad.error_message.as_deref().unwrap_or("")
            )));
        }
    }
    info!(user = %name, "credentials, ACLs and quotas removed");
    Ok(Action::await_change())
}

async fn patch_status(
    u: &KaasUser,
    ctx: &Context,
    status: &str,
    reason: &str,
    message: &str,
) -> Result<(), Error> {
    let name = u.name_any();
    let ns = u.namespace().unwrap_or_else(|| "default".into());
    let previous = u
        .status
        .as_ref()
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"));
    let unchanged = previous.is_some_and(|c| c.status == status && c.reason == reason);
    let condition = Condition {
        type_: "Ready".into(),
        status: status.into(),
        reason: reason.into(),
        message: message.into(),
        observed_generation: u.metadata.generation,
        last_transition_time: match previous {
            Some(c) if unchanged => c.last_transition_time.clone(),
            _ => Time(k8s_openapi::jiff::Timestamp::now()),
        },
    };
    let next = KaasUserStatus {
        conditions: vec![condition],
        username: Some(name.clone()),
        secret: (u.spec.authentication == UserAuthentication::Scram).then(|| name.clone()),
        observed_generation: u.metadata.generation,
    };
    if unchanged
        && u.status.as_ref().is_some_and(|s| {
            s.observed_generation == next.observed_generation
                && s.conditions.first().map(|c| &c.message) == Some(&next.conditions[0].message)
        })
    {
        return Ok(());
    }
    let api: Api<KaasUser> = Api::namespaced(ctx.client.clone(), &ns);
    let patch = serde_json::json!({
        "apiVersion": KaasUser::api_version(&()),
        "kind": KaasUser::kind(&()),
        "status": next,
    });
    api.patch_status(
        &name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&patch),
    )
    .await
    .map_err(kube("updating the KaasUser's status"))?;
    Ok(())
}
