//! Network operations of the host API. Every address is checked against the
//! grants (`--allow-net`, or the loopback peer plumb started for this pack)
//! before any name is resolved or any packet is sent.

use super::{ApiError, Capability, Host};
use crate::net::{self, ServeOptions, Server};
use std::net::{SocketAddr, ToSocketAddrs};
use std::time::Duration;

impl Host {
    /// The socket address of a granted `HOST:PORT`, or a refusal naming the rule.
    pub fn granted_addr(&self, addr: &str) -> Result<SocketAddr, ApiError> {
        let granted = self.space.net.lock().expect("grants");
        let parsed: Option<SocketAddr> = addr.parse().ok();
        let ok = granted
            .iter()
            .any(|g| g == addr || (parsed.is_some() && g.parse::<SocketAddr>().ok() == parsed));
        if !ok {
            return Err(ApiError::Invalid(format!(
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
        let handle = server.spawn();
        let addr = handle.addr().to_string();
        self.space.net.lock().expect("grants").push(addr.clone());
        *peer = Some(handle);
        Ok(addr)
    }

    /// TCP throughput against a `plumb serve` peer (capped by the deadline).
    pub fn net_throughput(
        &mut self,
        addr: &str,
        mut o: net::ThroughputOptions,
    ) -> Result<net::Throughput, ApiError> {
        let a = self.granted_addr(addr)?;
        let per_stream = if o.direction == net::Direction::Both {
            2
        } else {
            1
        };
        self.allow(Capability::Threads(o.streams.saturating_mul(per_stream)))?;
        o.duration = o.duration.min(self.time_left());
        let r = net::throughput(a, &o, &self.stop)?;
        self.check()?;
        Ok(r)
    }

    /// TCP round-trip times of `size`-byte messages.
    pub fn net_rtt(
        &mut self,
        addr: &str,
        count: u64,
        size: u64,
        interval: Duration,
    ) -> Result<net::RttResult, ApiError> {
        let a = self.granted_addr(addr)?;
        self.check()?;
        let r = net::rtt(a, count, size, interval, &self.halt());
        // Stopped by the deadline or a signal: that is the error, not the peer.
        self.check()?;
        Ok(r?)
    }

    /// TCP connect times.
    pub fn net_connect_time(
        &mut self,
        addr: &str,
        count: u64,
        timeout: Duration,
        interval: Duration,
    ) -> Result<net::ConnectTime, ApiError> {
        let a = self.granted_addr(addr)?;
        self.check()?;
        let r = net::connect_time(a, count, timeout, interval, &self.halt());
        self.check()?;
        Ok(r?)
    }

    /// Seconds until a port first accepts a connection (capped by the deadline).
    pub fn net_wait_for_port(
        &mut self,
        addr: &str,
        timeout: Duration,
        interval: Duration,
    ) -> Result<net::PortWait, ApiError> {
        let a = self.granted_addr(addr)?;
        let r = net::wait_for_port(a, timeout.min(self.time_left()), interval, &self.halt());
        self.check()?;
        Ok(r?)
    }
}
