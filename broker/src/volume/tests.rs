use super::*;
use crate::storage::incarnation::{fence, Fence};

#[test]
fn healthy_after_a_check_and_fenced_once_fenced() {
    let dir = tempfile::tempdir().unwrap();
    let me = Incarnation::register(dir.path(), 0).unwrap();
    let tenancy = Tenancy::new(me.clone(), VolumeCheckConfig::default());
    tenancy.check_once();
    assert_eq!(tenancy.status(), Ok(()));
    fence(
        dir.path(),
        0,
        me.id(),
        Fence {
            by_broker: 1,
            at_version: 5,
        },
    )
    .unwrap();
    tenancy.check_once();
    let why = tenancy.status().unwrap_err();
    assert!(why.contains("fenced by broker 1"), "{why}");
}

#[test]
fn a_check_that_has_not_succeeded_within_the_timeout_is_a_stall() {
    let dir = tempfile::tempdir().unwrap();
    let me = Incarnation::register(dir.path(), 0).unwrap();
    // Checking since ten seconds ago, no check succeeded since.
    let tenancy = Tenancy {
        started: Instant::now() - Duration::from_secs(10),
        checking: AtomicBool::new(true),
        ..Tenancy::new(me, VolumeCheckConfig::default())
    };
    let why = tenancy.status().unwrap_err();
    assert!(why.contains("does not answer"), "{why}");
    assert_eq!(tenancy.stalls.get(), 1);
}

#[test]
fn a_broker_cut_off_from_its_assignment_lets_go_once_and_serves_again_when_confirmed() {
    let dir = tempfile::tempdir().unwrap();
    let me = Incarnation::register(dir.path(), 0).unwrap();
    let let_go = std::sync::atomic::AtomicUsize::new(0);
    let count = || {
        let_go.fetch_add(1, Ordering::SeqCst);
    };
    // Not following yet (a broker driven by tests): never cut off.
    let quiet = Tenancy {
        started: Instant::now() - Duration::from_secs(60),
        ..Tenancy::new(me.clone(), VolumeCheckConfig::default())
    };
    assert_eq!(quiet.status(), Ok(()));
    // Its source confirmed the assignment at the start, 60 s ago.
    let cut = Tenancy {
        started: Instant::now() - Duration::from_secs(60),
        following: AtomicBool::new(true),
        ..Tenancy::new(me, VolumeCheckConfig::default())
    };
    let why = cut.status().unwrap_err();
    assert!(why.contains("assignment was last confirmed"), "{why}");
    cut.let_go_if_cut_off(&count);
    cut.let_go_if_cut_off(&count);
    assert_eq!(let_go.load(Ordering::SeqCst), 1, "once per cut");
    cut.assignment_confirmed();
    assert_eq!(cut.status(), Ok(()));
    cut.let_go_if_cut_off(&count);
    assert_eq!(let_go.load(Ordering::SeqCst), 1);
}

#[test]
fn a_stall_cuts_every_client_connection_and_a_healthy_volume_none() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let me = Incarnation::register(dir.path(), 0).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let mut client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (served, _) = listener.accept().unwrap();

    let healthy = Tenancy::new(me.clone(), VolumeCheckConfig::default());
    let _kept = healthy.sockets.register(&served);
    healthy.checking.store(true, Ordering::Release);
    healthy
        .last_ok_ms
        .store(healthy.now_ms(), Ordering::Release);
    assert!(!healthy.watch_once(false));

    let stalled = Tenancy {
        started: Instant::now() - Duration::from_secs(10),
        checking: AtomicBool::new(true),
        ..Tenancy::new(me, VolumeCheckConfig::default())
    };
    let _cut = stalled.sockets.register(&served);
    assert!(stalled.watch_once(false));
    let mut buf = [0u8; 1];
    assert_eq!(client.read(&mut buf).unwrap(), 0, "the client sees the end");
}
