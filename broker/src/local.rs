//! Running brokers and the controller in one process: the embedded
//! default (`kaas-broker local`) and the harness tests use.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::auth::standard::AuthorizerSettings;
use crate::broker::{Broker, BrokerConfig};
use crate::cluster::assignment_file;
use crate::cluster::controller::{self, BrokerAddress, ControllerConfig};
use crate::net::sasl::SaslSettings;
use crate::net::tls::TlsSettings;
use crate::serve::{self, AssignmentSource};
pub use crate::settings::security::ADMIN;
use crate::settings::security::{inter_broker_tls, seed_admin};

#[derive(Debug, Clone)]
pub struct LocalClusterConfig {
    pub brokers: usize,
    pub data_dir: PathBuf,
    pub host: String,
    /// The host clients (and the controller's probes) reach the brokers
    /// at, when not `host` (listening on 0.0.0.0 in a container whose
    /// ports are published, say).
    pub advertised_host: Option<String>,
    /// First port; broker N listens on `base_port + N`. 0 = any free port.
    pub base_port: u16,
    pub probe_interval: Duration,
    pub failures_before_dead: u32,
    /// Applied to every broker's config before it opens.
    pub tune: fn(&mut BrokerConfig),
    /// HTTP endpoints: broker N serves them on this address's port + N.
    pub http: Option<SocketAddr>,
    /// SASL (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512) on every broker, with the
    /// StandardAuthorizer and `User:admin`, this password, as super user
    /// (also what brokers and the controller authenticate with).
    pub sasl_admin_password: Option<String>,
    /// TLS on every broker (SSL, or SASL_SSL with SASL). Brokers and the
    /// controller trust `client_ca`, else the certificate file itself, and
    /// present the brokers' certificate when client certificates are asked.
    pub tls: Option<TlsSettings>,
}

impl LocalClusterConfig {
    pub fn new(brokers: usize, data_dir: PathBuf) -> Self {
        Self {
            brokers,
            data_dir,
            host: "127.0.0.1".into(),
            advertised_host: None,
            base_port: 9092,
            probe_interval: Duration::from_millis(500),
            failures_before_dead: 3,
            tune: |_| {},
            http: None,
            sasl_admin_password: None,
            tls: None,
        }
    }
}

pub struct LocalCluster {
    pub addrs: Vec<SocketAddr>,
    /// Where each broker serves /healthz, /readyz and /metrics, if asked.
    pub http_addrs: Vec<SocketAddr>,
    pub brokers: Vec<Arc<Broker>>,
    shutdown: CancellationToken,
    tasks: JoinSet<()>,
}

impl LocalCluster {
    /// Binds every listener, starts brokers and the controller, and returns
    /// once every broker follows an assignment that has them all alive.
    pub async fn start(config: LocalClusterConfig) -> anyhow::Result<LocalCluster> {
        std::fs::create_dir_all(&config.data_dir)
            .with_context(|| format!("cannot create {}", config.data_dir.display()))?;
        let admin = match &config.sasl_admin_password {
            Some(password) => Some(seed_admin(&config.data_dir, password)?),
            None => None,
        };
        let client_tls = config.tls.as_ref().map(inter_broker_tls).transpose()?;
        let shutdown = CancellationToken::new();
        let mut tasks = JoinSet::new();
        let mut addrs = Vec::new();
        let mut http_addrs = Vec::new();
        let mut brokers = Vec::new();
        let advertised = config.advertised_host.as_ref().unwrap_or(&config.host);
        for id in 0..config.brokers {
            let port = if config.base_port == 0 {
                0
            } else {
                config.base_port + id as u16
            };
            let listener = TcpListener::bind((config.host.as_str(), port))
                .await
                .with_context(|| format!("cannot listen on {}:{port}", config.host))?;
            let addr = listener.local_addr()?;
            let mut broker_config =
                BrokerConfig::new(id as i32, config.data_dir.clone(), advertised, addr.port());
            let own = broker_config.inter_broker_listener();
            own.tls = config.tls.clone();
            own.sasl = admin.is_some().then(SaslSettings::default);
            own.name = own.protocol().into();
            broker_config.inter_broker.tls = client_tls.clone();
            if admin.is_some() {
                broker_config.standard_authorizer = Some(AuthorizerSettings {
                    super_users: [format!("User:{ADMIN}")].into(),
                    allow_if_no_acl: false,
                });
                broker_config.inter_broker.sasl = admin.clone();
            }
            // Last: it may change the security settings too.
            (config.tune)(&mut broker_config);
            let broker = serve::open(broker_config)?;
            let mut http_listener = None;
            if let Some(http) = config.http {
                let port = if http.port() == 0 {
                    0
                } else {
                    http.port() + id as u16
                };
                let l = TcpListener::bind((http.ip(), port))
                    .await
                    .with_context(|| format!("cannot listen on {}:{port} for http", http.ip()))?;
                http_addrs.push(l.local_addr()?);
                http_listener = Some(l);
            }
            let sockets = serve::Sockets {
                kafka: listener,
                more_kafka: Vec::new(),
                http: http_listener,
            };
            serve::spawn(
                &mut tasks,
                broker.clone(),
                sockets,
                AssignmentSource::File,
                shutdown.clone(),
            );
            addrs.push(addr);
            brokers.push(broker);
        }
        let controller_config = ControllerConfig {
            security: kaas_client::Security {
                tls: client_tls,
                sasl: admin,
            },
            assignment_path: assignment_file::assignment_path(&config.data_dir),
            brokers: addrs
                .iter()
                .enumerate()
                .map(|(id, a)| BrokerAddress {
                    id: id as i32,
                    host: advertised.clone(),
                    port: a.port(),
                    listeners: Vec::new(),
                })
                .collect(),
            probe_interval: config.probe_interval,
            failures_before_dead: config.failures_before_dead,
        };
        tasks.spawn(controller::run(controller_config, shutdown.clone()));
        let cluster = LocalCluster {
            addrs,
            http_addrs,
            brokers,
            shutdown,
            tasks,
        };
        cluster
            .wait_until_all_alive(Duration::from_secs(30))
            .await?;
        Ok(cluster)
    }

    async fn wait_until_all_alive(&self, within: Duration) -> anyhow::Result<()> {
        // Alive at the addresses bound now: a document left by an earlier
        // run may name other ports.
        let all_alive = || {
            self.brokers.iter().all(|b| {
                b.routing().is_some_and(|r| {
                    self.addrs.iter().enumerate().all(|(id, addr)| {
                        r.broker(id as i32).is_some_and(|x| {
                            x.state == kaas_shared::BrokerState::Alive && x.port == addr.port()
                        })
                    })
                })
            })
        };
        tokio::time::timeout(within, async {
            while !all_alive() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .context("brokers did not all come up in time")
    }

    /// `host:port,host:port,...` for client bootstrap.
    pub fn bootstrap(&self) -> String {
        self.addrs
            .iter()
            .map(|a| a.to_string())
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Stops everything and waits for in-flight requests to finish.
    pub async fn shutdown(mut self) {
        self.shutdown.cancel();
        while self.tasks.join_next().await.is_some() {}
    }

    /// Runs until `stop` fires, then shuts down.
    pub async fn run_until(self, stop: impl std::future::Future<Output = ()>) {
        stop.await;
        self.shutdown().await;
    }
}
