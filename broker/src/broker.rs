//! The state one broker serves from: its config, the shared volume, and the
//! assignment it follows.

use std::path::PathBuf;
use std::sync::Arc;

use kaas_shared::{BrokerState, Routing};
use tracing::{info, warn};

use crate::acls::Acls;
use crate::auth::scram_users::ScramUsers;
use crate::auth::standard::AuthorizerSettings;
use crate::auth::{AllowAll, Authorizer};
use crate::client_quotas::enforce::Enforcer;
use crate::client_quotas::ClientQuotas;
use crate::cluster::ClusterView;
use crate::coordinator::clock::SystemClock;
use crate::followed::Followed;
use crate::group::configs::GroupConfigs;
use crate::group::manager::{GroupManager, GroupManagerConfig};
use crate::metrics::Metrics;
use crate::net::listener::{Listener, ListenerConfig};
use crate::net::quotas::ConnectionQuotas;
use crate::settings::dynamic::{self, DynamicConfigs, Scope};
use crate::storage::cleaner::CleanerConfig;
use crate::storage::generations::Tenure;
use crate::storage::group_log::{GroupLogOptions, GroupLogStore, GroupLogSync, LogFolder, Owner};
use crate::storage::incarnation::Incarnation;
use crate::storage::producer_ids::ProducerIdAllocator;
use crate::storage::retention::BrokerRetention;
use crate::storage::topic_config::BrokerTopicDefaults;
use crate::storage::txn_log::TxnLogStore;
use crate::storage::volume_check::{self, SelfCheck};
use crate::storage::{LogConfig, Storage};
use crate::txn::manager::{TxnManager, TxnManagerConfig};
use crate::volume::{Tenancy, VolumeCheckConfig};

#[derive(Debug, Clone)]
pub struct BrokerConfig {
    pub id: i32,
    pub data_dir: PathBuf,
    /// The listeners (never empty): the first is the inter-broker one, at
    /// the address the assignment names.
    pub listeners: Vec<ListenerConfig>,
    /// Largest request frame accepted (Kafka's `socket.request.max.bytes`).
    pub max_frame_bytes: usize,
    /// Kafka's `max.connections`: beyond it the listener waits for one to close.
    pub max_connections: usize,
    /// Kafka's `max.connections.per.ip`: beyond it a new connection is closed.
    pub max_connections_per_ip: usize,
    /// Kafka's `quota.window.num` and `quota.window.size.seconds`: the
    /// windows client quotas measure rates over.
    pub quota_window: crate::client_quotas::rate::RateConfig,
    /// The transaction coordinator's settings.
    pub transactions: TxnManagerConfig,
    /// Kafka's `auto.create.topics.enable`.
    pub auto_create_topics: bool,
    /// Kafka's `num.partitions`, for auto-created topics.
    pub default_partitions: i32,
    pub log: LogConfig,
    /// The `log.retention.*` settings topics default to.
    pub log_retention: BrokerRetention,
    /// The other broker settings topic configs default to
    /// ([`crate::storage::topic_config::broker_settings`]), as given.
    pub topic_defaults: std::collections::BTreeMap<String, String>,
    /// The `log.cleaner.*` settings (compaction).
    pub log_cleaner: CleanerConfig,
    /// kaas.lag.metrics.max.partitions: per-partition lag series at most
    /// ([`crate::lag`]).
    pub lag_metrics_max_partitions: usize,
    pub groups: GroupManagerConfig,
    /// How group logs are made durable.
    pub group_log_sync: GroupLogSync,
    /// After SIGTERM, keep serving this long before closing (`serve`): on
    /// Kubernetes the operator moves the broker's groups away meanwhile,
    /// and clients follow before their connections close.
    pub shutdown_drain_ms: u64,
    /// producer.id.expiration.ms: a partition forgets a producer idle this
    /// long (no open transaction), checked every
    /// producer.id.expiration.check.interval.ms.
    pub producer_id_expiration_ms: i64,
    pub producer_id_expiration_check_interval_ms: u64,
    /// Who may do what ([`crate::auth`]); everything until one is
    /// configured.
    pub authorizer: Arc<dyn Authorizer>,
    /// Apache's StandardAuthorizer over the volume's ACLs instead of
    /// `authorizer`, with its settings (`super.users`,
    /// `allow.everyone.if.no.acl.found`). Not yet a user setting: it waits
    /// for every API to ask the authorizer (issue #15).
    pub standard_authorizer: Option<AuthorizerSettings>,
    /// How this broker connects to another (WriteTxnMarkers, transaction
    /// verification): TLS and SASL as the inter-broker listener needs.
    pub inter_broker: kaas_client::Security,
    /// The check that the data volume answers ([`crate::volume`]).
    pub volume_check: VolumeCheckConfig,
    /// The volume contract checked at start ([`volume_check`]).
    pub volume_self_check: SelfCheck,
}

impl BrokerConfig {
    /// A broker with one PLAINTEXT listener, advertised as `host:port`.
    pub fn new(id: i32, data_dir: PathBuf, host: &str, port: u16) -> Self {
        Self {
            id,
            data_dir,
            listeners: vec![ListenerConfig {
                name: "PLAINTEXT".into(),
                advertised_host: host.to_string(),
                advertised_port: port,
                sasl: None,
                tls: None,
            }],
            max_frame_bytes: 100 * 1024 * 1024,
            max_connections: usize::MAX,
            max_connections_per_ip: usize::MAX,
            quota_window: Default::default(),
            transactions: TxnManagerConfig::default(),
            auto_create_topics: true,
            default_partitions: 1,
            log: LogConfig::default(),
            log_retention: BrokerRetention::default(),
            topic_defaults: Default::default(),
            log_cleaner: CleanerConfig::default(),
            lag_metrics_max_partitions: 10_000,
            groups: GroupManagerConfig::default(),
            group_log_sync: GroupLogSync::default(),
            shutdown_drain_ms: 0,
            producer_id_expiration_ms: 86_400_000,
            producer_id_expiration_check_interval_ms: 600_000,
            authorizer: Arc::new(AllowAll),
            standard_authorizer: None,
            inter_broker: kaas_client::Security::default(),
            volume_check: VolumeCheckConfig::default(),
            volume_self_check: SelfCheck::default(),
        }
    }

    /// The inter-broker listener, the first.
    pub fn inter_broker_listener(&mut self) -> &mut ListenerConfig {
        &mut self.listeners[0]
    }
}

pub struct Broker {
    pub config: BrokerConfig,
    pub storage: Arc<Storage>,
    pub cluster: ClusterView,
    pub cluster_id: String,
    pub groups: Arc<GroupManager>,
    pub txns: Arc<TxnManager>,
    pub producer_ids: Arc<ProducerIdAllocator>,
    pub metrics: Metrics,
    /// The authorizer every request asks.
    pub authorizer: Arc<dyn Authorizer>,
    /// The ACLs, when the StandardAuthorizer is configured (else the ACL
    /// APIs answer SECURITY_DISABLED, as Apache with no authorizer).
    pub acls: Option<Arc<Acls>>,
    /// The SCRAM users (`__cluster/scram_users`).
    pub scram_users: Arc<Followed<ScramUsers>>,
    /// The settings changed at run time (`__cluster/broker_configs`).
    pub dynamic_configs: Arc<Followed<DynamicConfigs>>,
    /// The groups' own configs (`__cluster/group_configs`), installed in
    /// the group coordinator as they change.
    pub group_configs: Arc<Followed<GroupConfigs>>,
    /// The client quotas (`__cluster/client_quotas`), put in force in
    /// `quotas` as they change.
    pub client_quotas: Arc<Followed<ClientQuotas>>,
    /// Who is over its client quota, and for how long.
    pub quotas: Arc<Enforcer>,
    /// Why the stored dynamic cleaner settings were last ignored: said
    /// once per reason, not at every cleaning.
    cleaner_settings_ignored: parking_lot::Mutex<Option<String>>,
    /// The listeners, as `config.listeners`.
    pub listeners: Vec<Arc<Listener>>,
    /// `max.connections` and `max.connections.per.ip`, over all listeners.
    pub connection_quotas: Arc<ConnectionQuotas>,
    /// Connections to the other brokers, for this broker's own requests.
    pub peers: crate::net::peers::Peers,
    /// This process on the volume, and whether the volume answers.
    pub tenancy: Arc<Tenancy>,
}

impl Broker {
    /// A broker's state opened from its settings, without the tasks that
    /// run it nor its marker writer: [`crate::serve::open`].
    pub(crate) fn assemble(config: BrokerConfig) -> std::io::Result<Arc<Broker>> {
        if config.listeners.is_empty() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a broker needs a listener",
            ));
        }
        // Bad TLS files stop the start, before the volume is touched.
        let listeners = config
            .listeners
            .iter()
            .map(|l| Listener::open(l.clone()).map(Arc::new))
            .collect::<std::io::Result<Vec<_>>>()?;
        check_volume(&config.data_dir, config.volume_self_check)?;
        let storage = Arc::new(Storage::new(
            &config.data_dir,
            BrokerTopicDefaults::of(&config.log, &config.log_retention, &config.topic_defaults),
        )?);
        let cluster_id = load_or_create_cluster_id(&storage.cluster_dir())?;
        let storage_cluster_dir = storage.cluster_dir();
        let cluster = ClusterView::default();
        let tenancy = Arc::new(Tenancy::new(
            Incarnation::register(&storage.cluster_dir(), config.id)?,
            config.volume_check,
        ));
        storage.set_tenure({
            let (tenancy, followed) = (tenancy.clone(), cluster.subscribe());
            let (cluster_dir, broker) = (storage.cluster_dir(), config.id);
            Arc::new(move || {
                let routing = followed.borrow().clone();
                Tenure {
                    broker,
                    incarnation: Some(tenancy.incarnation()),
                    assignment_version: routing.as_ref().map_or(0, |r| r.version()),
                    leader_epoch: routing.as_ref().map_or(0, |r| r.leader_epoch()),
                    alive: routing
                        .as_ref()
                        .map_or_else(|| Arc::from([]), |r| Arc::from(r.table().alive_ids())),
                    cluster_dir: cluster_dir.clone(),
                }
            })
        });
        // Group and transaction logs are claimed under the assignment
        // version this broker follows, so a broker on an older one is fenced
        // (docs/design/fencing.md).
        let options = |folder| {
            let (followed, alive, owning) = (
                cluster.subscribe(),
                cluster.subscribe(),
                cluster.subscribe(),
            );
            let (tenancy, me) = (tenancy.clone(), config.id);
            GroupLogOptions {
                sync: config.group_log_sync,
                owner: Some(
                    Owner::new(config.id, move || {
                        followed.borrow().as_ref().map_or(0, |r| r.version())
                    })
                    .with_incarnation(
                        storage.cluster_dir(),
                        move || Some(tenancy.incarnation()),
                        move |broker| {
                            alive
                                .borrow()
                                .as_ref()
                                .is_some_and(|r| r.table().is_alive(broker))
                        },
                    )
                    .owning(move |key| {
                        let routing = owning.borrow();
                        let r = routing.as_ref()?;
                        let owner = match folder {
                            LogFolder::ConsumerOffsets => r.owner_of_group(key),
                            LogFolder::TransactionState => r.owner_of_transaction(key),
                        };
                        (owner == Some(me)).then(|| r.version())
                    }),
                ),
                max_open_logs: None,
                folder,
            }
        };
        let store = Arc::new(GroupLogStore::open(
            &config.data_dir,
            options(LogFolder::ConsumerOffsets),
        )?);
        let txn_store = Arc::new(TxnLogStore::open(
            &config.data_dir,
            options(LogFolder::TransactionState),
        )?);
        // Both stores replayed the journals of this broker's ended
        // processes: nothing of theirs is left to fence.
        if let Err(e) = crate::storage::incarnation::retire_ended(
            &storage.cluster_dir(),
            config.id,
            tenancy.incarnation().id(),
        ) {
            warn!(error = %e, "cannot remove the incarnation files of ended processes");
        }
        let producer_ids = Arc::new(ProducerIdAllocator::new(storage_cluster_dir, config.id));
        let txns = TxnManager::new(
            config.id,
            config.transactions.clone(),
            txn_store,
            Arc::new(SystemClock),
            cluster.subscribe(),
            producer_ids.clone(),
        );
        let groups = GroupManager::new(
            config.id,
            config.groups.clone(),
            store,
            Arc::new(SystemClock),
            cluster.subscribe(),
        );
        let acls = match &config.standard_authorizer {
            Some(settings) => Some(Arc::new(Acls::open(
                &storage.cluster_dir(),
                settings.clone(),
            )?)),
            None => None,
        };
        let scram_users = Arc::new(Followed::open(
            &storage.cluster_dir(),
            "scram_users",
            |_: &ScramUsers| {},
        )?);
        let dynamic_configs = Arc::new(Followed::open(
            &storage.cluster_dir(),
            dynamic::DOCUMENT,
            {
                let (storage, id) = (storage.clone(), config.id);
                move |d: &DynamicConfigs| {
                    info!(default = ?d.default, broker = ?d.of(Scope::Broker(id)),
                      "dynamic broker configs in force");
                    storage.set_dynamic_defaults(&d.default, &d.of(Scope::Broker(id)));
                }
            },
        )?);
        let group_configs = Arc::new(Followed::open(
            &storage.cluster_dir(),
            crate::group::configs::DOCUMENT,
            {
                let groups = groups.clone();
                move |c: &GroupConfigs| groups.set_group_configs(c)
            },
        )?);
        let quotas = Arc::new(Enforcer::new(config.quota_window));
        let client_quotas = Arc::new(Followed::open(
            &storage.cluster_dir(),
            crate::client_quotas::DOCUMENT,
            {
                let quotas = quotas.clone();
                move |q: &ClientQuotas| quotas.install(q)
            },
        )?);
        let authorizer: Arc<dyn Authorizer> = match &acls {
            Some(acls) => acls.authorizer.clone(),
            None => config.authorizer.clone(),
        };
        let broker = Arc::new(Broker {
            authorizer,
            acls,
            scram_users,
            dynamic_configs,
            group_configs,
            client_quotas,
            quotas,
            cleaner_settings_ignored: parking_lot::Mutex::new(None),
            listeners,
            connection_quotas: ConnectionQuotas::new(
                config.max_connections,
                config.max_connections_per_ip,
            ),
            peers: crate::net::peers::Peers::new(config.inter_broker.clone()),
            config,
            storage,
            cluster,
            cluster_id,
            groups,
            txns,
            producer_ids,
            metrics: Metrics::with_volume(&tenancy),
            tenancy,
        });
        Ok(broker)
    }

    pub fn id(&self) -> i32 {
        self.config.id
    }

    /// Every `producer.id.expiration.check.interval.ms`, the partitions
    /// open here forget producers idle past `producer.id.expiration.ms`
    /// (against the wall clock, as the batches' timestamps are), until
    /// `shutdown`.
    pub async fn run_producer_expiry(
        self: Arc<Self>,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        use crate::coordinator::clock::Clock;
        let every = std::time::Duration::from_millis(
            self.config.producer_id_expiration_check_interval_ms.max(1),
        );
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(every) => {}
            }
            let now = SystemClock.now_ms() as i64;
            let expired = self
                .storage
                .expire_producers(now, self.config.producer_id_expiration_ms);
            if expired > 0 {
                info!(
                    expired,
                    "forgot producers idle past producer.id.expiration.ms"
                );
            }
        }
    }

    /// Every second, the partitions led here follow their topic's configs
    /// when the topics changed on any broker; every
    /// `log.retention.check.interval.ms`, they delete the segments their
    /// topic's retention lets go (against the wall clock, as record
    /// timestamps are), until `shutdown`.
    pub async fn run_log_retention(self: Arc<Self>, shutdown: tokio_util::sync::CancellationToken) {
        use crate::coordinator::clock::Clock;
        let every =
            std::time::Duration::from_millis(self.config.log_retention.check_interval_ms.max(1));
        let mut retention = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        let mut configs = tokio::time::interval(std::time::Duration::from_secs(1));
        let mut seen = None;
        loop {
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = configs.tick() => {
                    seen = self.storage.follow_topic_configs(seen);
                    continue;
                }
                _ = retention.tick() => {}
            }
            let now = SystemClock.now_ms() as i64;
            let (segments, bytes) = self.storage.enforce_retention(now).await;
            if segments > 0 {
                self.metrics
                    .retention_deleted_segments
                    .inc_by(segments as u64);
                self.metrics.retention_deleted_bytes.inc_by(bytes);
            }
        }
    }

    /// The log cleaner (compaction): `log.cleaner.threads` cleaner threads
    /// (as many as the setting in force says, looked at every second: it
    /// changes at run time), each cleaning the dirtiest compacted log this
    /// broker leads that no other is cleaning.
    pub async fn run_log_cleaner(self: Arc<Self>, shutdown: tokio_util::sync::CancellationToken) {
        if !self.config.log_cleaner.enable {
            return;
        }
        let mut threads: Vec<Option<tokio::task::JoinHandle<()>>> = Vec::new();
        loop {
            let wanted = self.cleaner_config().threads;
            if threads.len() < wanted {
                threads.resize_with(wanted, || None);
            }
            // A thread past the count stops after its cleaning; one under
            // it that is not running is started.
            for (n, slot) in threads.iter_mut().enumerate().take(wanted) {
                if slot.as_ref().is_none_or(|t| t.is_finished()) {
                    *slot = Some(tokio::spawn(
                        self.clone().run_cleaner_thread(n, shutdown.clone()),
                    ));
                }
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(std::time::Duration::from_secs(1)) => {}
            }
        }
    }

    /// Cleaner thread `n`: cleanings one after another while some log is
    /// due, `log.cleaner.backoff.ms` between looks when none is; stops
    /// when `log.cleaner.threads` drops to `n` or below.
    async fn run_cleaner_thread(
        self: Arc<Self>,
        n: usize,
        shutdown: tokio_util::sync::CancellationToken,
    ) {
        use crate::coordinator::clock::Clock;
        loop {
            let config = self.cleaner_config();
            if n >= config.threads {
                return;
            }
            let backoff = std::time::Duration::from_millis(config.backoff_ms.max(1));
            let now = SystemClock.now_ms() as i64;
            let cleaned = tokio::select! {
                _ = shutdown.cancelled() => return,
                cleaned = self.storage.clean_filthiest(config, now) => cleaned,
            };
            match cleaned {
                Ok(Some((_, stats))) => {
                    self.metrics.cleaner_runs.inc();
                    self.metrics.cleaner_read_bytes.inc_by(stats.bytes_read);
                    self.metrics
                        .cleaner_written_bytes
                        .inc_by(stats.bytes_written);
                    continue;
                }
                Ok(None) => {}
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                    tracing::info!(reason = %e, "log cleaning stopped; it starts over later");
                }
                // Logged with its partition, now passed over.
                Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {}
                Err(e) => tracing::warn!(error = %e, "log cleaning failed; it is retried later"),
            }
            tokio::select! {
                _ = shutdown.cancelled() => return,
                _ = tokio::time::sleep(backoff) => {}
            }
        }
    }

    /// The log cleaner's settings in force: those started with under the
    /// dynamic ones.
    pub fn cleaner_config(&self) -> CleanerConfig {
        let dynamic = self.dynamic_configs.current();
        let (config, ignored) =
            dynamic::cleaner_config(self.config.log_cleaner, &dynamic, self.id());
        let mut said = self.cleaner_settings_ignored.lock();
        if let Some(why) = ignored.as_ref().filter(|why| said.as_ref() != Some(*why)) {
            tracing::warn!(reason = %why, "dynamic log cleaner settings ignored");
        }
        *said = ignored;
        config
    }

    pub fn routing(&self) -> Option<Arc<Routing>> {
        self.cluster.current()
    }

    /// Whether this broker leads `topic/partition` under the current
    /// assignment (explicit entry, else the hash).
    pub fn leads(&self, routing: &Routing, topic: &str, partition: i32) -> bool {
        routing.owner_of_partition(topic, partition) == Some(self.id())
    }

    /// Whether the assignment counts this broker as alive.
    pub fn is_alive_in(&self, routing: &Routing) -> bool {
        routing
            .broker(self.id())
            .is_some_and(|b| b.state == BrokerState::Alive)
    }

    /// Updates the gauges read at scrape time.
    pub fn refresh_gauges(&self) {
        let version = self.routing().map_or(0, |r| r.version() as i64);
        self.metrics.assignment_version.set(version);
        self.metrics
            .volume_healthy
            .set(i64::from(self.tenancy.healthy()));
        let resident = self.groups.read(|core| core.num_resident_groups());
        self.metrics.groups_resident.set(resident as i64);
        let uncleanable = self.storage.uncleanable_partitions();
        self.metrics
            .cleaner_uncleanable_partitions
            .set(uncleanable as i64);
    }

    /// Checks the data volume until `shutdown`, and serves again under a new
    /// incarnation after one was fenced ([`crate::volume`]).
    pub async fn run_volume_check(self: Arc<Self>, shutdown: tokio_util::sync::CancellationToken) {
        let following = {
            let broker = Arc::downgrade(&self);
            move || {
                broker
                    .upgrade()
                    .and_then(|b| b.routing())
                    .map_or(0, |r| r.version())
            }
        };
        let let_go = {
            let broker = Arc::downgrade(&self);
            move || {
                if let Some(b) = broker.upgrade() {
                    b.storage.retain_partitions(|_, _| false);
                    b.groups.unload_all();
                    b.txns.unload_all();
                }
            }
        };
        let (dir, id) = (self.storage.cluster_dir(), self.id());
        self.tenancy
            .clone()
            .run(dir, id, following, let_go, shutdown)
            .await
    }

    /// Applies a newer assignment: installs it and releases what this
    /// broker no longer leads.
    pub fn apply_assignment(&self, assignment: kaas_shared::Assignment) {
        let version = assignment.version;
        if let Some(previous) = self.cluster.offer(assignment) {
            let routing = self.routing().expect("just installed");
            info!(
                broker = self.id(),
                version,
                previous = previous.map(|p| p.version()),
                "following a new assignment"
            );
            self.storage
                .retain_partitions(|topic, p| self.leads(&routing, topic, p));
            self.groups.sweep(&routing);
            self.txns.sweep(&routing);
            // Groups that became ours (all of them after a restart) are
            // read for their lag in the background.
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(self.groups.clone().learn_offsets_on_disk());
            }
        }
    }
}

/// The volume contract, checked before anything is written there
/// ([`volume_check`]): refused, warned about or skipped as `mode` says.
fn check_volume(data_dir: &std::path::Path, mode: SelfCheck) -> std::io::Result<()> {
    if mode == SelfCheck::Off {
        return Ok(());
    }
    std::fs::create_dir_all(data_dir)?;
    let findings = volume_check::check(data_dir);
    for f in &findings {
        tracing::warn!(property = f.property, detail = %f.detail, fix = %f.fix,
                       "the data volume fails kaas's contract (docs/design/volume.md)");
    }
    if !findings.iter().any(|f| f.refuses) || mode == SelfCheck::Warn {
        return Ok(());
    }
    let listed: Vec<String> = findings
        .iter()
        .filter(|f| f.refuses)
        .map(|f| f.to_string())
        .collect();
    Err(std::io::Error::other(format!(
        "the data volume {} fails kaas's contract (docs/design/volume.md): {}. \
         Start with kaas.volume.self.check=warn (--volume-self-check warn) to serve anyway",
        data_dir.display(),
        listed.join("; ")
    )))
}

fn load_or_create_cluster_id(dir: &std::path::Path) -> std::io::Result<String> {
    let path = dir.join("cluster_id");
    if let Ok(id) = std::fs::read_to_string(&path) {
        return Ok(id.trim().to_string());
    }
    // Two brokers starting at once may race: the first to create it wins.
    let id = uuid::Uuid::new_v4().simple().to_string();
    if crate::storage::fs::create_atomic(&path, id.as_bytes())? {
        Ok(id)
    } else {
        Ok(std::fs::read_to_string(&path)?.trim().to_string())
    }
}
