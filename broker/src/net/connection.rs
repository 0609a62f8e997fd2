//! One client connection: read frames, start each request once the ones
//! before it allow (`net::ordering`: each sees the effects of those before
//! it), write responses strictly in request order (Kafka clients rely on
//! both).

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::{FuturesOrdered, StreamExt};
use futures::{Future, FutureExt};
use kafka_protocol::messages::{ApiKey, ResponseKind};
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;
use tracing::{debug, debug_span, error, info, warn, Instrument};

use crate::api::throttle::{self, Usage};
use crate::api::{self, Incoming, RequestContext};
use crate::auth::Principal;
use crate::broker::Broker;
use crate::client_quotas::enforce::Client as QuotaClient;
use crate::net::listener::Listener;
use crate::net::ordering::{self, AppliedSignal, InFlight, Overlap};
use crate::net::sasl::{Authenticator, Session, Step};
use kaas_client::frame::FrameReader;

/// Decrements the connection gauge when the connection ends, however it ends.
struct OpenConnection<'a>(&'a Broker);
impl Drop for OpenConnection<'_> {
    fn drop(&mut self) {
        self.0.metrics.connections.dec();
    }
}
fn scopeguard(broker: &Broker) -> OpenConnection<'_> {
    OpenConnection(broker)
}

/// Requests one connection may have in flight before we stop reading.
const MAX_IN_FLIGHT: usize = 128;

type Pending = Pin<Box<dyn Future<Output = Answer> + Send>>;

/// A request's answer: the response frame (none for acks=0), and how long
/// the connection stays muted after it for a client over its quota.
struct Answer {
    frame: Option<Bytes>,
    throttle: Duration,
}

impl From<Option<Bytes>> for Answer {
    fn from(frame: Option<Bytes>) -> Answer {
        Answer {
            frame,
            throttle: Duration::ZERO,
        }
    }
}

/// A request read and decoded, its answer not started: a future does
/// nothing until it is polled.
struct Ready {
    overlap: Overlap,
    answer: Pending,
    /// A Produce's signal that its batches are in the log.
    applied: Option<oneshot::Receiver<()>>,
    /// A Produce over its client's byte rate: once it starts, the
    /// connection starts nothing more until then (its bytes are counted,
    /// and its throttle runs, from when it is read, so Produces in flight
    /// together cannot pass the quota).
    mute_until: Option<tokio::time::Instant>,
}

impl Ready {
    /// An answer that changes nothing (ApiVersions, a SASL step): it runs
    /// alone all the same, as everything did in Apache.
    fn alone(answer: Pending) -> Ready {
        Ready {
            overlap: Overlap::Alone,
            answer,
            applied: None,
            mute_until: None,
        }
    }
}

/// A connection's requests: started in order, each once the ones before
/// it allow ([`InFlight`]), answered in order.
#[derive(Default)]
struct Requests {
    pending: FuturesOrdered<Pending>,
    in_flight: InFlight,
    /// The next request, read, waiting for the ones before it.
    next: Option<Ready>,
    /// The newest Produce's signal that it appended its batches.
    produce_applied: Option<oneshot::Receiver<()>>,
    /// Until when a client over its quota is not served (KIP-219: Apache
    /// mutes the channel for the throttle time).
    muted_until: Option<tokio::time::Instant>,
}

impl Requests {
    /// Starts the next request if it may start now.
    fn start_next(&mut self) -> bool {
        if let Some(until) = self.muted_until {
            if tokio::time::Instant::now() < until {
                return false;
            }
            self.muted_until = None;
        }
        if let Some(rx) = self.produce_applied.as_mut() {
            if !matches!(rx.try_recv(), Err(oneshot::error::TryRecvError::Empty)) {
                self.produce_applied();
            }
        }
        match &self.next {
            Some(ready) if self.in_flight.may_start(ready.overlap) => {}
            _ => return false,
        }
        let Some(ready) = self.next.take() else {
            return false;
        };
        self.in_flight.started(ready.overlap);
        if ready.applied.is_some() {
            self.produce_applied = ready.applied;
        }
        if let Some(until) = ready.mute_until {
            self.mute_until(until);
        }
        self.pending.push_back(ready.answer);
        true
    }

    /// Takes a request's answer: its frame to `out`, its throttle into the
    /// mute.
    fn answered(&mut self, answer: Answer, out: &mut Vec<Bytes>) {
        self.in_flight.answered();
        out.extend(answer.frame);
        if !answer.throttle.is_zero() {
            self.mute_until(tokio::time::Instant::now() + answer.throttle);
        }
    }

    /// Starts nothing more until `until` (or later if muted so).
    fn mute_until(&mut self, until: tokio::time::Instant) {
        self.muted_until = Some(self.muted_until.map_or(until, |m| m.max(until)));
    }

    fn produce_applied(&mut self) {
        self.in_flight.produce_applied();
        self.produce_applied = None;
    }

    /// Whether another request may be read now.
    fn room(&self) -> bool {
        self.next.is_none() && self.pending.len() < MAX_IN_FLIGHT
    }

    fn idle(&self) -> bool {
        self.next.is_none() && self.pending.is_empty()
    }
}

/// Who is at the other end of a connection, and where its SASL exchange
/// stands: what a request read from it is prepared with.
struct Client {
    broker: Arc<Broker>,
    listener: Arc<Listener>,
    peer: SocketAddr,
    principal: Principal,
    /// Until the exchange names a user (a SASL listener), or again while a
    /// client re-authenticates.
    authenticating: Option<Authenticator>,
    /// The SASL session, and when it expires (KIP-368).
    session: Option<(Session, Option<Instant>)>,
}

/// What a frame leads to.
enum Then {
    /// Serve it (if it has an answer) and read on; `authenticated`: the
    /// exchange just named a user, so frames up to the broker's limit may
    /// come.
    Read {
        ready: Option<Ready>,
        authenticated: bool,
    },
    /// Serve it (if it has an answer), then close; `linger`: wait for the
    /// client to read that answer first.
    Close { ready: Option<Ready>, linger: bool },
}

impl Client {
    /// Prepares the request `frame` holds, as the SASL state allows.
    fn take(&mut self, frame: Bytes) -> Then {
        let (broker, listener, peer) = (&self.broker, &self.listener, self.peer);
        if let (None, Some((s, expires))) = (&self.authenticating, &self.session) {
            // As Apache's SocketServer: a SaslHandshake re-authenticates,
            // even after the session's end (clients re-authenticate before
            // their next request, however long they were idle); any other
            // request after the end closes.
            if s.supports_reauthentication && api_key_of(&frame) == Some(ApiKey::SaslHandshake) {
                let settings = listener.sasl().expect("a SASL session");
                self.authenticating = Some(Authenticator::reauthenticate(settings, s));
            } else if expires.is_some_and(|at| Instant::now() >= at) {
                info!(%peer, user = %s.user,
                      "SASL session expired (connections.max.reauth.ms); closing the connection");
                broker.metrics.expired_sessions.inc();
                return Then::Close {
                    ready: None,
                    linger: false,
                };
            }
        }
        let prepared = match self.authenticating.as_mut() {
            Some(authenticator) => authenticate(frame, authenticator, broker, peer, listener),
            None => {
                prepare(frame, broker, peer, listener, &self.principal).map(|f| Gate::Pass(f, None))
            }
        };
        match prepared {
            Ok(Gate::Pass(ready, None)) => Then::Read {
                ready,
                authenticated: false,
            },
            Ok(Gate::Pass(ready, Some(user))) => {
                let done = self.authenticating.take().and_then(|a| a.session(user));
                if let Some(s) = done {
                    if self.session.is_some() {
                        self.broker.metrics.reauthentications.inc();
                    }
                    self.principal = Principal::user(&s.user);
                    let lifetime = Duration::from_millis(s.lifetime_ms);
                    let expires = (s.lifetime_ms > 0).then(|| Instant::now() + lifetime);
                    self.session = Some((s, expires));
                }
                Then::Read {
                    ready,
                    authenticated: true,
                }
            }
            // Answer what came before (and this, when there is an answer),
            // then close.
            Ok(Gate::Close(ready)) => Then::Close {
                linger: ready.is_some(),
                ready,
            },
            Err(e) => {
                warn!(%peer, error = %e, "closing the connection after a bad request");
                Then::Close {
                    ready: None,
                    linger: false,
                }
            }
        }
    }
}

/// Serves one connection given its two halves (plain TCP's own split
/// halves, or a TLS stream's). `principal` is who the transport says the
/// client is (anonymous, or a client certificate's subject); a SASL
/// listener replaces it with the authenticated user.
pub async fn serve_connection<R, W>(
    (reader, mut writer): (R, W),
    peer: SocketAddr,
    listener: Arc<Listener>,
    principal: Principal,
    broker: Arc<Broker>,
    shutdown: CancellationToken,
) where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin,
{
    broker.metrics.connections.inc();
    let _open = scopeguard(&broker);
    let mut requests = Requests::default();
    let max_before_authentication = listener.sasl().map_or(usize::MAX, |s| s.max_receive_bytes);
    let max_frame_bytes = broker.config.max_frame_bytes;
    let mut client = Client {
        // On a SASL listener nobody until the exchange names a user.
        authenticating: listener.sasl().map(Authenticator::new),
        session: None,
        principal,
        peer,
        listener,
        broker: broker.clone(),
    };
    let mut reader = FrameReader::new(reader, max_frame_bytes.min(max_before_authentication));
    let mut reading = true;
    // A refused login's answer must be read before the connection closes.
    let mut linger = false;
    // A frame read, not looked at yet.
    let mut arrived = None;
    // Answers ready, to go out in one write.
    let mut answers: Vec<Bytes> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    loop {
        // Without waiting: take the requests already read (pipelined behind
        // one another), start each that may start, gather the answers that
        // are ready; so answers of requests that finish at once share a
        // write.
        loop {
            let mut progress = false;
            if reading && requests.room() {
                if arrived.is_none() && reader.has_buffered_frame() {
                    // Cancellation safe: a frame read halfway stays in the reader.
                    arrived = reader.next().now_or_never();
                }
                if let Some(frame) = arrived.take() {
                    progress = true;
                    match frame {
                        Ok(Some(frame)) => match client.take(frame.freeze()) {
                            Then::Read {
                                ready,
                                authenticated,
                            } => {
                                requests.next = ready;
                                if authenticated {
                                    reader.set_max(max_frame_bytes);
                                }
                            }
                            Then::Close {
                                ready,
                                linger: answer_first,
                            } => {
                                requests.next = ready;
                                linger |= answer_first;
                                reading = false;
                            }
                        },
                        Ok(None) => reading = false,
                        Err(e) => {
                            warn!(%peer, error = %e, "closing the connection after a bad frame");
                            reading = false;
                        }
                    }
                }
            }
            progress |= requests.start_next();
            while let Some(Some(answer)) = requests.pending.next().now_or_never() {
                requests.answered(answer, &mut answers);
                progress = true;
            }
            if !progress {
                break;
            }
        }
        if !answers.is_empty() {
            if let Err(e) = write_batch(&mut writer, &answers, &mut out).await {
                debug!(%peer, error = %e, "client went away while we wrote");
                return;
            }
            answers.clear();
        }
        if !reading && requests.idle() {
            break;
        }
        tokio::select! {
            biased;
            // The newest Produce appended: the next one may start.
            _ = async {
                match requests.produce_applied.as_mut() {
                    Some(rx) => { let _ = rx.await; }
                    None => std::future::pending().await,
                }
            }, if requests.produce_applied.is_some() && requests.next.is_some() => {
                requests.produce_applied();
            }
            Some(answer) = requests.pending.next(), if !requests.pending.is_empty() => {
                requests.answered(answer, &mut answers);
            }
            // A throttled client's mute ends: its next request may start.
            _ = async {
                match requests.muted_until {
                    Some(until) => tokio::time::sleep_until(until).await,
                    None => std::future::pending().await,
                }
            }, if requests.muted_until.is_some() && requests.next.is_some() => {}
            frame = reader.next(), if reading && requests.room() => arrived = Some(frame),
            _ = shutdown.cancelled(), if reading => {
                // Stop taking requests; answer the ones already read.
                reading = false;
            }
            else => break,
        }
    }
    if linger {
        linger_for_close(&mut reader, &mut writer).await;
    }
    let _ = writer.shutdown().await;
}

/// Waits (a second at most) for the client to close after it was sent a
/// final answer. A close right behind the answer can reach the client in
/// the same read, and some clients (kafka-python) then drop the answer and
/// report a lost connection instead of the refusal; Apache's broker closes
/// a moment later than its answer too.
async fn linger_for_close<R, W>(reader: &mut FrameReader<R>, writer: &mut W)
where
    R: AsyncRead + Send + Unpin,
    W: AsyncWrite + Send + Unpin,
{
    const LINGER: Duration = Duration::from_secs(1);
    if writer.flush().await.is_err() {
        return;
    }
    let _ = tokio::time::timeout(LINGER, async {
        // Whatever else the client sends is not served.
        while let Ok(Some(_)) = reader.next().await {}
    })
    .await;
}

/// Writes response frames in order: small ones gathered into one write.
/// Flushed: a TLS stream keeps what the socket did not take at once in its
/// own buffer until it is flushed.
async fn write_batch(
    writer: &mut (impl tokio::io::AsyncWrite + Unpin),
    batch: &[Bytes],
    out: &mut Vec<u8>,
) -> std::io::Result<()> {
    const GATHER_BYTES: usize = 256 * 1024;
    let total: usize = batch.iter().map(Bytes::len).sum();
    if batch.len() > 1 && total <= GATHER_BYTES {
        out.clear();
        for frame in batch {
            out.extend_from_slice(frame);
        }
        writer.write_all(out).await?;
    } else {
        for frame in batch {
            writer.write_all(frame).await?;
        }
    }
    writer.flush().await
}

/// What a frame of a connection that is still authenticating leads to.
enum Gate {
    /// Answer (if any) and go on; `Some(user)` once authenticated.
    Pass(Option<Ready>, Option<String>),
    /// Answer (if any), then close the connection.
    Close(Option<Ready>),
}

/// A request before authentication: ApiVersions is served, the SASL
/// exchange goes through `authenticator`, anything else closes.
fn authenticate(
    frame: Bytes,
    authenticator: &mut Authenticator,
    broker: &Arc<Broker>,
    peer: SocketAddr,
    listener: &Arc<Listener>,
) -> Result<Gate, api::RequestError> {
    let incoming = api::decode(frame.clone())?;
    let Incoming::Request {
        header,
        api_key,
        request,
    } = &incoming
    else {
        return prepare(frame, broker, peer, listener, &Principal::anonymous())
            .map(|f| Gate::Pass(f, None));
    };
    let (version, correlation_id) = (header.request_api_version, header.correlation_id);
    let users = broker.scram_users.current();
    let answer = |response: &ResponseKind| -> Option<Ready> {
        let frame = api::encode_response(*api_key, version, correlation_id, response).ok();
        Some(Ready::alone(Box::pin(async move { frame.into() })))
    };
    Ok(
        match authenticator.step(
            *api_key,
            version,
            request,
            &users,
            kaas_client::scram::nonce,
        ) {
            Step::Serve => Gate::Pass(
                prepare(frame, broker, peer, listener, &Principal::anonymous())?,
                None,
            ),
            Step::Answer(response) => Gate::Pass(answer(&response), None),
            Step::Authenticated(response, user) => {
                debug!(%peer, user = %user, "authenticated");
                Gate::Pass(answer(&response), Some(user))
            }
            Step::Refused(response, why) => {
                warn!(%peer, reason = %why, "SASL authentication failed");
                broker.metrics.failed_authentications.inc();
                let delay = listener
                    .sasl()
                    .map_or(0, |s| s.failed_authentication_delay_ms);
                let frame = api::encode_response(*api_key, version, correlation_id, &response).ok();
                // Slow a guesser down; the connection serves nothing meanwhile.
                Gate::Close(Some(Ready::alone(Box::pin(async move {
                    tokio::time::sleep(std::time::Duration::from_millis(delay)).await;
                    frame.into()
                }))))
            }
            Step::Close(why) => {
                warn!(%peer, reason = %why, "closing the connection");
                Gate::Close(None)
            }
        },
    )
}

/// The API key a request frame starts with.
fn api_key_of(frame: &[u8]) -> Option<ApiKey> {
    let key = i16::from_be_bytes([*frame.first()?, *frame.get(1)?]);
    ApiKey::try_from(key).ok()
}

/// Decodes a request and returns the future that answers it.
fn prepare(
    frame: Bytes,
    broker: &Arc<Broker>,
    peer: SocketAddr,
    listener: &Arc<Listener>,
    principal: &Principal,
) -> Result<Option<Ready>, api::RequestError> {
    let request_bytes = frame.len();
    match api::decode(frame)? {
        Incoming::UnsupportedApiVersions { correlation_id } => {
            let resp = ResponseKind::ApiVersions(api::api_versions::unsupported_version());
            let frame = api::encode_response(ApiKey::ApiVersions, 0, correlation_id, &resp);
            Ok(Some(Ready::alone(Box::pin(
                async move { frame.ok().into() },
            ))))
        }
        Incoming::Request {
            header,
            api_key,
            request,
        } => {
            let version = header.request_api_version;
            broker.metrics.count_request(api_key);
            let overlap = ordering::overlap_of(&request, broker.config.auto_create_topics);
            let (applied, applied_rx) = match overlap {
                Overlap::Produce => {
                    let (signal, rx) = AppliedSignal::new();
                    (signal, Some(rx))
                }
                _ => (AppliedSignal::default(), None),
            };
            let ctx = RequestContext {
                broker: broker.clone(),
                api_version: version,
                client_id: header
                    .client_id
                    .as_ref()
                    .map(|c| c.to_string())
                    .unwrap_or_default(),
                client_addr: peer,
                listener: listener.clone(),
                principal: principal.clone(),
                applied,
            };
            let correlation_id = header.correlation_id;
            // At debug level (a span per request costs at the default one).
            let span = debug_span!("request", api = ?api_key, version, correlation_id,
                                   client_id = %ctx.client_id);
            // Client quotas, when any is in force: who the client is, and a
            // Produce's bytes counted now (see `Ready::mute`).
            let quotas = broker.quotas.any().then(|| {
                (
                    broker.clone(),
                    principal.name.clone(),
                    ctx.client_id.clone(),
                )
            });
            let produce_throttle = match (&quotas, api_key) {
                (Some((broker, user, client_id)), ApiKey::Produce) => {
                    let client = QuotaClient { user, client_id };
                    throttle::record_produce(broker, &client, request_bytes)
                }
                _ => Duration::ZERO,
            };
            let answer = async move {
                let handled = api::handle(ctx, *request);
                let (mut response, spent) = throttle::polled(handled, quotas.is_some()).await;
                let throttle = match &quotas {
                    Some((broker, user, client_id)) => {
                        let client = QuotaClient { user, client_id };
                        let usage = Usage {
                            api_key,
                            api_version: version,
                            request_bytes,
                            spent,
                            produce_throttle,
                        };
                        throttle::apply(broker, &client, &usage, response.as_mut())
                    }
                    None => Duration::ZERO,
                };
                let frame = response.and_then(|response| {
                    match api::encode_response(api_key, version, correlation_id, &response) {
                        Ok(frame) => Some(frame),
                        Err(e) => {
                            error!(?api_key, version, error = %e, "cannot encode a response");
                            None
                        }
                    }
                });
                Answer { frame, throttle }
            }
            .instrument(span);
            Ok(Some(Ready {
                overlap,
                answer: Box::pin(answer),
                applied: applied_rx,
                mute_until: (!produce_throttle.is_zero())
                    .then(|| tokio::time::Instant::now() + produce_throttle),
            }))
        }
    }
}
