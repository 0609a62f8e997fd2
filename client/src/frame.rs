//! Kafka framing: a 4-byte big-endian length, then that many bytes. One
//! encoder ([`encode_frame`]) writes every frame kaas sends, requests and
//! responses alike; [`FrameReader`] reads the broker's requests and
//! [`read_frame`] a client's responses.

use bytes::{Buf, BufMut, Bytes, BytesMut};
use kafka_protocol::messages::{RequestHeader, ResponseHeader};
use kafka_protocol::protocol::{Decodable, Encodable, HeaderVersion, Request, StrBytes};
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Most bytes a [`FrameReader`] adds to its buffer before they arrive: a
/// peer that declares a large frame gets memory only as it sends bytes.
const READ_AHEAD: usize = 64 * 1024;

/// Encodes one whole frame: `body` writes header and message after the
/// length prefix, which is filled in afterwards (no second buffer).
pub fn encode_frame(
    capacity: usize,
    body: impl FnOnce(&mut BytesMut) -> anyhow::Result<()>,
) -> anyhow::Result<Bytes> {
    let mut buf = BytesMut::with_capacity(capacity.max(4));
    buf.put_i32(0);
    body(&mut buf)?;
    let len = i32::try_from(buf.len() - 4)?;
    buf[0..4].copy_from_slice(&len.to_be_bytes());
    Ok(buf.freeze())
}

/// A whole request frame, as a client sends it.
pub fn request_frame<R: Request>(
    req: &R,
    version: i16,
    correlation_id: i32,
    client_id: &str,
) -> anyhow::Result<Bytes> {
    let header = RequestHeader::default()
        .with_request_api_key(R::KEY)
        .with_request_api_version(version)
        .with_correlation_id(correlation_id)
        .with_client_id(Some(StrBytes::from_string(client_id.to_string())));
    encode_frame(512, |buf| {
        header.encode(buf, R::header_version(version))?;
        req.encode(buf, version)
    })
}

/// Decodes a response frame's body (after the length prefix): its header,
/// then the response to `R`.
pub fn decode_response<R: Request>(mut body: Bytes, version: i16) -> anyhow::Result<R::Response>
where
    R::Response: Decodable + HeaderVersion,
{
    ResponseHeader::decode(
        &mut body,
        <R::Response as HeaderVersion>::header_version(version),
    )?;
    R::Response::decode(&mut body, version)
}

#[derive(Debug, Error)]
pub enum FrameError {
    #[error("frame of {size} bytes exceeds the maximum of {max} bytes")]
    TooLarge { size: i64, max: usize },
    #[error("frame length {0} is negative")]
    Negative(i32),
    #[error("connection closed in the middle of a frame")]
    Truncated,
    #[error("i/o error: {0}")]
    Io(#[from] std::io::Error),
}

/// Reads one frame; `Ok(None)` on a clean end of stream between frames.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
    max: usize,
) -> Result<Option<BytesMut>, FrameError> {
    let mut len = [0u8; 4];
    match reader.read_exact(&mut len).await {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    }
    let size = i32::from_be_bytes(len);
    if size < 0 {
        return Err(FrameError::Negative(size));
    }
    if size as usize > max {
        return Err(FrameError::TooLarge {
            size: i64::from(size),
            max,
        });
    }
    let mut buf = BytesMut::zeroed(size as usize);
    reader.read_exact(&mut buf).await.map_err(|e| {
        if e.kind() == std::io::ErrorKind::UnexpectedEof {
            FrameError::Truncated
        } else {
            FrameError::Io(e)
        }
    })?;
    Ok(Some(buf))
}

/// Reads frames through its own buffer: one read can bring in several
/// pipelined frames, and [`FrameReader::next`] is cancellation safe (a
/// frame read halfway stays in the buffer), so it can sit in a `select!`
/// next to other branches without losing bytes.
pub struct FrameReader<R> {
    inner: R,
    buf: BytesMut,
    max: usize,
}

impl<R: AsyncRead + Unpin> FrameReader<R> {
    pub fn new(inner: R, max: usize) -> Self {
        FrameReader {
            inner,
            buf: BytesMut::with_capacity(8 * 1024),
            max,
        }
    }

    /// Changes the largest frame accepted from here on.
    pub fn set_max(&mut self, max: usize) {
        self.max = max;
    }

    /// Whether [`next`](Self::next) answers without reading: a whole frame,
    /// or a header it refuses, is buffered.
    pub fn has_buffered_frame(&self) -> bool {
        if self.buf.len() < 4 {
            return false;
        }
        let size = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
        size < 0 || size as usize > self.max || self.buf.len() >= 4 + size as usize
    }

    /// The next frame; `Ok(None)` on a clean end of stream between frames.
    pub async fn next(&mut self) -> Result<Option<BytesMut>, FrameError> {
        loop {
            if self.buf.len() >= 4 {
                let size = i32::from_be_bytes([self.buf[0], self.buf[1], self.buf[2], self.buf[3]]);
                if size < 0 {
                    return Err(FrameError::Negative(size));
                }
                let size = size as usize;
                if size > self.max {
                    return Err(FrameError::TooLarge {
                        size: size as i64,
                        max: self.max,
                    });
                }
                if self.buf.len() >= 4 + size {
                    self.buf.advance(4);
                    return Ok(Some(self.buf.split_to(size)));
                }
                // Room for what is still missing, but at most READ_AHEAD
                // more than has arrived: a declared length costs nothing
                // until the bytes come.
                let missing = 4 + size - self.buf.len();
                self.buf.reserve(missing.min(READ_AHEAD));
            } else if self.buf.capacity() - self.buf.len() < 4 {
                self.buf.reserve(8 * 1024);
            }
            // Cancellation safe: bytes read are kept in `buf`.
            let read = match self.inner.read_buf(&mut self.buf).await {
                // A TLS peer gone without close_notify, as most clients
                // leave: between frames that is an ordinary close.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => 0,
                other => other?,
            };
            if read == 0 {
                return if self.buf.is_empty() {
                    Ok(None)
                } else {
                    Err(FrameError::Truncated)
                };
            }
        }
    }
}

#[cfg(test)]
mod tests;
