//! The SCRAM users of the cluster and how the admin APIs change and show
//! them, as Apache's `ScramControlManager.alterCredentials` and
//! `ScramImage.describe` do. Pure: the map is handed in.

use std::collections::{BTreeMap, HashMap};

use kafka_protocol::ResponseError as E;

use super::scram::{Mechanism, ScramCredential, MAX_ITERATIONS, MIN_ITERATIONS};

/// User name → mechanism → credential.
pub type ScramUsers = BTreeMap<String, BTreeMap<Mechanism, ScramCredential>>;

/// The credential of `user` for `mechanism`, if any.
pub fn credential(users: &ScramUsers, user: &str, m: Mechanism) -> Option<ScramCredential> {
    users.get(user).and_then(|c| c.get(&m)).cloned()
}

/// Gives `user` credentials for `password` under every mechanism, keeping
/// those that already match it (a restart with the same password changes
/// nothing); `salt` draws a new salt. Whether anything changed.
pub fn ensure_user(
    users: &mut ScramUsers,
    user: &str,
    password: &str,
    mut salt: impl FnMut() -> Vec<u8>,
) -> bool {
    let mut changed = false;
    for m in Mechanism::ALL {
        if credential(users, user, m).is_some_and(|c| c.matches(password)) {
            continue;
        }
        let c = ScramCredential::derive(m, password, &salt(), MIN_ITERATIONS);
        users.entry(user.to_string()).or_default().insert(m, c);
        changed = true;
    }
    changed
}

pub struct Deletion {
    pub name: String,
    pub mechanism: i8,
}

pub struct Upsertion {
    pub name: String,
    pub mechanism: i8,
    pub iterations: i32,
    pub salt: Vec<u8>,
    pub salted_password: Vec<u8>,
}

/// One user's answer: NONE, or Apache's error and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub user: String,
    pub error: i16,
    pub message: Option<String>,
}

fn check_name_and_mechanism(name: &str, mechanism: i8) -> Result<Mechanism, (E, String)> {
    if name.is_empty() {
        return Err((
            E::UnacceptableCredential,
            "Username must not be empty".into(),
        ));
    }
    Mechanism::from_code(mechanism).ok_or_else(|| {
        (
            E::UnsupportedSaslMechanism,
            "Unknown SCRAM mechanism".into(),
        )
    })
}

/// Applies what is valid and answers per user: a user named twice
/// DUPLICATE_RESOURCE; an empty name or too few (below 4096) or too many
/// (above 16384) iterations UNACCEPTABLE_CREDENTIAL; an unknown mechanism
/// UNSUPPORTED_SASL_MECHANISM; deleting what does not exist
/// RESOURCE_NOT_FOUND. kaas also refuses a salted password whose length
/// is not the mechanism's (UNACCEPTABLE_CREDENTIAL), which Apache would
/// store and never match.
pub fn alter(
    users: &mut ScramUsers,
    deletions: &[Deletion],
    upsertions: &[Upsertion],
) -> Vec<Outcome> {
    let twice = || {
        (
            E::DuplicateResource,
            "A user credential cannot be altered twice in the same request".to_string(),
        )
    };
    let mut errors: HashMap<&str, (E, String)> = HashMap::new();
    let mut to_delete: BTreeMap<&str, Mechanism> = BTreeMap::new();
    let mut to_upsert: BTreeMap<&str, (Mechanism, ScramCredential)> = BTreeMap::new();
    for d in deletions {
        let name = d.name.as_str();
        if errors.contains_key(name) {
            continue;
        }
        if to_delete.remove(name).is_some() {
            errors.insert(name, twice());
            continue;
        }
        match check_name_and_mechanism(name, d.mechanism) {
            Ok(m) if credential(users, name, m).is_some() => {
                to_delete.insert(name, m);
            }
            Ok(_) => {
                errors.insert(
                    name,
                    (
                        E::ResourceNotFound,
                        "Attempt to delete a user credential that does not exist".into(),
                    ),
                );
            }
            Err(e) => {
                errors.insert(name, e);
            }
        }
    }
    for u in upsertions {
        let name = u.name.as_str();
        if errors.contains_key(name) {
            continue;
        }
        if to_delete.remove(name).is_some() || to_upsert.remove(name).is_some() {
            errors.insert(name, twice());
            continue;
        }
        let checked = check_name_and_mechanism(name, u.mechanism).and_then(|m| {
            if u.iterations < MIN_ITERATIONS as i32 {
                Err((E::UnacceptableCredential, "Too few iterations".into()))
            } else if u.iterations > MAX_ITERATIONS as i32 {
                Err((E::UnacceptableCredential, "Too many iterations".into()))
            } else if u.salt.is_empty() || u.salted_password.len() != m.key_len() {
                Err((
                    E::UnacceptableCredential,
                    "Invalid salt or salted password".into(),
                ))
            } else {
                Ok(m)
            }
        });
        match checked {
            Ok(m) => {
                let c = ScramCredential::from_salted_password(
                    m,
                    &u.salted_password,
                    &u.salt,
                    u.iterations as u32,
                );
                to_upsert.insert(name, (m, c));
            }
            Err(e) => {
                errors.insert(name, e);
            }
        }
    }
    let ok = |user: &str| Outcome {
        user: user.to_string(),
        error: 0,
        message: None,
    };
    let mut out = Vec::new();
    for (name, m) in to_delete {
        if let Some(c) = users.get_mut(name) {
            c.remove(&m);
            if c.is_empty() {
                users.remove(name);
            }
        }
        out.push(ok(name));
    }
    for (name, (m, c)) in to_upsert {
        users.entry(name.to_string()).or_default().insert(m, c);
        out.push(ok(name));
    }
    let mut errors: Vec<_> = errors.into_iter().collect();
    errors.sort_by(|a, b| a.0.cmp(b.0));
    out.extend(errors.into_iter().map(|(user, (e, message))| Outcome {
        user: user.to_string(),
        error: e.code(),
        message: Some(message),
    }));
    out
}

/// One user as DescribeUserScramCredentials shows it: its mechanisms and
/// iterations (never a key), or an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Described {
    pub user: String,
    pub error: i16,
    pub message: Option<String>,
    pub credentials: Vec<(Mechanism, u32)>,
}

/// Apache's `ScramImage.describe`: every user when none is named; a user
/// named twice DUPLICATE_RESOURCE; one without credentials
/// RESOURCE_NOT_FOUND.
pub fn describe(users: &ScramUsers, asked: Option<&[String]>) -> Vec<Described> {
    let mut wanted: BTreeMap<&str, bool> = BTreeMap::new();
    match asked {
        Some(names) if !names.is_empty() => {
            for n in names {
                let seen = wanted.contains_key(n.as_str());
                wanted.insert(n, seen);
            }
        }
        _ => wanted.extend(users.keys().map(|u| (u.as_str(), false))),
    }
    wanted
        .into_iter()
        .map(|(user, duplicate)| {
            let failed = |e: E, message: String| Described {
                user: user.to_string(),
                error: e.code(),
                message: Some(message),
                credentials: Vec::new(),
            };
            if duplicate {
                return failed(
                    E::DuplicateResource,
                    format!(
                        "Cannot describe SCRAM credentials for the same user twice in a single request: {user}"
                    ),
                );
            }
            match users.get(user) {
                Some(c) if !c.is_empty() => Described {
                    user: user.to_string(),
                    error: 0,
                    message: None,
                    credentials: c.iter().map(|(m, c)| (*m, c.iterations)).collect(),
                },
                _ => failed(
                    E::ResourceNotFound,
                    format!("Attempt to describe a user credential that does not exist: {user}"),
                ),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
