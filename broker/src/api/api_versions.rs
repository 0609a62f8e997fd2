//! ApiVersions (key 18): advertises exactly [`super::SUPPORTED`], and from
//! v3 the features this broker supports and the cluster finalizes
//! (`transaction.version`, KIP-890 part 2).

use kafka_protocol::messages::api_versions_response::{
    ApiVersion, FinalizedFeatureKey, SupportedFeatureKey,
};
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};
use kafka_protocol::protocol::StrBytes;

use super::{Err, RequestContext, SUPPORTED};
use crate::txn::core::{TxnVersion, FINALIZED_TXN_VERSION};

const TRANSACTION_VERSION: &str = "transaction.version";

/// The epoch of the finalized features. Apache's is the metadata log's
/// offset; a client takes the features of the highest epoch it has seen,
/// and kaas's never change while a broker runs.
const FINALIZED_FEATURES_EPOCH: i64 = 1;

pub fn handle(ctx: &RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse {
    let mut resp = advertised();
    if ctx.api_version >= 3 {
        resp = with_features(resp, ctx.api_version);
    }
    // v3+ clients identify their software; Kafka validates the strings.
    if ctx.api_version >= 3 {
        let valid = |s: &str| {
            !s.is_empty()
                && s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'))
        };
        if !valid(req.client_software_name.as_str()) || !valid(req.client_software_version.as_str())
        {
            resp.error_code = Err::InvalidRequest.code();
        }
    }
    resp
}

/// Adds the features (tagged fields from v3). As Apache, a supported
/// feature whose range starts at 0, as `transaction.version`'s does, is
/// left out below v4 (older clients refuse it), and a finalized level of 0
/// is not listed.
fn with_features(resp: ApiVersionsResponse, version: i16) -> ApiVersionsResponse {
    let name = || StrBytes::from_static_str(TRANSACTION_VERSION);
    let supported = if version >= 4 {
        vec![SupportedFeatureKey::default()
            .with_name(name())
            .with_min_version(TxnVersion::V0.level())
            .with_max_version(TxnVersion::V2.level())]
    } else {
        Vec::new()
    };
    let level = FINALIZED_TXN_VERSION.level();
    let finalized = if level > 0 {
        vec![FinalizedFeatureKey::default()
            .with_name(name())
            .with_min_version_level(level)
            .with_max_version_level(level)]
    } else {
        Vec::new()
    };
    resp.with_supported_features(supported)
        .with_finalized_features_epoch(FINALIZED_FEATURES_EPOCH)
        .with_finalized_features(finalized)
}

/// The full list of served APIs and versions, no error.
pub fn advertised() -> ApiVersionsResponse {
    ApiVersionsResponse::default().with_api_keys(
        SUPPORTED
            .iter()
            .map(|(key, min, max)| {
                ApiVersion::default()
                    .with_api_key(*key as i16)
                    .with_min_version(*min)
                    .with_max_version(*max)
            })
            .collect(),
    )
}

/// The v0 answer to an ApiVersions request newer than we serve.
pub fn unsupported_version() -> ApiVersionsResponse {
    advertised().with_error_code(Err::UnsupportedVersion.code())
}

#[cfg(test)]
mod tests;
