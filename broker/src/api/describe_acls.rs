//! DescribeAcls (key 29): the ACLs a filter matches, grouped by resource
//! pattern. Needs Cluster DESCRIBE; SECURITY_DISABLED with no authorizer.

use std::collections::BTreeMap;
use std::sync::Arc;

use kafka_protocol::messages::describe_acls_response::{AclDescription, DescribeAclsResource};
use kafka_protocol::messages::{DescribeAclsRequest, DescribeAclsResponse};

use super::{str_bytes, Err, RequestContext};
use crate::acls::Acls;
use crate::auth::acl::{filter_from_wire, WireAcl};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};

/// The ACLs, for a principal that may do `operation` on the cluster
/// (DESCRIBE to read them, ALTER to change them; asked first, as
/// KafkaApis); else the refusal: CLUSTER_AUTHORIZATION_FAILED, or
/// SECURITY_DISABLED with no authorizer.
pub(super) fn managed_acls(
    ctx: &RequestContext,
    operation: Operation,
) -> Result<Arc<Acls>, (Err, String)> {
    if !ctx.authorized(operation, ResourceType::Cluster, CLUSTER_NAME) {
        return Err((
            Err::ClusterAuthorizationFailed,
            format!("{} may not {operation:?} the cluster", ctx.principal),
        ));
    }
    ctx.broker.acls.clone().ok_or((
        Err::SecurityDisabled,
        "No Authorizer is configured on the broker".into(),
    ))
}

pub fn handle(ctx: &RequestContext, req: DescribeAclsRequest) -> DescribeAclsResponse {
    let resp = DescribeAclsResponse::default();
    let refuse = |e: Err, message: String| {
        resp.clone()
            .with_error_code(e.code())
            .with_error_message(Some(str_bytes(message)))
    };
    let acls = match managed_acls(ctx, Operation::Describe) {
        Ok(acls) => acls,
        Err((e, message)) => return refuse(e, message),
    };
    let filter = match filter_from_wire(WireAcl {
        resource_type: req.resource_type_filter,
        name: req.resource_name_filter.as_deref(),
        pattern: req.pattern_type_filter,
        principal: req.principal_filter.as_deref(),
        host: req.host_filter.as_deref(),
        operation: req.operation,
        permission: req.permission_type,
    }) {
        Ok(f) => f,
        Err(message) => return refuse(Err::InvalidRequest, message),
    };
    let mut by_pattern: BTreeMap<(i8, String, i8), Vec<AclDescription>> = BTreeMap::new();
    for acl in acls.describe(&filter) {
        by_pattern
            .entry((
                acl.resource_type.code(),
                acl.name.clone(),
                acl.pattern.code(),
            ))
            .or_default()
            .push(
                AclDescription::default()
                    .with_principal(str_bytes(acl.principal))
                    .with_host(str_bytes(acl.host))
                    .with_operation(acl.operation.code())
                    .with_permission_type(acl.permission.code()),
            );
    }
    resp.with_resources(
        by_pattern
            .into_iter()
            .map(|((resource_type, name, pattern), acls)| {
                DescribeAclsResource::default()
                    .with_resource_type(resource_type)
                    .with_resource_name(str_bytes(name))
                    .with_pattern_type(pattern)
                    .with_acls(acls)
            })
            .collect(),
    )
}
