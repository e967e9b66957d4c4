//! The client side of the network primitives. Every function takes an
//! address that the caller has already checked against the grants.

use super::protocol::{read_line, Opening, Request};
use crate::halt::{Halt, Halted};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

/// How long to wait for a connection or a silent peer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// A network measurement that failed, with what was measured before.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct NetError {
    /// What went wrong, naming the peer.
    pub message: String,
    /// Figures gathered before the failure, when the test had started.
    pub partial: Option<Throughput>,
}

fn fail(message: String) -> NetError {
    NetError {
        message,
        partial: None,
    }
}

/// Which way the bytes flow, seen from the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Client to server (iperf3's default).
    Send,
    /// Server to client (iperf3 -R).
    Recv,
    /// Both at once (iperf3 --bidir).
    Both,
}

impl std::str::FromStr for Direction {
    type Err = String;
    fn from_str(s: &str) -> Result<Direction, String> {
        match s {
            "send" => Ok(Direction::Send),
            "recv" => Ok(Direction::Recv),
            "both" => Ok(Direction::Both),
            _ => Err(format!("direction '{s}' is not send, recv or both")),
        }
    }
}

/// A throughput test.
#[derive(Debug, Clone)]
pub struct ThroughputOptions {
    /// Parallel streams per direction (iperf3 -P).
    pub streams: u32,
    /// Length of the test (iperf3 -t).
    pub duration: Duration,
    /// Direction.
    pub direction: Direction,
    /// Bytes per write (iperf3 -l, default 128 KiB).
    pub buffer: usize,
}

/// One stream's figures.
#[derive(Debug, Clone, Serialize)]
pub struct StreamResult {
    /// Direction of this stream.
    pub direction: Direction,
    /// Bytes the receiving side counted.
    pub bytes: u64,
    /// Seconds from the start to the last byte received.
    pub seconds: f64,
    /// Gbit/s.
    pub gbps: f64,
}

/// What a throughput test measured.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    /// The peer.
    pub addr: String,
    /// Every stream.
    pub streams: Vec<StreamResult>,
    /// Gbit/s client → server over all streams.
    pub send_gbps: f64,
    /// Gbit/s server → client over all streams.
    pub recv_gbps: f64,
    /// Both directions together.
    pub total_gbps: f64,
    /// Bytes received by either side.
    pub bytes: u64,
    /// Wall seconds of the test.
    pub seconds: f64,
}

impl Throughput {
    fn from_streams(addr: SocketAddr, streams: Vec<StreamResult>, seconds: f64) -> Throughput {
        let sum = |d: Direction| -> f64 {
            streams
                .iter()
                .filter(|s| s.direction == d)
                .map(|s| s.gbps)
                .sum()
        };
        let (send_gbps, recv_gbps) = (sum(Direction::Send), sum(Direction::Recv));
        Throughput {
            addr: addr.to_string(),
            bytes: streams.iter().map(|s| s.bytes).sum(),
            streams,
            send_gbps,
            recv_gbps,
            total_gbps: send_gbps + recv_gbps,
            seconds,
        }
    }
}

fn gbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 * 8.0 / secs.max(1e-9) / 1e9
}

/// Connects and opens a request; the peer must answer `OK`.
fn open(addr: SocketAddr, session: u64, request: Request) -> Result<TcpStream, NetError> {
    let mut s = TcpStream::connect_timeout(&addr, TIMEOUT)
        .map_err(|e| fail(format!("connecting to {addr}: {e}")))?;
    let io = |e: io::Error| fail(format!("opening a test with {addr}: {e}"));
    s.set_read_timeout(Some(TIMEOUT)).map_err(io)?;
    s.set_write_timeout(Some(TIMEOUT)).map_err(io)?;
    s.write_all(Opening { session, request }.line().as_bytes())
        .map_err(io)?;
    match read_line(&mut s) {
        Ok(Some(l)) if l == "OK" => Ok(s),
        Ok(Some(l)) if l.starts_with("ERR ") => {
            Err(fail(format!("{addr} refused the test: {}", &l[4..])))
        }
        Ok(Some(l)) => Err(fail(format!(
            "{addr} is not a plumb serve peer (it answered {:?})",
            l.chars().take(40).collect::<String>()
        ))),
        Ok(None) => Err(fail(format!(
            "{addr} closed the connection without answering: is it a plumb serve peer?"
        ))),
        Err(e) => Err(fail(format!(
            "{addr} did not answer like a plumb serve peer: {e}"
        ))),
    }
}

fn new_session() -> u64 {
    rand::random()
}

/// Measures TCP throughput against a `plumb serve` peer, like
/// `iperf3 -c ADDR -P streams -t duration` (receiver-side figures).
pub fn throughput(
    addr: SocketAddr,
    o: &ThroughputOptions,
    stop: &AtomicBool,
) -> Result<Throughput, NetError> {
    if o.streams == 0 || o.streams > 128 {
        return Err(fail(format!(
            "streams must be between 1 and 128, not {}",
            o.streams
        )));
    }
    if !(1..=64 << 20).contains(&o.buffer) {
        return Err(fail(format!(
            "buffer must be 1 byte to 64 MiB, not {}",
            o.buffer
        )));
    }
    let session = new_session();
    let dirs: Vec<Direction> = (0..o.streams)
        .flat_map(|_| match o.direction {
            Direction::Both => vec![Direction::Send, Direction::Recv],
            d => vec![d],
        })
        .collect();
    let barrier = Barrier::new(dirs.len());
    let failed = AtomicBool::new(false);
    let errors = Mutex::new(Vec::new());
    let start = Mutex::new(None::<Instant>);
    let results: Vec<Option<StreamResult>> = std::thread::scope(|s| {
        let handles: Vec<_> = dirs
            .iter()
            .map(|&dir| {
                let (barrier, failed, errors, start) = (&barrier, &failed, &errors, &start);
                s.spawn(move || {
                    let request = match dir {
                        Direction::Send => Request::Sink,
                        _ => Request::Source,
                    };
                    let conn = open(addr, session, request);
                    if let Err(e) = &conn {
                        failed.store(true, Ordering::Relaxed);
                        errors.lock().expect("errors").push(e.message.clone());
                    }
                    barrier.wait();
                    let conn = conn.ok().filter(|_| !failed.load(Ordering::Relaxed))?;
                    let t0 = *start
                        .lock()
                        .expect("start")
                        .get_or_insert_with(Instant::now);
                    let r = match dir {
                        Direction::Send => send_stream(conn, t0, o, stop),
                        _ => recv_stream(conn, t0, o, stop),
                    };
                    match r {
                        Ok(r) => Some(r),
                        Err((partial, e)) => {
                            errors
                                .lock()
                                .expect("errors")
                                .push(format!("{} stream: {e}", dir_name(dir)));
                            Some(partial)
                        }
                    }
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("stream thread"))
            .collect()
    });
    let seconds = start
        .into_inner()
        .expect("start")
        .map_or(0.0, |t| t.elapsed().as_secs_f64());
    let errors = errors.into_inner().expect("errors");
    let streams: Vec<StreamResult> = results.into_iter().flatten().collect();
    let result = Throughput::from_streams(addr, streams, seconds);
    if stop.load(Ordering::Relaxed) {
        return Err(NetError {
            message: "interrupted".into(),
            partial: Some(result),
        });
    }
    match errors.first() {
        None => Ok(result),
        Some(first) if result.streams.is_empty() => Err(fail(first.clone())),
        Some(first) => Err(NetError {
            message: format!(
                "peer {addr} failed {:.1} s into a {:.1} s test: {first}; partial figures: {:.3} Gbit/s sent, {:.3} Gbit/s received, {} bytes",
                seconds,
                o.duration.as_secs_f64(),
                result.send_gbps,
                result.recv_gbps,
                result.bytes
            ),
            partial: Some(result),
        }),
    }
}

fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::Send => "send",
        Direction::Recv => "recv",
        Direction::Both => "both",
    }
}

type StreamOutcome = Result<StreamResult, (StreamResult, String)>;

fn stream_result(direction: Direction, bytes: u64, t0: Instant) -> StreamResult {
    let seconds = t0.elapsed().as_secs_f64();
    StreamResult {
        direction,
        bytes,
        seconds,
        gbps: gbps(bytes, seconds),
    }
}

/// Sends until the end, then asks the peer how much it received.
fn send_stream(
    mut s: TcpStream,
    t0: Instant,
    o: &ThroughputOptions,
    stop: &AtomicBool,
) -> StreamOutcome {
    let buf = vec![0x5au8; o.buffer];
    let end = t0 + o.duration;
    let mut sent = 0u64;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        match s.write(&buf) {
            Ok(n) => sent += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err((
                    stream_result(Direction::Send, sent, t0),
                    format!("sending: {e}"),
                ))
            }
        }
    }
    let mut count = [0u8; 8];
    let counted = s
        .shutdown(Shutdown::Write)
        .and_then(|_| s.read_exact(&mut count));
    match counted {
        Ok(()) => Ok(stream_result(
            Direction::Send,
            u64::from_le_bytes(count),
            t0,
        )),
        Err(e) => Err((
            stream_result(Direction::Send, sent, t0),
            format!("waiting for the receiver's byte count: {e}"),
        )),
    }
}

/// Receives until the end; the peer closing first is a failure.
fn recv_stream(
    mut s: TcpStream,
    t0: Instant,
    o: &ThroughputOptions,
    stop: &AtomicBool,
) -> StreamOutcome {
    let mut buf = vec![0u8; o.buffer.max(64 << 10)];
    let end = t0 + o.duration;
    let mut got = 0u64;
    while Instant::now() < end && !stop.load(Ordering::Relaxed) {
        match s.read(&mut buf) {
            Ok(0) => {
                return Err((
                    stream_result(Direction::Recv, got, t0),
                    "the peer closed the connection".into(),
                ))
            }
            Ok(n) => got += n as u64,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                return Err((
                    stream_result(Direction::Recv, got, t0),
                    format!("receiving: {e}"),
                ))
            }
        }
    }
    let r = stream_result(Direction::Recv, got, t0);
    let _ = s.shutdown(Shutdown::Both);
    Ok(r)
}

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// Samples.
    pub count: u64,
    /// Smallest.
    pub min_us: f64,
    /// Mean.
    pub mean_us: f64,
    /// Median.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// Largest.
    pub max_us: f64,
}

fn latency(h: &Histogram<u64>) -> Latency {
    let us = |ns: u64| ns as f64 / 1000.0;
    Latency {
        count: h.len(),
        min_us: us(h.min()),
        mean_us: h.mean() / 1000.0,
        p50_us: us(h.value_at_quantile(0.5)),
        p90_us: us(h.value_at_quantile(0.9)),
        p99_us: us(h.value_at_quantile(0.99)),
        p999_us: us(h.value_at_quantile(0.999)),
        max_us: us(h.max()),
    }
}

fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

fn record(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record((d.as_nanos() as u64).max(1));
}

/// What an RTT test measured.
#[derive(Debug, Clone, Serialize)]
pub struct RttResult {
    /// The peer.
    pub addr: String,
    /// Message size in bytes.
    pub size: u64,
    /// Round-trip times.
    pub rtt: Latency,
}

/// How long a socket call blocks before the loop checks the deadline and
/// the stop flag again.
const POLL: Duration = Duration::from_millis(200);

/// Sends `msg` and reads the echo back into it, waking every [`POLL`] to
/// check `halt`; a peer silent for [`TIMEOUT`] is an error.
fn echo(s: &mut TcpStream, msg: &mut [u8], halt: &Halt) -> Result<(), EchoError> {
    let mut quiet = Duration::ZERO;
    let mut waited = |e: io::Error| -> Result<(), EchoError> {
        match e.kind() {
            io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => {
                halt.check().map_err(EchoError::Halted)?;
                quiet += POLL;
                if quiet >= TIMEOUT {
                    return Err(EchoError::Io(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "the peer stopped answering",
                    )));
                }
                Ok(())
            }
            io::ErrorKind::Interrupted => Ok(()),
            _ => Err(EchoError::Io(e)),
        }
    };
    let mut sent = 0;
    while sent < msg.len() {
        match s.write(&msg[sent..]) {
            Ok(0) => return Err(EchoError::Io(io::ErrorKind::WriteZero.into())),
            Ok(n) => sent += n,
            Err(e) => waited(e)?,
        }
    }
    let mut got = 0;
    while got < msg.len() {
        match s.read(&mut msg[got..]) {
            Ok(0) => return Err(EchoError::Io(io::ErrorKind::UnexpectedEof.into())),
            Ok(n) => got += n,
            Err(e) => waited(e)?,
        }
    }
    Ok(())
}

/// Why one echo did not complete.
enum EchoError {
    /// The deadline passed or a stop was requested.
    Halted(Halted),
    /// The connection failed.
    Io(io::Error),
}

/// TCP round trips of `size`-byte messages echoed by a `plumb serve` peer,
/// `count` of them `interval` apart, ending early (with the partial figures
/// in the error) when `halt` says so.
pub fn rtt(
    addr: SocketAddr,
    count: u64,
    size: u64,
    interval: Duration,
    halt: &Halt,
) -> Result<RttResult, NetError> {
    if count == 0 || !(1..=super::protocol::MAX_ECHO).contains(&size) {
        return Err(fail(format!(
            "count must be positive and size between 1 and {} bytes",
            super::protocol::MAX_ECHO
        )));
    }
    let mut s = open(addr, new_session(), Request::Echo(size))?;
    let setup = |e: io::Error| fail(format!("{addr}: {e}"));
    s.set_nodelay(true).map_err(setup)?;
    s.set_read_timeout(Some(POLL)).map_err(setup)?;
    s.set_write_timeout(Some(POLL)).map_err(setup)?;
    let mut msg = vec![0x42u8; size as usize];
    let mut h = histogram();
    for i in 0..=count {
        let partial = |h: &Histogram<u64>| {
            let l = latency(h);
            format!(
                "after {} of {count} round trips; partial figures: p50 {:.1} µs, p99 {:.1} µs",
                l.count, l.p50_us, l.p99_us
            )
        };
        // An echo only looks at the clock while it waits: a fast peer
        // answers every time, so each round trip starts with a look.
        if let Err(why) = halt.check() {
            return Err(fail(format!("{why} {}", partial(&h))));
        }
        let t = Instant::now();
        match echo(&mut s, &mut msg, halt) {
            Ok(()) => {}
            Err(EchoError::Halted(why)) => {
                return Err(fail(format!("{why} {}", partial(&h))));
            }
            Err(EchoError::Io(e)) => {
                return Err(fail(format!("peer {addr} failed {}: {e}", partial(&h))));
            }
        }
        // The first exchange warms the path up and is not counted.
        if i > 0 {
            record(&mut h, t.elapsed());
        }
        if !interval.is_zero() && i < count {
            if let Err(why) = halt.sleep(interval) {
                return Err(fail(format!("{why} {}", partial(&h))));
            }
        }
    }
    Ok(RttResult {
        addr: addr.to_string(),
        size,
        rtt: latency(&h),
    })
}

/// What a connect-time test measured.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectTime {
    /// The peer.
    pub addr: String,
    /// Attempts that failed.
    pub failures: u64,
    /// Time for `connect()` to complete (the TCP handshake).
    pub connect: Latency,
}

/// Times `count` TCP connects (what psping measures); each connection is
/// closed at once without sending anything. Each connect waits at most
/// `timeout` and never past the deadline; `halt` is checked between connects
/// and during the `interval` sleeps.
pub fn connect_time(
    addr: SocketAddr,
    count: u64,
    timeout: Duration,
    interval: Duration,
    halt: &Halt,
) -> Result<ConnectTime, NetError> {
    if count == 0 {
        return Err(fail("count must be positive".into()));
    }
    let mut h = histogram();
    let mut failures = 0;
    let mut last_error = None;
    for i in 0..count {
        if let Err(why) = halt.check() {
            return Err(fail(format!("{why} after {i} connects")));
        }
        let t = Instant::now();
        let wait = timeout.min(halt.time_left()).max(Duration::from_millis(1));
        match TcpStream::connect_timeout(&addr, wait) {
            Ok(s) => {
                record(&mut h, t.elapsed());
                drop(s);
            }
            Err(e) => {
                failures += 1;
                last_error = Some(e);
            }
        }
        if !interval.is_zero() && i + 1 < count {
            if let Err(why) = halt.sleep(interval) {
                return Err(fail(format!("{why} after {} connects", i + 1)));
            }
        }
    }
    if h.is_empty() {
        return Err(fail(format!(
            "none of {count} connects to {addr} succeeded: {}",
            last_error.map_or_else(String::new, |e| e.to_string())
        )));
    }
    Ok(ConnectTime {
        addr: addr.to_string(),
        failures,
        connect: latency(&h),
    })
}

/// When a port first accepted.
#[derive(Debug, Clone, Serialize)]
pub struct PortWait {
    /// The address.
    pub addr: String,
    /// Seconds until a connect succeeded.
    pub seconds: f64,
    /// Connect attempts made.
    pub attempts: u64,
}

/// Tries to connect every `interval` until it works, `timeout` passes or
/// `halt` says to stop.
pub fn wait_for_port(
    addr: SocketAddr,
    timeout: Duration,
    interval: Duration,
    halt: &Halt,
) -> Result<PortWait, NetError> {
    let start = Instant::now();
    let mut attempts = 0;
    loop {
        attempts += 1;
        let left = timeout.saturating_sub(start.elapsed());
        let try_for = left
            .min(Duration::from_secs(1))
            .max(Duration::from_millis(10));
        let error = match TcpStream::connect_timeout(&addr, try_for) {
            Ok(_) => {
                return Ok(PortWait {
                    addr: addr.to_string(),
                    seconds: start.elapsed().as_secs_f64(),
                    attempts,
                })
            }
            Err(e) => e,
        };
        if start.elapsed().saturating_add(interval) >= timeout || halt.sleep(interval).is_err() {
            return Err(fail(format!(
                "{addr} did not accept a connection within {:.1} s ({attempts} attempts; last: {error})",
                timeout.as_secs_f64()
            )));
        }
    }
}
