//! `plumb serve`: the peer that answers the network primitives. It accepts
//! any number of sessions (bounded concurrent connections), answers garbage
//! with an error line and goes on, and stops after a time or a number of
//! sessions when asked.

use super::protocol::{read_line, Opening, Request};
use std::collections::HashMap;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Limits of a server.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Stop accepting after this long.
    pub max_duration: Option<Duration>,
    /// Stop after this many sessions (a session is one primitive call: all
    /// the streams of one throughput test, one RTT test).
    pub max_sessions: Option<u64>,
    /// Connections served at once; more are answered `ERR busy`.
    pub max_connections: usize,
    /// Log connections on stderr.
    pub log: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            max_duration: None,
            max_sessions: None,
            max_connections: 64,
            log: false,
        }
    }
}

/// How long a client may stay silent before the server drops it.
const IDLE: Duration = Duration::from_secs(30);
/// Longest a `source` connection is fed.
const MAX_SOURCE: Duration = Duration::from_secs(3600);

/// What a server did, for its exit line.
#[derive(Debug, Default, Clone, Copy)]
pub struct ServeSummary {
    /// Sessions completed.
    pub sessions: u64,
    /// Connections accepted.
    pub connections: u64,
    /// Requests refused as garbage.
    pub refused: u64,
}

#[derive(Default)]
struct Shared {
    active: AtomicUsize,
    sessions: Mutex<HashMap<u64, usize>>,
    completed: AtomicU64,
    refused: AtomicU64,
}

/// A bound listener.
pub struct Server {
    listener: TcpListener,
    opts: ServeOptions,
}

impl Server {
    /// Binds `addr` (e.g. `127.0.0.1:5210`; port 0 picks a free one).
    pub fn bind(addr: &str, opts: ServeOptions) -> io::Result<Server> {
        Ok(Server {
            listener: TcpListener::bind(addr)?,
            opts,
        })
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// Serves until `stop`, the time limit or the session limit.
    pub fn serve(&self, stop: &AtomicBool) -> io::Result<ServeSummary> {
        let shared = Arc::new(Shared::default());
        let started = Instant::now();
        let mut connections = 0;
        loop {
            if stop.load(Ordering::Relaxed)
                || self
                    .opts
                    .max_duration
                    .is_some_and(|d| started.elapsed() >= d)
                || self
                    .opts
                    .max_sessions
                    .is_some_and(|n| shared.completed.load(Ordering::Relaxed) >= n)
            {
                break;
            }
            if !readable(&self.listener, 100)? {
                continue;
            }
            let (stream, peer) = match self.listener.accept() {
                Ok(c) => c,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    // Out of descriptors and the like: wait, do not die.
                    eprintln!("plumb serve: accept: {e}");
                    std::thread::sleep(Duration::from_millis(100));
                    continue;
                }
            };
            connections += 1;
            if shared.active.load(Ordering::Relaxed) >= self.opts.max_connections {
                let _ = (&stream).write_all(b"ERR busy\n");
                continue;
            }
            shared.active.fetch_add(1, Ordering::Relaxed);
            let (shared, log) = (shared.clone(), self.opts.log);
            std::thread::spawn(move || {
                let outcome = handle(stream, &shared);
                if log {
                    match &outcome {
                        Ok(Some(text)) => eprintln!("plumb serve: {peer}: {text}"),
                        Ok(None) => {}
                        Err(e) => eprintln!("plumb serve: {peer}: {e}"),
                    }
                }
                shared.active.fetch_sub(1, Ordering::Relaxed);
            });
        }
        // Let the connections of the last session finish.
        let waited = Instant::now();
        while shared.active.load(Ordering::Relaxed) > 0 && waited.elapsed() < IDLE {
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(ServeSummary {
            sessions: shared.completed.load(Ordering::Relaxed),
            connections,
            refused: shared.refused.load(Ordering::Relaxed),
        })
    }

    /// Serves on a background thread until the handle is dropped.
    pub fn spawn(self) -> ServerHandle {
        let addr = self.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let _ = self.serve(&flag);
        });
        ServerHandle {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

/// A server running on a background thread; dropping it stops it.
#[derive(Debug)]
pub struct ServerHandle {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ServerHandle {
    /// The address it listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Waits up to `ms` for a connection to accept.
fn readable(l: &TcpListener, ms: i32) -> io::Result<bool> {
    let mut p = libc::pollfd {
        fd: l.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd for the duration of the call.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    if n < 0 {
        let e = io::Error::last_os_error();
        return if e.kind() == io::ErrorKind::Interrupted {
            Ok(false)
        } else {
            Err(e)
        };
    }
    Ok(n > 0)
}

/// Serves one connection; returns a log line (None for a bare connect).
fn handle(mut s: TcpStream, shared: &Shared) -> io::Result<Option<String>> {
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(IDLE))?;
    let line = match read_line(&mut s) {
        Ok(None) => return Ok(None),
        Ok(Some(l)) => l,
        Err(e) => {
            shared.refused.fetch_add(1, Ordering::Relaxed);
            let _ = s.write_all(format!("ERR {e}\n").as_bytes());
            return Err(io::Error::new(e.kind(), format!("refused: {e}")));
        }
    };
    let opening = match Opening::parse(&line) {
        Ok(o) => o,
        Err(e) => {
            shared.refused.fetch_add(1, Ordering::Relaxed);
            let _ = s.write_all(format!("ERR {e}\n").as_bytes());
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("refused: {e}"),
            ));
        }
    };
    *shared
        .sessions
        .lock()
        .expect("session table")
        .entry(opening.session)
        .or_default() += 1;
    s.write_all(b"OK\n")?;
    s.set_read_timeout(Some(IDLE))?;
    let result = serve_request(&mut s, &opening.request);
    let mut sessions = shared.sessions.lock().expect("session table");
    if let Some(n) = sessions.get_mut(&opening.session) {
        *n -= 1;
        if *n == 0 {
            sessions.remove(&opening.session);
            shared.completed.fetch_add(1, Ordering::Relaxed);
        }
    }
    result.map(|bytes| Some(format!("{line}: {bytes} bytes")))
}

/// Carries out one request; returns the bytes moved.
fn serve_request(s: &mut TcpStream, r: &Request) -> io::Result<u64> {
    let mut buf = vec![0u8; 256 << 10];
    match *r {
        Request::Sink => {
            let mut total = 0u64;
            loop {
                match s.read(&mut buf)? {
                    0 => break,
                    n => total += n as u64,
                }
            }
            s.write_all(&total.to_le_bytes())?;
            Ok(total)
        }
        Request::Source => {
            let started = Instant::now();
            let mut total = 0u64;
            while started.elapsed() < MAX_SOURCE {
                match s.write(&buf) {
                    Ok(n) => total += n as u64,
                    // The client closing ends the test.
                    Err(_) => break,
                }
            }
            Ok(total)
        }
        Request::Echo(size) => {
            s.set_nodelay(true)?;
            let mut msg = vec![0u8; size as usize];
            let mut total = 0u64;
            loop {
                match s.read_exact(&mut msg) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e),
                }
                s.write_all(&msg)?;
                total += size;
            }
            Ok(total)
        }
    }
}
