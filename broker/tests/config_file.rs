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

/// The broker's stderr, line by line, as it comes.
fn lines_of(child: &mut std::process::Child) -> std::sync::mpsc::Receiver<String> {
    use std::io::BufRead;
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    rx
}

fn wait_for_line(lines: &std::sync::mpsc::Receiver<String>, what: &str) -> String {
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(20))
            .unwrap_or_else(|_| panic!("no log line with {what:?}"));
        if line.contains(what) {
            return line;
        }
    }
}

/// A pod's broker: the id from POD_NAME, and on SIGTERM it serves on for
/// the drain (here far longer than the test) until a second signal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pod_broker_takes_its_id_from_the_pod_name_and_drains_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let port = kaas_testkit::free_port().unwrap();
    let addr = format!("127.0.0.1:{port}");
    let mut broker = Running(
        Command::new(BIN)
            .args(["serve", "--id-from-pod-name", "--listen", &addr])
            .args(["--shutdown-drain-ms", "600000", "--data"])
            .arg(dir.path())
            .env("POD_NAME", "kaas-prod-7")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let lines = lines_of(&mut broker.0);
    wait_for_line(&lines, "broker serving");
    let mut client = KafkaClient::connect(&addr, Duration::from_secs(5))
        .await
        .unwrap();
    let metadata = client.send(&MetadataRequest::default(), 12).await.unwrap();
    assert_eq!(metadata.brokers[0].node_id.0, 7, "the pod's ordinal");

    let pid = broker.0.id() as libc::pid_t;
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    wait_for_line(&lines, "draining");
    // Still serving: old connections and new ones.
    let again = client
        .send(&ApiVersionsRequest::default(), 2)
        .await
        .unwrap();
    assert_eq!(again.error_code, 0);
    let mut late = KafkaClient::connect(&addr, Duration::from_secs(5))
        .await
        .expect("a new connection during the drain");
    assert_eq!(
        late.send(&ApiVersionsRequest::default(), 2)
            .await
            .unwrap()
            .error_code,
        0
    );
    // A second signal ends the drain.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    wait_for_line(&lines, "a second signal");
    let status = tokio::task::spawn_blocking(move || broker.0.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "{status}");
}
