//! ApiVersions (key 18): advertises exactly [`super::SUPPORTED`].

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};

use super::{Err, RequestContext, SUPPORTED};

pub fn handle(ctx: &RequestContext, req: ApiVersionsRequest) -> ApiVersionsResponse {
    let mut resp = advertised();
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
