//! Follows the assignment file: polls it and offers every newer version to
//! the broker's [`ClusterView`](super::ClusterView).

use std::path::PathBuf;
use std::time::Duration;

use tokio_util::sync::CancellationToken;
use tracing::warn;

use super::assignment_file;

/// Polls `path` every `interval` until `shutdown`, calling `offer` with each
/// document read (the view ignores versions it already has).
pub async fn follow(
    path: PathBuf,
    interval: Duration,
    shutdown: CancellationToken,
    mut offer: impl FnMut(kaas_shared::Assignment),
) {
    let mut last_error: Option<String> = None;
    loop {
        match assignment_file::read(&path) {
            Ok(Some(a)) => {
                last_error = None;
                offer(a);
            }
            Ok(None) => {}
            Err(e) => {
                let msg = e.to_string();
                if last_error.as_deref() != Some(&msg) {
                    warn!(path = %path.display(), error = %msg, "cannot read the assignment file");
                    last_error = Some(msg);
                }
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(interval) => {}
        }
    }
}
