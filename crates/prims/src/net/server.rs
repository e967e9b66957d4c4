//! `plumb serve`: the peer that answers the network primitives. It accepts
//! any number of sessions (bounded concurrent connections), answers garbage
//! with an error line and goes on, and stops after a time or a number of
//! sessions when asked.

use super::protocol::{read_line, Opening, Request, MAX_ECHO};
use crate::terminal::clean;
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
/// How long a client has to send its whole request line (however it
/// trickles the bytes in, so a slow peer cannot hold a connection slot).
const OPENING: Duration = Duration::from_secs(5);
/// Longest a connection is served (a `source` fed, a `sink` or `echo` read).
const MAX_SESSION: Duration = Duration::from_secs(3600);

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
                    tracing::warn!("plumb serve: accept: {e}");
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
            let (worker, log) = (shared.clone(), self.opts.log);
            let spawned = crate::gate::thread("plumb-serve").spawn(move || {
                let outcome = handle(stream, &worker);
                if log {
                    // Peer-chosen text reaches the log only made safe to print.
                    match &outcome {
                        Ok(Some(text)) => tracing::warn!("plumb serve: {peer}: {}", clean(text)),
                        Ok(None) => {}
                        Err(e) => tracing::warn!("plumb serve: {peer}: {}", clean(&e.to_string())),
                    }
                }
                worker.active.fetch_sub(1, Ordering::Relaxed);
            });
            if let Err(e) = spawned {
                // Out of threads: this connection is dropped, the server goes on.
                shared.active.fetch_sub(1, Ordering::Relaxed);
                tracing::warn!("plumb serve: {peer}: no thread to serve it: {e}");
            }
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

    /// Serves on a background thread until the handle is dropped; fails
    /// when that thread cannot start.
    pub fn spawn(self) -> Result<ServerHandle, crate::gate::SpawnError> {
        let addr = self.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = crate::gate::thread("plumb-peer").spawn(move || {
            let _ = self.serve(&flag);
        })?;
        Ok(ServerHandle {
            addr,
            stop,
            thread: Some(thread),
        })
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
    s.set_write_timeout(Some(IDLE))?;
    let opened = Instant::now();
    let line = match read_line(&mut Deadline {
        stream: &mut s,
        until: opened + OPENING,
    }) {
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
    *table(shared).entry(opening.session).or_default() += 1;
    s.write_all(b"OK\n")?;
    s.set_read_timeout(Some(IDLE))?;
    let result = serve_request(&mut s, &opening.request);
    let mut sessions = table(shared);
    if let Some(n) = sessions.get_mut(&opening.session) {
        *n -= 1;
        if *n == 0 {
            sessions.remove(&opening.session);
            shared.completed.fetch_add(1, Ordering::Relaxed);
        }
    }
    result.map(|bytes| Some(format!("{line}: {bytes} bytes")))
}

/// The session table (a worker that panicked cannot poison it for the others).
fn table(shared: &Shared) -> std::sync::MutexGuard<'_, HashMap<u64, usize>> {
    shared
        .sessions
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A stream whose reads fail with `TimedOut` once `until` has passed: each
/// read waits at most for the time left, not a fresh timeout per byte.
struct Deadline<'a> {
    stream: &'a mut TcpStream,
    until: Instant,
}

impl Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!("request line not sent within {} s", OPENING.as_secs()),
            ));
        }
        self.stream.set_read_timeout(Some(left))?;
        match self.stream.read(buf) {
            // A socket read timeout shows as WouldBlock (EAGAIN) on Linux.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                ) =>
            {
                Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("request line not sent within {} s", OPENING.as_secs()),
                ))
            }
            other => other,
        }
    }
}

fn too_long() -> io::Error {
    io::Error::new(
        io::ErrorKind::TimedOut,
        format!("session longer than {} s", MAX_SESSION.as_secs()),
    )
}

/// Carries out one request; returns the bytes moved. Every read and write
/// times out after [`IDLE`] of silence, and a session ends after [`MAX_SESSION`].
fn serve_request(s: &mut TcpStream, r: &Request) -> io::Result<u64> {
    let started = Instant::now();
    let mut buf = vec![0u8; 256 << 10];
    match *r {
        Request::Sink => {
            let mut total = 0u64;
            loop {
                if started.elapsed() >= MAX_SESSION {
                    return Err(too_long());
                }
                match s.read(&mut buf)? {
                    0 => break,
                    n => total = total.saturating_add(n as u64),
                }
            }
            s.write_all(&total.to_le_bytes())?;
            Ok(total)
        }
        Request::Source => {
            let mut total = 0u64;
            while started.elapsed() < MAX_SESSION {
                match s.write(&buf) {
                    Ok(n) => total = total.saturating_add(n as u64),
                    // The client closing ends the test.
                    Err(_) => break,
                }
            }
            Ok(total)
        }
        Request::Echo(size) => {
            s.set_nodelay(true)?;
            // The size was bounded by the protocol (at most MAX_ECHO).
            let mut msg = vec![0u8; usize::try_from(size.min(MAX_ECHO)).unwrap_or(0)];
            let mut total = 0u64;
            loop {
                if started.elapsed() >= MAX_SESSION {
                    return Err(too_long());
                }
                match s.read_exact(&mut msg) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
                    Err(e) => return Err(e),
                }
                s.write_all(&msg)?;
                total = total.saturating_add(size);
            }
            Ok(total)
        }
    }
}
