use super::*;
use futures::FutureExt;

fn ip(last: u8) -> IpAddr {
    IpAddr::from([127, 0, 0, last])
}

#[test]
fn per_ip_limit_refuses_one_address_but_not_others() {
    let q = ConnectionQuotas::new(10, 2);
    let a1 = q.acquire(ip(1)).unwrap();
    let _a2 = q.acquire(ip(1)).unwrap();
    assert_eq!(q.acquire(ip(1)).err(), Some(Refused::PerIp(2)));
    let _b = q
        .acquire(ip(2))
        .expect("another address is not limited by the first");
    drop(a1);
    q.acquire(ip(1))
        .expect("a closed connection gives its slot back");
}

#[test]
fn the_broker_limit_holds_the_listener_until_a_connection_closes() {
    let q = ConnectionQuotas::new(2, 10);
    let a = q.acquire(ip(1)).unwrap();
    let _b = q.acquire(ip(2)).unwrap();
    assert_eq!(q.acquire(ip(3)).err(), Some(Refused::Broker(2)));
    let mut wait = Box::pin(q.wait_for_slot());
    assert!(
        wait.as_mut().now_or_never().is_none(),
        "full: the listener waits"
    );
    drop(a);
    assert!(
        wait.now_or_never().is_some(),
        "a slot freed: the listener goes on"
    );
    assert_eq!(q.open(), 1);
}
