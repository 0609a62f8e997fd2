//! The chart's RBAC is enough for the operator, and the Role the operator
//! makes is enough for brokers — and neither grants more than that.
//!
//! The chart is rendered with the real `helm` (`KAAS_HELM`, set by
//! `scripts/test-k8s`) for a release watching one namespace; the operator
//! then runs with its service account's token, the brokers with theirs.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kaas_e2e_k8s::{coordinator_as, eventually, free_port, BrokerProc, Operator, Source, TestEnv};
use kaas_operator::status::{self, READY};
use kaas_operator::KaasCluster;
use kube::api::{ListParams, PostParams};
use kube::runtime::wait::await_condition;
use kube::Api;

fn forbidden<T: std::fmt::Debug>(r: Result<T, kube::Error>) -> bool {
    matches!(r, Err(kube::Error::Api(e)) if e.code == 403)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the k8s-testenv API server and helm: run scripts/test-k8s"]
async fn the_chart_rbac_suffices_for_the_operator_and_the_broker_role_for_brokers() {
    kaas_e2e_k8s::init_tracing();
    let env = TestEnv::get().await;
    env.install_crd().await;
    let watched = env.namespace("rbac").await;
    let home = env.namespace("rbac-operator").await;
    let release = format!("r{}", &home[home.len() - 8..]);

    let helm = std::env::var("KAAS_HELM").expect("KAAS_HELM: run through scripts/test-k8s");
    let chart = kaas_e2e_k8s::repo_root().join("charts/kaas-operator");
    let out = std::process::Command::new(helm)
        .arg("template")
        .arg(&release)
        .arg(&chart)
        .args([
            "--namespace",
            &home,
            "--set",
            &format!("watchNamespaces={{{watched}}}"),
        ])
        .args([
            "--show-only",
            "templates/serviceaccount.yaml",
            "--show-only",
            "templates/rbac.yaml",
        ])
        .output()
        .expect("run helm");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let created = env
        .create_all(&String::from_utf8(out.stdout).unwrap())
        .await;
    assert_eq!(
        created.len(),
        3,
        "ServiceAccount, ClusterRole, one RoleBinding: {created:?}"
    );

    // The operator, as its service account.
    let kubeconfig = env
        .kubeconfig_for(&home, &format!("{release}-kaas-operator"))
        .await;
    let operator_client = TestEnv::client_from(&kubeconfig).await;
    let _operator = Operator::start(&operator_client, &watched).await;

    let port = free_port();
    let api: Api<KaasCluster> = Api::namespaced(env.client.clone(), &watched);
    let kc: KaasCluster = serde_json::from_value(serde_json::json!({
        "apiVersion": "kaas.dev/v1alpha1", "kind": "KaasCluster",
        "metadata": {"name": "demo"},
        "spec": {"replicas": 2, "image": "kaas:e2e", "storage": {"size": "1Gi"},
                 "listener": {"port": port, "advertise": "podIP", "authentication": "scram"}},
    }))
    .unwrap();
    api.create(&PostParams::default(), &kc).await.unwrap();

    // A SCRAM listener: the operator makes the admin Secret with the
    // chart's rights, and probes the brokers with its password.
    let admin_secrets: Api<Secret> = Api::namespaced(env.client.clone(), &watched);
    eventually(Duration::from_secs(60), "the admin Secret", || {
        let secrets = admin_secrets.clone();
        async move { secrets.get_opt("demo-admin").await.ok().flatten().is_some() }
    })
    .await;
    let secret = admin_secrets.get("demo-admin").await.unwrap();
    let password = String::from_utf8(secret.data.unwrap()["password"].0.clone()).unwrap();
    let admin = kaas_client::Security::sasl(&kaas_client::SaslCredentials {
        mechanism: "SCRAM-SHA-512".into(),
        user: "admin".into(),
        password: password.clone(),
    });

    // Brokers, as the account the operator made for them.
    let dir = tempfile::tempdir().unwrap();
    let broker_kubeconfig = dir.path().join("broker-kubeconfig");
    let text = env.kubeconfig_for(&watched, "demo-broker").await;
    std::fs::write(&broker_kubeconfig, &text).unwrap();
    let source = Source::ConfigMap {
        namespace: watched.clone(),
        name: "demo-assignment".into(),
    };
    let mut brokers = BTreeMap::new();
    for (pod, ip) in env
        .mark_pods_ready(&watched, "app.kubernetes.io/name=kaas", 2)
        .await
    {
        let id: i32 = pod.rsplit('-').next().unwrap().parse().unwrap();
        let b = BrokerProc::spawn_with_args(
            id,
            &ip,
            port,
            &dir.path().join("data"),
            dir.path(),
            &source,
            Some(&broker_kubeconfig),
            &["--sasl", "--admin-password", &password],
        );
        b.wait_listening(Duration::from_secs(30)).await;
        brokers.insert(id, b);
    }
    tokio::time::timeout(
        Duration::from_secs(60),
        await_condition(api.clone(), "demo", |kc: Option<&KaasCluster>| {
            kc.and_then(|k| k.status.as_ref())
                .and_then(|s| status::condition(s, READY))
                .is_some_and(|c| c.status == "True")
        }),
    )
    .await
    .expect("Ready=True with the chart's RBAC")
    .unwrap();
    for b in brokers.values() {
        let addr = b.addr.clone();
        eventually(
            Duration::from_secs(30),
            "the broker follows the ConfigMap",
            || {
                let addr = addr.clone();
                let admin = admin.clone();
                async move { coordinator_as(&addr, "any-group", &admin).await.is_some() }
            },
        )
        .await;
    }

    // A KaasUser: its finalizer, Secret, credentials, ACLs and status, all
    // within the chart's rights.
    let users: Api<kaas_operator::user::KaasUser> = Api::namespaced(env.client.clone(), &watched);
    let bob = serde_json::from_value(serde_json::json!({
        "apiVersion": "kaas.dev/v1alpha1", "kind": "KaasUser",
        "metadata": {"name": "bob"},
        "spec": {"cluster": "demo", "acls": [
            {"resource": {"type": "topic", "name": "bob-"}, "operations": ["Read"]}]},
    }))
    .unwrap();
    users.create(&PostParams::default(), &bob).await.unwrap();
    tokio::time::timeout(
        Duration::from_secs(60),
        await_condition(
            users.clone(),
            "bob",
            |u: Option<&kaas_operator::user::KaasUser>| {
                u.and_then(|u| u.status.as_ref())
                    .and_then(|s| s.conditions.iter().find(|c| c.type_ == "Ready"))
                    .is_some_and(|c| c.status == "True")
            },
        ),
    )
    .await
    .expect("the KaasUser Ready with the chart's RBAC")
    .unwrap();
    users.delete("bob", &Default::default()).await.unwrap();
    eventually(Duration::from_secs(60), "bob removed", || {
        let users = users.clone();
        async move { users.get_opt("bob").await.ok().flatten().is_none() }
    })
    .await;

    // The brokers' account reads its ConfigMap and nothing else.
    let broker_client = TestEnv::client_from(&text).await;
    let cms: Api<ConfigMap> = Api::namespaced(broker_client.clone(), &watched);
    cms.get("demo-assignment")
        .await
        .expect("brokers read their ConfigMap");
    assert!(forbidden(cms.get("kube-root-ca.crt").await));
    assert!(forbidden(cms.list(&ListParams::default()).await));
    let secrets: Api<Secret> = Api::namespaced(broker_client, &watched);
    assert!(forbidden(secrets.list(&ListParams::default()).await));

    // The operator's account works only in the watched namespace, and
    // cannot list Secrets (it reads, by name, only the admin Secret of a
    // cluster with a SCRAM listener).
    let elsewhere: Api<ConfigMap> = Api::namespaced(operator_client.clone(), &home);
    assert!(forbidden(elsewhere.list(&ListParams::default()).await));
    let secrets: Api<Secret> = Api::namespaced(operator_client, &watched);
    assert!(forbidden(secrets.list(&ListParams::default()).await));
}
