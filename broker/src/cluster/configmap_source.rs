//! Follows the assignment published as a Kubernetes ConfigMap: the source
//! `kaas-broker serve --assignment-configmap NAME` uses instead of the file.
//!
//! The operator writes the document; this module owns its ConfigMap format
//! (so the writer and the reader cannot drift) and the watch that offers
//! every version to the broker, exactly as [`super::file_source`] does for
//! `<data>/__cluster/assignment.json`.
//!
//! # Format
//!
//! A ConfigMap holds at most 1 MiB. The logical document is the JSON
//! [`Assignment`], unchanged; on the ConfigMap it is stored gzip-compressed
//! under `binaryData["assignment.json.gz"]`. Compression is what makes
//! 100,000 active groups fit: a 3→4 scale pins ~75% of them, and 75k
//! entries are 2.7 MB of JSON but ~0.2–0.3 MB gzipped, because the entries
//! are sorted by group id and the JSON framing around each is identical.
//! Readable summaries (`data.version`, `data.brokers`, `data.groupEntries`)
//! sit beside it for `kubectl get -o yaml`; readers ignore them.
//!
//! A hand-written ConfigMap may instead carry plain JSON under
//! `data["assignment.json"]`; readers accept either, the compressed one
//! first.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::ByteString;
use kaas_shared::Assignment;
use kube::runtime::{watcher, WatchStreamExt};
use kube::{Api, Client};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::broker::Broker;

/// `binaryData` key of the gzip-compressed JSON document.
pub const GZIP_KEY: &str = "assignment.json.gz";
/// `data` key of a plain JSON document (accepted, never written).
pub const JSON_KEY: &str = "assignment.json";
/// `data` key of the document's version, for humans and label-free watches.
pub const VERSION_KEY: &str = "version";
/// `data` key of a one-line broker summary, `0=alive 1=dead ...`.
pub const BROKERS_KEY: &str = "brokers";
/// `data` key of the number of explicit group entries.
pub const GROUP_ENTRIES_KEY: &str = "groupEntries";

/// Most bytes a ConfigMap may hold (`data` plus `binaryData`), as the API
/// server validates it.
pub const CONFIGMAP_LIMIT: usize = 1024 * 1024;

/// Decompressed documents larger than this are refused: a guard against a
/// gzip bomb in a ConfigMap anyone with write access could edit.
const MAX_DECOMPRESSED: u64 = 256 * 1024 * 1024;

/// Why a ConfigMap did not yield a document.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("the ConfigMap has neither binaryData[{GZIP_KEY}] nor data[{JSON_KEY}]")]
    Missing,
    #[error("binaryData[{GZIP_KEY}] is not valid gzip: {0}")]
    Gzip(#[source] std::io::Error),
    #[error("the document is larger than {MAX_DECOMPRESSED} bytes uncompressed")]
    TooLarge,
    #[error("the document is not a valid assignment: {0}")]
    Json(#[from] serde_json::Error),
}

/// The ConfigMap payload for `assignment`: `(data, binaryData)`.
///
/// Deterministic for a given document, so re-applying an unchanged document
/// is a no-op for the API server.
pub fn encode(assignment: &Assignment) -> (BTreeMap<String, String>, BTreeMap<String, ByteString>) {
    let json = serde_json::to_vec(assignment).expect("an Assignment always serialises");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&json).expect("writing to a Vec cannot fail");
    let compressed = gz.finish().expect("writing to a Vec cannot fail");

    let brokers = assignment
        .brokers
        .iter()
        .map(|b| {
            let state = serde_json::to_value(b.state).expect("state serialises");
            format!("{}={}", b.id, state.as_str().unwrap_or("?"))
        })
        .collect::<Vec<_>>()
        .join(" ");
    let data = BTreeMap::from([
        (VERSION_KEY.to_owned(), assignment.version.to_string()),
        (BROKERS_KEY.to_owned(), brokers),
        (
            GROUP_ENTRIES_KEY.to_owned(),
            assignment.consumer_groups.len().to_string(),
        ),
    ]);
    let binary = BTreeMap::from([(GZIP_KEY.to_owned(), ByteString(compressed))]);
    (data, binary)
}

/// Bytes the API server counts against [`CONFIGMAP_LIMIT`] for this payload.
pub fn encoded_size(
    data: &BTreeMap<String, String>,
    binary: &BTreeMap<String, ByteString>,
) -> usize {
    // Validation sums keys and values of both maps.
    data.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
        + binary
            .iter()
            .map(|(k, v)| k.len() + v.0.len())
            .sum::<usize>()
}

/// Reads the document from a ConfigMap written by [`encode`] (or by hand,
/// as plain JSON under `data["assignment.json"]`).
pub fn decode(cm: &ConfigMap) -> Result<Assignment, DecodeError> {
    if let Some(gz) = cm.binary_data.as_ref().and_then(|b| b.get(GZIP_KEY)) {
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(gz.0.as_slice())
            .take(MAX_DECOMPRESSED + 1)
            .read_to_end(&mut json)
            .map_err(DecodeError::Gzip)?;
        if json.len() as u64 > MAX_DECOMPRESSED {
            return Err(DecodeError::TooLarge);
        }
        return Ok(serde_json::from_slice(&json)?);
    }
    if let Some(json) = cm.data.as_ref().and_then(|d| d.get(JSON_KEY)) {
        return Ok(serde_json::from_str(json)?);
    }
    Err(DecodeError::Missing)
}

/// Where the assignment ConfigMap lives.
#[derive(Debug, Clone)]
pub struct ConfigMapSource {
    pub namespace: String,
    pub name: String,
}

impl ConfigMapSource {
    /// The ConfigMap `name`; with no namespace, the one the client config
    /// names (in-cluster: the pod's own, from its service account).
    pub async fn connect(
        name: String,
        namespace: Option<String>,
    ) -> anyhow::Result<(Client, ConfigMapSource)> {
        // Config::infer: KUBECONFIG / ~/.kube/config if present, else the
        // in-cluster service account. A broker pod has the latter.
        let config = kube::Config::infer().await?;
        let namespace = namespace.unwrap_or_else(|| config.default_namespace.clone());
        let client = Client::try_from(config)?;
        Ok((client, ConfigMapSource { namespace, name }))
    }
}

/// Watches the ConfigMap until `shutdown`, calling `offer` with every
/// document it carries (the broker's view ignores versions it already has,
/// so replays after a watch restart are harmless).
///
/// Never gives up: API errors are retried with kube's default backoff and
/// logged once per distinct message, as the file source does. A deleted
/// ConfigMap leaves the broker on the last document it had.
pub async fn follow(
    client: Client,
    source: ConfigMapSource,
    shutdown: CancellationToken,
    mut offer: impl FnMut(Assignment),
) {
    let api: Api<ConfigMap> = Api::namespaced(client, &source.namespace);
    // A field selector on the name: the broker's Role grants get/list/watch
    // on this one ConfigMap only (resourceNames), which the API server
    // authorises for a list/watch only when it names the object this way.
    let config = watcher::Config::default().fields(&format!("metadata.name={}", source.name));
    let mut last_error: Option<String> = None;
    loop {
        let mut stream = watcher(api.clone(), config.clone())
            .default_backoff()
            .applied_objects()
            .boxed();
        loop {
            let next = tokio::select! {
                _ = shutdown.cancelled() => return,
                next = stream.try_next() => next,
            };
            let problem = match next {
                Ok(Some(cm)) => match decode(&cm) {
                    Ok(a) => {
                        if last_error.take().is_some() {
                            info!(configmap = %source.name, "following the assignment ConfigMap again");
                        }
                        offer(a);
                        continue;
                    }
                    Err(e) => e.to_string(),
                },
                Err(e) => e.to_string(),
                // The watcher retries forever, so this is not expected;
                // start a new one rather than stop following.
                Ok(None) => break,
            };
            if last_error.as_deref() != Some(problem.as_str()) {
                warn!(configmap = %source.name, namespace = %source.namespace, error = %problem,
                    "cannot follow the assignment ConfigMap");
                last_error = Some(problem);
            }
        }
    }
}

/// Starts one broker that follows the ConfigMap: the ConfigMap follower,
/// the group timers and the server. Tasks end when `shutdown` fires.
///
/// The ConfigMap counterpart of [`crate::local::spawn_broker`], which wires
/// the file follower; the other two tasks must stay the same as there.
pub fn spawn_broker(
    tasks: &mut JoinSet<()>,
    listener: TcpListener,
    broker: std::sync::Arc<Broker>,
    client: Client,
    source: ConfigMapSource,
    shutdown: CancellationToken,
) {
    let follower = broker.clone();
    let stop = shutdown.clone();
    tasks.spawn(async move {
        follow(client, source, stop, |a| follower.apply_assignment(a)).await;
    });
    crate::local::spawn_serving(tasks, listener, broker, shutdown);
}

#[cfg(test)]
mod tests {
    use super::*;
    use kaas_shared::{recompute, BrokerInfo, BrokerState, GroupEntry};

    fn brokers(n: i32) -> Vec<BrokerInfo> {
        (0..n)
            .map(|id| BrokerInfo {
                id,
                host: format!("demo-{id}.demo-brokers.ns.svc"),
                port: 9092,
                state: BrokerState::Alive,
            })
            .collect()
    }

    fn configmap(
        data: BTreeMap<String, String>,
        binary: BTreeMap<String, ByteString>,
    ) -> ConfigMap {
        ConfigMap {
            data: Some(data),
            binary_data: Some(binary),
            ..ConfigMap::default()
        }
    }

    #[test]
    fn roundtrips_and_summarises() {
        let a = Assignment {
            version: 7,
            brokers: brokers(2),
            consumer_groups: vec![GroupEntry {
                group_id: "orders".into(),
                broker: 1,
            }],
            partitions: vec![],
        };
        let (data, binary) = encode(&a);
        assert_eq!(data[VERSION_KEY], "7");
        assert_eq!(data[BROKERS_KEY], "0=alive 1=alive");
        assert_eq!(data[GROUP_ENTRIES_KEY], "1");
        assert_eq!(encode(&a), (data.clone(), binary.clone()), "deterministic");
        assert_eq!(decode(&configmap(data, binary)).unwrap(), a);
    }

    #[test]
    fn reads_plain_json_and_reports_what_is_wrong() {
        let json = r#"{"version":3,"brokers":[{"id":0,"host":"h","port":1,"state":"dead"}]}"#;
        let cm = configmap(
            BTreeMap::from([(JSON_KEY.to_owned(), json.to_owned())]),
            BTreeMap::new(),
        );
        assert_eq!(decode(&cm).unwrap().version, 3);
        assert!(matches!(
            decode(&ConfigMap::default()),
            Err(DecodeError::Missing)
        ));
        let garbage = configmap(
            BTreeMap::new(),
            BTreeMap::from([(GZIP_KEY.to_owned(), ByteString(b"not gzip".to_vec()))]),
        );
        assert!(matches!(decode(&garbage), Err(DecodeError::Gzip(_))));
        let bad = configmap(
            BTreeMap::from([(JSON_KEY.to_owned(), "{\"version\":true}".to_owned())]),
            BTreeMap::new(),
        );
        let msg = decode(&bad).unwrap_err().to_string();
        assert!(msg.contains("not a valid assignment"), "{msg}");
    }

    /// The case the format exists for: 100,000 active groups and a 3→4
    /// scale, which pins the ~75% whose hash owner changes.
    #[test]
    fn a_scale_up_with_100k_active_groups_fits_a_configmap() {
        for (style, ids) in [
            (
                "counter",
                (0..100_000)
                    .map(|i| format!("group-{i}"))
                    .collect::<Vec<_>>(),
            ),
            (
                "service",
                (0..100_000u64)
                    .map(|i| {
                        let svc =
                            ["orders", "payments", "billing", "search", "audit"][(i % 5) as usize];
                        let env = ["prod", "staging"][(i % 2) as usize];
                        // A spread-out number, as real deployments' suffixes are.
                        let n = i.wrapping_mul(2_654_435_761) % 10_000_000;
                        format!("{svc}-{env}-consumer-{n}")
                    })
                    .collect(),
            ),
        ] {
            let v1 = recompute(None, &brokers(3), &ids);
            let v2 = recompute(Some(&v1), &brokers(4), &ids);
            assert!(
                v2.consumer_groups.len() > 70_000,
                "{style}: {}",
                v2.consumer_groups.len()
            );
            let plain = serde_json::to_vec(&v2).unwrap().len();
            assert!(
                plain > CONFIGMAP_LIMIT,
                "{style}: the plain JSON would not fit"
            );
            let (data, binary) = encode(&v2);
            let size = encoded_size(&data, &binary);
            assert!(size < CONFIGMAP_LIMIT / 2, "{style}: {size} bytes encoded");
            assert_eq!(decode(&configmap(data, binary)).unwrap(), v2);
        }
    }
}
