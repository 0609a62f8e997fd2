//! The composition root: the one place that builds a broker from its
//! settings and starts the tasks it runs, for `kaas-broker serve`
//! (`main.rs`) and the embedded cluster (`local.rs`) alike.
//!
//! A broker runs these tasks, each ending when `shutdown` fires:
//! - the assignment follower: the file under the data folder, read every
//!   [`FOLLOW_INTERVAL`], or the operator's ConfigMap, watched;
//! - the group coordinator's timers, and the expiry of groups on disk;
//! - the transaction coordinator's timers;
//! - producer-id expiry, log retention and the log cleaner;
//! - the volume check (the broker's tenancy of the volume);
//! - one follower of the documents on the volume: ACLs (with the standard
//!   authorizer), SCRAM users, dynamic configs, group configs and client
//!   quotas;
//! - a server per Kafka listener, and the HTTP endpoints when asked.

use std::sync::Arc;
use std::time::Duration;

use kube::Client;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::api::txn_markers::BrokerMarkers;
use crate::broker::{Broker, BrokerConfig};
use crate::cluster::configmap_source::{self, ConfigMapSource};
use crate::cluster::{assignment_file, file_source};
use crate::followed::{follow_all, Refresh};
use crate::net::server;

/// How often brokers re-read the assignment file.
pub const FOLLOW_INTERVAL: Duration = Duration::from_millis(100);

/// Opens a broker's state on the volume, with the transaction coordinator
/// writing its markers through the broker's own partitions and peers.
pub fn open(config: BrokerConfig) -> std::io::Result<Arc<Broker>> {
    let broker = Broker::assemble(config)?;
    broker.txns.set_marker_writer(Arc::new(BrokerMarkers {
        broker: Arc::downgrade(&broker),
    }));
    Ok(broker)
}

/// Where a broker reads the controller's assignment.
pub enum AssignmentSource {
    /// `<data>/__cluster/assignment.json`, the controller's file.
    File,
    /// The ConfigMap the operator publishes.
    ConfigMap {
        client: Client,
        source: ConfigMapSource,
    },
}

/// A broker's sockets, bound by the caller (so that it can report the
/// ports): the inter-broker listener first, as `broker.listeners` orders
/// them.
pub struct Sockets {
    pub kafka: TcpListener,
    /// The other Kafka listeners, in the order of `broker.listeners[1..]`.
    pub more_kafka: Vec<TcpListener>,
    pub http: Option<TcpListener>,
}

/// Starts every task of `broker` (the list above) on `tasks`.
pub fn spawn(
    tasks: &mut JoinSet<()>,
    broker: Arc<Broker>,
    sockets: Sockets,
    assignment: AssignmentSource,
    shutdown: CancellationToken,
) {
    let follower = broker.clone();
    let stop = shutdown.clone();
    let apply = move |a| {
        follower.tenancy.assignment_confirmed();
        follower.apply_assignment(a)
    };
    match assignment {
        AssignmentSource::File => {
            let path = assignment_file::assignment_path(&broker.config.data_dir);
            tasks.spawn(
                async move { file_source::follow(path, FOLLOW_INTERVAL, stop, apply).await },
            );
        }
        AssignmentSource::ConfigMap { client, source } => {
            tasks.spawn(async move { configmap_source::follow(client, source, stop, apply).await });
        }
    }
    tasks.spawn(broker.groups.clone().run_timers(shutdown.clone()));
    tasks.spawn(broker.groups.clone().run_disk_expiry(shutdown.clone()));
    tasks.spawn(broker.txns.clone().run_timers(shutdown.clone()));
    tasks.spawn(broker.clone().run_producer_expiry(shutdown.clone()));
    tasks.spawn(broker.clone().run_log_retention(shutdown.clone()));
    tasks.spawn(broker.clone().run_log_cleaner(shutdown.clone()));
    tasks.spawn(broker.clone().run_volume_check(shutdown.clone()));
    let mut followed: Vec<Arc<dyn Refresh>> = vec![
        broker.scram_users.clone(),
        broker.dynamic_configs.clone(),
        broker.group_configs.clone(),
        broker.client_quotas.clone(),
    ];
    if let Some(acls) = &broker.acls {
        followed.push(acls.doc.clone());
    }
    tasks.spawn(follow_all(followed, shutdown.clone()));
    for (tcp, listener) in sockets
        .more_kafka
        .into_iter()
        .zip(broker.listeners.iter().skip(1))
    {
        tasks.spawn(server::run_listener(
            tcp,
            listener.clone(),
            broker.clone(),
            shutdown.clone(),
        ));
    }
    if let Some(http) = sockets.http {
        tasks.spawn(crate::http::run(http, broker.clone(), shutdown.clone()));
    }
    tasks.spawn(server::run(sockets.kafka, broker, shutdown));
}
