//! The sockets of the connections a broker serves, so that a thread
//! outside the async runtime can cut them all: when the data volume stalls,
//! requests block in the kernel (on every thread that touches the volume,
//! runtime threads included) and clients would wait for their request
//! timeouts; cut, they fail over at once, as from a broker that died
//! ([`crate::volume`]).
//!
//! Each registered socket is kept as a duplicate descriptor: `shutdown(2)`
//! acts on the socket, whichever descriptor names it, and the duplicate is
//! closed only when the connection ends, so a cut never reaches a number
//! the system has given to something else.

use std::collections::HashMap;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

#[derive(Default)]
pub struct Sockets {
    next: AtomicU64,
    open: Mutex<HashMap<u64, OwnedFd>>,
}

/// A registered socket; unregistered when dropped.
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
    /// Registers `socket` until the guard is dropped. A socket that cannot
    /// be duplicated (out of descriptors) is served unregistered: a cut
    /// then misses it, and its client waits for its own timeout.
    pub fn register(self: &Arc<Self>, socket: &impl AsFd) -> Option<Registered> {
        let dup = socket.as_fd().try_clone_to_owned().ok()?;
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        self.open.lock().insert(id, dup);
        Some(Registered {
            sockets: self.clone(),
            id,
        })
    }

    /// Shuts every registered socket down (both directions): their clients
    /// see the connection end now. How many.
    pub fn cut_all(&self) -> usize {
        let open = self.open.lock();
        for fd in open.values() {
            // SAFETY: `fd` is an open descriptor owned by the map, held
            // under its lock for the call.
            unsafe { libc::shutdown(fd.as_raw_fd(), libc::SHUT_RDWR) };
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
mod tests {
    use super::*;
    use std::io::{Read, Write};

    #[test]
    fn a_cut_ends_every_registered_connection_and_an_ended_one_is_forgotten() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let sockets = Arc::new(Sockets::default());
        let mut clients = Vec::new();
        let mut guards = Vec::new();
        for _ in 0..2 {
            clients.push(std::net::TcpStream::connect(addr).unwrap());
            let (served, _) = listener.accept().unwrap();
            guards.push((sockets.register(&served).unwrap(), served));
        }
        // One connection ends on its own: it is no longer there to cut.
        drop(guards.pop());
        assert_eq!(sockets.len(), 1);
        assert_eq!(sockets.cut_all(), 1);
        // The client of the cut one sees the end of the stream.
        let mut buf = [0u8; 1];
        assert_eq!(clients[0].read(&mut buf).unwrap(), 0);
        // Writing on the server side fails: it is shut down.
        assert!(guards[0].1.write_all(b"x").is_err());
        drop(guards);
        assert!(sockets.is_empty());
    }
}
