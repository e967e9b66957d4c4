//! Throughput streams like iperf3: parallel TCP streams to or from a
//! `plumb serve` peer for a fixed time, with receiver-side figures.

use super::intervals::Intervals;
use super::protocol::Request;
use super::session::{fail, new_session, open, NetError};
use super::tcp_info::sender_info;
use crate::halt::Halt;
use crate::meter::Meter;
use serde::Serialize;
use std::io::{self, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

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

/// A direction that is not `send`, `recv` or `both`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("direction '{0}' is not send, recv or both")]
pub struct UnknownDirection(pub String);

impl std::str::FromStr for Direction {
    type Err = UnknownDirection;
    fn from_str(s: &str) -> Result<Direction, UnknownDirection> {
        match s {
            "send" => Ok(Direction::Send),
            "recv" => Ok(Direction::Recv),
            "both" => Ok(Direction::Both),
            _ => Err(UnknownDirection(s.into())),
        }
    }
}

/// What a throughput test does: how many streams, for how long, which way
/// and in writes of what size.
#[derive(Debug, Clone)]
pub struct ThroughputOptions {
    /// Parallel streams per direction (iperf3 -P).
    pub streams: u32,
    /// Length of the test (iperf3 -t).
    pub duration: Duration,
    /// Which way the bytes flow.
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
    /// Gbit/s of each full second since the start (receiver-side: bytes
    /// received, or for a send stream the bytes the peer acknowledged).
    pub intervals: Vec<f64>,
    /// Segments this side retransmitted (send streams; None for receive
    /// streams, whose sender is the peer, or where the kernel does not say).
    pub retransmits: Option<u64>,
}

/// What a throughput test measured.
#[derive(Debug, Clone, Serialize)]
pub struct Throughput {
    /// The peer's address.
    pub addr: String,
    /// Each stream that ran, failed ones with their figures until then.
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
    /// Gbit/s of each full second, all streams together (as long as the
    /// shortest stream's list).
    pub intervals: Vec<f64>,
    /// Segments retransmitted by the send streams (None without any).
    pub retransmits: Option<u64>,
    /// The peer is this machine ([`super::is_this_machine`]): the figures
    /// are the kernel's loopback path, not a network.
    pub loopback: bool,
    /// In a scenario: when the test began, on the scenario's clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub started_s: Option<f64>,
    /// In a scenario: when it ended, on the scenario's clock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_s: Option<f64>,
}

impl Throughput {
    /// Sums the streams per direction.
    fn from_streams(addr: SocketAddr, streams: Vec<StreamResult>, seconds: f64) -> Throughput {
        let sum = |d: Direction| -> f64 {
            streams
                .iter()
                .filter(|s| s.direction == d)
                .map(|s| s.gbps)
                .sum()
        };
        let (send_gbps, recv_gbps) = (sum(Direction::Send), sum(Direction::Recv));
        let seconds_in_all = streams.iter().map(|s| s.intervals.len()).min();
        let intervals = (0..seconds_in_all.unwrap_or(0))
            .map(|i| streams.iter().map(|s| s.intervals[i]).sum())
            .collect();
        let retransmits = streams
            .iter()
            .filter_map(|s| s.retransmits)
            .reduce(|a, b| a.saturating_add(b));
        Throughput {
            addr: addr.to_string(),
            bytes: streams.iter().map(|s| s.bytes).sum(),
            streams,
            send_gbps,
            recv_gbps,
            total_gbps: send_gbps + recv_gbps,
            seconds,
            intervals,
            retransmits,
            loopback: super::is_this_machine(addr.ip()),
            started_s: None,
            ended_s: None,
        }
    }
}

/// Gbit/s for `bytes` in `secs` seconds.
fn gbps(bytes: u64, secs: f64) -> f64 {
    bytes as f64 * 8.0 / secs.max(1e-9) / 1e9
}

/// Measures TCP throughput against a `plumb serve` peer, like
/// `iperf3 -c ADDR -P streams -t duration` (receiver-side figures). Ends
/// early when `stop` says so (an error carrying the partial figures);
/// bytes moved are counted in `meter` as they go (received as reads, sent
/// as writes).
pub fn throughput(
    addr: SocketAddr,
    o: &ThroughputOptions,
    stop: &Halt,
    meter: Option<&Meter>,
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
    let failed = AtomicBool::new(false);
    let errors = Mutex::new(Vec::new());
    let start = Mutex::new(None::<Instant>);
    // Every stream connects, then all start together; a stream thread that
    // cannot start (the run's thread cap, the system) ends the test.
    let (results, _) =
        crate::gate::run_together("net", dirs.len() as u32, |i, go: &dyn Fn() -> bool| {
            let dir = dirs[i];
            let request = match dir {
                Direction::Send => Request::Sink,
                _ => Request::Source,
            };
            let conn = open(addr, session, request);
            if let Err(e) = &conn {
                failed.store(true, Ordering::Relaxed);
                push(&errors, e.to_string());
            }
            let started = go();
            let conn = conn
                .ok()
                .filter(|_| started && !failed.load(Ordering::Relaxed))?;
            let t0 = *start
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert_with(Instant::now);
            let r = match dir {
                Direction::Send => send_stream(conn, t0, o, stop, meter),
                _ => recv_stream(conn, t0, o, stop, meter),
            };
            match r {
                Ok(r) => Some(r),
                Err((partial, e)) => {
                    push(&errors, format!("{} stream: {e}", dir_name(dir)));
                    Some(partial)
                }
            }
        })
        .map_err(|e| fail(e.to_string()))?;
    let seconds = start
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .map_or(0.0, |t| t.elapsed().as_secs_f64());
    let errors = errors.into_inner().unwrap_or_else(|p| p.into_inner());
    let streams: Vec<StreamResult> = results.into_iter().flatten().collect();
    let result = Throughput::from_streams(addr, streams, seconds);
    if stop.due() {
        return Err(NetError::Interrupted {
            partial: Box::new(result),
        });
    }
    match errors.first() {
        None => Ok(result),
        Some(first) if result.streams.is_empty() => Err(fail(first.clone())),
        Some(first) => Err(NetError::Failed {
            message: format!(
                "peer {addr} failed {:.1} s into a {:.1} s test: {first}; partial figures: {:.3} Gbit/s sent, {:.3} Gbit/s received, {} bytes",
                seconds,
                o.duration.as_secs_f64(),
                result.send_gbps,
                result.recv_gbps,
                result.bytes
            ),
            partial: Some(Box::new(result)),
        }),
    }
}

/// Adds an error to the test's list.
fn push(errors: &Mutex<Vec<String>>, e: String) {
    errors.lock().unwrap_or_else(|p| p.into_inner()).push(e);
}

/// The direction's name in messages.
fn dir_name(d: Direction) -> &'static str {
    match d {
        Direction::Send => "send",
        Direction::Recv => "recv",
        Direction::Both => "both",
    }
}

/// A stream's figures, or the figures until it failed and why.
type StreamOutcome = Result<StreamResult, (StreamResult, String)>;

/// What a stream counted while it ran.
struct Progress {
    direction: Direction,
    t0: Instant,
    intervals: Intervals,
    retransmits: Option<u64>,
}

impl Progress {
    fn new(direction: Direction, t0: Instant, base: u64) -> Progress {
        Progress {
            direction,
            t0,
            intervals: Intervals::new(t0, base),
            retransmits: None,
        }
    }

    /// The stream's figures when it has moved `bytes` since the start.
    fn result(&self, bytes: u64) -> StreamResult {
        let seconds = self.t0.elapsed().as_secs_f64();
        StreamResult {
            direction: self.direction,
            bytes,
            seconds,
            gbps: gbps(bytes, seconds),
            intervals: self.intervals.gbps(),
            retransmits: self.retransmits,
        }
    }
}

/// Sends until the end, then asks the peer how much it received.
fn send_stream(
    mut s: TcpStream,
    t0: Instant,
    o: &ThroughputOptions,
    stop: &Halt,
    meter: Option<&Meter>,
) -> StreamOutcome {
    let buf = vec![0x5au8; o.buffer];
    let end = t0 + o.duration;
    let mut sent = 0u64;
    // Acknowledged bytes count what reached the receiver each second; the
    // bytes written only what reached the socket buffer.
    let acked = |s: &TcpStream| sender_info(s).map(|i| i.bytes_acked);
    let base = acked(&s);
    let mut p = Progress::new(Direction::Send, t0, base.unwrap_or(0));
    let mut now = Instant::now();
    while now < end && !stop.due() {
        match s.write(&buf) {
            Ok(n) => {
                sent += n as u64;
                if let Some(m) = meter {
                    m.add(1, 1, n as u64);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((p.result(sent), format!("sending: {e}"))),
        }
        now = Instant::now();
        p.intervals.poll(now, || acked(&s).unwrap_or(sent));
    }
    p.intervals
        .poll(Instant::now(), || acked(&s).unwrap_or(sent));
    let mut count = [0u8; 8];
    let counted = s
        .shutdown(Shutdown::Write)
        .and_then(|_| s.read_exact(&mut count));
    p.retransmits = sender_info(&s).map(|i| i.retransmits);
    match counted {
        Ok(()) => Ok(p.result(u64::from_le_bytes(count))),
        Err(e) => Err((
            p.result(sent),
            format!("waiting for the receiver's byte count: {e}"),
        )),
    }
}

/// Receives until the end; the peer closing first is a failure.
fn recv_stream(
    mut s: TcpStream,
    t0: Instant,
    o: &ThroughputOptions,
    stop: &Halt,
    meter: Option<&Meter>,
) -> StreamOutcome {
    let mut buf = vec![0u8; o.buffer.max(64 << 10)];
    let end = t0 + o.duration;
    let mut got = 0u64;
    let mut p = Progress::new(Direction::Recv, t0, 0);
    let mut now = Instant::now();
    while now < end && !stop.due() {
        match s.read(&mut buf) {
            Ok(0) => return Err((p.result(got), "the peer closed the connection".into())),
            Ok(n) => {
                got += n as u64;
                if let Some(m) = meter {
                    m.add(0, 1, n as u64);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err((p.result(got), format!("receiving: {e}"))),
        }
        now = Instant::now();
        p.intervals.poll(now, || got);
    }
    let r = p.result(got);
    let _ = s.shutdown(Shutdown::Both);
    Ok(r)
}
