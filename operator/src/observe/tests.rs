use super::*;
use k8s_openapi::api::core::v1::{PodCondition, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use BrokerState::{Alive, Dead, Draining};

fn kc(advertise: &str) -> KaasCluster {
    let spec = serde_json::from_value(serde_json::json!({
        "image": "kaas:dev",
        "storage": {"size": "1Gi"},
        "listener": {"port": 19092, "advertise": advertise},
    }))
    .unwrap();
    let mut kc = KaasCluster::new("demo", spec);
    kc.metadata.namespace = Some("ns".into());
    kc
}

fn pod(name: &str, ready: bool, ip: Option<&str>) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.status = Some(PodStatus {
        pod_ip: ip.map(Into::into),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            ..PodCondition::default()
        }]),
        ..PodStatus::default()
    });
    p
}

fn slice(family: &str, endpoints: &[(&str, &str, Option<bool>)]) -> Slice {
    Slice {
        address_type: family.into(),
        endpoints: endpoints
            .iter()
            .map(|(name, ip, ready)| SliceEndpoint {
                addresses: vec![(*ip).into()],
                conditions: SliceConditions {
                    ready: *ready,
                    terminating: None,
                },
                target_ref: Some(SliceTarget {
                    kind: "Pod".into(),
                    name: (*name).into(),
                }),
            })
            .collect(),
    }
}

fn states(b: &[BrokerInfo]) -> Vec<BrokerState> {
    b.iter().map(|b| b.state).collect()
}

#[test]
fn slices_parse_as_both_api_versions_serve_them() {
    // v1beta1 as 1.20 serves it, with the null an empty slice has.
    let empty: Slice = serde_json::from_value(
        serde_json::json!({"addressType": "IPv6", "endpoints": null, "ports": null}),
    )
    .unwrap();
    assert!(empty.endpoints.is_empty());
    let s: Slice = serde_json::from_value(serde_json::json!({
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.2"], "conditions": {"ready": true},
            "targetRef": {"kind": "Pod", "name": "demo-0", "namespace": "ns"},
            "topology": {"kubernetes.io/hostname": "kaas-node"}}],
    }))
    .unwrap();
    let view = slice_view(&[s, empty]).unwrap();
    assert_eq!(view["demo-0"], (true, Some("127.0.0.2".into())));
}

#[test]
fn no_pods_means_the_full_set_dead() {
    let b = brokers(&kc("dns"), 3, &[], &[]);
    assert_eq!(states(&b), vec![Dead, Dead, Dead]);
    assert_eq!(b[1].host, "demo-1.demo-brokers.ns.svc");
    assert_eq!(b[1].port, 19092);
}

#[test]
fn pod_readiness_decides_without_slices() {
    let pods = [
        pod("demo-0", true, None),
        pod("demo-2", false, None),
        pod("other-1", true, None),
    ];
    let b = brokers(&kc("dns"), 3, &pods, &[]);
    assert_eq!(states(&b), vec![Alive, Dead, Dead]);
}

#[test]
fn slices_must_agree_when_present() {
    let pods = [
        pod("demo-0", true, Some("10.0.0.5")),
        pod("demo-1", true, Some("10.0.0.6")),
        pod("demo-2", true, Some("10.0.0.7")),
    ];
    let slices = [
        slice(
            "IPv4",
            &[
                ("demo-0", "10.0.0.5", Some(true)),
                ("demo-1", "10.0.0.6", Some(false)),
            ],
        ),
        slice("IPv6", &[]),
    ];
    // demo-1 not ready in the slice; demo-2 not in any slice yet.
    let b = brokers(&kc("podIP"), 3, &pods, &slices);
    assert_eq!(states(&b), vec![Alive, Dead, Dead]);
    assert_eq!(b[0].host, "10.0.0.5");
    assert_eq!(b[2].host, "10.0.0.7");
    // Unset `ready` means ready.
    let slices = [slice("IPv4", &[("demo-0", "10.0.0.5", None)])];
    assert_eq!(
        states(&brokers(&kc("podIP"), 1, &pods[..1], &slices)),
        vec![Alive]
    );
}

#[test]
fn scale_down_drains_before_the_set_shrinks() {
    let pods = [
        pod("demo-0", true, None),
        pod("demo-1", true, None),
        pod("demo-2", true, None),
        pod("demo-3", true, None),
    ];
    // replicas 4 → 3: demo-3 still runs, so the set stays 4 wide.
    let b = brokers(&kc("dns"), 3, &pods, &[]);
    assert_eq!(states(&b), vec![Alive, Alive, Alive, Draining]);
    // Once it is gone, the set is 3.
    assert_eq!(brokers(&kc("dns"), 3, &pods[..3], &[]).len(), 3);
}

#[test]
fn a_terminating_pod_drains() {
    let mut p = pod("demo-1", true, None);
    p.metadata.deletion_timestamp = Some(Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH));
    let b = brokers(&kc("dns"), 2, &[pod("demo-0", true, None), p], &[]);
    assert_eq!(states(&b), vec![Alive, Draining]);
}

#[test]
fn pod_ip_mode_falls_back_to_dns_until_an_ip_exists() {
    let b = brokers(&kc("podIP"), 1, &[pod("demo-0", false, None)], &[]);
    assert_eq!(b[0].host, "demo-0.demo-brokers.ns.svc");
}

#[test]
fn additional_listeners_are_advertised_at_each_brokers_host() {
    let mut k = kc("podIP");
    assert!(
        brokers(&k, 1, &[pod("demo-0", true, Some("10.0.0.5"))], &[])[0]
            .listeners
            .is_empty()
    );
    k.spec.additional_listeners = serde_json::from_value(serde_json::json!([
        {"name": "MTLS", "port": 19094, "authentication": "tls",
         "tls": {"secretName": "mtls"}},
    ]))
    .unwrap();
    let b = brokers(&k, 1, &[pod("demo-0", true, Some("10.0.0.5"))], &[]);
    let listeners: Vec<(&str, &str, u16)> = b[0]
        .listeners
        .iter()
        .map(|l| (l.name.as_str(), l.host.as_str(), l.port))
        .collect();
    assert_eq!(
        listeners,
        [("INTERNAL", "10.0.0.5", 19092), ("MTLS", "10.0.0.5", 19094)]
    );
    assert_eq!((b[0].host.as_str(), b[0].port), ("10.0.0.5", 19092));
}
