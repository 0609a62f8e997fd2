use super::*;
use kube::CustomResourceExt;

#[test]
fn additional_listeners_are_checked_together() {
    let listener = |name: &str, port: i32, auth: &str, tls: bool| {
        let mut l = serde_json::json!({"name": name, "port": port, "authentication": auth});
        if tls {
            l["tls"] = serde_json::json!({"secretName": "mtls"});
        }
        l
    };
    let with = |primary: &str, more: Vec<serde_json::Value>| -> KaasClusterSpec {
        serde_json::from_value(serde_json::json!({
            "image": "kaas:dev",
            "storage": {"size": "10Gi"},
            "listener": {"authentication": primary},
            "additionalListeners": more,
        }))
        .unwrap()
    };
    assert_eq!(
        with("scram", vec![listener("MTLS", 9094, "tls", true)]).validate(),
        Ok(())
    );
    assert_eq!(
        with("none", vec![listener("PLAIN", 9094, "none", false)]).validate(),
        Ok(())
    );
    for (spec, says) in [
        (with("tls", vec![]), "spec.listener.authentication: tls"),
        (
            with("scram", vec![listener("INTERNAL", 9094, "none", false)]),
            "the name is taken",
        ),
        (
            with(
                "scram",
                vec![
                    listener("A", 9094, "none", false),
                    listener("A", 9095, "none", false),
                ],
            ),
            "the name is taken",
        ),
        (
            with("scram", vec![listener("A", 8080, "none", false)]),
            "port 8080 is taken",
        ),
        (
            with("scram", vec![listener("MTLS", 9094, "tls", false)]),
            "needs tls.secretName",
        ),
        (
            with("none", vec![listener("S", 9094, "scram", false)]),
            "needs spec.listener.authentication: scram",
        ),
        (
            {
                let mut s = with("none", vec![]);
                s.authorization.super_users = vec![SuperUser("User:ops".into())];
                s
            },
            "superUsers needs spec.listener.authentication: scram",
        ),
    ] {
        let e = spec.validate().unwrap_err();
        assert!(e.contains(says), "{e}");
    }
}

pub(crate) fn spec() -> KaasClusterSpec {
    serde_json::from_value(serde_json::json!({
        "image": "kaas:dev",
        "storage": {"size": "10Gi"}
    }))
    .expect("minimal spec")
}

#[test]
fn a_minimal_spec_gets_the_documented_defaults() {
    let s = spec();
    assert_eq!(s.replicas, 3);
    assert_eq!(s.listener.port, 9092);
    assert_eq!(s.listener.advertise, AdvertiseMode::Dns);
    assert_eq!(s.broker.group_initial_rebalance_delay_ms, 3000);
    assert_eq!(s.broker.log_format, LogFormat::Json);
    assert!(s.validate().is_ok());
}

#[test]
fn validate_catches_what_the_schema_cannot() {
    let mut s = spec();
    s.broker.group_min_session_timeout_ms = 10_000;
    s.broker.group_max_session_timeout_ms = 9_000;
    assert!(s
        .validate()
        .unwrap_err()
        .contains("groupMinSessionTimeoutMs"));
    let mut s = spec();
    s.storage.existing_claim = Some("shared".into());
    assert!(s.validate().unwrap_err().contains("exactly one"));
    s.storage.size = None;
    assert!(s.validate().is_ok());
    s.storage.storage_class_name = Some("nfs".into());
    assert!(s.validate().unwrap_err().contains("storageClassName"));
}

#[test]
fn the_schema_carries_the_validation_the_api_server_enforces() {
    let crd = serde_json::to_value(KaasCluster::crd()).unwrap();
    let spec = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
    assert_eq!(
        spec["properties"]["replicas"]["minimum"].as_f64(),
        Some(1.0)
    );
    assert_eq!(
        spec["properties"]["replicas"]["maximum"].as_f64(),
        Some(256.0)
    );
    assert_eq!(spec["properties"]["replicas"]["default"], 3);
    assert_eq!(spec["properties"]["image"]["minLength"], 1);
    assert_eq!(
        spec["properties"]["listener"]["properties"]["port"]["maximum"].as_f64(),
        Some(65535.0)
    );
    let advertise = &spec["properties"]["listener"]["properties"]["advertise"]["enum"];
    assert_eq!(advertise, &serde_json::json!(["dns", "podIP"]));
    let storage = &spec["properties"]["storage"];
    assert_eq!(storage["oneOf"][0]["required"][0], "size");
    assert!(storage["properties"]["size"]["pattern"].is_string());
    assert_eq!(
        crd["spec"]["versions"][0]["additionalPrinterColumns"][1]["jsonPath"],
        ".status.readyBrokers"
    );
    assert_eq!(crd["spec"]["names"]["shortNames"][0], "kaas");
    let text = serde_json::to_string(&crd).unwrap();
    assert!(
        !text.contains("x-kubernetes-validations"),
        "no CEL: see the module docs"
    );
    assert!(!text.contains("$ref"), "structural schemas cannot use $ref");
}
