//! DescribeUserScramCredentials (key 50): each user's SCRAM mechanisms and
//! iterations (never a key). Needs Cluster DESCRIBE.

use kafka_protocol::messages::describe_user_scram_credentials_response::{
    CredentialInfo, DescribeUserScramCredentialsResult,
};
use kafka_protocol::messages::{
    DescribeUserScramCredentialsRequest, DescribeUserScramCredentialsResponse,
};

use super::{str_bytes, Err, RequestContext};
use crate::auth::scram_users::describe;
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};

pub fn handle(
    ctx: &RequestContext,
    req: DescribeUserScramCredentialsRequest,
) -> DescribeUserScramCredentialsResponse {
    let resp = DescribeUserScramCredentialsResponse::default();
    if !ctx.authorized(Operation::Describe, ResourceType::Cluster, CLUSTER_NAME) {
        return resp
            .with_error_code(Err::ClusterAuthorizationFailed.code())
            .with_error_message(Some(str_bytes(format!(
                "{} may not describe the cluster",
                ctx.principal
            ))));
    }
    let asked: Option<Vec<String>> = req
        .users
        .map(|users| users.iter().map(|u| u.name.to_string()).collect());
    let users = ctx.broker.scram_users.current();
    resp.with_results(
        describe(&users, asked.as_deref())
            .into_iter()
            .map(|d| {
                DescribeUserScramCredentialsResult::default()
                    .with_user(str_bytes(d.user))
                    .with_error_code(d.error)
                    .with_error_message(d.message.map(str_bytes))
                    .with_credential_infos(
                        d.credentials
                            .into_iter()
                            .map(|(m, iterations)| {
                                CredentialInfo::default()
                                    .with_mechanism(m.code())
                                    .with_iterations(iterations as i32)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}
