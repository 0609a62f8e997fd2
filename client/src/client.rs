//! A minimal Kafka protocol client on the `kafka-protocol` codec: one
//! request at a time over one connection. The controller uses it to probe
//! brokers; tests use it for raw protocol requests.

use std::time::Duration;

use bytes::{Buf, Bytes};
use kafka_protocol::messages::ResponseHeader;
use kafka_protocol::protocol::{Decodable, HeaderVersion, Request};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::frame::{read_frame, request_frame};
use crate::tls::ClientTls;

/// What a client authenticates with over SASL.
#[derive(Clone, PartialEq, Eq)]
pub struct SaslCredentials {
    /// `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub mechanism: String,
    pub user: String,
    pub password: String,
}

/// Never print the password.
impl std::fmt::Debug for SaslCredentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SaslCredentials")
            .field("mechanism", &self.mechanism)
            .field("user", &self.user)
            .finish_non_exhaustive()
    }
}

/// How a client connects: TLS, SASL, both or neither (the listener's
/// security protocol: PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL).
#[derive(Clone, Debug, Default)]
pub struct Security {
    pub tls: Option<ClientTls>,
    pub sasl: Option<SaslCredentials>,
}

impl Security {
    /// SASL over plaintext (SASL_PLAINTEXT).
    pub fn sasl(credentials: &SaslCredentials) -> Security {
        Security {
            tls: None,
            sasl: Some(credentials.clone()),
        }
    }
}

/// A plain or a TLS connection.
trait Stream: AsyncRead + AsyncWrite + Send + Unpin {}
impl<S: AsyncRead + AsyncWrite + Send + Unpin> Stream for S {}

pub struct KafkaClient {
    stream: Box<dyn Stream>,
    correlation_id: i32,
    client_id: String,
}

impl KafkaClient {
    /// A plaintext connection.
    pub async fn connect(addr: &str, timeout: Duration) -> anyhow::Result<KafkaClient> {
        KafkaClient::connect_as(addr, timeout, &Security::default()).await
    }

    /// Connects, with TLS when `security` has it, and authenticates when
    /// it has credentials.
    pub async fn connect_as(
        addr: &str,
        timeout: Duration,
        security: &Security,
    ) -> anyhow::Result<KafkaClient> {
        tokio::time::timeout(timeout, async {
            let tcp = TcpStream::connect(addr).await?;
            tcp.set_nodelay(true)?;
            let stream: Box<dyn Stream> = match &security.tls {
                Some(tls) => {
                    let host = addr.rsplit_once(':').map_or(addr, |(h, _)| h);
                    let host = host.trim_start_matches('[').trim_end_matches(']');
                    Box::new(tls.connect(host, tcp).await?)
                }
                None => Box::new(tcp),
            };
            let mut client = KafkaClient {
                stream,
                correlation_id: 0,
                client_id: "kaas".to_string(),
            };
            if let Some(c) = &security.sasl {
                client.authenticate(c).await?;
            }
            Ok(client)
        })
        .await?
    }

    /// SaslHandshake v1, then SaslAuthenticate: PLAIN in one step, SCRAM in
    /// two with the server's signature checked. Again on an authenticated
    /// connection, a re-authentication (KIP-368). Returns the session's
    /// lifetime the broker told (`connections.max.reauth.ms`; 0: none).
    pub async fn authenticate(&mut self, c: &SaslCredentials) -> anyhow::Result<Duration> {
        use kafka_protocol::messages::SaslHandshakeRequest;
        use kafka_protocol::protocol::StrBytes;
        let handshake = self
            .send(
                &SaslHandshakeRequest::default()
                    .with_mechanism(StrBytes::from_string(c.mechanism.clone())),
                1,
            )
            .await?;
        anyhow::ensure!(
            handshake.error_code == 0,
            "SASL mechanism {} refused (error {}; the broker offers {:?})",
            c.mechanism,
            handshake.error_code,
            handshake.mechanisms
        );
        let last = if c.mechanism == "PLAIN" {
            self.sasl_step(format!("\0{}\0{}", c.user, c.password).into_bytes())
                .await?
        } else {
            let mechanism = crate::scram::Mechanism::from_name(&c.mechanism)
                .ok_or_else(|| anyhow::anyhow!("unknown SASL mechanism {}", c.mechanism))?;
            let (mut scram, first) =
                crate::scram::ScramClient::first(mechanism, &c.user, &crate::scram::nonce());
            let server_first = self.sasl_step(first.into_bytes()).await?;
            let last = scram.finish(std::str::from_utf8(&server_first.auth_bytes)?, &c.password)?;
            let server_final = self.sasl_step(last.into_bytes()).await?;
            anyhow::ensure!(
                scram.verify(std::str::from_utf8(&server_final.auth_bytes)?),
                "the broker's SCRAM signature does not match"
            );
            server_final
        };
        Ok(Duration::from_millis(last.session_lifetime_ms.max(0) as u64))
    }

    /// One SaslAuthenticate (v1): the broker's answer, or its refusal.
    async fn sasl_step(
        &mut self,
        bytes: Vec<u8>,
    ) -> anyhow::Result<kafka_protocol::messages::SaslAuthenticateResponse> {
        let req = kafka_protocol::messages::SaslAuthenticateRequest::default()
            .with_auth_bytes(bytes.into());
        let resp = self.send(&req, 1).await?;
        anyhow::ensure!(
            resp.error_code == 0,
            "SASL authentication failed (error {}): {}",
            resp.error_code,
            resp.error_message.as_deref().unwrap_or("")
        );
        Ok(resp)
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
        // A TLS stream holds what the socket did not take until flushed.
        self.stream.flush().await?;
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
        self.send_raw(&frame).await?;
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
