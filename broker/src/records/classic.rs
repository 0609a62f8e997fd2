//! A classic group's record (Apache's `GroupMetadataValue`), as plain
//! values: enough to resume the group on another coordinator without a
//! rebalance. Its JSON form is the group log's (kind 4 and the snapshot's
//! metadata); protocol bytes are hex.

use bytes::Bytes;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemberMetadataRecord {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout_ms: i32,
    pub session_timeout_ms: i32,
    /// Metadata of the selected protocol only (Apache `GroupMetadataValue`).
    #[serde(with = "hex_bytes")]
    pub subscription: Bytes,
    #[serde(with = "hex_bytes")]
    pub assignment: Bytes,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupMetadataRecord {
    pub group_id: String,
    pub protocol_type: Option<String>,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub current_state_timestamp_ms: Option<u64>,
    pub members: Vec<MemberMetadataRecord>,
}

mod hex_bytes {
    use bytes::Bytes;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(b: &Bytes, s: S) -> Result<S::Ok, S::Error> {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut out = String::with_capacity(b.len() * 2);
        for &x in b.iter() {
            out.push(DIGITS[usize::from(x >> 4)] as char);
            out.push(DIGITS[usize::from(x & 15)] as char);
        }
        s.serialize_str(&out)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        let s = String::deserialize(d)?;
        if s.len() % 2 != 0 || !s.is_ascii() {
            return Err(D::Error::custom("malformed hex string"));
        }
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16))
            .collect::<Result<Vec<u8>, _>>()
            .map(Bytes::from)
            .map_err(D::Error::custom)
    }
}
