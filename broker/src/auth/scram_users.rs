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
mod tests {
    use super::*;

    fn upsert(name: &str, mechanism: i8, iterations: i32) -> Upsertion {
        let m = Mechanism::from_code(mechanism).unwrap_or(Mechanism::ScramSha256);
        Upsertion {
            name: name.into(),
            mechanism,
            iterations,
            salt: b"salt".to_vec(),
            salted_password: vec![7; m.key_len()],
        }
    }

    fn delete(name: &str, mechanism: i8) -> Deletion {
        Deletion {
            name: name.into(),
            mechanism,
        }
    }

    fn codes(out: &[Outcome]) -> Vec<(&str, i16)> {
        let mut v: Vec<_> = out.iter().map(|o| (o.user.as_str(), o.error)).collect();
        v.sort();
        v
    }

    /// ScramControlManagerTest's validation cases.
    #[test]
    fn alter_validates_as_apache() {
        let mut users = ScramUsers::new();
        let out = alter(
            &mut users,
            &[delete("nobody", 1), delete("", 1)],
            &[
                upsert("alice", 1, 4096),
                upsert("bob", 2, 4095),
                upsert("carol", 2, 16385),
                upsert("dave", 9, 8192),
                upsert("eve", 1, 4096),
                upsert("eve", 2, 4096),
            ],
        );
        assert_eq!(
            codes(&out),
            [
                ("", E::UnacceptableCredential.code()),
                ("alice", 0),
                ("bob", E::UnacceptableCredential.code()),
                ("carol", E::UnacceptableCredential.code()),
                ("dave", E::UnsupportedSaslMechanism.code()),
                ("eve", E::DuplicateResource.code()),
                ("nobody", E::ResourceNotFound.code()),
            ]
        );
        let message = |u: &str| out.iter().find(|o| o.user == u).unwrap().message.clone();
        assert_eq!(message("bob").as_deref(), Some("Too few iterations"));
        assert_eq!(message("carol").as_deref(), Some("Too many iterations"));
        assert_eq!(users.keys().collect::<Vec<_>>(), ["alice"]);
        // The stored keys are those of the salted password.
        let c = credential(&users, "alice", Mechanism::ScramSha256).unwrap();
        let expect =
            ScramCredential::from_salted_password(Mechanism::ScramSha256, &[7; 32], b"salt", 4096);
        assert_eq!(c, expect);
        // Delete one mechanism, then the last: the user is gone.
        alter(&mut users, &[], &[upsert("alice", 2, 4096)]);
        let out = alter(&mut users, &[delete("alice", 1)], &[]);
        assert_eq!(codes(&out), [("alice", 0)]);
        assert!(credential(&users, "alice", Mechanism::ScramSha512).is_some());
        alter(&mut users, &[delete("alice", 2)], &[]);
        assert!(users.is_empty());
        // A salted password of the wrong length is refused.
        let mut short = upsert("frank", 1, 4096);
        short.salted_password = vec![1; 5];
        let out = alter(&mut users, &[], &[short]);
        assert_eq!(codes(&out), [("frank", E::UnacceptableCredential.code())]);
    }

    #[test]
    fn describe_as_apache() {
        let mut users = ScramUsers::new();
        alter(
            &mut users,
            &[],
            &[upsert("alice", 1, 4096), upsert("bob", 2, 8192)],
        );
        let all = describe(&users, None);
        assert_eq!(
            all.iter()
                .map(|d| (d.user.as_str(), d.credentials.clone()))
                .collect::<Vec<_>>(),
            [
                ("alice", vec![(Mechanism::ScramSha256, 4096)]),
                ("bob", vec![(Mechanism::ScramSha512, 8192)])
            ]
        );
        let asked = ["bob".to_string(), "zed".to_string(), "bob".to_string()];
        let some = describe(&users, Some(&asked));
        let codes: Vec<_> = some.iter().map(|d| (d.user.as_str(), d.error)).collect();
        assert_eq!(
            codes,
            [
                ("bob", E::DuplicateResource.code()),
                ("zed", E::ResourceNotFound.code())
            ]
        );
        assert_eq!(
            some[1].message.as_deref(),
            Some("Attempt to describe a user credential that does not exist: zed")
        );
    }
}
