use super::*;
use crate::group::assignor::testing::{assignment, MockAssignor};
use uuid::Uuid;

/// Apache's `TargetAssignmentBuilderTestContext`.
struct Context {
    group_epoch: i32,
    members: BTreeMap<String, ConsumerGroupMember>,
    topics: BTreeMap<String, TopicMetadata>,
    updated: Vec<(String, Option<ConsumerGroupMember>)>,
    target: BTreeMap<String, MemberAssignment>,
    static_members: BTreeMap<String, String>,
    assignor: MockAssignor,
}

fn member(id: &str, instance: Option<&str>, topics: &[&str]) -> ConsumerGroupMember {
    let mut m = ConsumerGroupMember::new(id);
    m.metadata.instance_id = instance.map(str::to_string);
    m.metadata.subscribed_topic_names = topics.iter().map(|t| t.to_string()).collect();
    m
}

impl Context {
    fn new(group_epoch: i32) -> Context {
        Context {
            group_epoch,
            members: BTreeMap::new(),
            topics: BTreeMap::new(),
            updated: Vec::new(),
            target: BTreeMap::new(),
            static_members: BTreeMap::new(),
            assignor: MockAssignor::new("range"),
        }
    }

    fn add_topic_metadata(&mut self, name: &str, partitions: i32) -> Uuid {
        let id = Uuid::new_v4();
        self.topics.insert(
            name.into(),
            TopicMetadata {
                id,
                name: name.into(),
                num_partitions: partitions,
            },
        );
        id
    }

    fn add_group_member(
        &mut self,
        id: &str,
        instance: Option<&str>,
        topics: &[&str],
        target: MemberAssignment,
    ) {
        if let Some(instance) = instance {
            self.static_members.insert(instance.into(), id.into());
        }
        self.members.insert(id.into(), member(id, instance, topics));
        self.target.insert(id.into(), target);
    }

    fn update_member_subscription(
        &mut self,
        id: &str,
        topics: &[&str],
        instance: Option<&str>,
        rack: Option<&str>,
    ) {
        let mut m = self
            .members
            .get(id)
            .cloned()
            .unwrap_or_else(|| ConsumerGroupMember::new(id));
        m.metadata.subscribed_topic_names = topics.iter().map(|t| t.to_string()).collect();
        if let Some(instance) = instance {
            m.metadata.instance_id = Some(instance.into());
        }
        if let Some(rack) = rack {
            m.metadata.rack_id = Some(rack.into());
        }
        self.updated.push((id.into(), Some(m)));
    }

    fn remove_member_subscription(&mut self, id: &str) {
        self.updated.push((id.into(), None));
    }

    fn prepare_member_assignment(&mut self, id: &str, partitions: MemberAssignment) {
        self.assignor
            .prepared
            .lock()
            .unwrap()
            .insert(id.into(), partitions);
    }

    fn build(&self) -> (TargetAssignmentResult, GroupSpec) {
        let mut builder = TargetAssignmentBuilder::new(self.group_epoch, &self.assignor)
            .with_members(&self.members)
            .with_static_members(&self.static_members)
            .with_subscription_metadata(&self.topics)
            .with_target_assignment(&self.target);
        for (id, update) in &self.updated {
            builder = match update {
                Some(m) => builder.add_or_update_member(m.clone()),
                None => builder.remove_member(id),
            };
        }
        let result = builder.build().unwrap();
        let mut calls = self.assignor.called_with.lock().unwrap();
        assert_eq!(calls.len(), 1, "the assignor is called once");
        (result, calls.pop().unwrap())
    }
}

fn target_record(member_id: &str, partitions: MemberAssignment) -> ConsumerGroupRecord {
    ConsumerGroupRecord::TargetMember {
        member_id: member_id.into(),
        partitions,
    }
}

fn epoch_record(epoch: i32) -> ConsumerGroupRecord {
    ConsumerGroupRecord::TargetEpoch {
        assignment_epoch: epoch,
    }
}

fn expected(entries: &[(&str, MemberAssignment)]) -> GroupAssignment {
    entries
        .iter()
        .map(|(id, a)| (id.to_string(), a.clone()))
        .collect()
}

#[test]
fn test_create_member_subscription_spec_impl() {
    let (foo, bar) = (Uuid::new_v4(), Uuid::new_v4());
    let topics: BTreeMap<String, TopicMetadata> = [("foo", foo), ("bar", bar)]
        .into_iter()
        .map(|(name, id)| {
            (
                name.to_string(),
                TopicMetadata {
                    id,
                    name: name.into(),
                    num_partitions: 5,
                },
            )
        })
        .collect();
    let mut m = member("member-id", Some("instanceId"), &["foo", "bar", "zar"]);
    m.metadata.rack_id = Some("rackId".into());
    let a = assignment(&[(foo, &[1, 2, 3]), (bar, &[1, 2, 3])]);
    assert_eq!(
        subscription(&m, a.clone(), &topics, &BTreeMap::new()),
        MemberSubscription {
            instance_id: Some("instanceId".into()),
            rack_id: Some("rackId".into()),
            // zar does not exist.
            subscribed_topic_ids: [foo, bar].into(),
            assignment: a,
        }
    );
}

#[test]
fn test_empty() {
    let context = Context::new(20);
    let (result, _) = context.build();
    assert_eq!(result.records, vec![epoch_record(20)]);
    assert!(result.target.is_empty());
}

#[test]
fn test_assignment_has_not_changed() {
    let mut c = Context::new(20);
    let foo = c.add_topic_metadata("foo", 6);
    let bar = c.add_topic_metadata("bar", 6);
    let m1 = assignment(&[(foo, &[1, 2, 3]), (bar, &[1, 2, 3])]);
    let m2 = assignment(&[(foo, &[4, 5, 6]), (bar, &[4, 5, 6])]);
    c.add_group_member("member-1", None, &["foo", "bar", "zar"], m1.clone());
    c.add_group_member("member-2", None, &["foo", "bar", "zar"], m2.clone());
    c.prepare_member_assignment("member-1", m1.clone());
    c.prepare_member_assignment("member-2", m2.clone());
    let (result, _) = c.build();
    assert_eq!(result.records, vec![epoch_record(20)]);
    assert_eq!(
        result.target,
        expected(&[("member-1", m1), ("member-2", m2)])
    );
}

#[test]
fn test_assignment_swapped() {
    let mut c = Context::new(20);
    let foo = c.add_topic_metadata("foo", 6);
    let bar = c.add_topic_metadata("bar", 6);
    let low = assignment(&[(foo, &[1, 2, 3]), (bar, &[1, 2, 3])]);
    let high = assignment(&[(foo, &[4, 5, 6]), (bar, &[4, 5, 6])]);
    c.add_group_member("member-1", None, &["foo", "bar", "zar"], low.clone());
    c.add_group_member("member-2", None, &["foo", "bar", "zar"], high.clone());
    c.prepare_member_assignment("member-2", low.clone());
    c.prepare_member_assignment("member-1", high.clone());
    let (result, _) = c.build();
    assert_eq!(
        result.records,
        vec![
            target_record("member-1", high.clone()),
            target_record("member-2", low.clone()),
            epoch_record(20),
        ]
    );
    assert_eq!(
        result.target,
        expected(&[("member-1", high), ("member-2", low)])
    );
}

#[test]
fn test_new_member() {
    let mut c = Context::new(20);
    let foo = c.add_topic_metadata("foo", 6);
    let bar = c.add_topic_metadata("bar", 6);
    c.add_group_member(
        "member-1",
        None,
        &["foo", "bar", "zar"],
        assignment(&[(foo, &[1, 2, 3]), (bar, &[1, 2, 3])]),
    );
    c.add_group_member(
        "member-2",
        None,
        &["foo", "bar", "zar"],
        assignment(&[(foo, &[4, 5, 6]), (bar, &[4, 5, 6])]),
    );
    c.update_member_subscription("member-3", &["foo", "bar", "zar"], None, None);
    let a1 = assignment(&[(foo, &[1, 2]), (bar, &[1, 2])]);
    let a2 = assignment(&[(foo, &[3, 4]), (bar, &[3, 4])]);
    let a3 = assignment(&[(foo, &[5, 6]), (bar, &[5, 6])]);
    c.prepare_member_assignment("member-1", a1.clone());
    c.prepare_member_assignment("member-2", a2.clone());
    c.prepare_member_assignment("member-3", a3.clone());
    let (result, spec) = c.build();
    assert_eq!(
        result.records,
        vec![
            target_record("member-1", a1.clone()),
            target_record("member-2", a2.clone()),
            target_record("member-3", a3.clone()),
            epoch_record(20),
        ]
    );
    assert_eq!(
        result.target,
        expected(&[("member-1", a1), ("member-2", a2), ("member-3", a3)])
    );
    // The new member comes to the assignor with nothing.
    assert!(spec.members["member-3"].assignment.is_empty());
    assert_eq!(
        spec.members["member-3"].subscribed_topic_ids,
        [foo, bar].into()
    );
}

#[test]
fn test_update_member() {
    let mut c = Context::new(20);
    let foo = c.add_topic_metadata("foo", 6);
    let bar = c.add_topic_metadata("bar", 6);
    c.add_group_member(
        "member-1",
        None,
        &["foo", "bar", "zar"],
        assignment(&[(foo, &[1, 2, 3]), (bar, &[1, 2])]),
    );
    c.add_group_member(
        "member-2",
        None,
        &["foo", "bar", "zar"],
        assignment(&[(foo, &[4, 5, 6]), (bar, &[3, 4])]),
    );
    c.add_group_member(
        "member-3",
        None,
        &["bar", "zar"],
        assignment(&[(bar, &[5, 6])]),
    );
    c.update_member_subscription(
        "member-3",
        &["foo", "bar", "zar"],
        Some("instance-id-3"),
        Some("rack-0"),
    );
    let a1 = assignment(&[(foo, &[1, 2]), (bar, &[1, 2])]);
    let a2 = assignment(&[(foo, &[3, 4]), (bar, &[3, 4])]);
    let a3 = assignment(&[(foo, &[5, 6]), (bar, &[5, 6])]);
    c.prepare_member_assignment("member-1", a1.clone());
    c.prepare_member_assignment("member-2", a2.clone());
    c.prepare_member_assignment("member-3", a3.clone());
    let (result, spec) = c.build();
    assert_eq!(
        result.records,
        vec![
            target_record("member-1", a1.clone()),
            target_record("member-2", a2.clone()),
            target_record("member-3", a3.clone()),
            epoch_record(20),
        ]
    );
    assert_eq!(
        result.target,
        expected(&[("member-1", a1), ("member-2", a2), ("member-3", a3)])
    );
    assert_eq!(
        spec.members["member-3"],
        MemberSubscription {
            instance_id: Some("instance-id-3".into()),
            rack_id: Some("rack-0".into()),
            subscribed_topic_ids: [foo, bar].into(),
            assignment: assignment(&[(bar, &[5, 6])]),
        }
    );
}

#[test]
fn test_partial_assignment_update() {
    let mut c = Context::new(20);
    let foo = c.add_topic_metadata("foo", 6);
    let bar = c.add_topic_metadata("bar", 6);
    let a1 = assignment(&[(foo, &[1, 2]), (bar, &[1, 2])]);
    c.add_group_member("member-1", None, &["foo", "bar", "zar"], a1.clone());
    c.add_group_member(
        "member-2",
        None,
        &["foo", "bar", "zar"],
        assignment(&[(foo, &[3, 4]), (bar, &[3, 4])]),
    );
    c.add_group_member(
        "member-3",
        None,
        &["bar", "zar"],
        assignment(&[(foo, &[5, 6]), (bar, &[5, 6])]),
    );
    let a2 = assignment(&[(foo, &[3, 4, 5]), (bar, &[3, 4, 5])]);
    let a3 = assignment(&[(foo, &[6]), (bar, &[6])]);
    c.prepare_member_assignment("member-1", a1.clone());
    c.prepare_member_assignment("member-2", a2.clone());
    c.prepare_member_assignment("member-3", a3.clone());
    let (result, _) = c.build();
    // Member 1 has no record because its assignment did not change.
    assert_eq!(
        result.records,
        vec![
            target_record("member-2", a2.clone()),
            target_record("member-3", a3.clone()),
            epoch_record(20),
        ]
    );
    assert_eq!(
        result.target,
        expected(&[("member-1", a1), ("member-2", a2), ("member-3", a3)])
    );
}

#[test]
fn test_delete_member() {
    let mut c = Context::new(20);
    let foo = c.add_topic_metadata("foo", 6);
    let bar = c.add_topic_metadata("bar", 6);
    for (id, ps) in [
        ("member-1", [1, 2]),
        ("member-2", [3, 4]),
        ("member-3", [5, 6]),
    ] {
        c.add_group_member(
            id,
            None,
            &["foo", "bar", "zar"],
            assignment(&[(foo, &ps), (bar, &ps)]),
        );
    }
    c.remove_member_subscription("member-3");
    let a1 = assignment(&[(foo, &[1, 2, 3]), (bar, &[1, 2, 3])]);
    let a2 = assignment(&[(foo, &[4, 5, 6]), (bar, &[4, 5, 6])]);
    c.prepare_member_assignment("member-1", a1.clone());
    c.prepare_member_assignment("member-2", a2.clone());
    let (result, spec) = c.build();
    assert_eq!(
        result.records,
        vec![
            target_record("member-1", a1.clone()),
            target_record("member-2", a2.clone()),
            epoch_record(20),
        ]
    );
    assert_eq!(
        result.target,
        expected(&[("member-1", a1), ("member-2", a2)])
    );
    assert!(!spec.members.contains_key("member-3"));
}

#[test]
fn test_replace_static_member() {
    let mut c = Context::new(20);
    let foo = c.add_topic_metadata("foo", 6);
    let bar = c.add_topic_metadata("bar", 6);
    for (id, ps) in [
        ("member-1", [1, 2]),
        ("member-2", [3, 4]),
        ("member-3", [5, 6]),
    ] {
        c.add_group_member(
            id,
            Some(&format!("instance-{id}")),
            &["foo", "bar", "zar"],
            assignment(&[(foo, &ps), (bar, &ps)]),
        );
    }
    // Static member 3 leaves; another joins with its instance id.
    c.remove_member_subscription("member-3");
    c.update_member_subscription(
        "member-3-a",
        &["foo", "bar", "zar"],
        Some("instance-member-3"),
        None,
    );
    let a1 = assignment(&[(foo, &[1, 2]), (bar, &[1, 2])]);
    let a2 = assignment(&[(foo, &[3, 4]), (bar, &[3, 4])]);
    let a3 = assignment(&[(foo, &[5, 6]), (bar, &[5, 6])]);
    c.prepare_member_assignment("member-1", a1.clone());
    c.prepare_member_assignment("member-2", a2.clone());
    c.prepare_member_assignment("member-3-a", a3.clone());
    let (result, spec) = c.build();
    assert_eq!(
        result.records,
        vec![target_record("member-3-a", a3.clone()), epoch_record(20)]
    );
    assert_eq!(
        result.target,
        expected(&[
            ("member-1", a1),
            ("member-2", a2),
            ("member-3-a", a3.clone())
        ])
    );
    // The new instance comes to the assignor with the departed one's
    // target.
    assert_eq!(spec.members["member-3-a"].assignment, a3);
}
