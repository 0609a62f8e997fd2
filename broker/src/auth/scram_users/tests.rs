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
