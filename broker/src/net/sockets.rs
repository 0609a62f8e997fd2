//! The sockets of the connections a broker serves, so that a thread
//! outside the async runtime can cut them all: when the data volume stalls,
//! requests block in the kernel (on every thread that touches the volume,
//! runtime threads included) and clients would wait for their request
//! timeouts; cut, they fail over at once, as from a broker that died
//! ([`crate::volume`]).
//!
//! A socket is registered by its descriptor's number, and its owner
//! unregisters it before closing it ([`Registered`] must be dropped before
//! the socket): a cut holds the registry's lock while it shuts the
//! sockets down, so it never reaches a number the system has given to
//! something else since. No duplicate descriptor: a broker serving N
//! connections holds N descriptors for them, not 2N.

use std::collections::HashMap;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

#[derive(Default)]
pub struct Sockets {
    next: AtomicU64,
    open: Mutex<HashMap<u64, RawFd>>,
}

/// A registered socket; unregistered when dropped, which must come before
/// the socket is closed.
#[must_use = "the socket is unregistered when this is dropped"]
pub struct Registered {
    sockets: Arc<Sockets>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.sockets.open.lock().remove(&self.id);
    }
}

impl Sockets {
    /// Registers `socket` until the guard is dropped; the caller drops the
    /// guard before it closes the socket.
    pub fn register(self: &Arc<Self>, socket: &impl AsRawFd) -> Registered {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.open.lock().insert(id, socket.as_raw_fd());
        Registered {
            sockets: self.clone(),
            id,
        }
    }

    /// Shuts every registered socket down (both directions): their clients
    /// see the connection end now. How many.
    pub fn cut_all(&self) -> usize {
        let open = self.open.lock();
        for fd in open.values() {
            // SAFETY: a registered descriptor is open until its owner
            // unregisters it, which waits for this lock.
            unsafe { libc::shutdown(*fd, libc::SHUT_RDWR) };
        }
        open.len()
    }

    pub fn len(&self) -> usize {
        self.open.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests;
