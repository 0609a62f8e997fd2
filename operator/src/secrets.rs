//! The Secrets the operator reads: the admin's password (made when absent)
//! and the listener's CA, which is how it connects to the brokers.

use k8s_openapi::api::core::v1::Secret;
use kube::api::PostParams;
use kube::Api;

use crate::context::{Context, Error};
use crate::crd::{Authentication, KaasCluster};
use crate::resources::{self, Names};

/// How the operator connects to the cluster's brokers: over TLS trusting
/// the listener Secret's `ca.crt`; on a SCRAM listener as `User:admin`,
/// whose password is in the admin Secret. That Secret is made first, with a
/// random password, when it does not exist (never overwritten: the brokers
/// wrote its credentials to the volume).
pub(crate) async fn broker_security(
    kc: &KaasCluster,
    ctx: &Context,
) -> Result<kaas_client::Security, Error> {
    let names = Names::of(kc);
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), &names.namespace);
    let sasl = match kc.spec.listener.authentication {
        // `tls` is refused on `listener` (`KaasClusterSpec::validate`).
        Authentication::None | Authentication::Tls => None,
        Authentication::Scram => Some(kaas_client::SaslCredentials {
            mechanism: "SCRAM-SHA-512".into(),
            user: "admin".into(),
            password: admin_password(kc, &api).await?,
        }),
    };
    let tls = match &kc.spec.listener.tls {
        None => None,
        Some(tls) => {
            let secret = api
                .get(&tls.secret_name)
                .await
                .map_err(Error::kube(format!(
                    "reading the TLS Secret {}",
                    tls.secret_name
                )))?;
            let ca = secret_value(&secret, "ca.crt")
                .ok_or_else(|| missing_key(&tls.secret_name, "ca.crt"))?;
            Some(
                kaas_client::ClientTls::trusting_pem(ca.as_bytes()).map_err(|e| Error::Kube {
                    what: format!("reading ca.crt of the TLS Secret {}", tls.secret_name),
                    source: kube::Error::Service(e.into()),
                })?,
            )
        }
    };
    Ok(kaas_client::Security { tls, sasl })
}

/// The admin's password from its Secret, made first when absent.
pub(crate) async fn admin_password(kc: &KaasCluster, api: &Api<Secret>) -> Result<String, Error> {
    let secret_name = Names::of(kc).admin_secret();
    let existing = api
        .get_opt(&secret_name)
        .await
        .map_err(Error::kube("reading the admin Secret"))?;
    let secret = match existing {
        Some(s) => s,
        None => {
            let made = resources::admin_secret(kc, &kaas_client::scram::nonce());
            match api.create(&PostParams::default(), &made).await {
                Ok(s) => s,
                // Made meanwhile by another writer: use theirs.
                Err(kube::Error::Api(e)) if e.code == 409 => api
                    .get(&secret_name)
                    .await
                    .map_err(Error::kube("reading the admin Secret"))?,
                Err(e) => return Err(Error::kube("creating the admin Secret")(e)),
            }
        }
    };
    secret_value(&secret, resources::ADMIN_PASSWORD_KEY)
        .ok_or_else(|| missing_key(&secret_name, resources::ADMIN_PASSWORD_KEY))
}

/// A Secret's value as text (`data`, or `stringData` as a create echoes it).
pub(crate) fn secret_value(secret: &Secret, key: &str) -> Option<String> {
    secret
        .data
        .as_ref()
        .and_then(|d| d.get(key))
        .and_then(|b| String::from_utf8(b.0.clone()).ok())
        .or_else(|| {
            secret
                .string_data
                .as_ref()
                .and_then(|d| d.get(key).cloned())
        })
}

fn missing_key(secret: &str, key: &str) -> Error {
    Error::Kube {
        what: format!("reading the Secret {secret}"),
        source: kube::Error::Service(format!("it has no `{key}` key").into()),
    }
}
