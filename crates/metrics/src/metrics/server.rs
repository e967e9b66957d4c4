//! The `/metrics` endpoint: one thread of plumb's own that accepts, reads,
//! answers and closes, bounded in everything a peer controls.
//!
//! - One request per connection (`Connection: close`); `GET /metrics` (a
//!   query string allowed) is answered with the OpenMetrics text when its
//!   `Accept` asks for it (Prometheus does), else with Prometheus's classic
//!   text format (curl, `promtool check metrics`); another
//!   method on `/metrics` with 405, another path with 404, a request
//!   httparse cannot read with 400, a head longer than
//!   [`Limits::max_request_bytes`] with 431.
//! - At most [`Limits::max_connections`] connections at once: one more
//!   closes the oldest that has not sent its request yet (a flood of idle
//!   connections cannot keep a scraper out), or itself when all are being
//!   answered.
//! - A request must arrive within [`Limits::request_timeout`] of the
//!   connection, whatever trickles in (slowloris), and the answer must be
//!   taken within [`Limits::response_timeout`]; else the connection is
//!   closed.
//! - Sockets are non-blocking and one `poll(2)` waits on all of them, so no
//!   peer can block the thread; it runs at a lower priority (nice 10) than
//!   the job threads, which it never touches: it reads the [`Board`] the job
//!   watcher fills.
//! - A body is encoded at most every [`REENCODE_AFTER`] and shared by the
//!   scrapes in between, so a flood of scrapes costs neither memory nor
//!   CPU in proportion.
//!
//! httparse (the parser under hyper) reads the request head; no small
//! maintained server crate bounds connections, head sizes and time
//! together (tiny_http starts a thread per waiting connection and has no
//! read deadline).

use super::board::Board;
use super::exposition::{self, Format};
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long an encoded body is served again before it is encoded anew
/// (the job watcher publishes every 200 ms).
pub const REENCODE_AFTER: Duration = Duration::from_millis(100);
/// Longest the thread sleeps in `poll` before it looks at its stop flag.
const POLL_MS: i32 = 100;
/// Most connections accepted in one round of the loop.
const ACCEPT_BATCH: usize = 256;
/// Most headers a request may have.
const MAX_HEADERS: usize = 32;

/// The bounds of the endpoint.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Bytes of a request head (request line and headers).
    pub max_request_bytes: usize,
    /// Time from the connection to the end of its request head.
    pub request_timeout: Duration,
    /// Time to hand over the answer.
    pub response_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 64,
            max_request_bytes: 8 << 10,
            request_timeout: Duration::from_secs(2),
            response_timeout: Duration::from_secs(5),
        }
    }
}

/// What the endpoint did, for its owner and the tests.
#[derive(Debug, Default)]
pub struct Counts {
    /// Connections accepted.
    pub accepted: AtomicU64,
    /// `GET /metrics` answered.
    pub scrapes: AtomicU64,
    /// Of those, scrapes that saw the run ended.
    pub final_scrapes: AtomicU64,
    /// Connections closed before an answer: evicted, timed out, or gone.
    pub dropped: AtomicU64,
    /// Requests refused (400, 404, 405, 431).
    pub refused: AtomicU64,
}

/// The endpoint could not start.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// Why.
        source: std::io::Error,
    },
    /// The thread could not be started.
    #[error("cannot start the endpoint's thread: {0}")]
    Thread(std::io::Error),
}

/// A running endpoint; stopped when dropped.
#[derive(Debug)]
pub struct Endpoint {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
    thread: Option<JoinHandle<()>>,
}

impl Endpoint {
    /// Listens on `addr` and serves `board` until stopped.
    pub fn start(
        addr: SocketAddr,
        board: Arc<Board>,
        limits: Limits,
    ) -> Result<Endpoint, EndpointError> {
        let listener =
            TcpListener::bind(addr).map_err(|source| EndpointError::Bind { addr, source })?;
        let local = listener
            .local_addr()
            .map_err(|source| EndpointError::Bind { addr, source })?;
        listener
            .set_nonblocking(true)
            .map_err(|source| EndpointError::Bind { addr, source })?;
        let stop = Arc::new(AtomicBool::new(false));
        let counts = Arc::new(Counts::default());
        let (flag, tally) = (stop.clone(), counts.clone());
        // plumb's own thread, not the scenario's work: outside the run's
        // thread cap, as the progress printer.
        let thread = std::thread::Builder::new()
            .name("plumb-metrics".into())
            .stack_size(256 << 10)
            .spawn(move || {
                lower_priority();
                Server {
                    listener,
                    board,
                    limits,
                    counts: tally,
                    conns: Vec::new(),
                    cached: [None, None],
                }
                .serve(&flag)
            })
            .map_err(EndpointError::Thread)?;
        Ok(Endpoint {
            addr: local,
            stop,
            counts,
            thread: Some(thread),
        })
    }

    /// The address it listens on (the port chosen when 0 was asked).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// What it did so far.
    pub fn counts(&self) -> &Counts {
        &self.counts
    }
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Runs this thread at nice 10, so the job threads win the CPU from it
/// (best effort: a failure leaves the priority as it was).
fn lower_priority() {
    // SAFETY: gettid has no preconditions; setpriority on this thread's id
    // changes this thread only.
    unsafe {
        let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, tid, 10);
    }
}

/// Where a connection is.
enum Stage {
    /// Reading the request head, until the deadline.
    Reading { head: Vec<u8> },
    /// Writing the answer from `at`, until the deadline.
    Writing { answer: Answer, at: usize },
    /// Answered and shut for writing: what the peer still sends is read
    /// and dropped (at most [`DRAIN_BYTES`], until the deadline), so that
    /// closing with unread bytes does not reset the connection before the
    /// peer has read the answer.
    Draining { left: usize },
}

/// Most bytes read and dropped after an answer.
const DRAIN_BYTES: usize = 256 << 10;
/// Longest wait for the peer to close after an answer.
const DRAIN_TIME: Duration = Duration::from_secs(1);

/// An answer: its head, and a body perhaps shared with other connections.
struct Answer {
    head: Vec<u8>,
    body: Arc<Vec<u8>>,
}

impl Answer {
    fn len(&self) -> usize {
        self.head.len() + self.body.len()
    }

    fn bytes_from(&self, at: usize) -> &[u8] {
        if at < self.head.len() {
            &self.head[at..]
        } else {
            &self.body[at - self.head.len()..]
        }
    }
}

struct Conn {
    stream: TcpStream,
    accepted: Instant,
    deadline: Instant,
    stage: Stage,
}

/// A body encoded for a scrape, served again for a moment.
struct Cached {
    /// When it was encoded.
    at: Instant,
    /// Whether the run was still going then.
    running: bool,
    /// The text.
    body: Arc<Vec<u8>>,
}

struct Server {
    listener: TcpListener,
    board: Arc<Board>,
    limits: Limits,
    counts: Arc<Counts>,
    conns: Vec<Conn>,
    /// The last body encoded in each format.
    cached: [Option<Cached>; 2],
}

impl Server {
    fn serve(mut self, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            let mut fds = Vec::with_capacity(self.conns.len() + 1);
            fds.push(libc::pollfd {
                fd: self.listener.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            });
            for c in &self.conns {
                let events = match c.stage {
                    Stage::Reading { .. } | Stage::Draining { .. } => libc::POLLIN,
                    Stage::Writing { .. } => libc::POLLOUT,
                };
                fds.push(libc::pollfd {
                    fd: c.stream.as_raw_fd(),
                    events,
                    revents: 0,
                });
            }
            let now = Instant::now();
            let wait = self
                .conns
                .iter()
                .map(|c| c.deadline.saturating_duration_since(now))
                .min()
                .map_or(POLL_MS, |d| (d.as_millis() as i32).clamp(1, POLL_MS));
            // SAFETY: `fds` is a valid array of pollfd of the given length.
            let ready = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, wait) };
            if ready < 0 {
                // EINTR (a signal): look at the stop flag and go on.
                continue;
            }
            // Connections first (their indices match `fds`), then new ones.
            let mut keep = Vec::with_capacity(self.conns.len());
            let conns = std::mem::take(&mut self.conns);
            let now = Instant::now();
            for (c, fd) in conns.into_iter().zip(&fds[1..]) {
                if let Some(c) = self.step(c, fd.revents, now) {
                    keep.push(c);
                }
            }
            self.conns = keep;
            if fds[0].revents & libc::POLLIN != 0 {
                self.accept();
            }
        }
    }

    /// Accepts what waits, within the connection bound.
    fn accept(&mut self) {
        for _ in 0..ACCEPT_BATCH {
            let stream = match self.listener.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                // A connection reset before it was accepted, or out of
                // descriptors: the next round tries again, a moment later
                // (the listener stays readable, and poll would not wait).
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(10));
                    return;
                }
            };
            self.counts.accepted.fetch_add(1, Ordering::Relaxed);
            if stream.set_nonblocking(true).is_err() {
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            if self.conns.len() >= self.limits.max_connections {
                // Close the oldest connection still to send its request (or
                // already answered); when every one is being answered, the
                // new one.
                let oldest = self
                    .conns
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| !matches!(c.stage, Stage::Writing { .. }))
                    .min_by_key(|(_, c)| c.accepted)
                    .map(|(i, _)| i);
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                match oldest {
                    Some(i) => {
                        self.conns.swap_remove(i);
                    }
                    None => continue,
                }
            }
            let now = Instant::now();
            self.conns.push(Conn {
                stream,
                accepted: now,
                deadline: now + self.limits.request_timeout,
                stage: Stage::Reading { head: Vec::new() },
            });
        }
    }

    /// Moves one connection on; None when it is done or dropped.
    fn step(&mut self, mut c: Conn, revents: i16, now: Instant) -> Option<Conn> {
        if now >= c.deadline {
            if !matches!(c.stage, Stage::Draining { .. }) {
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            }
            return None;
        }
        if revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        match &mut c.stage {
            Stage::Reading { head } if revents & (libc::POLLIN | libc::POLLHUP) != 0 => {
                let mut chunk = [0u8; 2048];
                let room = self.limits.max_request_bytes + 1 - head.len();
                match c.stream.read(&mut chunk[..room.min(2048)]) {
                    Ok(0) => {
                        self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                        return None;
                    }
                    Ok(n) => head.extend_from_slice(&chunk[..n]),
                    Err(e)
                        if e.kind() == ErrorKind::WouldBlock
                            || e.kind() == ErrorKind::Interrupted =>
                    {
                        return Some(c)
                    }
                    Err(_) => {
                        self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                        return None;
                    }
                }
                let answer = match self.route(head) {
                    Some(a) => a,
                    None => return Some(c),
                };
                c.stage = Stage::Writing { answer, at: 0 };
                c.deadline = now + self.limits.response_timeout;
                self.write(c)
            }
            Stage::Writing { .. } if revents & (libc::POLLOUT | libc::POLLHUP) != 0 => {
                self.write(c)
            }
            Stage::Draining { left } if revents & (libc::POLLIN | libc::POLLHUP) != 0 => {
                let mut chunk = [0u8; 2048];
                match c.stream.read(&mut chunk[..(*left).min(2048)]) {
                    Ok(n) if n > 0 && n < *left => {
                        *left -= n;
                        Some(c)
                    }
                    Err(e)
                        if e.kind() == ErrorKind::WouldBlock
                            || e.kind() == ErrorKind::Interrupted =>
                    {
                        Some(c)
                    }
                    // The peer closed, sent too much, or is gone.
                    _ => None,
                }
            }
            _ => Some(c),
        }
    }

    /// Writes what the socket takes; once all is written, shuts the
    /// connection for writing and drains it. None when the peer is gone.
    fn write(&mut self, mut c: Conn) -> Option<Conn> {
        let Stage::Writing { answer, at } = &mut c.stage else {
            return Some(c);
        };
        while *at < answer.len() {
            match c.stream.write(answer.bytes_from(*at)) {
                Ok(0) => return None,
                Ok(n) => *at += n,
                Err(e)
                    if e.kind() == ErrorKind::WouldBlock || e.kind() == ErrorKind::Interrupted =>
                {
                    return Some(c)
                }
                Err(_) => {
                    self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                    return None;
                }
            }
        }
        let _ = c.stream.shutdown(std::net::Shutdown::Write);
        c.stage = Stage::Draining { left: DRAIN_BYTES };
        c.deadline = Instant::now() + DRAIN_TIME;
        Some(c)
    }

    /// The answer to a request head so far, or None while it is incomplete
    /// and within its bound.
    fn route(&mut self, head: &[u8]) -> Option<Answer> {
        let mut headers = [httparse::EMPTY_HEADER; MAX_HEADERS];
        let mut req = httparse::Request::new(&mut headers);
        let refuse = |counts: &Counts, status: &str, extra: &str| {
            counts.refused.fetch_add(1, Ordering::Relaxed);
            Some(plain(status, extra))
        };
        match req.parse(head) {
            Ok(httparse::Status::Partial) if head.len() > self.limits.max_request_bytes => {
                refuse(&self.counts, "431 Request Header Fields Too Large", "")
            }
            Ok(httparse::Status::Partial) => None,
            Err(httparse::Error::TooManyHeaders) => {
                refuse(&self.counts, "431 Request Header Fields Too Large", "")
            }
            Err(_) => refuse(&self.counts, "400 Bad Request", ""),
            Ok(httparse::Status::Complete(_)) => {
                let path = req.path.unwrap_or("");
                let path = path.split_once('?').map_or(path, |(p, _)| p);
                match (req.method, path) {
                    (Some("GET"), "/metrics") => {
                        let accept = req
                            .headers
                            .iter()
                            .find(|h| h.name.eq_ignore_ascii_case("accept"))
                            .map(|h| h.value);
                        Some(self.metrics(Format::from_accept(accept)))
                    }
                    (_, "/metrics") => {
                        refuse(&self.counts, "405 Method Not Allowed", "Allow: GET\r\n")
                    }
                    _ => refuse(&self.counts, "404 Not Found", ""),
                }
            }
        }
    }

    /// The answer to a scrape: the board now (or as encoded a moment ago).
    fn metrics(&mut self, format: Format) -> Answer {
        let running = self.board.running();
        let cached = &mut self.cached[format as usize];
        let fresh = cached
            .as_ref()
            .filter(|c| c.running == running && c.at.elapsed() < REENCODE_AFTER)
            .map(|c| c.body.clone());
        let body = fresh.unwrap_or_else(|| {
            let body = Arc::new(exposition::encode(self.board.snapshot(), format).into_bytes());
            *cached = Some(Cached {
                at: Instant::now(),
                running,
                body: body.clone(),
            });
            body
        });
        self.counts.scrapes.fetch_add(1, Ordering::Relaxed);
        if !running {
            self.counts.final_scrapes.fetch_add(1, Ordering::Relaxed);
        }
        Answer {
            head: format!(
                "HTTP/1.1 200 OK\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                format.content_type(),
                body.len()
            )
            .into_bytes(),
            body,
        }
    }
}

/// A short plain-text answer with `status` and `extra` header lines.
fn plain(status: &str, extra: &str) -> Answer {
    let body = format!("{status}\n").into_bytes();
    Answer {
        head: format!(
            "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
            body.len()
        )
        .into_bytes(),
        body: Arc::new(body),
    }
}
