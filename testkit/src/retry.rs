//! Waiting for what a cluster does in its own time: one helper in place of
//! each test's deadline loop.

use std::time::{Duration, Instant};

/// Tries `attempt` until it gives a value or `within` passes, `pause`
/// between tries; the test fails naming `what` and the last error.
pub async fn retry<T, E: std::fmt::Display>(
    within: Duration,
    pause: Duration,
    what: &str,
    mut attempt: impl AsyncFnMut() -> Result<T, E>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        match attempt().await {
            Ok(value) => return value,
            Err(e) => assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {e}"
            ),
        }
        tokio::time::sleep(pause).await;
    }
}

/// [`retry`] for blocking clients (librdkafka's), on the test's thread.
pub fn retry_blocking<T, E: std::fmt::Display>(
    within: Duration,
    pause: Duration,
    what: &str,
    mut attempt: impl FnMut() -> Result<T, E>,
) -> T {
    let deadline = Instant::now() + within;
    loop {
        match attempt() {
            Ok(value) => return value,
            Err(e) => assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {e}"
            ),
        }
        std::thread::sleep(pause);
    }
}
