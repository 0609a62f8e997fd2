use std::collections::HashSet;

use super::*;

/// Allows everything but the (operation, resource type, name) denied.
#[derive(Debug, Default)]
pub struct DenyOnly(pub HashSet<(Operation, ResourceType, String)>);

impl DenyOnly {
    pub fn new(denied: &[(Operation, ResourceType, &str)]) -> DenyOnly {
        DenyOnly(
            denied
                .iter()
                .map(|(o, r, n)| (*o, *r, n.to_string()))
                .collect(),
        )
    }
}

impl Authorizer for DenyOnly {
    fn authorize(&self, _: &Principal, _: IpAddr, a: Action<'_>) -> bool {
        !self
            .0
            .contains(&(a.operation, a.resource_type, a.name.to_string()))
    }

    fn authorize_any(&self, _: &Principal, _: IpAddr, o: Operation, r: ResourceType) -> bool {
        !self.0.iter().any(|(op, rt, _)| *op == o && *rt == r)
    }
}

#[test]
fn principals_print_as_apache_writes_them() {
    assert_eq!(Principal::anonymous().to_string(), "User:ANONYMOUS");
    assert_eq!(Principal::user("alice").to_string(), "User:alice");
}
