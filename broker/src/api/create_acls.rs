//! CreateAcls (key 30): adds ACLs, durable on the volume before the answer
//! and applied by every broker within `followed::REFRESH_INTERVAL`. Needs
//! Cluster ALTER; SECURITY_DISABLED with no authorizer; a creation Apache
//! refuses answers INVALID_REQUEST with Apache's message, the others are
//! created.

use kafka_protocol::messages::create_acls_response::AclCreationResult;
use kafka_protocol::messages::{CreateAclsRequest, CreateAclsResponse};
use tracing::{info, warn};

use super::describe_acls::managed_acls;
use super::{str_bytes, Err, RequestContext};
use crate::auth::acl::{binding_from_wire, WireAcl};
use crate::auth::Operation;

pub async fn handle(ctx: &RequestContext, req: CreateAclsRequest) -> CreateAclsResponse {
    let every = |e: Err, message: String| {
        CreateAclsResponse::default().with_results(
            req.creations
                .iter()
                .map(|_| {
                    AclCreationResult::default()
                        .with_error_code(e.code())
                        .with_error_message(Some(str_bytes(message.clone())))
                })
                .collect(),
        )
    };
    let acls = match managed_acls(ctx, Operation::Alter) {
        Ok(acls) => acls,
        Err((e, message)) => return every(e, message),
    };
    let checked: Vec<Result<_, String>> = req
        .creations
        .iter()
        .map(|c| {
            binding_from_wire(WireAcl {
                resource_type: c.resource_type,
                name: Some(c.resource_name.as_str()),
                pattern: c.resource_pattern_type,
                principal: Some(c.principal.as_str()),
                host: Some(c.host.as_str()),
                operation: c.operation,
                permission: c.permission_type,
            })
        })
        .collect();
    let valid: Vec<_> = checked
        .iter()
        .filter_map(|c| c.as_ref().ok())
        .cloned()
        .collect();
    let written = if valid.is_empty() {
        Ok(())
    } else {
        let to_write = valid.clone();
        crate::storage::blocking(move || acls.create(&to_write)).await
    };
    match &written {
        Ok(()) => {
            for acl in &valid {
                info!(principal = %ctx.principal, ?acl, "ACL created");
            }
        }
        Err(e) => warn!(error = %e, "cannot write the ACLs"),
    }
    CreateAclsResponse::default().with_results(
        checked
            .into_iter()
            .map(|c| match (c, &written) {
                (Err(message), _) => AclCreationResult::default()
                    .with_error_code(Err::InvalidRequest.code())
                    .with_error_message(Some(str_bytes(message))),
                (Ok(_), Ok(())) => AclCreationResult::default(),
                (Ok(_), Err(e)) => AclCreationResult::default()
                    .with_error_code(Err::UnknownServerError.code())
                    .with_error_message(Some(str_bytes(format!("cannot write the ACLs: {e}")))),
            })
            .collect(),
    )
}
