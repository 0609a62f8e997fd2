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
        // Read off the runtime: on a stalled volume the read blocks.
        let read = {
            let path = path.clone();
            tokio::task::spawn_blocking(move || assignment_file::read(&path)).await
        };
        let read = read.unwrap_or_else(|e| Err(std::io::Error::other(e)));
        match read {
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
