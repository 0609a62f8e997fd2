//! Client quotas (KIP-13, KIP-55, KIP-124, KIP-219, KIP-257): the quotas
//! users set for users, client ids and their defaults, kept on the shared
//! volume (`__cluster/client_quotas`, followed by every broker), changed
//! and described as Apache's controller and metadata image do
//! ([`alter`], [`describe`]), and enforced per broker ([`enforce`]) as
//! Apache's `ClientQuotaManager` does.

pub mod enforce;
pub mod rate;

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

/// The shared document's name.
pub const DOCUMENT: &str = "client_quotas";

pub const USER: &str = "user";
pub const CLIENT_ID: &str = "client-id";
pub const IP: &str = "ip";

pub const PRODUCER_BYTE_RATE: &str = "producer_byte_rate";
pub const CONSUMER_BYTE_RATE: &str = "consumer_byte_rate";
pub const REQUEST_PERCENTAGE: &str = "request_percentage";
pub const CONTROLLER_MUTATION_RATE: &str = "controller_mutation_rate";
pub const CONNECTION_CREATION_RATE: &str = "connection_creation_rate";

/// A quota entity: each of its types (`user`, `client-id`, `ip`) with a
/// name, or `None` for that type's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Entity(pub BTreeMap<String, Option<String>>);

impl Entity {
    pub fn of(parts: &[(&str, Option<&str>)]) -> Entity {
        Entity(
            parts
                .iter()
                .map(|(t, n)| (t.to_string(), n.map(str::to_string)))
                .collect(),
        )
    }
}

/// As Apache's `ClientQuotaEntity` prints (`null` for a default).
impl fmt::Display for Entity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries: Vec<String> = self
            .0
            .iter()
            .map(|(t, n)| format!("{t}={}", n.as_deref().unwrap_or("null")))
            .collect();
        write!(f, "ClientQuotaEntity(entries={{{}}})", entries.join(", "))
    }
}

/// Every entity's quotas, as the shared volume holds them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientQuotas {
    pub entities: BTreeMap<String, EntityQuotas>,
}

/// One entity and its quotas (the document's key is the entity's JSON).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EntityQuotas {
    pub entity: Entity,
    pub values: BTreeMap<String, f64>,
}

impl ClientQuotas {
    pub fn get(&self, entity: &Entity) -> Option<&BTreeMap<String, f64>> {
        self.entities.get(&key_of(entity)).map(|e| &e.values)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Entity, &BTreeMap<String, f64>)> {
        self.entities.values().map(|e| (&e.entity, &e.values))
    }

    fn set(&mut self, entity: &Entity, key: &str, value: Option<f64>) {
        let k = key_of(entity);
        let entry = self
            .entities
            .entry(k.clone())
            .or_insert_with(|| EntityQuotas {
                entity: entity.clone(),
                values: BTreeMap::new(),
            });
        match value {
            Some(v) => {
                entry.values.insert(key.to_string(), v);
            }
            None => {
                entry.values.remove(key);
            }
        }
        if entry.values.is_empty() {
            self.entities.remove(&k);
        }
    }
}

fn key_of(entity: &Entity) -> String {
    serde_json::to_string(&entity.0).unwrap_or_default()
}

/// A quota key's type, as Apache's `QuotaConfig` defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KeyType {
    Long,
    Int,
    Double,
}

const USER_AND_CLIENT_KEYS: &[(&str, KeyType)] = &[
    (PRODUCER_BYTE_RATE, KeyType::Long),
    (CONSUMER_BYTE_RATE, KeyType::Long),
    (REQUEST_PERCENTAGE, KeyType::Double),
    (CONTROLLER_MUTATION_RATE, KeyType::Double),
];
const IP_KEYS: &[(&str, KeyType)] = &[(CONNECTION_CREATION_RATE, KeyType::Int)];

/// What kaas does not enforce yet, refused rather than kept and ignored.
fn not_enforced(key: &str) -> Option<String> {
    match key {
        CONNECTION_CREATION_RATE => Some(format!(
            "kaas does not enforce {key} yet, so it does not accept it (issue #33)"
        )),
        _ => None,
    }
}

/// One entity's alteration from an AlterClientQuotas request: its entity
/// as sent (a type named twice keeps the last, as Apache's request
/// parsing does) and its operations (`None` removes the key).
#[derive(Debug, Clone)]
pub struct Alteration {
    pub entity: Entity,
    pub ops: Vec<(String, Option<f64>)>,
}

/// Apache's ClientQuotaControlManager.alterClientQuotas: each entity's
/// outcome (INVALID_REQUEST's message on failure), in the order entities
/// first appear; the changes of every entity that succeeded are applied
/// to `quotas` together (unless `validate_only`). An entity altered twice
/// in one request answers "Ignoring duplicate entity" (its first
/// alteration stands), as Apache's does.
pub fn alter(
    quotas: &mut ClientQuotas,
    alterations: &[Alteration],
    validate_only: bool,
) -> Vec<(Entity, Result<(), String>)> {
    let mut results: Vec<(Entity, Result<(), String>)> = Vec::new();
    let mut changes: Vec<(Entity, String, Option<f64>)> = Vec::new();
    for alteration in alterations {
        let entity = &alteration.entity;
        let mut ops: BTreeMap<&str, Option<f64>> = BTreeMap::new();
        let mut failed = results.iter().any(|(e, _)| e == entity);
        for (key, value) in &alteration.ops {
            if ops.insert(key, *value).is_some() {
                // Apache records this, then replaces it with the message
                // below.
                failed = true;
            }
        }
        if failed {
            let outcome = Err(format!("Ignoring duplicate entity {entity}"));
            match results.iter_mut().find(|(e, _)| e == entity) {
                Some(slot) => slot.1 = outcome,
                None => results.push((entity.clone(), outcome)),
            }
            continue;
        }
        let outcome = alter_entity(quotas, entity, &ops).map(|entity_changes| {
            changes.extend(entity_changes);
        });
        results.push((entity.clone(), outcome));
    }
    if !validate_only {
        for (entity, key, value) in changes {
            quotas.set(&entity, &key, value);
        }
    }
    results
}

/// One entity's changes, or why none are made.
fn alter_entity(
    quotas: &ClientQuotas,
    entity: &Entity,
    ops: &BTreeMap<&str, Option<f64>>,
) -> Result<Vec<(Entity, String, Option<f64>)>, String> {
    if entity.0.is_empty() {
        return Err("Invalid empty client quota entity".into());
    }
    for (entity_type, name) in &entity.0 {
        if ![USER, CLIENT_ID, IP].contains(&entity_type.as_str()) {
            return Err(format!("Unhandled client quota entity type: {entity_type}"));
        }
        if name.as_deref() == Some("") {
            return Err(format!("Empty {entity_type} not supported"));
        }
    }
    let keys = keys_of(entity)?;
    let current = quotas.get(entity);
    let mut changes = Vec::new();
    for (key, value) in ops {
        match value {
            None => {
                if current.is_some_and(|c| c.contains_key(*key)) {
                    changes.push((entity.clone(), key.to_string(), None));
                }
            }
            Some(v) => {
                check_value(keys, key, *v)?;
                if current.and_then(|c| c.get(*key)) != Some(v) {
                    changes.push((entity.clone(), key.to_string(), Some(*v)));
                }
            }
        }
    }
    Ok(changes)
}

/// The keys an entity's combination of types may set.
fn keys_of(entity: &Entity) -> Result<&'static [(&'static str, KeyType)], String> {
    let has = |t: &str| entity.0.contains_key(t);
    if has(IP) {
        if has(USER) || has(CLIENT_ID) {
            // Apache's message, its missing space included.
            return Err("Invalid quota entity combination, IP entity should\
                        not be combined with User or ClientId"
                .into());
        }
        if let Some(Some(ip)) = entity.0.get(IP) {
            if ip.parse::<std::net::IpAddr>().is_err() {
                return Err(format!("{ip} is not a valid IP or resolvable host."));
            }
        }
        return Ok(IP_KEYS);
    }
    Ok(USER_AND_CLIENT_KEYS)
}

/// Apache's `validateQuotaKeyValue`.
fn check_value(keys: &[(&str, KeyType)], key: &str, value: f64) -> Result<(), String> {
    let Some((_, kind)) = keys.iter().find(|(k, _)| *k == key) else {
        return Err(format!("Invalid configuration key {key}"));
    };
    if value <= 0.0 || value.is_nan() {
        return Err(format!("Quota {key} must be greater than 0"));
    }
    let integral = |limit: f64, type_name: &str| {
        if value > limit {
            return Err(format!(
                "Proposed value for {key} is too large for {type_name}."
            ));
        }
        if (value % 1.0).abs() > 1e-6 {
            return Err(format!("{key} cannot be a fractional value."));
        }
        Ok(())
    };
    match kind {
        KeyType::Double => {}
        KeyType::Int => integral(i32::MAX as f64, "an INT")?,
        KeyType::Long => integral(i64::MAX as f64, "a LONG")?,
    }
    match not_enforced(key) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// How a DescribeClientQuotas filter component matches an entity type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Match {
    /// The named entity (`None`: the type's default).
    Exact(Option<String>),
    /// Any entity with that type.
    Specified,
}

/// Why a DescribeClientQuotas filter is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FilterError {
    InvalidRequest(String),
    UnsupportedVersion(String),
}

/// One component of a DescribeClientQuotas filter as sent.
pub struct Component<'a> {
    pub entity_type: &'a str,
    pub match_type: i8,
    pub name: Option<&'a str>,
}

/// Apache's `ClientQuotasImage.describe`: the entities `components`
/// match (all of them; with `strict`, no other types either), with their
/// quotas.
pub fn describe<'q>(
    quotas: &'q ClientQuotas,
    components: &[Component<'_>],
    strict: bool,
) -> Result<Vec<&'q EntityQuotas>, FilterError> {
    let invalid = |m: String| Err(FilterError::InvalidRequest(m));
    let mut filter: BTreeMap<&str, Match> = BTreeMap::new();
    for c in components {
        if c.entity_type.is_empty() {
            return invalid("Invalid empty entity type.".into());
        }
        if filter.contains_key(c.entity_type) {
            return invalid(format!(
                "Entity type {} cannot appear more than once in the filter.",
                c.entity_type
            ));
        }
        if ![IP, USER, CLIENT_ID].contains(&c.entity_type) {
            return Err(FilterError::UnsupportedVersion(format!(
                "Unsupported entity type {}",
                c.entity_type
            )));
        }
        let m =
            match (c.match_type, c.name) {
                (0, Some(name)) => Match::Exact(Some(name.to_string())),
                (0, None) => {
                    return invalid(
                        "Request specified MATCH_TYPE_EXACT, but set match string to null.".into(),
                    )
                }
                (1, None) => Match::Exact(None),
                (1, Some(_)) => {
                    return invalid(
                        "Request specified MATCH_TYPE_DEFAULT, but also specified a match string."
                            .into(),
                    )
                }
                (2, None) => Match::Specified,
                (2, Some(_)) => return invalid(
                    "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string."
                        .into(),
                ),
                (other, _) => return invalid(format!("Unknown match type {other}")),
            };
        filter.insert(c.entity_type, m);
    }
    if filter.contains_key(IP) && (filter.contains_key(USER) || filter.contains_key(CLIENT_ID)) {
        return invalid(
            "Invalid entity filter component combination. IP filter component should not be \
             used with user or clientId filter component."
                .into(),
        );
    }
    Ok(quotas
        .entities
        .values()
        .filter(|q| {
            let entity = &q.entity;
            if strict && entity.0.len() != filter.len() {
                return false;
            }
            filter.iter().all(|(t, m)| match (entity.0.get(*t), m) {
                (None, _) => false,
                (Some(name), Match::Exact(want)) => name == want,
                (Some(_), Match::Specified) => true,
            })
        })
        .collect())
}

#[cfg(test)]
mod tests;
