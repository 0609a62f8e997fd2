//! Kafka framing: a 4-byte big-endian length, then that many bytes.

use bytes::BytesMut;
use thiserror::Error;
use tokio::io::{AsyncRead, AsyncReadExt};

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

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn reads_frames_and_refuses_bad_lengths() {
        let mut ok: &[u8] = &[0, 0, 0, 2, 7, 8];
        assert_eq!(
            &read_frame(&mut ok, 10).await.unwrap().unwrap()[..],
            &[7, 8]
        );
        assert!(read_frame(&mut ok, 10).await.unwrap().is_none());
        let mut big: &[u8] = &[0, 0, 1, 0];
        assert!(matches!(
            read_frame(&mut big, 10).await,
            Err(FrameError::TooLarge { .. })
        ));
        let mut neg: &[u8] = &[0xff, 0xff, 0xff, 0xff];
        assert!(matches!(
            read_frame(&mut neg, 10).await,
            Err(FrameError::Negative(-1))
        ));
        let mut cut: &[u8] = &[0, 0, 0, 5, 1];
        assert!(matches!(
            read_frame(&mut cut, 10).await,
            Err(FrameError::Truncated)
        ));
    }
}
