//! DescribeClientQuotas (key 48): the quotas of the entities a filter
//! matches, as Apache's metadata image answers (`client_quotas::describe`).
//! Needs Cluster DESCRIBE_CONFIGS.

use kafka_protocol::messages::describe_client_quotas_response::{EntityData, EntryData, ValueData};
use kafka_protocol::messages::{DescribeClientQuotasRequest, DescribeClientQuotasResponse};

use super::{str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::client_quotas::{describe, Component, FilterError};

pub fn handle(
    ctx: &RequestContext,
    req: DescribeClientQuotasRequest,
) -> DescribeClientQuotasResponse {
    let failed = |e: Err, message: String| {
        DescribeClientQuotasResponse::default()
            .with_error_code(e.code())
            .with_error_message(Some(str_bytes(message)))
            .with_entries(None)
    };
    if !ctx.authorized(
        Operation::DescribeConfigs,
        ResourceType::Cluster,
        CLUSTER_NAME,
    ) {
        return failed(
            Err::ClusterAuthorizationFailed,
            format!("{} may not describe the cluster's configs", ctx.principal),
        );
    }
    let components: Vec<Component<'_>> = req
        .components
        .iter()
        .map(|c| Component {
            entity_type: c.entity_type.as_str(),
            match_type: c.match_type,
            name: c._match.as_ref().map(|m| m.as_str()),
        })
        .collect();
    let quotas = ctx.broker.client_quotas.current();
    match describe(&quotas, &components, req.strict) {
        Ok(found) => DescribeClientQuotasResponse::default()
            .with_error_message(None)
            .with_entries(Some(
                found
                    .into_iter()
                    .map(|q| {
                        EntryData::default()
                            .with_entity(
                                q.entity
                                    .0
                                    .iter()
                                    .map(|(t, n)| {
                                        EntityData::default()
                                            .with_entity_type(str_bytes(t.clone()))
                                            .with_entity_name(n.clone().map(str_bytes))
                                    })
                                    .collect(),
                            )
                            .with_values(
                                q.values
                                    .iter()
                                    .map(|(k, v)| {
                                        ValueData::default()
                                            .with_key(str_bytes(k.clone()))
                                            .with_value(*v)
                                    })
                                    .collect(),
                            )
                    })
                    .collect(),
            )),
        Err(FilterError::InvalidRequest(m)) => failed(Err::InvalidRequest, m),
        Err(FilterError::UnsupportedVersion(m)) => failed(Err::UnsupportedVersion, m),
    }
}
