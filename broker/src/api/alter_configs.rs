//! IncrementalAlterConfigs (key 44) and AlterConfigs (key 33, which
//! replaces a resource's whole set): a topic's configs, changed on the
//! shared volume through any broker, in Apache's order of checks (its
//! broker's `ConfigAdminManager.preprocess`, then its controller's
//! `ControllerApis` and `ConfigurationControlManager`): each resource at
//! most once, no repeated key, no null value but for DELETE; ALTER_CONFIGS
//! on the topic; a valid name; the operations (APPEND and SUBTRACT on LIST
//! configs only); the result through `LogConfig.validate`; then the topic's
//! existence. A BROKER resource's change is a dynamic broker config
//! ([`crate::settings::dynamic`]), checked as Apache's broker checks it;
//! a GROUP resource's, a group config ([`crate::settings::group_configs`]).

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::messages::{
    alter_configs_response, incremental_alter_configs_response, AlterConfigsRequest,
    AlterConfigsResponse, IncrementalAlterConfigsRequest, IncrementalAlterConfigsResponse,
};
use kafka_protocol::protocol::StrBytes;

use super::describe_configs::resource_type_name;
use super::{str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::settings::dynamic::{self, DynamicConfigs, Refusal, Scope};
use crate::settings::group_configs;
use crate::storage::topic_config::{self, AlterOp, InvalidConfig};
use crate::storage::topics::{validate_topic_name, TopicError};

/// `ConfigResource.Type` on the wire.
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const BROKER_LOGGER: i8 = 8;
const CLIENT_METRICS: i8 = 16;
const GROUP: i8 = 32;

/// One resource's change, from either API.
struct Change {
    resource_type: i8,
    name: StrBytes,
    /// Name, operation code, value.
    ops: Vec<(String, i8, Option<String>)>,
    /// AlterConfigs: the ops are the whole new set.
    replace: bool,
}

type Outcome = Result<(), (i16, Option<String>)>;

/// A config's name, operation and value.
type Op = (String, AlterOp, Option<String>);

fn invalid_request(message: impl Into<String>) -> (i16, Option<String>) {
    (Err::InvalidRequest.code(), Some(message.into()))
}

pub async fn handle_incremental(
    ctx: &RequestContext,
    req: IncrementalAlterConfigsRequest,
) -> IncrementalAlterConfigsResponse {
    let changes = req
        .resources
        .into_iter()
        .map(|r| Change {
            resource_type: r.resource_type,
            name: r.resource_name,
            ops: r
                .configs
                .into_iter()
                .map(|c| {
                    (
                        c.name.to_string(),
                        c.config_operation,
                        c.value.map(|v| v.to_string()),
                    )
                })
                .collect(),
            replace: false,
        })
        .collect();
    let responses = alter(ctx, changes, req.validate_only)
        .await
        .into_iter()
        .map(|(change, outcome)| {
            let (code, message) = outcome.err().unwrap_or((0, None));
            incremental_alter_configs_response::AlterConfigsResourceResponse::default()
                .with_error_code(code)
                .with_error_message(message.map(str_bytes))
                .with_resource_type(change.resource_type)
                .with_resource_name(change.name)
        })
        .collect();
    IncrementalAlterConfigsResponse::default().with_responses(responses)
}

pub async fn handle_legacy(ctx: &RequestContext, req: AlterConfigsRequest) -> AlterConfigsResponse {
    let changes = req
        .resources
        .into_iter()
        .map(|r| Change {
            resource_type: r.resource_type,
            name: r.resource_name,
            ops: r
                .configs
                .into_iter()
                .map(|c| (c.name.to_string(), 0, c.value.map(|v| v.to_string())))
                .collect(),
            replace: true,
        })
        .collect();
    let responses = alter(ctx, changes, req.validate_only)
        .await
        .into_iter()
        .map(|(change, outcome)| {
            let (code, message) = outcome.err().unwrap_or((0, None));
            alter_configs_response::AlterConfigsResourceResponse::default()
                .with_error_code(code)
                .with_error_message(message.map(str_bytes))
                .with_resource_type(change.resource_type)
                .with_resource_name(change.name)
        })
        .collect();
    AlterConfigsResponse::default().with_responses(responses)
}

/// Every change's outcome, in request order.
async fn alter(
    ctx: &RequestContext,
    changes: Vec<Change>,
    validate_only: bool,
) -> Vec<(Change, Outcome)> {
    let mut seen: HashMap<(i8, StrBytes), usize> = HashMap::new();
    for c in &changes {
        *seen.entry((c.resource_type, c.name.clone())).or_default() += 1;
    }
    let mut out = Vec::with_capacity(changes.len());
    for change in changes {
        let outcome = if seen[&(change.resource_type, change.name.clone())] > 1 {
            Err(invalid_request("Each resource must appear at most once."))
        } else {
            alter_one(ctx, &change, validate_only).await
        };
        out.push((change, outcome));
    }
    out
}

async fn alter_one(ctx: &RequestContext, change: &Change, validate_only: bool) -> Outcome {
    let mut names: Vec<&str> = change.ops.iter().map(|(n, _, _)| n.as_str()).collect();
    names.sort_unstable();
    if names.windows(2).any(|w| w[0] == w[1]) {
        return Err(invalid_request("Error due to duplicate config keys"));
    }
    let nulls: Vec<&str> = change
        .ops
        .iter()
        .filter(|(_, op, value)| *op != 1 && value.is_none())
        .map(|(n, _, _)| n.as_str())
        .collect();
    if !nulls.is_empty() {
        return Err(invalid_request(format!(
            "Null value not supported for : {}",
            nulls.join(", ")
        )));
    }
    match change.resource_type {
        TOPIC => alter_topic(ctx, change, validate_only).await,
        BROKER => alter_broker(ctx, change, validate_only).await,
        GROUP => alter_group(ctx, change, validate_only).await,
        BROKER_LOGGER | CLIENT_METRICS => Err(invalid_request(format!(
            "kaas keeps no configs of resource type {}",
            resource_type_name(change.resource_type)
        ))),
        other => Err(invalid_request(format!("Unknown resource type {other}"))),
    }
}

/// The operations of `change`, or INVALID_REQUEST for an unknown one.
fn operations(change: &Change) -> Result<Vec<Op>, (i16, Option<String>)> {
    change
        .ops
        .iter()
        .map(|(config, code, value)| {
            let op = AlterOp::from_code(*code)
                .ok_or_else(|| invalid_request(format!("Unknown operations type {code}")))?;
            Ok((config.clone(), op, value.clone()))
        })
        .collect()
}

/// Apache's GROUP branch: ALTER_CONFIGS on the group (its broker, before
/// forwarding), then its controller: the operations, a name that is not
/// empty, `GroupConfigManager.validate` of the result against this
/// broker's bounds; then, unless `validate_only`, written to the shared
/// volume under its lock, where every broker follows it. The group need
/// not exist (Apache keeps group configs apart from groups).
async fn alter_group(ctx: &RequestContext, change: &Change, validate_only: bool) -> Outcome {
    let name = change.name.to_string();
    if !ctx.authorized(Operation::AlterConfigs, ResourceType::Group, &name) {
        let e = Err::GroupAuthorizationFailed;
        return Err((e.code(), Some(e.to_string())));
    }
    let ops = operations(change)?;
    let invalid = |e: InvalidConfig| (Err::InvalidConfig.code(), Some(e.0));
    if name.is_empty() {
        // Apache applies the operations (APPEND and SUBTRACT refused)
        // before it looks at the name, and the name before the values.
        topic_config::apply_alter_ops(&BTreeMap::new(), &ops, |_| None).map_err(invalid)?;
        return Err(invalid_request("Default group resources are not allowed."));
    }
    let replace = change.replace;
    let broker_settings = ctx.broker.config.groups.core.consumer.clone();
    let altered = move |current: &BTreeMap<String, String>| {
        let base = if replace {
            BTreeMap::new()
        } else {
            current.clone()
        };
        group_configs::apply_ops(&base, &ops, &broker_settings)
    };
    let followed = ctx.broker.group_configs.clone();
    if validate_only {
        return altered(&followed.current().of(&name))
            .map(|_| ())
            .map_err(invalid);
    }
    let written = crate::storage::blocking(move || {
        followed.update(|configs| {
            let new = altered(&configs.of(&name))?;
            configs.set(&name, new);
            Ok(())
        })
    })
    .await;
    match written {
        Ok(outcome) => outcome.map_err(invalid),
        Err(e) => Err((Err::KafkaStorageError.code(), Some(e.to_string()))),
    }
}

/// Apache's BROKER branch: an empty name (every broker) or this broker's
/// id; the change checked against the settings stored now (its broker's
/// `ConfigAdminManager`), then ALTER_CONFIGS on the cluster (its
/// controller); then, unless `validate_only`, written to the shared
/// volume under its lock, where every broker follows it.
async fn alter_broker(ctx: &RequestContext, change: &Change, validate_only: bool) -> Outcome {
    let name = change.name.as_str();
    let scope = if name.is_empty() {
        Scope::Default
    } else {
        let id: i32 = name.parse().map_err(|_| {
            invalid_request(format!("Node id must be an integer, but it is: {name}"))
        })?;
        if id != ctx.broker.id() {
            return Err(invalid_request(format!(
                "Unexpected broker id, expected {}, but received {name}",
                ctx.broker.id()
            )));
        }
        Scope::Broker(id)
    };
    let ops = operations(change)?;
    let refused = |r: Refusal| match r {
        Refusal::InvalidConfig(m) => (Err::InvalidConfig.code(), Some(m)),
        Refusal::InvalidRequest(m) => invalid_request(m),
    };
    let replace = change.replace;
    let followed = ctx.broker.dynamic_configs.clone();
    altered(&ctx.broker, scope, &ops, replace, &followed.current()).map_err(refused)?;
    if !ctx.authorized(Operation::AlterConfigs, ResourceType::Cluster, CLUSTER_NAME) {
        let e = Err::ClusterAuthorizationFailed;
        return Err((e.code(), Some(e.to_string())));
    }
    if validate_only {
        return Ok(());
    }
    // Checked again under the lock: another broker may have changed the
    // settings since.
    let broker = ctx.broker.clone();
    let written = crate::storage::blocking(move || {
        followed.update(|d| {
            *d = altered(&broker, scope, &ops, replace, d)?;
            Ok(())
        })
    })
    .await;
    match written {
        Ok(outcome) => outcome.map_err(refused),
        Err(e) => Err((Err::KafkaStorageError.code(), Some(e.to_string()))),
    }
}

/// The dynamic configs `d` with one scope's settings changed, checked as
/// Apache's broker checks them ([`dynamic::alter`], then the cleaner
/// threads' bounds on this broker).
fn altered(
    broker: &crate::broker::Broker,
    scope: Scope,
    ops: &[Op],
    replace: bool,
    d: &DynamicConfigs,
) -> Result<DynamicConfigs, Refusal> {
    let mut altered = d.clone();
    altered.set(scope, dynamic::alter(&d.of(scope), ops, replace)?);
    dynamic::check_cleaner_threads(
        &broker.cleaner_config(),
        broker.config.log_cleaner,
        &altered,
        broker.id(),
    )?;
    Ok(altered)
}

async fn alter_topic(ctx: &RequestContext, change: &Change, validate_only: bool) -> Outcome {
    let name = change.name.to_string();
    if !ctx.authorized(Operation::AlterConfigs, ResourceType::Topic, &name) {
        let e = Err::TopicAuthorizationFailed;
        return Err((e.code(), Some(e.to_string())));
    }
    if name.is_empty() {
        return Err(invalid_request("Default topic resources are not allowed."));
    }
    if let Err(e) = validate_topic_name(&name) {
        return Err((Err::InvalidTopicException.code(), Some(e.to_string())));
    }
    let ops = operations(change)?;
    let replace = change.replace;
    let new_configs = move |current: &BTreeMap<String, String>| {
        if replace {
            topic_config::apply_ops(&BTreeMap::new(), &ops)
        } else {
            topic_config::apply_ops(current, &ops)
        }
    };
    let invalid = |e: InvalidConfig| (Err::InvalidConfig.code(), Some(e.0));
    let storage = &ctx.broker.storage;
    let alter = new_configs.clone();
    let altered = storage
        .topics
        .update(&name, validate_only, move |meta| {
            meta.configs = alter(&meta.configs)?;
            Ok(())
        })
        .await;
    match altered {
        Ok(Ok(meta)) => {
            if !validate_only {
                storage.topic_configs_changed(&meta);
            }
            Ok(())
        }
        Ok(Err(e)) => Err(invalid(e)),
        // Apache validates the configs before it looks for the topic.
        Err(TopicError::Unknown(_)) => match new_configs(&BTreeMap::new()) {
            Err(e) => Err(invalid(e)),
            Ok(_) => Err((
                Err::UnknownTopicOrPartition.code(),
                Some(format!("The topic '{name}' does not exist.")),
            )),
        },
        Err(e) => Err((Err::KafkaStorageError.code(), Some(e.to_string()))),
    }
}
