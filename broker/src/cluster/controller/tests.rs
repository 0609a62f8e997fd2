use super::*;

fn items(s: &str) -> Vec<String> {
    s.split(',').map(str::to_string).collect()
}

#[test]
fn brokers_are_read_with_one_address_or_their_named_listeners() {
    let one = parse_brokers(&items("0=h0:9092,1=h1:9092")).unwrap();
    assert_eq!(one.len(), 2);
    assert_eq!(
        (one[1].id, one[1].host.as_str(), one[1].port),
        (1, "h1", 9092)
    );
    assert!(one[1].listeners.is_empty());

    let named = parse_brokers(&items(
        "0=INTERNAL://h0:9093,CLIENT://public:19092,1=INTERNAL://h1:9093,CLIENT://public:19093",
    ))
    .unwrap();
    assert_eq!(named.len(), 2);
    // The first named listener is the one probed and called.
    assert_eq!((named[1].host.as_str(), named[1].port), ("h1", 9093));
    let names: Vec<&str> = named[1].listeners.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["INTERNAL", "CLIENT"]);
    assert_eq!(named[1].listeners[1].port, 19093);

    for bad in [
        "0=h0",
        "x=h0:1",
        "0=A://h:1,A://h:2",
        "0=A://h:1,h:2",
        "0=A://h:port",
    ] {
        assert!(parse_brokers(&items(bad)).is_err(), "{bad}");
    }
}
