use std::collections::HashMap;

use kaas_shared::{Assignment, BrokerInfo};

use super::*;
use crate::coordinator::clock::ManualClock;

/// A core as small as a coordinator's can be: a value per key.
type Values = HashMap<String, u64>;

/// Keys routed as groups are.
const KEYS: Keyspace = Keyspace {
    noun: "key",
    owner: |routing, key| routing.owner_of_group(key),
    span: |key| tracing::info_span!("key", key),
};

fn brokers(n: i32) -> Option<Arc<Routing>> {
    let brokers = (0..n).map(|id| BrokerInfo::alive(id, "127.0.0.1", 9092 + id as u16));
    Some(Arc::new(Routing::new(Assignment::of_brokers(1, brokers))))
}

type RoutingSender = watch::Sender<Option<Arc<Routing>>>;

fn runtime(routing: Option<Arc<Routing>>) -> (Arc<Runtime<Values, u64>>, RoutingSender) {
    let (tx, rx) = watch::channel(routing);
    let clock = Arc::new(ManualClock::new(1_000));
    (
        Arc::new(Runtime::new(0, KEYS, Values::new(), (), clock, rx)),
        tx,
    )
}

/// A key broker 1 of two coordinates.
fn key_of_broker_1() -> String {
    let routing = brokers(2).expect("a routing");
    (0..)
        .map(|n| format!("key-{n}"))
        .find(|k| routing.owner_of_group(k) == Some(1))
        .expect("some key hashes to broker 1")
}

#[tokio::test]
async fn a_key_is_served_only_by_its_owner() {
    let (rt, _tx) = runtime(None);
    assert_eq!(
        rt.check_owner("a"),
        Err(NotServed(code::COORDINATOR_NOT_AVAILABLE)),
        "no assignment yet"
    );
    let (rt, _tx) = runtime(brokers(2));
    assert_eq!(
        rt.check_owner(&key_of_broker_1()),
        Err(NotServed(code::NOT_COORDINATOR))
    );
    let (rt, _tx) = runtime(brokers(1));
    assert_eq!(rt.check_owner("a"), Ok(()));
}

#[tokio::test]
async fn a_call_gets_the_answer_its_core_gives() {
    let (rt, _tx) = runtime(brokers(1));
    let answer = rt
        .call(|shard, token, now| {
            shard.core.insert("a".into(), now);
            assert!(shard.answer(token, now + 1));
            None
        })
        .await;
    assert_eq!(answer, Ok(1_001));
    assert_eq!(rt.lock().core["a"], 1_000);
}

#[tokio::test]
async fn a_call_left_unanswered_reads_as_not_coordinator() {
    let (rt, _tx) = runtime(brokers(1));
    let (tokens_tx, mut tokens) = tokio::sync::mpsc::unbounded_channel();
    let call = {
        let rt = rt.clone();
        tokio::spawn(async move {
            rt.call(|_, token, _| {
                tokens_tx.send(token).unwrap();
                None
            })
            .await
        })
    };
    let token = tokens.recv().await.expect("the call registered");
    // The key was unloaded: its waiters go without an answer.
    drop(rt.lock().take_waiter(token));
    assert_eq!(call.await.unwrap(), Err(NotServed(code::NOT_COORDINATOR)));
}

#[tokio::test]
async fn a_load_never_overwrites_a_key_already_in_memory() {
    let (rt, _tx) = runtime(brokers(1));
    let loaded = |shard: &Shard<Values, u64, ()>| shard.core.contains_key("a");
    let install = |shard: &mut Shard<Values, u64, ()>, stored: Option<u64>, _| {
        shard.core.insert("a".into(), stored.unwrap_or(0));
    };
    rt.load("a", loaded, || Ok(Some(7)), install).await.unwrap();
    assert_eq!(rt.lock().core["a"], 7);
    // Resident now: the log is not read again, the value stays.
    rt.load("a", loaded, || panic!("read again"), install)
        .await
        .unwrap();
    assert_eq!(rt.lock().core["a"], 7);
}

#[tokio::test]
async fn a_load_another_broker_claimed_is_refused() {
    let (rt, _tx) = runtime(brokers(1));
    let claimed = || {
        Err(StoreError::Fenced {
            key: "a".into(),
            by_broker: 1,
            by_version: 2,
            ours: 1,
        })
    };
    let r = rt
        .load(
            "a",
            |_| false,
            claimed,
            |_, _: Option<u64>, _| panic!("installed"),
        )
        .await;
    assert_eq!(r, Err(NotServed(code::NOT_COORDINATOR)));
    let unreadable = || Err(StoreError::Io(std::io::Error::other("disk")));
    let r = rt
        .load(
            "a",
            |_| false,
            unreadable,
            |_, _: Option<u64>, _| panic!("installed"),
        )
        .await;
    assert_eq!(r, Err(NotServed(code::COORDINATOR_NOT_AVAILABLE)));
}

#[tokio::test]
async fn a_key_moved_during_its_load_is_not_installed() {
    let (rt, tx) = runtime(brokers(1));
    let key = key_of_broker_1();
    let read = move || {
        // The assignment moves the key while its log is read.
        tx.send(brokers(2)).unwrap();
        Ok(Some(1))
    };
    let r = rt
        .load(
            &key,
            |_| false,
            read,
            |_, _: Option<u64>, _| panic!("installed"),
        )
        .await;
    assert_eq!(r, Err(NotServed(code::NOT_COORDINATOR)));
}

#[tokio::test]
async fn a_write_is_reported_to_the_core_once_durable() {
    let (rt, _tx) = runtime(brokers(1));
    let (done, durable) = oneshot::channel::<Result<(), StoreError>>();
    let write: Durable = Box::pin(async move { durable.await.expect("sent") });
    let report = tokio::spawn(rt.after_write(write, |shard, outcome, now| {
        shard.core.insert("written".into(), now);
        assert!(outcome.is_ok());
    }));
    tokio::task::yield_now().await;
    assert!(!rt.lock().core.contains_key("written"), "not durable yet");
    done.send(Ok(())).unwrap();
    report.await.unwrap();
    assert_eq!(rt.lock().core["written"], 1_000);
}

#[test]
fn a_write_refused_for_another_broker_says_the_key_moved() {
    assert!(moved(&StoreError::Moved {
        key: "a".into(),
        version: 3
    }));
    assert!(!moved(&StoreError::Io(std::io::Error::other("disk"))));
}

#[tokio::test]
async fn a_timer_armed_earlier_than_the_loop_sleeps_wakes_it() {
    use futures::FutureExt;
    let timers = TimerWake::default();
    let wait = timers.plan(0, None);
    assert_eq!(
        wait,
        Duration::from_secs(1),
        "nothing due: a second at most"
    );
    timers.armed(Some(2_000));
    assert!(
        timers.notify.notified().now_or_never().is_none(),
        "a timer due after the loop wakes anyway does not wake it"
    );
    timers.armed(Some(10));
    assert!(
        timers.notify.notified().now_or_never().is_some(),
        "a timer due before it does"
    );
    assert_eq!(timers.plan(0, Some(10)), Duration::from_millis(10));
    let shutdown = CancellationToken::new();
    shutdown.cancel();
    assert!(!timers.sleep(Duration::from_secs(3600), &shutdown).await);
}
