//! Network operations of the host API, each with its options, defaults and
//! rules. Every address is checked against the grants (`--allow-net`, or the
//! loopback peer plumb started for this pack) before any name is resolved or
//! any packet is sent.

use super::background::{Task, TaskKind};
use super::options::{by_name, positive, Bytes, Seconds};
use super::{ApiError, Capability, Host};
use crate::halt::Halt;
use crate::net::{self, Direction, ServeOptions, Server};
use serde::Deserialize;
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

/// TCP streams running in the background, as scripts and guests hold them.
pub type ThroughputHandle = Task<net::Throughput>;

/// Threads a throughput test runs: one per stream and direction.
fn stream_threads(t: &net::ThroughputOptions) -> u32 {
    let per_stream = if t.direction == Direction::Both { 2 } else { 1 };
    t.streams.saturating_mul(per_stream)
}

/// The required `HOST:PORT` of a network call.
fn required_addr(call: &str, addr: &str) -> Result<(), ApiError> {
    if addr.is_empty() {
        return Err(ApiError::Invalid(format!(
            "{call}: addr (\"HOST:PORT\") is required"
        )));
    }
    Ok(())
}

/// `net::throughput`: TCP streams against a `plumb serve` peer, as
/// `iperf3 -P streams -t duration [-R | --bidir] -l buffer` (defaults: 1
/// stream, 10 s, send, 128 KiB writes).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ThroughputOptions {
    /// The peer, `HOST:PORT` (required, and granted).
    pub addr: String,
    /// Parallel streams per direction.
    pub streams: u32,
    /// Length of the test (capped by the deadline).
    pub duration: Seconds,
    /// Which way the bytes flow.
    #[serde(deserialize_with = "by_name")]
    pub direction: Direction,
    /// Bytes per write.
    pub buffer: Bytes,
}

impl Default for ThroughputOptions {
    fn default() -> Self {
        ThroughputOptions {
            addr: String::new(),
            streams: 1,
            duration: Seconds(10.0),
            direction: Direction::Send,
            buffer: Bytes(128 << 10),
        }
    }
}

impl ThroughputOptions {
    /// The primitive's options; the primitive bounds streams and buffer.
    pub fn validate(&self) -> Result<net::ThroughputOptions, ApiError> {
        let call = "net::throughput";
        required_addr(call, &self.addr)?;
        Ok(net::ThroughputOptions {
            // The primitive checks the streams (1 to 128).
            streams: self.streams,
            duration: self.duration.positive(call, "duration")?,
            direction: self.direction,
            buffer: usize::try_from(self.buffer.0).unwrap_or(usize::MAX),
        })
    }
}

/// `net::rtt`: `count` round trips of `size`-byte messages, `interval`
/// apart (defaults: 1000 round trips of 64 bytes, back to back).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RttOptions {
    /// The peer, `HOST:PORT` (required, and granted).
    pub addr: String,
    /// Round trips.
    pub count: u64,
    /// Bytes per message.
    pub size: Bytes,
    /// Pause between round trips (0 to 3600 s).
    pub interval: Seconds,
}

impl Default for RttOptions {
    fn default() -> Self {
        RttOptions {
            addr: String::new(),
            count: 1000,
            size: Bytes(64),
            interval: Seconds(0.0),
        }
    }
}

impl RttOptions {
    /// Checks the address, count and interval (returned as a duration);
    /// the primitive bounds the size.
    pub fn validate(&self) -> Result<Duration, ApiError> {
        let call = "net::rtt";
        required_addr(call, &self.addr)?;
        positive(call, "count", self.count)?;
        self.interval.interval(call, "interval")
    }
}

/// `net::connect_time`: `count` TCP handshakes, each given up after
/// `timeout` (defaults: 10 handshakes, 5 s, back to back). Any port works.
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConnectOptions {
    /// The peer, `HOST:PORT` (required, and granted).
    pub addr: String,
    /// Handshakes to time, one after another.
    pub count: u64,
    /// How long one handshake may take.
    pub timeout: Seconds,
    /// Pause between handshakes (0 to 3600 s).
    pub interval: Seconds,
}

impl Default for ConnectOptions {
    fn default() -> Self {
        ConnectOptions {
            addr: String::new(),
            count: 10,
            timeout: Seconds(5.0),
            interval: Seconds(0.0),
        }
    }
}

impl ConnectOptions {
    /// Checks every field; returns the timeout and the interval.
    pub fn validate(&self) -> Result<(Duration, Duration), ApiError> {
        let call = "net::connect_time";
        required_addr(call, &self.addr)?;
        positive(call, "count", self.count)?;
        Ok((
            self.timeout.positive(call, "timeout")?,
            self.interval.interval(call, "interval")?,
        ))
    }
}

/// `net::wait_for_port`: tries to connect every `interval` until the port
/// accepts or `timeout` passes (defaults: 60 s, every 0.1 s).
#[derive(Debug, Clone, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WaitOptions {
    /// The port, `HOST:PORT` (required, and granted).
    pub addr: String,
    /// How long to keep trying (capped by the deadline).
    pub timeout: Seconds,
    /// Pause between attempts (0 to 3600 s).
    pub interval: Seconds,
}

impl Default for WaitOptions {
    fn default() -> Self {
        WaitOptions {
            addr: String::new(),
            timeout: Seconds(60.0),
            interval: Seconds(0.1),
        }
    }
}

impl WaitOptions {
    /// Checks every field; returns the timeout and the interval.
    pub fn validate(&self) -> Result<(Duration, Duration), ApiError> {
        let call = "net::wait_for_port";
        required_addr(call, &self.addr)?;
        Ok((
            self.timeout.positive(call, "timeout")?,
            self.interval.interval(call, "interval")?,
        ))
    }
}

impl Host {
    /// The socket address of a granted `HOST:PORT`, or a refusal naming the rule.
    pub fn granted_addr(&self, addr: &str) -> Result<SocketAddr, ApiError> {
        let granted = self.space.net.lock().expect("grants");
        let parsed: Option<SocketAddr> = addr.parse().ok();
        let ok = granted
            .iter()
            .any(|g| g == addr || (parsed.is_some() && g.parse::<SocketAddr>().ok() == parsed));
        if !ok {
            return Err(ApiError::Denied(format!(
                "network access to {addr} was not granted (rule: --allow-net HOST:PORT; granted: {})",
                if granted.is_empty() {
                    "none".to_string()
                } else {
                    granted.join(", ")
                }
            )));
        }
        if let Some(a) = parsed {
            return Ok(a);
        }
        addr.to_socket_addrs()
            .map_err(|e| ApiError::Invalid(format!("resolving {addr}: {e}")))?
            .next()
            .ok_or_else(|| ApiError::Invalid(format!("{addr} resolves to no address")))
    }

    /// Starts (once per pack) a `plumb serve` peer on loopback and grants it.
    pub fn local_peer(&mut self) -> Result<String, ApiError> {
        let mut peer = self.space.peer.lock().expect("peer");
        if let Some(p) = peer.as_ref() {
            return Ok(p.addr().to_string());
        }
        let server =
            Server::bind("127.0.0.1:0", ServeOptions::default()).map_err(|e| ApiError::Os {
                op: "starting the loopback peer".into(),
                source: e,
            })?;
        let handle = server.spawn().map_err(|e| ApiError::Failed {
            op: "net::local_peer",
            message: format!("cannot start the loopback peer: {e}"),
        })?;
        let addr = handle.addr().to_string();
        self.space.net.lock().expect("grants").push(addr.clone());
        *peer = Some(handle);
        Ok(addr)
    }

    /// Notes, once per scenario run, that the peer `a` is this machine:
    /// what is measured against it is loopback, not a network.
    fn note_local_peer(&mut self, a: SocketAddr) -> Result<(), ApiError> {
        if !net::is_this_machine(a.ip()) {
            return Ok(());
        }
        self.note_once(&format!("peer {a}"), &format!(
            "the network peer {a} is this machine: its figures measure loopback, not a network (marked loopback)"
        ))
    }

    /// TCP throughput against a `plumb serve` peer (capped by the deadline).
    pub fn net_throughput(&mut self, o: &ThroughputOptions) -> Result<net::Throughput, ApiError> {
        let (a, t) = self.throughput_plan(o)?;
        let mut r = net::throughput(a, &t, &Halt::new(self.stop.clone(), None), None)?;
        self.check()?;
        (r.started_s, r.ended_s) = self.clock().ending_now(r.seconds).fields();
        Ok(r)
    }

    /// Starts TCP streams in the background (`net::start_throughput`):
    /// traffic beside a foreground workload. Stopped early, its result is
    /// the figures so far.
    pub fn start_throughput(
        &mut self,
        o: &ThroughputOptions,
    ) -> Result<ThroughputHandle, ApiError> {
        const OP: &str = "net::start_throughput";
        let (a, t) = self.throughput_plan(o)?;
        self.task_room(OP, &o.addr, stream_threads(&t))?;
        // Each stream's buffer (a receiver's at least 64 KiB) is held
        // against the scenario's buffers while the test runs.
        let buffers = (t.buffer.max(64 << 10) as u64).saturating_mul(u64::from(stream_threads(&t)));
        let lease = self.handle_budget().lease(OP, buffers)?;
        let kind = TaskKind {
            op: OP,
            on_result: |_, _| {},
            describe: |r: &net::Throughput| {
                format!("{:.3} Gbit/s over {:.2} s", r.total_gbps, r.seconds)
            },
        };
        let name = o.addr.clone();
        self.spawn_task(kind, &name, stream_threads(&t), move |ctx| {
            let _lease = lease;
            let mut r = match net::throughput(a, &t, &ctx.stops(), Some(&ctx.meter)) {
                Ok(r) => r,
                // Stopped (its own stop, the scenario's end or a signal):
                // the figures so far are its result. A stream that failed
                // is still an error.
                Err(net::NetError::Interrupted { partial }) => *partial,
                Err(e) => return Err(e.into()),
            };
            (r.started_s, r.ended_s) = ctx.clock.ending_now(r.seconds).fields();
            Ok(r)
        })
    }

    /// The checked options and granted address of a throughput test, its
    /// threads allowed and its length capped at the time left.
    fn throughput_plan(
        &mut self,
        o: &ThroughputOptions,
    ) -> Result<(SocketAddr, net::ThroughputOptions), ApiError> {
        let mut t = o.validate()?;
        let a = self.granted_addr(&o.addr)?;
        self.allow(Capability::Threads(stream_threads(&t)))?;
        self.note_local_peer(a)?;
        t.duration = t.duration.min(self.time_left());
        Ok((a, t))
    }

    /// TCP round-trip times of `size`-byte messages.
    pub fn net_rtt(&mut self, o: &RttOptions) -> Result<net::RttResult, ApiError> {
        let interval = o.validate()?;
        let a = self.granted_addr(&o.addr)?;
        self.note_local_peer(a)?;
        self.check()?;
        let r = net::rtt(a, o.count, o.size.0, interval, &self.halt());
        // Stopped by the deadline or a signal: that is the error, not the peer.
        self.check()?;
        Ok(r?)
    }

    /// TCP connect times.
    pub fn net_connect_time(&mut self, o: &ConnectOptions) -> Result<net::ConnectTime, ApiError> {
        let (timeout, interval) = o.validate()?;
        let a = self.granted_addr(&o.addr)?;
        self.note_local_peer(a)?;
        self.check()?;
        let r = net::connect_time(a, o.count, timeout, interval, &self.halt());
        self.check()?;
        Ok(r?)
    }

    /// Seconds until a port first accepts a connection (capped by the deadline).
    pub fn net_wait_for_port(&mut self, o: &WaitOptions) -> Result<net::PortWait, ApiError> {
        let (timeout, interval) = o.validate()?;
        let a = self.granted_addr(&o.addr)?;
        let timeout = timeout.min(self.time_left());
        let r = net::wait_for_port(a, timeout, interval, &self.halt());
        self.check()?;
        Ok(r?)
    }
}
