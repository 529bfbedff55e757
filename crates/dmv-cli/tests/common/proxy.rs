//! A TCP proxy on loopback between a client and a real server (`dmv serve`,
//! sshd, MinIO) that cuts every connection once a given number of bytes
//! (both directions together) has passed through it: a network that drops.
//! It can also flip a byte of what the server sends: a network, or a
//! server, that lies.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

pub struct CuttingProxy {
    pub port: u16,
    /// Bytes a connection may carry before it is cut (u64::MAX: never).
    cut_after: Arc<AtomicU64>,
    /// Bytes carried by every connection so far.
    carried: Arc<AtomicU64>,
    /// Every how many bytes of what the server sends one arrives flipped (0: none).
    flip_every: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

impl CuttingProxy {
    pub fn start(target_port: u16) -> CuttingProxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        listener.set_nonblocking(true).unwrap();
        let proxy = CuttingProxy {
            port,
            cut_after: Arc::new(AtomicU64::new(u64::MAX)),
            carried: Arc::new(AtomicU64::new(0)),
            flip_every: Arc::new(AtomicU64::new(0)),
            stop: Arc::new(AtomicBool::new(false)),
        };
        let (cut_after, carried, flip_every, stop) = (
            proxy.cut_after.clone(),
            proxy.carried.clone(),
            proxy.flip_every.clone(),
            proxy.stop.clone(),
        );
        std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((client, _)) => {
                        client.set_nonblocking(false).unwrap();
                        let Ok(server) = TcpStream::connect(("127.0.0.1", target_port)) else {
                            continue;
                        };
                        let limit = cut_after.load(Ordering::SeqCst);
                        let this = Arc::new(AtomicU64::new(0));
                        let flip = [None, Some(flip_every.clone())];
                        for ((from, to), flip) in [
                            (client.try_clone().unwrap(), server.try_clone().unwrap()),
                            (server, client),
                        ]
                        .into_iter()
                        .zip(flip)
                        {
                            let (this, carried) = (this.clone(), carried.clone());
                            std::thread::spawn(move || {
                                pipe(from, to, limit, flip, &this, &carried)
                            });
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(2)),
                }
            }
        });
        proxy
    }

    /// Cuts each new connection after `bytes` (None: lets everything through).
    pub fn cut_after(&self, bytes: Option<u64>) {
        self.cut_after
            .store(bytes.unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// From now on, on every connection, flips one byte in every `bytes`
    /// of what the server sends (None: passes it on as sent).
    #[allow(dead_code)]
    pub fn flip_server_bytes_every(&self, bytes: Option<u64>) {
        self.flip_every.store(bytes.unwrap_or(0), Ordering::SeqCst);
    }

    /// Bytes carried so far by every connection, both directions.
    pub fn carried(&self) -> u64 {
        self.carried.load(Ordering::SeqCst)
    }
}

impl Drop for CuttingProxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Copies `from` to `to` until either side closes or the connection has
/// carried `limit` bytes (counted in `this`, both directions), then cuts
/// both. Where `flip_every` says, a byte of this direction goes over inverted.
fn pipe(
    mut from: TcpStream,
    mut to: TcpStream,
    limit: u64,
    flip_every: Option<Arc<AtomicU64>>,
    this: &AtomicU64,
    carried: &AtomicU64,
) {
    let mut buf = vec![0u8; 64 << 10];
    let mut sent = 0u64;
    loop {
        let n = match from.read(&mut buf) {
            // The sender is done: pass that on, the other direction goes on.
            Ok(0) => {
                let _ = to.shutdown(Shutdown::Write);
                return;
            }
            Err(_) => break,
            Ok(n) => n,
        };
        let every = flip_every.as_ref().map_or(0, |f| f.load(Ordering::SeqCst));
        if every > 0 {
            for at in sent..sent + n as u64 {
                if at % every == every - 1 {
                    buf[(at - sent) as usize] ^= 0xff;
                }
            }
        }
        sent += n as u64;
        let before = this.fetch_add(n as u64, Ordering::SeqCst);
        let allowed = limit.saturating_sub(before).min(n as u64) as usize;
        if allowed > 0 && to.write_all(&buf[..allowed]).is_err() {
            break;
        }
        carried.fetch_add(allowed as u64, Ordering::SeqCst);
        if allowed < n {
            break;
        }
    }
    let _ = from.shutdown(Shutdown::Both);
    let _ = to.shutdown(Shutdown::Both);
}
