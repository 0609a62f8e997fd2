//! Debian's kcat 1.7.1 (librdkafka 2.0.2, which misparses default-valued
//! tagged fields) lists metadata, produces and consumes against the local
//! cluster, and over SASL SCRAM against `local --sasl`. `.ci/run` installs kcat; without it this test fails and says so.

use std::io::Write;
use std::process::{Command, Stdio};

use kaas_broker::local::{LocalCluster, LocalClusterConfig};

fn kcat(args: &[&str], stdin: Option<&str>) -> String {
    let mut child = Command::new("kcat")
        .args(args)
        // Debian's librdkafka, not the one cargo built for the rdkafka crate
        // (cargo's LD_LIBRARY_PATH would load that one, built without SCRAM).
        .env_remove("LD_LIBRARY_PATH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect(
            "kcat is not installed: apt-get install -y kcat (scripts/install-test-deps does it)",
        );
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
    } else {
        drop(child.stdin.take());
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "kcat {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_lists_produces_and_consumes() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LocalClusterConfig::new(3, dir.path().to_path_buf());
    config.base_port = 0;
    let cluster = LocalCluster::start(config).await.unwrap();
    let b0 = cluster.addrs[0].to_string();
    let b2 = cluster.addrs[2].to_string();

    let (listing, produced, consumed) = tokio::task::spawn_blocking(move || {
        let lines: String = (0..500).map(|i| format!("line-{i}\n")).collect();
        // Auto-created on first use through Metadata, as Kafka does.
        let produced = kcat(
            &["-b", &b0, "-P", "-t", "kcat-topic", "-p", "0"],
            Some(&lines),
        );
        let listing = kcat(&["-b", &b0, "-L", "-t", "kcat-topic"], None);
        let consumed = kcat(
            &[
                "-b",
                &b2,
                "-C",
                "-t",
                "kcat-topic",
                "-o",
                "beginning",
                "-e",
                "-q",
                "-f",
                "%o %s\n",
            ],
            None,
        );
        (listing, produced, consumed)
    })
    .await
    .unwrap();
    assert!(produced.is_empty());
    assert!(listing.contains("3 brokers:"), "{listing}");
    for a in &cluster.addrs {
        assert!(listing.contains(&a.to_string()), "{listing}");
    }
    assert!(
        listing.contains("topic \"kcat-topic\" with 1 partitions"),
        "{listing}"
    );
    let want: String = (0..500).map(|i| format!("{i} line-{i}\n")).collect();
    assert_eq!(consumed, want);
    cluster.shutdown().await;
}

/// kcat over SASL_PLAINTEXT with SCRAM (librdkafka 2.0.2 repeats its nonce
/// in the final SCRAM message, which Apache accepts since 3.8.1 and so
/// does kaas) against `local --sasl`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_produces_and_consumes_over_sasl_scram() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LocalClusterConfig::new(3, dir.path().to_path_buf());
    config.base_port = 0;
    config.sasl_admin_password = Some("kcat-secret".into());
    let cluster = LocalCluster::start(config).await.unwrap();
    let b0 = cluster.addrs[0].to_string();
    let b1 = cluster.addrs[1].to_string();
    let consumed = tokio::task::spawn_blocking(move || {
        let sasl = |mechanism: &'static str| {
            [
                "-X",
                "security.protocol=SASL_PLAINTEXT",
                "-X",
                mechanism,
                "-X",
                "sasl.username=admin",
                "-X",
                "sasl.password=kcat-secret",
            ]
        };
        let mut produce = vec!["-b", b0.as_str(), "-P", "-t", "kcat-sasl", "-p", "0"];
        produce.extend(sasl("sasl.mechanisms=SCRAM-SHA-512"));
        kcat(&produce, Some("one\ntwo\nthree\n"));
        let mut consume = vec![
            "-b",
            b1.as_str(),
            "-C",
            "-t",
            "kcat-sasl",
            "-o",
            "beginning",
            "-e",
        ];
        consume.extend(sasl("sasl.mechanisms=SCRAM-SHA-256"));
        kcat(&consume, None)
    })
    .await
    .unwrap();
    assert_eq!(consumed, "one\ntwo\nthree\n");
    cluster.shutdown().await;
}
