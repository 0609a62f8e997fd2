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
        guards.push((sockets.register(&served), served));
    }
    // One connection ends on its own (unregistered, then closed): it is
    // no longer there to cut.
    let (registered, served) = guards.pop().unwrap();
    drop(registered);
    drop(served);
    assert_eq!(sockets.len(), 1);
    assert_eq!(sockets.cut_all(), 1);
    // The client of the cut one sees the end of the stream.
    let mut buf = [0u8; 1];
    assert_eq!(clients[0].read(&mut buf).unwrap(), 0);
    // Writing on the server side fails: it is shut down.
    assert!(guards[0].1.write_all(b"x").is_err());
    for (registered, served) in guards {
        drop(registered);
        drop(served);
    }
    assert!(sockets.is_empty());
}
