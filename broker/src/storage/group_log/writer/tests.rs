use std::sync::mpsc;
use std::time::Duration;

use super::*;

#[test]
fn one_groups_jobs_run_in_order_and_a_stuck_group_holds_no_other() {
    let writer = Writer::new().unwrap();
    let (done, finished) = mpsc::channel();
    // Group "stuck" blocks in its first job until released.
    let (release, gate) = mpsc::channel::<()>();
    let d = done.clone();
    writer.submit(
        "stuck",
        Box::new(move || {
            gate.recv().unwrap();
            d.send("stuck-1").unwrap();
        }),
    );
    let d = done.clone();
    writer.submit("stuck", Box::new(move || d.send("stuck-2").unwrap()));
    for i in 0..3 {
        let d = done.clone();
        writer.submit(
            "free",
            Box::new(move || d.send(["free-0", "free-1", "free-2"][i]).unwrap()),
        );
    }
    let first: Vec<_> = (0..3)
        .map(|_| finished.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    assert_eq!(
        first,
        ["free-0", "free-1", "free-2"],
        "served, in order, while another group is stuck"
    );
    release.send(()).unwrap();
    let rest: Vec<_> = (0..2)
        .map(|_| finished.recv_timeout(Duration::from_secs(10)).unwrap())
        .collect();
    assert_eq!(rest, ["stuck-1", "stuck-2"]);
}
