//! `reconcile` against a `tower-test` mock API server (controller-rs's
//! ApiServerVerifier pattern): each test scripts the requests the operator
//! must make, in order, and the answers it gets.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Method, Request, Response, StatusCode};
use kaas_shared::configmap;
use kaas_shared::{Assignment, BrokerState};
use kube::client::Body;
use kube::runtime::controller::Action;
use kube::Client;
use serde_json::{json, Value};

use crate::apply::APPLIED_DIGEST;
use crate::context::{ApiVersions, Context, Prober, Settings};
use crate::controller;
use crate::crd::KaasCluster;
use crate::status;

type Handle = tower_test::mock::Handle<Request<Body>, Response<Body>>;

/// Plays the API server, one expected request at a time.
struct Verifier {
    handle: Handle,
    /// Objects "stored" by earlier applies, by path: answered to GETs.
    stored: HashMap<String, Value>,
}

/// One request as the verifier saw it.
struct Seen {
    method: Method,
    path: String,
    query: String,
    body: Value,
}

impl Verifier {
    async fn next(&mut self) -> (Seen, tower_test::mock::SendResponse<Response<Body>>) {
        let (req, send) = tokio::time::timeout(Duration::from_secs(5), self.handle.next_request())
            .await
            .expect("the operator made no further request")
            .expect("the client is gone");
        let method = req.method().clone();
        let path = req.uri().path().to_owned();
        let query = req.uri().query().unwrap_or_default().to_owned();
        let bytes = req.into_body().collect_bytes().await.unwrap();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).expect("JSON body")
        };
        (
            Seen {
                method,
                path,
                query,
                body,
            },
            send,
        )
    }

    /// Expects `method path`, answers `status` + `body`, returns what came.
    async fn expect(
        &mut self,
        method: Method,
        path: &str,
        status: StatusCode,
        body: Value,
    ) -> Seen {
        let (seen, send) = self.next().await;
        assert_eq!(
            (&seen.method, seen.path.as_str()),
            (&method, path),
            "unexpected request (query {})",
            seen.query
        );
        send.send_response(
            Response::builder()
                .status(status)
                .body(Body::from(serde_json::to_vec(&body).unwrap()))
                .unwrap(),
        );
        seen
    }

    /// A server-side apply of `path`: a GET (answered from `stored`, else
    /// 404) and, unless the stored copy carries the same digest, the
    /// PATCH, whose body is stored and echoed. Returns the applied body.
    async fn apply(&mut self, path: &str) -> Option<Value> {
        let stored = self.stored.get(path).cloned();
        match &stored {
            Some(obj) => {
                self.expect(Method::GET, path, StatusCode::OK, obj.clone())
                    .await
            }
            None => {
                self.expect(Method::GET, path, StatusCode::NOT_FOUND, not_found())
                    .await
            }
        };
        let (seen, send) = self.next().await;
        assert_eq!((&seen.method, seen.path.as_str()), (&Method::PATCH, path));
        assert!(
            seen.query.contains("fieldManager=kaas-operator"),
            "{}",
            seen.query
        );
        assert!(seen.query.contains("force=true"), "{}", seen.query);
        send.send_response(
            Response::builder()
                .body(Body::from(serde_json::to_vec(&seen.body).unwrap()))
                .unwrap(),
        );
        self.stored.insert(path.to_owned(), seen.body.clone());
        Some(seen.body)
    }

    async fn event(&mut self, reason: &str) -> Value {
        let seen = self
            .expect(
                Method::POST,
                "/apis/events.k8s.io/v1/namespaces/ns/events",
                StatusCode::CREATED,
                Value::Null,
            )
            .await;
        assert_eq!(seen.body["reason"], reason, "{}", seen.body);
        seen.body
    }

    async fn status(&mut self) -> crate::KaasClusterStatus {
        let seen = self
            .expect(
                Method::PATCH,
                "/apis/kaas.dev/v1alpha1/namespaces/ns/kaasclusters/demo/status",
                StatusCode::OK,
                cluster_json(),
            )
            .await;
        assert_eq!(seen.body["kind"], "KaasCluster");
        serde_json::from_value(seen.body["status"].clone()).expect("a status")
    }

    async fn list(&mut self, path: &str, kind: &str, items: Vec<Value>) {
        let seen = self
            .expect(
                Method::GET,
                path,
                StatusCode::OK,
                json!({"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": "1"}, "items": items}),
            )
            .await;
        assert!(seen.query.contains("labelSelector="), "{}", seen.query);
    }
}

fn not_found() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404, "message": "not found"})
}

fn cluster_json() -> Value {
    json!({
        "apiVersion": "kaas.dev/v1alpha1",
        "kind": "KaasCluster",
        "metadata": {"name": "demo", "namespace": "ns", "uid": "uid-1", "generation": 1},
        "spec": {"image": "kaas:dev", "storage": {"size": "1Gi"}},
    })
}

fn cluster() -> Arc<KaasCluster> {
    Arc::new(serde_json::from_value(cluster_json()).unwrap())
}

/// A prober answering from a fixed table of `host:port` → groups.
fn prober(answers: &[(&str, &[&str])]) -> Prober {
    let answers: HashMap<String, Vec<String>> = answers
        .iter()
        .map(|(a, g)| ((*a).to_owned(), g.iter().map(|s| (*s).to_owned()).collect()))
        .collect();
    let answers = Arc::new(Mutex::new(answers));
    Arc::new(move |addr: String, _security| {
        let answer = answers.lock().unwrap().get(&addr).cloned();
        Box::pin(async move {
            let groups = answer.ok_or_else(|| anyhow::anyhow!("{addr} refused the connection"))?;
            Ok(kaas_client::probe::ProbeResult {
                groups,
                moving: Vec::new(),
            })
        })
    })
}

fn setup(prober: Prober) -> (Arc<Context>, Verifier) {
    let (service, handle) = tower_test::mock::pair::<Request<Body>, Response<Body>>();
    let client = Client::new(service, "ns");
    let ctx = Arc::new(Context::new(
        client,
        ApiVersions::current(),
        prober,
        Settings::default(),
    ));
    (
        ctx,
        Verifier {
            handle,
            stored: HashMap::new(),
        },
    )
}

const OWNED: [&str; 9] = [
    "/api/v1/namespaces/ns/serviceaccounts/demo-broker",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/roles/demo-broker",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/ns/rolebindings/demo-broker",
    "/api/v1/namespaces/ns/services/demo-brokers",
    "/api/v1/namespaces/ns/services/demo",
    "/api/v1/namespaces/ns/persistentvolumeclaims/demo-data",
    "/apis/policy/v1/namespaces/ns/poddisruptionbudgets/demo",
    "/api/v1/namespaces/ns/configmaps/demo-broker-config",
    "/apis/apps/v1/namespaces/ns/statefulsets/demo",
];
const PODS: &str = "/api/v1/namespaces/ns/pods";
const SLICES: &str = "/apis/discovery.k8s.io/v1/namespaces/ns/endpointslices";
const CONFIGMAP: &str = "/api/v1/namespaces/ns/configmaps/demo-assignment";

fn ready_pod(ordinal: i32) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": format!("demo-{ordinal}"), "namespace": "ns"},
        "status": {"podIP": format!("10.1.0.{ordinal}"), "conditions": [{"type": "Ready", "status": "True"}]},
    })
}

fn decode(configmap: &Value) -> Assignment {
    let cm = serde_json::from_value(configmap.clone()).expect("a ConfigMap");
    configmap::decode(&cm).expect("an assignment")
}

#[tokio::test]
async fn a_new_cluster_gets_its_resources_and_a_first_assignment() {
    let (ctx, mut api) = setup(prober(&[]));
    let reconcile = tokio::spawn(controller::reconcile(cluster(), ctx));

    for path in OWNED {
        let body = api.apply(path).await.unwrap();
        assert_eq!(
            body["metadata"]["ownerReferences"][0]["uid"], "uid-1",
            "{path}"
        );
        assert!(
            body["metadata"]["annotations"][APPLIED_DIGEST].is_string(),
            "{path}"
        );
    }
    assert_eq!(api.stored[OWNED[6]]["apiVersion"], "policy/v1");
    api.list(PODS, "PodList", vec![]).await;
    api.list(SLICES, "EndpointSliceList", vec![]).await;
    api.expect(Method::GET, CONFIGMAP, StatusCode::NOT_FOUND, not_found())
        .await;
    let cm = api.apply(CONFIGMAP).await.unwrap();
    let doc = decode(&cm);
    assert_eq!(doc.version, 1);
    assert_eq!(doc.brokers.len(), 3);
    assert!(doc.brokers.iter().all(|b| b.state == BrokerState::Dead));
    assert_eq!(doc.brokers[2].host, "demo-2.demo-brokers.ns.svc");
    api.event("AssignmentPublished").await;
    let s = api.status().await;
    assert_eq!(s.assignment_version, Some(1));
    assert_eq!((s.ready_brokers, s.brokers), (0, 3));
    let ready = status::condition(&s, status::READY).unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        ("False", "BrokersNotReady")
    );
    assert_eq!(
        status::condition(&s, status::ASSIGNMENT_PUBLISHED)
            .unwrap()
            .status,
        "True"
    );

    let action = reconcile.await.unwrap().expect("reconciled");
    assert_eq!(action, Action::requeue(Settings::default().resync));
}

#[tokio::test]
async fn ready_pods_are_published_alive_with_their_active_groups() {
    let (ctx, mut api) = setup(prober(&[
        ("demo-0.demo-brokers.ns.svc:9092", &["orders"]),
        ("demo-1.demo-brokers.ns.svc:9092", &["billing", "audit"]),
        ("demo-2.demo-brokers.ns.svc:9092", &[]),
    ]));
    let reconcile = tokio::spawn(controller::reconcile(cluster(), ctx));
    for path in OWNED {
        api.apply(path).await;
    }
    api.list(PODS, "PodList", (0..3).map(ready_pod).collect())
        .await;
    let endpoints: Vec<Value> = (0..3)
        .map(|i| {
            json!({"addresses": [format!("10.1.0.{i}")], "conditions": {"ready": true},
                        "targetRef": {"kind": "Pod", "name": format!("demo-{i}")}})
        })
        .collect();
    api.list(
        SLICES,
        "EndpointSliceList",
        vec![json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                    "metadata": {"name": "demo-brokers-x"}, "addressType": "IPv4", "endpoints": endpoints})],
    )
    .await;
    // The published version 7, everyone dead: the next is 8, all alive.
    let (data, binary) = configmap::encode(&Assignment {
        version: 7,
        ..Assignment::default()
    });
    let previous = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "demo-assignment", "namespace": "ns"}, "data": data, "binaryData": binary});
    api.expect(Method::GET, CONFIGMAP, StatusCode::OK, previous.clone())
        .await;
    api.stored.insert(CONFIGMAP.into(), previous);
    let doc = decode(&api.apply(CONFIGMAP).await.unwrap());
    assert_eq!(doc.version, 8);
    assert!(doc.brokers.iter().all(|b| b.state == BrokerState::Alive));
    api.event("AssignmentPublished").await;
    let s = api.status().await;
    assert_eq!(status::condition(&s, status::READY).unwrap().status, "True");
    assert_eq!(s.ready_brokers, 3);
    assert_eq!(s.active_groups, 3);
    assert_eq!(s.assignment_version, Some(8));
    reconcile.await.unwrap().expect("reconciled");
}

#[tokio::test]
async fn unchanged_objects_are_not_applied_again() {
    let (ctx, mut api) = setup(prober(&[]));
    // First pass stores what was applied.
    let first = tokio::spawn(controller::reconcile(cluster(), ctx.clone()));
    for path in OWNED {
        api.apply(path).await;
    }
    api.list(PODS, "PodList", vec![]).await;
    api.list(SLICES, "EndpointSliceList", vec![]).await;
    api.expect(Method::GET, CONFIGMAP, StatusCode::NOT_FOUND, not_found())
        .await;
    api.apply(CONFIGMAP).await;
    api.event("AssignmentPublished").await;
    let s = api.status().await;
    first.await.unwrap().unwrap();

    // Second pass: the same cluster, with that status. Every GET answers
    // the stored object: no PATCH, no new version, no status write.
    let mut kc = (*cluster()).clone();
    kc.status = Some(s);
    let second = tokio::spawn(controller::reconcile(Arc::new(kc), ctx));
    for path in OWNED {
        let stored = api.stored[path].clone();
        api.expect(Method::GET, path, StatusCode::OK, stored).await;
    }
    api.list(PODS, "PodList", vec![]).await;
    api.list(SLICES, "EndpointSliceList", vec![]).await;
    let stored = api.stored[CONFIGMAP].clone();
    api.expect(Method::GET, CONFIGMAP, StatusCode::OK, stored)
        .await;
    // The reconcile ends without another request.
    second.await.unwrap().expect("reconciled");
}

#[tokio::test]
async fn an_invalid_spec_is_reported_and_nothing_is_applied() {
    let (ctx, mut api) = setup(prober(&[]));
    let mut kc = (*cluster()).clone();
    kc.spec.broker.group_min_session_timeout_ms = 60_000;
    kc.spec.broker.group_max_session_timeout_ms = 30_000;
    let reconcile = tokio::spawn(controller::reconcile(Arc::new(kc), ctx));
    let ev = api.event("InvalidSpec").await;
    assert_eq!(ev["type"], "Warning");
    let s = api.status().await;
    let degraded = status::condition(&s, status::DEGRADED).unwrap();
    assert_eq!(
        (degraded.status.as_str(), degraded.reason.as_str()),
        ("True", "InvalidSpec")
    );
    assert!(degraded
        .message
        .contains("groupMinSessionTimeoutMs (60000)"));
    assert_eq!(reconcile.await.unwrap().unwrap(), Action::await_change());
}

#[tokio::test]
async fn an_api_error_shows_in_status_and_events_and_backs_off() {
    let (ctx, mut api) = setup(prober(&[]));
    let reconcile = tokio::spawn(controller::reconcile(cluster(), ctx.clone()));
    api.expect(Method::GET, OWNED[0], StatusCode::NOT_FOUND, not_found())
        .await;
    api.expect(
        Method::PATCH,
        OWNED[0],
        StatusCode::FORBIDDEN,
        json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Forbidden", "code": 403,
               "message": "serviceaccounts is forbidden: the operator may not"}),
    )
    .await;
    let ev = api.event("ApplyFailed").await;
    assert!(ev["note"].as_str().unwrap().contains("forbidden"), "{ev}");
    let s = api.status().await;
    let degraded = status::condition(&s, status::DEGRADED).unwrap();
    assert_eq!(degraded.reason, "ApplyFailed");
    assert!(
        degraded
            .message
            .contains("applying ServiceAccount demo-broker"),
        "{}",
        degraded.message
    );
    let err = reconcile.await.unwrap().expect_err("the error surfaces");

    // Exponential backoff per cluster.
    let kc = cluster();
    let first = controller::error_policy(kc.clone(), &err, ctx.clone());
    let second = controller::error_policy(kc, &err, ctx);
    assert_eq!(first, Action::requeue(Duration::from_secs(1)));
    assert_eq!(second, Action::requeue(Duration::from_secs(2)));
    assert_eq!(
        controller::backoff(30, Duration::from_secs(300)),
        Duration::from_secs(300)
    );
}
