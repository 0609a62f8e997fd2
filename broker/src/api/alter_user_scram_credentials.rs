//! AlterUserScramCredentials (key 51): adds, replaces and removes SCRAM
//! credentials (the client sends the salted password, never the password),
//! durable on the volume before the answer and applied by every broker
//! within `followed::REFRESH_INTERVAL`. Needs Cluster ALTER.

use kafka_protocol::messages::alter_user_scram_credentials_response::AlterUserScramCredentialsResult;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, AlterUserScramCredentialsResponse,
};
use tracing::{info, warn};

use super::{str_bytes, Err, RequestContext};
use crate::auth::scram_users::{alter, Deletion, Upsertion};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};

pub async fn handle(
    ctx: &RequestContext,
    req: AlterUserScramCredentialsRequest,
) -> AlterUserScramCredentialsResponse {
    let names: Vec<String> = req
        .deletions
        .iter()
        .map(|d| d.name.to_string())
        .chain(req.upsertions.iter().map(|u| u.name.to_string()))
        .collect();
    let every = |e: Err, message: String| {
        AlterUserScramCredentialsResponse::default().with_results(
            names
                .iter()
                .map(|n| {
                    AlterUserScramCredentialsResult::default()
                        .with_user(str_bytes(n.clone()))
                        .with_error_code(e.code())
                        .with_error_message(Some(str_bytes(message.clone())))
                })
                .collect(),
        )
    };
    if !ctx.authorized(Operation::Alter, ResourceType::Cluster, CLUSTER_NAME) {
        return every(
            Err::ClusterAuthorizationFailed,
            format!("{} may not alter the cluster", ctx.principal),
        );
    }
    let deletions: Vec<Deletion> = req
        .deletions
        .iter()
        .map(|d| Deletion {
            name: d.name.to_string(),
            mechanism: d.mechanism,
        })
        .collect();
    let upsertions: Vec<Upsertion> = req
        .upsertions
        .iter()
        .map(|u| Upsertion {
            name: u.name.to_string(),
            mechanism: u.mechanism,
            iterations: u.iterations,
            salt: u.salt.to_vec(),
            salted_password: u.salted_password.to_vec(),
        })
        .collect();
    let users = ctx.broker.scram_users.clone();
    let outcomes = crate::storage::blocking(move || {
        users.update(|users| alter(users, &deletions, &upsertions))
    })
    .await;
    let outcomes = match outcomes {
        Ok(o) => o,
        Err(e) => {
            warn!(error = %e, "cannot write the SCRAM credentials");
            return every(
                Err::UnknownServerError,
                format!("cannot write the SCRAM credentials: {e}"),
            );
        }
    };
    AlterUserScramCredentialsResponse::default().with_results(
        outcomes
            .into_iter()
            .map(|o| {
                if o.error == 0 {
                    info!(principal = %ctx.principal, user = %o.user, "SCRAM credentials altered");
                }
                AlterUserScramCredentialsResult::default()
                    .with_user(str_bytes(o.user))
                    .with_error_code(o.error)
                    .with_error_message(o.message.map(str_bytes))
            })
            .collect(),
    )
}
