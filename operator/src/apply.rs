//! Server-side apply, skipped when the live object already carries the
//! digest of exactly what would be applied.

use std::fmt::Debug;

use kube::api::{ApiResource, DynamicObject, Patch, PatchParams};
use kube::{Api, Client, Resource, ResourceExt};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::context::Error;
use crate::resources::MANAGER;

/// Annotation holding a digest of what the operator last applied.
pub const APPLIED_DIGEST: &str = "kaas.dev/applied-digest";

/// `obj` with [`APPLIED_DIGEST`] set to the digest of its content.
fn with_digest(mut obj: serde_json::Value) -> (serde_json::Value, String) {
    use sha2::Digest;
    let digest = format!("{:x}", sha2::Sha256::digest(obj.to_string().as_bytes()));
    obj["metadata"]["annotations"][APPLIED_DIGEST] = serde_json::Value::String(digest.clone());
    (obj, digest)
}

/// Server-side applies `obj`, unless the live object carries the digest of
/// exactly this content already.
///
/// Why not apply unconditionally, as SSA allows: some servers (1.20, and
/// later ones for some fields) bump the resourceVersion on every apply even
/// when nothing changed, so each reconcile would wake the controller again
/// through its watch on owned objects — a hot loop. The price: a field
/// someone else edits is put back on the next spec change, not at once.
pub(crate) async fn apply_dynamic(
    api: &Api<DynamicObject>,
    name: &str,
    what: &str,
    obj: serde_json::Value,
) -> Result<DynamicObject, Error> {
    let (obj, digest) = with_digest(obj);
    let live = api
        .get_opt(name)
        .await
        .map_err(Error::kube(format!("reading {what} {name}")))?;
    if let Some(live) = live {
        if live.annotations().get(APPLIED_DIGEST) == Some(&digest) {
            return Ok(live);
        }
    }
    api.patch(
        name,
        &PatchParams::apply(MANAGER).force(),
        &Patch::Apply(&obj),
    )
    .await
    .map_err(Error::kube(format!("applying {what} {name}")))
}

/// [`apply_dynamic`] for a typed object.
pub(crate) async fn apply<K>(client: &Client, obj: &K) -> Result<K, Error>
where
    K: Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + Debug
        + Serialize
        + DeserializeOwned,
    K::DynamicType: Default,
{
    let dt = K::DynamicType::default();
    let ar = ApiResource::erase::<K>(&dt);
    let name = obj.meta().name.clone().unwrap_or_default();
    let ns = obj.meta().namespace.clone().unwrap_or_default();
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), &ns, &ar);
    let value = serde_json::to_value(obj).expect("k8s objects serialise");
    let applied = apply_dynamic(&api, &name, &K::kind(&dt), value).await?;
    let value = serde_json::to_value(applied).expect("a DynamicObject serialises");
    serde_json::from_value(value).map_err(|e| Error::Kube {
        what: format!("reading back {} {name}", K::kind(&dt)),
        source: kube::Error::SerdeError(e),
    })
}
