use super::*;

#[test]
fn apache_benchmark_acls_have_apaches_shape() {
    let acls = apache_benchmark_acls(1_000, 10);
    // 10 per resource, 10 host ACLs on the prefix, 100 on `*`.
    assert_eq!(acls.len(), 10_000 + 10 + 100);
    let prefixed = acls
        .iter()
        .filter(|a| a.pattern == PatternType::Prefixed && a.name != "foo-bar35_resource-")
        .count();
    assert_eq!(prefixed, 200 * 10);
    let groups = acls
        .iter()
        .filter(|a| a.resource_type == ResourceType::Group)
        .count();
    assert_eq!(groups, 100 * 10);
    // The benchmark's READ ACLs allow test-user to read, not to write.
    let authorizer = StandardAuthorizer::new(AuthorizerSettings::default());
    authorizer.replace(acls);
    let localhost: IpAddr = "127.0.0.1".parse().unwrap();
    let on = |operation| Action {
        operation,
        resource_type: ResourceType::Topic,
        name: "foo-bar35_resource-95",
    };
    let user = Principal::user("test-user");
    assert!(authorizer.authorize(&user, localhost, on(Operation::Read)));
    assert!(!authorizer.authorize(&user, localhost, on(Operation::Write)));
}
