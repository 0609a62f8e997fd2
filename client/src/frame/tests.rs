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

#[tokio::test]
async fn frame_reader_splits_pipelined_frames_and_refuses_bad_lengths() {
    let data: &[u8] = &[0, 0, 0, 2, 7, 8, 0, 0, 0, 0, 0, 0, 0, 1, 9];
    let mut r = FrameReader::new(data, 10);
    assert_eq!(&r.next().await.unwrap().unwrap()[..], &[7, 8]);
    assert!(r.next().await.unwrap().unwrap().is_empty());
    assert_eq!(&r.next().await.unwrap().unwrap()[..], &[9]);
    assert!(r.next().await.unwrap().is_none());
    let big: &[u8] = &[0, 0, 1, 0];
    assert!(matches!(
        FrameReader::new(big, 10).next().await,
        Err(FrameError::TooLarge { .. })
    ));
    let neg: &[u8] = &[0xff, 0xff, 0xff, 0xff];
    assert!(matches!(
        FrameReader::new(neg, 10).next().await,
        Err(FrameError::Negative(-1))
    ));
    let cut: &[u8] = &[0, 0, 0, 5, 1];
    assert!(matches!(
        FrameReader::new(cut, 10).next().await,
        Err(FrameError::Truncated)
    ));
}

/// A peer that declares a frame of the maximum size and sends nothing
/// more is given no more than a read-ahead's worth of buffer.
#[tokio::test]
async fn a_declared_length_is_not_reserved_before_its_bytes_arrive() {
    let max = 100 << 20;
    let (mut tx, rx) = tokio::io::duplex(1 << 20);
    let mut r = FrameReader::new(rx, max);
    tokio::io::AsyncWriteExt::write_all(&mut tx, &(max as i32).to_be_bytes())
        .await
        .unwrap();
    let first = tokio::time::timeout(std::time::Duration::from_millis(50), r.next()).await;
    assert!(first.is_err(), "frame is not complete yet");
    assert!(
        r.buf.capacity() <= 2 * READ_AHEAD + 8 * 1024,
        "reserved {} bytes for a frame whose bytes have not arrived",
        r.buf.capacity()
    );
    // Sent in full, it still arrives whole.
    let body = vec![7u8; 3 * READ_AHEAD + 5];
    let (mut tx, rx) = tokio::io::duplex(1 << 20);
    let mut r = FrameReader::new(rx, max);
    let writer = tokio::spawn(async move {
        tokio::io::AsyncWriteExt::write_all(&mut tx, &(body.len() as i32).to_be_bytes())
            .await
            .unwrap();
        tokio::io::AsyncWriteExt::write_all(&mut tx, &body)
            .await
            .unwrap();
        body
    });
    let got = r.next().await.unwrap().unwrap();
    assert_eq!(&got[..], &writer.await.unwrap()[..]);
}

#[test]
fn encode_frame_prefixes_the_length() {
    let f = encode_frame(0, |b| {
        b.extend_from_slice(b"abc");
        Ok(())
    })
    .unwrap();
    assert_eq!(&f[..], &[0, 0, 0, 3, b'a', b'b', b'c']);
}

/// A frame that arrives in pieces survives the read being dropped
/// halfway (as `select!` does when another branch wins).
#[tokio::test]
async fn frame_reader_is_cancellation_safe() {
    let (mut tx, rx) = tokio::io::duplex(64);
    let mut r = FrameReader::new(rx, 100);
    tokio::io::AsyncWriteExt::write_all(&mut tx, &[0, 0, 0, 3, 1])
        .await
        .unwrap();
    let first = tokio::time::timeout(std::time::Duration::from_millis(50), r.next()).await;
    assert!(first.is_err(), "frame is not complete yet");
    tokio::io::AsyncWriteExt::write_all(&mut tx, &[2, 3])
        .await
        .unwrap();
    assert_eq!(&r.next().await.unwrap().unwrap()[..], &[1, 2, 3]);
}
