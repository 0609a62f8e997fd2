//! AlterClientQuotas (key 49): sets and removes quotas of users, client ids
//! and their defaults, checked as Apache's controller checks them
//! (`client_quotas::alter`), durable on the volume before the answer and
//! in force on every broker within `followed::REFRESH_INTERVAL`. Needs
//! Cluster ALTER_CONFIGS.

use kafka_protocol::messages::alter_client_quotas_response::{EntityData, EntryData};
use kafka_protocol::messages::{AlterClientQuotasRequest, AlterClientQuotasResponse};
use tracing::{info, warn};

use super::{str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::client_quotas::{alter, Alteration, Entity};

pub async fn handle(
    ctx: &RequestContext,
    req: AlterClientQuotasRequest,
) -> AlterClientQuotasResponse {
    // A type named twice keeps the last name, as Apache's request parsing.
    let alterations: Vec<Alteration> = req
        .entries
        .iter()
        .map(|e| Alteration {
            entity: Entity(
                e.entity
                    .iter()
                    .map(|d| {
                        (
                            d.entity_type.to_string(),
                            d.entity_name.as_ref().map(|n| n.to_string()),
                        )
                    })
                    .collect(),
            ),
            ops: e
                .ops
                .iter()
                .map(|op| (op.key.to_string(), (!op.remove).then_some(op.value)))
                .collect(),
        })
        .collect();
    let every = |e: Err, message: String| {
        let mut seen: Vec<&Entity> = Vec::new();
        let entries = alterations
            .iter()
            .filter(|a| {
                let new = !seen.contains(&&a.entity);
                seen.push(&a.entity);
                new
            })
            .map(|a| entry(&a.entity, Err(message.clone()), e))
            .collect();
        AlterClientQuotasResponse::default().with_entries(entries)
    };
    if !ctx.authorized(Operation::AlterConfigs, ResourceType::Cluster, CLUSTER_NAME) {
        return every(
            Err::ClusterAuthorizationFailed,
            format!("{} may not alter the cluster's configs", ctx.principal),
        );
    }
    let doc = ctx.broker.client_quotas.clone();
    let (asked, validate_only) = (alterations.clone(), req.validate_only);
    let outcomes =
        crate::storage::blocking(move || doc.update(|quotas| alter(quotas, &asked, validate_only)))
            .await;
    let outcomes = match outcomes {
        Ok(o) => o,
        Err(e) => {
            warn!(error = %e, "cannot write the client quotas");
            return every(
                Err::UnknownServerError,
                format!("cannot write the client quotas: {e}"),
            );
        }
    };
    for (entity, outcome) in &outcomes {
        if outcome.is_ok() && !validate_only {
            info!(principal = %ctx.principal, %entity, "client quotas altered");
        }
    }
    AlterClientQuotasResponse::default().with_entries(
        outcomes
            .into_iter()
            .map(|(entity, outcome)| entry(&entity, outcome, Err::InvalidRequest))
            .collect(),
    )
}

fn entry(entity: &Entity, outcome: Result<(), String>, error: Err) -> EntryData {
    let (code, message) = match outcome {
        Ok(()) => (0, None),
        Err(m) => (error.code(), Some(str_bytes(m))),
    };
    EntryData::default()
        .with_error_code(code)
        .with_error_message(message)
        .with_entity(
            entity
                .0
                .iter()
                .map(|(t, n)| {
                    EntityData::default()
                        .with_entity_type(str_bytes(t.clone()))
                        .with_entity_name(n.clone().map(str_bytes))
                })
                .collect(),
        )
}
