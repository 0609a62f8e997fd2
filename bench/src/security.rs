//! Security's costs, each beside its baseline in the same run:
//! - produce and fetch MB/s with librdkafka over TLS (SSL) against the same
//!   over PLAINTEXT, 3 brokers each, rounds interleaved (target ≥ 0.7×);
//! - SCRAM-SHA-256 and SCRAM-SHA-512 logins per CPU-second of the broker,
//!   beside PLAIN's (kaas checks PLAIN against the SCRAM credentials, so a
//!   PLAIN login costs the broker a PBKDF2 of 4096 rounds; SCRAM costs it
//!   a few HMACs);
//! - the StandardAuthorizer's check with Apache's AuthorizerBenchmark's
//!   ACLs at 10,000 resource ACLs (target ≤ 1 µs median), beside the same
//!   check with no ACL (the fixed cost), and at Apache's smallest setting
//!   (10,000 resources × 10 ACLs) for information.

use std::net::IpAddr;
use std::time::{Duration, Instant};

use kaas_broker::auth::acl::{AclBinding, PatternType, Permission};
use kaas_broker::auth::standard::{AuthorizerSettings, StandardAuthorizer};
use kaas_broker::auth::{Action, Authorizer, Operation, Principal, ResourceType};
use kaas_client::{KafkaClient, SaslCredentials, Security};
use kaas_testkit::pki::TestPki;

use crate::dataplane::{self, Run};
use crate::report::{emit, median, note, num, section, Figure, Target};
use crate::wire::ChildServer;
use crate::Env;

const ADMIN_PASSWORD: &str = "bench-secret";

pub async fn run(env: &Env) -> anyhow::Result<()> {
    tls_data_plane(env).await?;
    logins(env).await?;
    authorizer(env);
    Ok(())
}

async fn tls_data_plane(env: &Env) -> anyhow::Result<()> {
    let rounds = if env.quick { 1 } else { 3 };
    // About 1 GB a run: at 300-450 MB/s a shorter run (150 MB took 0.4 s)
    // measured mostly its own start and end, and varied by ±25%.
    let messages: usize = if env.quick { 30_000 } else { 1_000_000 };
    section(&format!(
        "TLS data plane: librdkafka, {messages} x {} B messages, acks=all, 3 brokers; SSL vs PLAINTEXT, {rounds} rounds",
        dataplane::MESSAGE_BYTES
    ));
    let pki = TestPki::new("127.0.0.1")?;
    let plain = ChildServer::kaas(3, &env.dir("tls-plain"))?;
    let tls_args = [
        "--tls-cert".to_string(),
        pki.server_cert.display().to_string(),
        "--tls-key".to_string(),
        pki.server_key.display().to_string(),
        "--tls-ca".to_string(),
        pki.ca_cert.display().to_string(),
    ];
    let tls = ChildServer::kaas_with(3, &env.dir("tls-ssl"), &tls_args)?;
    let client_of = |i: usize| {
        let mut client = dataplane::client(if i == 0 {
            &plain.bootstrap
        } else {
            &tls.bootstrap
        });
        if i == 1 {
            client
                .set("security.protocol", "SSL")
                .set("ssl.ca.location", pki.ca_cert.to_str().expect("utf-8 path"));
        }
        client
    };
    // Unmeasured: the first run on a fresh machine is the slowest
    // (caches, the volume's first segments), whichever side it is.
    for i in [0, 1] {
        let client = client_of(i);
        tokio::task::spawn_blocking(move || {
            dataplane::one_run(&client, "bench-tls-warm-up", messages / 5)
        })
        .await??;
    }
    let mut results: [Vec<Run>; 2] = [Vec::new(), Vec::new()];
    // The brokers' CPU seconds per GB produced and fetched back: what TLS
    // costs kaas itself, apart from the client sharing the machine.
    let mut cpu_per_gb: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for round in 0..rounds {
        // Alternate which goes first.
        let order: [usize; 2] = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for i in order {
            let client = client_of(i);
            let topic = format!("bench-tls-{round}");
            let server = [&plain, &tls][i];
            let cpu_before = server.cpu();
            let r = tokio::task::spawn_blocking(move || {
                let r = dataplane::one_run(&client, &topic, messages)?;
                dataplane::delete_topic(&client, &topic)?;
                anyhow::Ok(r)
            })
            .await??;
            let cpu_s_per_gb = (server.cpu() - cpu_before).as_secs_f64()
                / ((messages * dataplane::MESSAGE_BYTES) as f64 / 1e9);
            println!(
                "   round {}: {:<9} produce {:.1} MB/s, fetch {:.1} MB/s, brokers' CPU {:.2} s per GB",
                round + 1,
                ["PLAINTEXT", "SSL"][i],
                r.produce_mb_s,
                r.fetch_mb_s,
                cpu_s_per_gb,
            );
            results[i].push(r);
            cpu_per_gb[i].push(cpu_s_per_gb);
        }
    }
    let med = |runs: &[Run], f: fn(&Run) -> f64| median(&runs.iter().map(f).collect::<Vec<_>>());
    for (what, f) in [
        (
            "produce acks=all",
            (|r: &Run| r.produce_mb_s) as fn(&Run) -> f64,
        ),
        ("fetch", |r: &Run| r.fetch_mb_s),
    ] {
        emit(
            Figure::new(format!("tls: {what} over SSL"), med(&results[1], f), "MB/s")
                .baseline("PLAINTEXT", med(&results[0], f))
                .target(Target::RatioAtLeast(0.7)),
        );
    }
    emit(
        Figure::new(
            "tls: brokers' CPU per GB produced and fetched over SSL",
            median(&cpu_per_gb[1]),
            "CPU-s/GB",
        )
        .baseline("PLAINTEXT", median(&cpu_per_gb[0])),
    );
    Ok(())
}

/// Logins of `mechanism` for `window` from `lanes` connections at once;
/// returns logins per CPU-second of the broker.
async fn logins_per_cpu_s(
    server: &ChildServer,
    mechanism: &'static str,
    lanes: usize,
    window: Duration,
) -> anyhow::Result<f64> {
    let credentials = SaslCredentials {
        mechanism: mechanism.into(),
        user: kaas_broker::local::ADMIN.into(),
        password: ADMIN_PASSWORD.into(),
    };
    let cpu_before = server.cpu();
    let end = Instant::now() + window;
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..lanes {
        let addr = server.bootstrap.split(',').next().expect("one").to_string();
        let security = Security::sasl(&credentials);
        tasks.spawn(async move {
            let mut n = 0u64;
            while Instant::now() < end {
                KafkaClient::connect_as(&addr, Duration::from_secs(10), &security).await?;
                n += 1;
            }
            anyhow::Ok(n)
        });
    }
    let mut total = 0;
    while let Some(n) = tasks.join_next().await {
        total += n??;
    }
    let cpu = (server.cpu() - cpu_before).as_secs_f64();
    anyhow::ensure!(cpu > 0.0, "no broker CPU time measured");
    Ok(total as f64 / cpu)
}

async fn logins(env: &Env) -> anyhow::Result<()> {
    let rounds = if env.quick { 1 } else { 3 };
    let window = Duration::from_secs(if env.quick { 1 } else { 3 });
    const LANES: usize = 8;
    section(&format!(
        "SASL logins: {LANES} connections at once, each connecting and logging in as fast as it can; {rounds} rounds of {window:?} per mechanism"
    ));
    let server = ChildServer::kaas_with(
        1,
        &env.dir("sasl"),
        &["--admin-password".to_string(), ADMIN_PASSWORD.to_string()],
    )?;
    let mechanisms = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];
    let mut rates: [Vec<f64>; 3] = Default::default();
    for round in 0..rounds {
        for (i, m) in mechanisms.iter().enumerate() {
            let rate = logins_per_cpu_s(&server, m, LANES, window).await?;
            println!("   round {}: {m:<13} {} logins/CPU-s", round + 1, num(rate));
            rates[i].push(rate);
        }
    }
    for i in 1..3 {
        emit(
            Figure::new(
                format!("sasl: {} logins per broker CPU-second", mechanisms[i]),
                median(&rates[i]),
                "logins/CPU-s",
            )
            .baseline("PLAIN", median(&rates[0])),
        );
    }
    note("no target: SCRAM costs the broker HMACs, PLAIN a PBKDF2 (4096 rounds) against the stored credentials");
    Ok(())
}

/// Apache's AuthorizerBenchmark's ACLs (`prepareAclCache`, no DENY):
/// `resources` patterns (every 10th a group, every 5th prefixed) with
/// `acls_per_resource` ALLOW READ each, a prefixed pattern of the common
/// prefix with 10 host ACLs, and `*` with `resources / 10` host ACLs.
fn apache_benchmark_acls(resources: usize, acls_per_resource: usize) -> Vec<AclBinding> {
    const PREFIX: &str = "foo-bar35_resource-";
    let allow =
        |resource_type, name: String, pattern, principal: String, host: String| AclBinding {
            resource_type,
            name,
            pattern,
            principal,
            host,
            operation: Operation::Read,
            permission: Permission::Allow,
        };
    let mut acls = Vec::new();
    for id in 0..resources {
        let resource_type = if id % 10 == 0 {
            ResourceType::Group
        } else {
            ResourceType::Topic
        };
        let pattern = if id % 5 == 0 {
            PatternType::Prefixed
        } else {
            PatternType::Literal
        };
        for acl in 0..acls_per_resource {
            let principal = match acl {
                0 => "User:test-user".to_string(),
                n => format!("User:test-user{n}"),
            };
            acls.push(allow(
                resource_type,
                format!("{PREFIX}{id}"),
                pattern,
                principal,
                "*".into(),
            ));
        }
    }
    for host in 0..10 {
        acls.push(allow(
            ResourceType::Topic,
            PREFIX.into(),
            PatternType::Prefixed,
            "User:test-user".into(),
            format!("127.0.0.{host}"),
        ));
    }
    // Apache's hosts here lack the last dot ("127.0.0" + id).
    for host in 0..resources / 10 {
        acls.push(allow(
            ResourceType::Topic,
            "*".into(),
            PatternType::Literal,
            "User:test-user".into(),
            format!("127.0.0{host}"),
        ));
    }
    acls
}

/// Median nanoseconds of Apache's benchmark check (WRITE on
/// `foo-bar35_resource-95` by `User:test-user` from 127.0.0.1: denied
/// after every covering ACL is looked at) with these ACLs.
fn check_ns(acls: Vec<AclBinding>, rounds: usize, per_round: usize) -> f64 {
    let authorizer = StandardAuthorizer::new(AuthorizerSettings::default());
    authorizer.replace(acls);
    let principal = Principal::user("test-user");
    let host: IpAddr = "127.0.0.1".parse().expect("an address");
    let action = Action {
        operation: Operation::Write,
        resource_type: ResourceType::Topic,
        name: "foo-bar35_resource-95",
    };
    let mut medians = Vec::new();
    for _ in 0..rounds {
        let start = Instant::now();
        let mut allowed = 0;
        for _ in 0..per_round {
            allowed += std::hint::black_box(&authorizer).authorize(
                std::hint::black_box(&principal),
                host,
                action,
            ) as usize;
        }
        assert_eq!(allowed, 0, "the benchmark's check is denied");
        medians.push(start.elapsed().as_nanos() as f64 / per_round as f64);
    }
    median(&medians)
}

fn authorizer(env: &Env) {
    let (rounds, per_round) = if env.quick { (3, 20_000) } else { (9, 100_000) };
    section(&format!(
        "Authorizer: Apache's AuthorizerBenchmark check (testAuthorizer, no DENY); median of {rounds} rounds of {per_round} checks"
    ));
    let ten_thousand = apache_benchmark_acls(1_000, 10);
    let count = ten_thousand.len();
    let empty = check_ns(Vec::new(), rounds, per_round);
    let at_10k = check_ns(ten_thousand, rounds, per_round);
    emit(
        Figure::new(
            format!("authorizer: one check among {count} ACLs (1,000 resources x 10)"),
            at_10k / 1000.0,
            "µs",
        )
        .baseline("no ACL", empty / 1000.0)
        .target(Target::AtMost(1.0)),
    );
    let apache_smallest = apache_benchmark_acls(10_000, 10);
    let count = apache_smallest.len();
    let at_apache = check_ns(apache_smallest, rounds, per_round / 10);
    emit(
        Figure::new(
            format!("authorizer: one check among {count} ACLs (Apache's 10,000 resources x 10)"),
            at_apache / 1000.0,
            "µs",
        )
        .baseline("no ACL", empty / 1000.0),
    );
}

#[cfg(test)]
mod tests;
