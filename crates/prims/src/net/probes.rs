//! Probes of a peer: TCP round trips (echoed by a `plumb serve` peer),
//! connect time (like psping, against any listening port), and the time
//! until a port first accepts. Each checks its [`Halt`] between steps.

use super::protocol::{Request, MAX_ECHO};
use super::session::{fail, new_session, open, NetError, TIMEOUT};
use crate::halt::{Halt, Halted};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// Latency percentiles in microseconds.
#[derive(Debug, Clone, Serialize)]
pub struct Latency {
    /// How many were measured (an RTT test's warm-up exchange is not).
    pub count: u64,
    /// The fastest sample.
    pub min_us: f64,
    /// The mean of all samples.
    pub mean_us: f64,
    /// Half the samples took at most this.
    pub p50_us: f64,
    /// 90th percentile.
    pub p90_us: f64,
    /// 99th percentile.
    pub p99_us: f64,
    /// 99.9th percentile.
    pub p999_us: f64,
    /// The slowest sample.
    pub max_us: f64,
}

/// The percentiles of a histogram of nanoseconds, in microseconds.
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

/// An empty histogram of nanoseconds, up to an hour, 3 significant digits.
fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600_000_000_000, 3).expect("valid histogram bounds")
}

/// Records one duration (at least 1 ns).
fn record(h: &mut Histogram<u64>, d: Duration) {
    h.saturating_record((d.as_nanos() as u64).max(1));
}

/// What an RTT test measured.
#[derive(Debug, Clone, Serialize)]
pub struct RttResult {
    /// The peer's address.
    pub addr: String,
    /// Message size in bytes.
    pub size: u64,
    /// Round-trip times.
    pub rtt: Latency,
    /// The peer is this machine ([`super::is_this_machine`]): the figures
    /// are loopback's.
    pub loopback: bool,
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
    if count == 0 || !(1..=MAX_ECHO).contains(&size) {
        return Err(fail(format!(
            "count must be positive and size between 1 and {} bytes",
            MAX_ECHO
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
        loopback: super::is_this_machine(addr.ip()),
    })
}

/// What a connect-time test measured.
#[derive(Debug, Clone, Serialize)]
pub struct ConnectTime {
    /// The peer's address.
    pub addr: String,
    /// Attempts that failed.
    pub failures: u64,
    /// Time for `connect()` to complete (the TCP handshake).
    pub connect: Latency,
    /// The peer is this machine: the figures are loopback's.
    pub loopback: bool,
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
        loopback: super::is_this_machine(addr.ip()),
    })
}

/// When a port first accepted.
#[derive(Debug, Clone, Serialize)]
pub struct PortWait {
    /// The address waited for.
    pub addr: String,
    /// Seconds until a connect succeeded.
    pub seconds: f64,
    /// Connect attempts made, the one that succeeded included.
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
