use super::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_syncs_complete_in_fewer_rounds_and_after_close() {
    let dir = tempfile::tempdir().unwrap();
    let volume = VolumeSync::new(dir.path()).unwrap();
    let calls: Vec<_> = (0..50).map(|_| volume.sync()).collect();
    for r in futures::future::join_all(calls).await {
        r.unwrap();
    }
    let syncs = volume.syncs();
    assert!((1..50).contains(&syncs), "{syncs} rounds for 50 callers");
    // A caller registered just before the owner goes is still answered.
    let last = volume.sync();
    drop(volume);
    last.await.unwrap();
}
