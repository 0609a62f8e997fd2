//! A minimal Kafka protocol client on the `kafka-protocol` codec: one
//! request at a time over one connection. The controller uses it to probe
//! brokers; tests use it for raw protocol requests.

use std::time::Duration;

use bytes::{Buf, Bytes};
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::{Decodable, HeaderVersion, Request};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::frame::{read_frame, request_frame};

pub struct KafkaClient {
    stream: TcpStream,
    correlation_id: i32,
    client_id: String,
}

impl KafkaClient {
    pub async fn connect(addr: &str, timeout: Duration) -> anyhow::Result<KafkaClient> {
        let stream = tokio::time::timeout(timeout, TcpStream::connect(addr)).await??;
        stream.set_nodelay(true)?;
        Ok(KafkaClient {
            stream,
            correlation_id: 0,
            client_id: "kaas".to_string(),
        })
    }

    pub fn with_client_id(mut self, id: &str) -> Self {
        self.client_id = id.to_string();
        self
    }

    /// Encodes a request frame the way a client would.
    pub fn encode<R: Request>(&mut self, req: &R, version: i16) -> anyhow::Result<Bytes> {
        self.correlation_id += 1;
        request_frame(req, version, self.correlation_id, &self.client_id)
    }

    /// Sends raw bytes (for malformed-input tests).
    pub async fn send_raw(&mut self, bytes: &[u8]) -> anyhow::Result<()> {
        self.stream.write_all(bytes).await?;
        Ok(())
    }

    /// Reads one response frame and returns its body after the header.
    pub async fn read_response_body(
        &mut self,
        header_version: i16,
    ) -> anyhow::Result<(i32, Bytes)> {
        let frame = read_frame(&mut self.stream, 1 << 30)
            .await?
            .ok_or_else(|| anyhow::anyhow!("connection closed by the broker"))?;
        let mut buf = frame.freeze();
        let header = ResponseHeader::decode(&mut buf, header_version)?;
        Ok((header.correlation_id, buf))
    }

    pub async fn send<R: Request>(&mut self, req: &R, version: i16) -> anyhow::Result<R::Response>
    where
        R::Response: Decodable + HeaderVersion,
    {
        let frame = self.encode(req, version)?;
        self.stream.write_all(&frame).await?;
        let expected = self.correlation_id;
        let (correlation_id, mut body) = self
            .read_response_body(<R::Response as HeaderVersion>::header_version(version))
            .await?;
        anyhow::ensure!(
            correlation_id == expected,
            "correlation id {correlation_id}, expected {expected}"
        );
        let resp = R::Response::decode(&mut body, version)?;
        anyhow::ensure!(
            !body.has_remaining(),
            "{} trailing bytes in response",
            body.remaining()
        );
        Ok(resp)
    }

    /// Creates `name` with `partitions` partitions (CreateTopics v5); a
    /// topic that already exists is fine.
    pub async fn create_topic(&mut self, name: &str, partitions: i32) -> anyhow::Result<()> {
        use kafka_protocol::messages::create_topics_request::CreatableTopic;
        use kafka_protocol::messages::{CreateTopicsRequest, TopicName};
        use kafka_protocol::protocol::StrBytes;
        use kafka_protocol::ResponseError;
        let req = CreateTopicsRequest::default()
            .with_topics(vec![CreatableTopic::default()
                .with_name(TopicName(StrBytes::from_string(name.to_string())))
                .with_num_partitions(partitions)
                .with_replication_factor(-1)])
            .with_timeout_ms(30_000);
        let resp = self.send(&req, 5).await?;
        for t in &resp.topics {
            let code = t.error_code;
            anyhow::ensure!(
                code == 0 || code == ResponseError::TopicAlreadyExists.code(),
                "CreateTopics {name}: error {code} ({:?})",
                t.error_message.as_ref().map(|m| m.to_string())
            );
        }
        Ok(())
    }

    /// True once the broker has closed the connection.
    pub async fn is_closed(&mut self, wait: Duration) -> bool {
        let mut b = [0u8; 1];
        matches!(
            tokio::time::timeout(wait, self.stream.read(&mut b)).await,
            Ok(Ok(0)) | Ok(Err(_))
        )
    }
}
