//! The coordinator over the real group log store, one group's write held
//! in the store (as a stuck lock or a stuck write on a network volume
//! holds it): the other groups of the broker are served meanwhile.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kaas_broker::coordinator::clock::ManualClock;
use kaas_broker::group::consumer::records::TopicMetadata;
use kaas_broker::group::core::{
    GroupCoordinatorConfig, HeartbeatRequest, JoinGroupRequest, OffsetCommitRequest, Protocol,
    SyncGroupRequest,
};
use kaas_broker::group::manager::{GroupManager, GroupManagerConfig, Join};
use kaas_broker::storage::group_log::{GroupLogOptions, GroupLogStore, LogIo};
use kaas_shared::{Assignment, BrokerInfo, Routing};

/// Holds the first record write that contains `marker` until released.
struct HoldOne {
    marker: &'static [u8],
    #[allow(clippy::type_complexity)]
    hold: Mutex<Option<(Sender<()>, Receiver<()>)>>,
}

impl LogIo for HoldOne {
    fn write_at(&self, file: &File, at: u64, bytes: &[u8]) -> io::Result<()> {
        if bytes.windows(self.marker.len()).any(|w| w == self.marker) {
            if let Some((held, release)) = self.hold.lock().unwrap().take() {
                held.send(()).unwrap();
                release.recv().unwrap();
            }
        }
        file.write_all_at(bytes, at)
    }
}

fn commit(group: &str, topic: &str) -> OffsetCommitRequest {
    OffsetCommitRequest::simple(group, topic, 0, 7)
}

#[tokio::test]
async fn a_held_write_of_one_group_does_not_delay_other_groups() {
    let dir = tempfile::tempdir().unwrap();
    let (held_tx, held) = channel();
    let (release, release_rx) = channel();
    let io = Arc::new(HoldOne {
        marker: b"held-topic",
        hold: Mutex::new(Some((held_tx, release_rx))),
    });
    let store = GroupLogStore::open_with_io(dir.path(), GroupLogOptions::default(), io).unwrap();
    let routing = Routing::new(Assignment::of_brokers(
        1,
        [BrokerInfo::alive(0, "127.0.0.1", 9092)],
    ));
    let (_routing_tx, routing_rx) = tokio::sync::watch::channel(Some(Arc::new(routing)));
    let config = GroupManagerConfig {
        core: GroupCoordinatorConfig {
            initial_rebalance_delay_ms: 0,
            ..Default::default()
        },
        ..Default::default()
    };
    let clock = Arc::new(ManualClock::new(1_000_000));
    let m = GroupManager::new(0, config, Arc::new(store), clock, routing_rx);
    let shutdown = tokio_util::sync::CancellationToken::new();
    tokio::spawn(m.clone().run_timers(shutdown.clone()));

    let m2 = m.clone();
    let slow = tokio::spawn(async move { m2.request(commit("slow", "held-topic")).await });
    tokio::task::spawn_blocking(move || held.recv_timeout(Duration::from_secs(10)))
        .await
        .unwrap()
        .expect("the slow group's write reached the store and is held");

    // Bounded, so a regression fails here instead of hanging.
    tokio::time::timeout(Duration::from_secs(10), async {
        let r = m.request(commit("fast", "t")).await.unwrap();
        assert_eq!(r.topics[0].partitions[0].error_code, 0);
        let joined = m
            .request(Join {
                request: JoinGroupRequest {
                    group_id: "fast".into(),
                    session_timeout_ms: 10_000,
                    rebalance_timeout_ms: 10_000,
                    member_id: String::new(),
                    group_instance_id: None,
                    protocol_type: "consumer".into(),
                    protocols: vec![Protocol::new("range", bytes::Bytes::new())],
                    reason: None,
                    api_version: 3,
                    client_id: "c".into(),
                    client_host: "/127.0.0.1".into(),
                },
                topics: Box::new(BTreeMap::<String, TopicMetadata>::new()),
            })
            .await
            .unwrap();
        assert_eq!(joined.error_code, 0);
        let synced = m
            .request(SyncGroupRequest {
                group_id: "fast".into(),
                generation_id: joined.generation_id,
                member_id: joined.member_id.clone(),
                group_instance_id: None,
                protocol_type: None,
                protocol_name: None,
                assignments: vec![(joined.member_id.clone(), bytes::Bytes::from_static(b"a"))],
                api_version: 3,
            })
            .await
            .unwrap();
        assert_eq!(
            synced.error_code, 0,
            "the group's metadata was written meanwhile"
        );
        let beat = m
            .request(HeartbeatRequest {
                group_id: "fast".into(),
                generation_id: joined.generation_id,
                member_id: joined.member_id,
                group_instance_id: None,
            })
            .await
            .unwrap();
        assert_eq!(beat.error_code, 0);
    })
    .await
    .expect("another group's requests are served while one group's write is held");
    assert!(!slow.is_finished(), "the slow group's commit is still held");

    release.send(()).unwrap();
    let r = slow.await.unwrap().unwrap();
    assert_eq!(
        r.topics[0].partitions[0].error_code, 0,
        "acknowledged once written"
    );
    let offset = m.read(|c| {
        c.committed_offset("slow", "held-topic", 0)
            .map(|o| o.offset)
    });
    assert_eq!(offset, Some(7));
    shutdown.cancel();
}
