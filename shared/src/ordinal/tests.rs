use super::*;

#[test]
fn only_plain_ordinals_count() {
    assert_eq!(pod_ordinal("demo-0"), Some(0));
    assert_eq!(pod_ordinal("kaas-prod-12"), Some(12));
    for bad in [
        "demo",
        "demo-",
        "demo-x1",
        "-",
        "demo-01",
        "demo-+1",
        "demo-99999999999",
    ] {
        assert_eq!(pod_ordinal(bad), None, "{bad}");
    }
}
