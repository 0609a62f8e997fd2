//! The assignment document's ConfigMap format, written by the operator and
//! read by brokers that follow a ConfigMap (`kaas-broker serve
//! --assignment-configmap`): one codec, so the writer and the readers
//! cannot drift. Pure: no I/O, no client. Behind the `configmap` feature,
//! which brings in the Kubernetes API types.
//!
//! # Format
//!
//! A ConfigMap holds at most 1 MiB. The logical document is the JSON
//! [`Assignment`], unchanged; on the ConfigMap it is stored gzip-compressed
//! under `binaryData["assignment.json.gz"]`. Compression is what makes
//! 100,000 active groups fit: a 3→4 scale pins ~75% of them, and 75k
//! entries are 2.7 MB of JSON but ~0.2–0.3 MB gzipped, because the entries
//! are sorted by group id and the JSON framing around each is identical.
//! Readable summaries (`data.version`, `data.brokers`, `data.groupEntries`)
//! sit beside it for `kubectl get -o yaml`; readers ignore them.
//!
//! A hand-written ConfigMap may instead carry plain JSON under
//! `data["assignment.json"]`; readers accept either, the compressed one
//! first.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::ByteString;

use crate::Assignment;

/// `binaryData` key of the gzip-compressed JSON document.
pub const GZIP_KEY: &str = "assignment.json.gz";
/// `data` key of a plain JSON document (accepted, never written).
pub const JSON_KEY: &str = "assignment.json";
/// `data` key of the document's version, for humans and label-free watches.
pub const VERSION_KEY: &str = "version";
/// `data` key of a one-line broker summary, `0=alive 1=dead ...`.
pub const BROKERS_KEY: &str = "brokers";
/// `data` key of the number of explicit group entries.
pub const GROUP_ENTRIES_KEY: &str = "groupEntries";

/// Most bytes a ConfigMap may hold (`data` plus `binaryData`), as the API
/// server validates it.
pub const CONFIGMAP_LIMIT: usize = 1024 * 1024;

/// Decompressed documents larger than this are refused: a guard against a
/// gzip bomb in a ConfigMap anyone with write access could edit.
const MAX_DECOMPRESSED: u64 = 256 * 1024 * 1024;

/// Why a ConfigMap did not yield a document.
#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("the ConfigMap has neither binaryData[{GZIP_KEY}] nor data[{JSON_KEY}]")]
    Missing,
    #[error("binaryData[{GZIP_KEY}] is not valid gzip: {0}")]
    Gzip(#[source] std::io::Error),
    #[error("the document is larger than {MAX_DECOMPRESSED} bytes uncompressed")]
    TooLarge,
    #[error("the document is not a valid assignment: {0}")]
    Json(#[from] serde_json::Error),
}

/// The ConfigMap payload for `assignment`: `(data, binaryData)`.
///
/// Deterministic for a given document, so re-applying an unchanged document
/// is a no-op for the API server.
pub fn encode(assignment: &Assignment) -> (BTreeMap<String, String>, BTreeMap<String, ByteString>) {
    let json = serde_json::to_vec(assignment).expect("an Assignment always serialises");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&json).expect("writing to a Vec cannot fail");
    let compressed = gz.finish().expect("writing to a Vec cannot fail");

    let brokers = assignment
        .brokers
        .iter()
        .map(|b| {
            let state = serde_json::to_value(b.state).expect("state serialises");
            format!("{}={}", b.id, state.as_str().unwrap_or("?"))
        })
        .collect::<Vec<_>>()
        .join(" ");
    let data = BTreeMap::from([
        (VERSION_KEY.to_owned(), assignment.version.to_string()),
        (BROKERS_KEY.to_owned(), brokers),
        (
            GROUP_ENTRIES_KEY.to_owned(),
            assignment.consumer_groups.len().to_string(),
        ),
    ]);
    let binary = BTreeMap::from([(GZIP_KEY.to_owned(), ByteString(compressed))]);
    (data, binary)
}

/// Bytes the API server counts against [`CONFIGMAP_LIMIT`] for this payload.
pub fn encoded_size(
    data: &BTreeMap<String, String>,
    binary: &BTreeMap<String, ByteString>,
) -> usize {
    // Validation sums keys and values of both maps.
    data.iter().map(|(k, v)| k.len() + v.len()).sum::<usize>()
        + binary
            .iter()
            .map(|(k, v)| k.len() + v.0.len())
            .sum::<usize>()
}

/// Reads the document from a ConfigMap written by [`encode`] (or by hand,
/// as plain JSON under `data["assignment.json"]`).
pub fn decode(cm: &ConfigMap) -> Result<Assignment, DecodeError> {
    if let Some(gz) = cm.binary_data.as_ref().and_then(|b| b.get(GZIP_KEY)) {
        let mut json = Vec::new();
        flate2::read::GzDecoder::new(gz.0.as_slice())
            .take(MAX_DECOMPRESSED + 1)
            .read_to_end(&mut json)
            .map_err(DecodeError::Gzip)?;
        if json.len() as u64 > MAX_DECOMPRESSED {
            return Err(DecodeError::TooLarge);
        }
        return Ok(serde_json::from_slice(&json)?);
    }
    if let Some(json) = cm.data.as_ref().and_then(|d| d.get(JSON_KEY)) {
        return Ok(serde_json::from_str(json)?);
    }
    Err(DecodeError::Missing)
}

#[cfg(test)]
mod tests;
