//! DeleteAcls (key 31): removes every ACL each filter matches and answers,
//! per filter, the ACLs it matched. Needs Cluster ALTER; SECURITY_DISABLED
//! with no authorizer; a filter Apache refuses answers INVALID_REQUEST.

use kafka_protocol::messages::delete_acls_response::{
    DeleteAclsFilterResult, DeleteAclsMatchingAcl,
};
use kafka_protocol::messages::{DeleteAclsRequest, DeleteAclsResponse};
use tracing::{info, warn};

use super::describe_acls::managed_acls;
use super::{str_bytes, Err, RequestContext};
use crate::auth::acl::{filter_from_wire, WireAcl};
use crate::auth::Operation;

pub async fn handle(ctx: &RequestContext, req: DeleteAclsRequest) -> DeleteAclsResponse {
    let every = |e: Err, message: &str| {
        DeleteAclsResponse::default().with_filter_results(
            req.filters
                .iter()
                .map(|_| failed(e.code(), message.to_string()))
                .collect(),
        )
    };
    let acls = match managed_acls(ctx, Operation::Alter) {
        Ok(acls) => acls,
        Err((e, message)) => return every(e, &message),
    };
    let checked: Vec<Result<_, String>> = req
        .filters
        .iter()
        .map(|f| {
            filter_from_wire(WireAcl {
                resource_type: f.resource_type_filter,
                name: f.resource_name_filter.as_deref(),
                pattern: f.pattern_type_filter,
                principal: f.principal_filter.as_deref(),
                host: f.host_filter.as_deref(),
                operation: f.operation,
                permission: f.permission_type,
            })
        })
        .collect();
    let valid: Vec<_> = checked
        .iter()
        .filter_map(|c| c.as_ref().ok())
        .cloned()
        .collect();
    let deleted = if valid.is_empty() {
        Ok(Vec::new())
    } else {
        crate::storage::blocking(move || acls.delete(&valid)).await
    };
    let mut deleted = match deleted {
        Ok(d) => d.into_iter(),
        Err(e) => {
            warn!(error = %e, "cannot write the ACLs");
            return every(
                Err::UnknownServerError,
                &format!("cannot write the ACLs: {e}"),
            );
        }
    };
    DeleteAclsResponse::default().with_filter_results(
        checked
            .into_iter()
            .map(|c| match c {
                Err(message) => failed(Err::InvalidRequest.code(), message),
                Ok(_) => DeleteAclsFilterResult::default().with_matching_acls(
                    deleted
                        .next()
                        .unwrap_or_default()
                        .into_iter()
                        .map(|acl| {
                            info!(principal = %ctx.principal, ?acl, "ACL deleted");
                            DeleteAclsMatchingAcl::default()
                                .with_resource_type(acl.resource_type.code())
                                .with_resource_name(str_bytes(acl.name))
                                .with_pattern_type(acl.pattern.code())
                                .with_principal(str_bytes(acl.principal))
                                .with_host(str_bytes(acl.host))
                                .with_operation(acl.operation.code())
                                .with_permission_type(acl.permission.code())
                        })
                        .collect(),
                ),
            })
            .collect(),
    )
}

fn failed(code: i16, message: String) -> DeleteAclsFilterResult {
    DeleteAclsFilterResult::default()
        .with_error_code(code)
        .with_error_message(Some(str_bytes(message)))
}
