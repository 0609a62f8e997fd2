//! `kaas-broker serve --config server.properties`, as a user runs it: a
//! file with Apache's keys starts a broker that serves, logs its effective
//! configuration and warns of the keys it ignored; a bad value stops it
//! with a message naming the key.

use std::io::Read;
use std::process::{Command, Stdio};
use std::time::Duration;

use kaas_client::KafkaClient;
use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};

const BIN: &str = env!("CARGO_BIN_EXE_kaas-broker");

/// Kills the broker when the test ends, failed or not (an orphan would hold
/// the test harness's output open).
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn a_bad_value_stops_the_broker_naming_the_file_and_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("server.properties");
    std::fs::write(
        &file,
        format!(
            "node.id=0\nlog.dirs={}\nauto.create.topics.enable=sometimes\n",
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["serve", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("auto.create.topics.enable: 'sometimes' is not true or false"),
        "{stderr}"
    );
    assert!(stderr.contains("server.properties"), "{stderr}");
    assert!(!dir.path().join("data").exists(), "nothing was created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broker_started_from_server_properties_serves_with_those_settings() {
    let dir = tempfile::tempdir().unwrap();
    let port = kaas_testkit::free_port().unwrap();
    let file = dir.path().join("server.properties");
    std::fs::write(
        &file,
        format!(
            "# Apache's sample file, trimmed\n\
             node.id=4\n\
             log.dirs={}\n\
             listeners=PLAINTEXT://127.0.0.1:{port},CONTROLLER://127.0.0.1:1\n\
             controller.listener.names=CONTROLLER\n\
             num.network.threads=3\n\
             num.partitions=5\n",
            dir.path().join("data").display()
        ),
    )
    .unwrap();
    let mut broker = Running(
        Command::new(BIN)
            .args(["serve", "--config"])
            .arg(&file)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let addr = format!("127.0.0.1:{port}");
    let mut client = None;
    for _ in 0..100 {
        if let Ok(c) = KafkaClient::connect(&addr, Duration::from_secs(1)).await {
            client = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let mut client = client.expect("the broker listens on the file's listener");
    let versions = client
        .send(&ApiVersionsRequest::default(), 2)
        .await
        .unwrap();
    assert_eq!(versions.error_code, 0);
    // Before any assignment a broker describes itself: node.id from the file.
    let metadata = client.send(&MetadataRequest::default(), 12).await.unwrap();
    assert_eq!(metadata.brokers[0].node_id.0, 4);
    assert_eq!(metadata.brokers[0].port, port as i32);
    broker.0.kill().unwrap();
    broker.0.wait().unwrap();
    let mut stderr = String::new();
    broker
        .0
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(
        stderr.contains("effective configuration: node.id=4"),
        "{stderr}"
    );
    assert!(stderr.contains("num.partitions=5"), "{stderr}");
    assert!(
        stderr.contains("num.network.threads: not a kaas setting; ignored"),
        "{stderr}"
    );
    assert!(
        stderr.contains("controller listener 'CONTROLLER' ignored"),
        "{stderr}"
    );
}
