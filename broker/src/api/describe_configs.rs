//! DescribeConfigs (key 32): a topic's configs as Apache's
//! `ConfigHelper` describes them (`storage::topic_config`), and this broker's
//! settings, and a group's configs. Every broker answers for every topic
//! and group: their configs live on the shared volume.

use kafka_protocol::messages::describe_configs_response::{
    DescribeConfigsResourceResult, DescribeConfigsResult, DescribeConfigsSynonym,
};
use kafka_protocol::messages::{DescribeConfigsRequest, DescribeConfigsResponse};

use super::{str_bytes, Err, RequestContext};
use crate::auth::{Operation, ResourceType, CLUSTER_NAME};
use crate::broker::BrokerConfig;
use crate::settings::group_configs;
use crate::settings::{self, dynamic, dynamic::Scope};
use crate::storage::topic_config;
use crate::storage::topics::validate_topic_name;

/// `ConfigResource.Type` on the wire.
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
const GROUP: i8 = 32;

pub async fn handle(ctx: &RequestContext, req: DescribeConfigsRequest) -> DescribeConfigsResponse {
    let results = req
        .resources
        .into_iter()
        .map(|r| {
            let keys: Option<Vec<String>> = r
                .configuration_keys
                .filter(|k| !k.is_empty())
                .map(|k| k.iter().map(|s| s.to_string()).collect());
            let wanted = |name: &str| keys.as_ref().is_none_or(|k| k.iter().any(|n| n == name));
            let name = r.resource_name.to_string();
            let outcome = match r.resource_type {
                TOPIC => describe_topic(ctx, &name),
                BROKER => describe_broker(ctx, &name),
                GROUP => describe_group(ctx, &name),
                other => Err((
                    Err::InvalidRequest.code(),
                    Some(format!(
                        "Unsupported resource type: {}",
                        resource_type_name(other)
                    )),
                )),
            };
            let result = DescribeConfigsResult::default()
                .with_resource_type(r.resource_type)
                .with_resource_name(r.resource_name);
            match outcome {
                Ok(configs) => result.with_configs(
                    configs
                        .into_iter()
                        .filter(|c| wanted(&c.name))
                        .map(|c| {
                            entry(
                                c,
                                ctx.api_version,
                                req.include_synonyms,
                                req.include_documentation,
                            )
                        })
                        .collect(),
                ),
                Err((code, message)) => result
                    .with_error_code(code)
                    .with_error_message(message.map(str_bytes)),
            }
        })
        .collect();
    DescribeConfigsResponse::default().with_results(results)
}

/// `ConfigResource.Type`'s name for a wire code (UNKNOWN for a code it
/// does not have), as Apache's messages print it.
pub(super) fn resource_type_name(code: i8) -> &'static str {
    match code {
        2 => "TOPIC",
        4 => "BROKER",
        8 => "BROKER_LOGGER",
        16 => "CLIENT_METRICS",
        32 => "GROUP",
        _ => "UNKNOWN",
    }
}

/// One described config, whichever the resource.
struct Described {
    name: String,
    value: Option<String>,
    read_only: bool,
    source: i8,
    sensitive: bool,
    synonyms: Vec<(String, Option<String>, i8)>,
    kind: i8,
    doc: Option<&'static str>,
}

/// `c` on the wire: synonyms and documentation only when asked, the type
/// from v3.
fn entry(c: Described, version: i16, synonyms: bool, docs: bool) -> DescribeConfigsResourceResult {
    let synonyms = if synonyms { c.synonyms } else { Vec::new() };
    DescribeConfigsResourceResult::default()
        .with_name(str_bytes(c.name))
        .with_value(c.value.map(str_bytes))
        .with_read_only(c.read_only)
        .with_config_source(c.source)
        .with_is_sensitive(c.sensitive)
        .with_synonyms(
            synonyms
                .into_iter()
                .map(|(name, value, source)| {
                    DescribeConfigsSynonym::default()
                        .with_name(str_bytes(name))
                        .with_value(value.map(str_bytes))
                        .with_source(source)
                })
                .collect(),
        )
        .with_config_type(if version >= 3 { c.kind } else { 0 })
        .with_documentation(c.doc.filter(|_| docs).map(|d| str_bytes(d.to_string())))
}

type Outcome = Result<Vec<Described>, (i16, Option<String>)>;

/// An authorization failure with the error's own message, as Apache
/// answers it.
fn denied(e: Err) -> (i16, Option<String>) {
    (e.code(), Some(e.to_string()))
}

/// Apache's TOPIC branch: DESCRIBE_CONFIGS on the topic, a valid name, a
/// topic that exists (UNKNOWN_TOPIC_OR_PARTITION with no message), then
/// every topic config.
fn describe_topic(ctx: &RequestContext, name: &str) -> Outcome {
    if !ctx.authorized(Operation::DescribeConfigs, ResourceType::Topic, name) {
        return Err(denied(Err::TopicAuthorizationFailed));
    }
    if let Err(e) = validate_topic_name(name) {
        return Err((Err::InvalidTopicException.code(), Some(e.to_string())));
    }
    let Some(topic) = ctx.broker.storage.topics.get(name) else {
        return Err((Err::UnknownTopicOrPartition.code(), None));
    };
    let described = topic_config::describe(&topic.configs, &ctx.broker.storage.topic_defaults());
    Ok(from_definitions(described))
}

/// Described topic or group configs, all of which are read-write, none
/// sensitive, and each documented.
fn from_definitions(described: Vec<topic_config::DescribedConfig>) -> Vec<Described> {
    described
        .into_iter()
        .map(|c| Described {
            name: c.name.to_string(),
            value: Some(c.value),
            read_only: false,
            source: c.source.code(),
            sensitive: false,
            synonyms: c
                .synonyms
                .into_iter()
                .map(|s| (s.name, Some(s.value), s.source.code()))
                .collect(),
            kind: c.kind.code(),
            doc: Some(c.doc),
        })
        .collect()
}

/// Apache's GROUP branch: DESCRIBE_CONFIGS on the group, a name that is
/// not empty, then every group config (the group need not exist).
fn describe_group(ctx: &RequestContext, name: &str) -> Outcome {
    if !ctx.authorized(Operation::DescribeConfigs, ResourceType::Group, name) {
        return Err(denied(Err::GroupAuthorizationFailed));
    }
    if name.is_empty() {
        return Err((
            Err::InvalidRequest.code(),
            Some("Group name must not be empty".into()),
        ));
    }
    let overrides = ctx.broker.group_configs.current().of(name);
    Ok(from_definitions(group_configs::describe(
        &overrides,
        &ctx.broker.config.groups.core.consumer,
    )))
}

/// Apache's BROKER branch: Cluster DESCRIBE_CONFIGS; an empty name (the
/// settings changed at run time for every broker) or this broker's id
/// (every setting in force: [`dynamic::describe`]); secrets sensitive
/// with no value; read-only where kaas does not change it at run time;
/// each with its type ([`settings::setting_type`]).
fn describe_broker(ctx: &RequestContext, name: &str) -> Outcome {
    if !ctx.authorized(
        Operation::DescribeConfigs,
        ResourceType::Cluster,
        CLUSTER_NAME,
    ) {
        return Err(denied(Err::ClusterAuthorizationFailed));
    }
    let config = &ctx.broker.config;
    let scope = if name.is_empty() {
        Scope::Default
    } else {
        let invalid = |m: String| Err((Err::InvalidRequest.code(), Some(m)));
        let Ok(id) = name.parse::<i32>() else {
            return invalid(format!("Broker id must be an integer, but it is: {name}"));
        };
        if id != config.id {
            return invalid(format!(
                "Unexpected broker id, expected {} or empty string, but received {name}",
                config.id
            ));
        }
        Scope::Broker(id)
    };
    let defaults = BrokerConfig::new(config.id, config.data_dir.clone(), "", 0);
    // A broker's id and folder are always given (Apache has no default).
    let mut defaults = settings::effective(&defaults, &[], None);
    defaults.retain(|(k, _)| !matches!(*k, "node.id" | "log.dirs"));
    let described = dynamic::describe(
        &settings::effective(config, &[], None),
        &defaults,
        &ctx.broker.dynamic_configs.current(),
        scope,
    );
    Ok(described
        .into_iter()
        .map(|e| Described {
            kind: settings::setting_type(&e.name).map_or(0, |k| k.code()),
            name: e.name,
            value: e.value,
            read_only: e.read_only,
            source: e.source.code(),
            sensitive: e.sensitive,
            synonyms: e
                .synonyms
                .into_iter()
                .map(|(name, value, source)| (name, value, source.code()))
                .collect(),
            doc: None,
        })
        .collect())
}
