//! One suite, two assignment sources: a broker following the ConfigMap
//! must behave exactly as one following `<data>/__cluster/assignment.json`.
//!
//! The test plays the controller: it publishes documents itself (through
//! the file, or through the ConfigMap in the format the operator writes),
//! so each step is deterministic. Three real `kaas-broker serve` processes
//! follow the source; real librdkafka clients use them.
//!
//! - an explicit entry wins over the hash tier;
//! - a stale version is ignored;
//! - a broker marked dead loses its groups to `route`'s answer, the move is
//!   logged by both brokers, the old coordinator sweeps the group from
//!   memory (ListGroups), a live consumer carries on, and committed offsets
//!   survive.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kaas_broker::cluster::assignment_file;
use kaas_e2e_k8s::{
    committed_offset, coordinator, create_topic, eventually, free_port, listed_groups, produce,
    BrokerProc, GroupConsumer, Source, TestEnv,
};
use kaas_shared::configmap;
use kaas_shared::{route, Assignment, BrokerInfo, BrokerState, GroupEntry, Routing};
use kube::api::{Patch, PatchParams};
use kube::{Api, Client};

const WAIT: Duration = Duration::from_secs(30);

/// Publishes documents to one source.
enum Publisher {
    File(PathBuf),
    ConfigMap {
        client: Client,
        namespace: String,
        name: String,
    },
}

impl Publisher {
    async fn publish(&self, a: &Assignment) {
        match self {
            Publisher::File(path) => {
                assignment_file::write(path, a).expect("write the assignment file")
            }
            Publisher::ConfigMap {
                client,
                namespace,
                name,
            } => {
                let (data, binary) = configmap::encode(a);
                let cm = ConfigMap {
                    metadata: kube::api::ObjectMeta {
                        name: Some(name.clone()),
                        ..Default::default()
                    },
                    data: Some(data),
                    binary_data: Some(binary),
                    ..Default::default()
                };
                Api::<ConfigMap>::namespaced(client.clone(), namespace)
                    .patch(
                        name,
                        &PatchParams::apply("kaas-e2e").force(),
                        &Patch::Apply(&cm),
                    )
                    .await
                    .expect("apply the ConfigMap");
            }
        }
    }
}

fn with_entries(mut a: Assignment, version: u64, entries: &[(&str, i32)]) -> Assignment {
    a.version = version;
    a.consumer_groups = entries
        .iter()
        .map(|(g, b)| GroupEntry {
            group_id: (*g).into(),
            broker: *b,
        })
        .collect();
    a.consumer_groups
        .sort_by(|x, y| x.group_id.cmp(&y.group_id));
    a
}

/// Waits until every broker in `brokers` names `owner` for `group`.
async fn all_answer(brokers: &[&BrokerProc], group: &str, owner: i32) {
    eventually(
        WAIT,
        &format!("every broker names {owner} for {group}"),
        || async {
            for b in brokers {
                if coordinator(&b.addr, group).await != Some(owner) {
                    return false;
                }
            }
            true
        },
    )
    .await;
}

/// Runs the suite with brokers whose data folder is `<dir>/data`.
async fn suite(dir: &Path, publisher: Publisher, source: Source) {
    let data = dir.join("data");
    let logs = dir.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let ports: Vec<u16> = (0..3).map(|_| free_port()).collect();
    let brokers: Vec<BrokerProc> = (0..3)
        .map(|id| BrokerProc::spawn(id, "127.0.0.1", ports[id as usize], &data, &logs, &source))
        .collect();
    for b in &brokers {
        b.wait_listening(Duration::from_secs(30)).await;
    }
    let all: Vec<&BrokerProc> = brokers.iter().collect();
    let bootstrap = all
        .iter()
        .map(|b| b.addr.clone())
        .collect::<Vec<_>>()
        .join(",");
    let infos: Vec<BrokerInfo> = (0..3)
        .map(|id| BrokerInfo::alive(id, "127.0.0.1", ports[id as usize]))
        .collect();
    let v1 = Assignment {
        version: 1,
        brokers: infos.clone(),
        ..Assignment::default()
    };
    publisher.publish(&v1).await;
    let hash = Routing::new(v1.clone());
    all_answer(&all, "probe", hash.owner_of_group("probe").unwrap()).await;

    // An explicit entry wins over the hash tier.
    let pinned_to = (hash.owner_of_group("pinned").unwrap() + 1) % 3;
    let v2 = with_entries(v1.clone(), 2, &[("pinned", pinned_to)]);
    publisher.publish(&v2).await;
    all_answer(&all, "pinned", pinned_to).await;

    // A stale version is ignored, even with different content.
    let stale_owner = (pinned_to + 1) % 3;
    publisher
        .publish(&with_entries(v1.clone(), 1, &[("pinned", stale_owner)]))
        .await;
    let marker_to = (hash.owner_of_group("marker").unwrap() + 2) % 3;
    let v3 = with_entries(
        v1.clone(),
        3,
        &[("pinned", pinned_to), ("marker", marker_to)],
    );
    publisher.publish(&v3).await;
    all_answer(&all, "marker", marker_to).await;
    all_answer(&all, "pinned", pinned_to).await;
    for b in &brokers {
        assert!(
            !b.log_text()
                .lines()
                .any(|l| l.contains("following a new assignment")
                    && l.contains(" version=1 previous=")),
            "broker {} installed a stale document:\n{}",
            b.id,
            b.log_text()
        );
    }

    // A live group on a broker that is then marked dead.
    create_topic(&bootstrap, "orders", 1).await;
    let group = "movers";
    let old_owner = Routing::new(v3.clone()).owner_of_group(group).unwrap();
    produce(&bootstrap, "orders", (0..10).map(|i| format!("m{i}"))).await;
    let consumer = GroupConsumer::start(&bootstrap, group, "orders");
    eventually(WAIT, "10 messages consumed and committed", || async {
        consumer.received().len() == 10
    })
    .await;
    let old = &brokers[old_owner as usize];
    eventually(WAIT, "the group is listed by its coordinator", || async {
        listed_groups(&old.addr)
            .await
            .is_some_and(|g| g.iter().any(|x| x == group))
    })
    .await;

    let mut v4 = v3.clone();
    v4.version = 4;
    v4.brokers[old_owner as usize].state = BrokerState::Dead;
    publisher.publish(&v4).await;
    let new_owner = Routing::new(v4.clone()).owner_of_group(group).unwrap();
    assert_eq!(
        Some(new_owner),
        route(group.as_bytes(), &[0, 1, 2], |b| b != old_owner),
        "the group moves to route's answer over the alive set"
    );
    let alive: Vec<&BrokerProc> = brokers.iter().filter(|b| b.id != old_owner).collect();
    all_answer(&alive, group, new_owner).await;

    // The consumer carries on through the move.
    produce(&bootstrap, "orders", (10..20).map(|i| format!("m{i}"))).await;
    eventually(WAIT, "20 messages consumed and committed", || async {
        consumer.received().len() == 20
    })
    .await;
    let new = &brokers[new_owner as usize];
    eventually(
        WAIT,
        "the new coordinator lists the group, the old one swept it",
        || async {
            listed_groups(&new.addr)
                .await
                .is_some_and(|g| g.iter().any(|x| x == group))
                && listed_groups(&old.addr)
                    .await
                    .is_some_and(|g| !g.iter().any(|x| x == group))
        },
    )
    .await;
    let (old_log, new_log) = (old.log_text(), new.log_text());
    assert!(
        old_log
            .lines()
            .any(|l| l.contains("group coordinator moved away") && l.contains(group)),
        "the losing broker logs the move:\n{old_log}"
    );
    assert!(
        new_log
            .lines()
            .any(|l| l.contains("now coordinating group") && l.contains(group)),
        "the gaining broker logs the move:\n{new_log}"
    );
    consumer.stop();

    // Offsets committed before and after the move are all there.
    let bs = bootstrap.clone();
    let committed = tokio::task::spawn_blocking(move || committed_offset(&bs, group, "orders"))
        .await
        .unwrap();
    assert_eq!(committed, Some(20));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn brokers_following_the_file() {
    kaas_e2e_k8s::init_tracing();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let path = assignment_file::assignment_path(&data);
    suite(dir.path(), Publisher::File(path), Source::File).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the k8s-testenv API server: run scripts/test-k8s"]
async fn brokers_following_the_configmap() {
    kaas_e2e_k8s::init_tracing();
    let env = TestEnv::get().await;
    let namespace = env.namespace("source").await;
    let name = "assignment".to_owned();
    let dir = tempfile::tempdir().unwrap();
    suite(
        dir.path(),
        Publisher::ConfigMap {
            client: env.client.clone(),
            namespace: namespace.clone(),
            name: name.clone(),
        },
        Source::ConfigMap { namespace, name },
    )
    .await;
}
