//! Live metrics of a run for Prometheus: with `--metrics-listen ADDR:PORT`,
//! `plumb run`, `plumb fio` and fleet agents serve the OpenMetrics text at
//! `/metrics` while the run lasts, and linger a little after it so a last
//! scrape sees the final figures.
//!
//! [`board`] holds the figures, filled by the threads that already watch a
//! run; [`exposition`] writes them with the Prometheus project's client;
//! [`server`] is the endpoint, bounded against any peer.

pub mod board;
pub mod exposition;
pub mod server;

pub use board::{Board, JobFigures, JobTap, Latency, Scope, ScriptKind, Steps};
pub use server::{Endpoint, Limits};

use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};

/// A `--metrics-listen` value that names no address to listen on.
#[derive(Debug, thiserror::Error)]
#[error("'{given}': {why} (expected ADDR:PORT, e.g. 127.0.0.1:9464, or a port alone for loopback)")]
pub struct AddressError {
    given: String,
    why: String,
}

/// The address `--metrics-listen` names: `PORT` or `:PORT` alone is
/// loopback (127.0.0.1); `HOST:PORT` and `[V6]:PORT` are resolved, the
/// first address taken. Port 0 asks the system for a free port.
pub fn listen_address(text: &str) -> Result<SocketAddr, AddressError> {
    let err = |why: String| AddressError {
        given: crate::terminal::clean(text).chars().take(120).collect(),
        why,
    };
    let port_alone = text.strip_prefix(':').unwrap_or(text);
    if !port_alone.is_empty() && port_alone.bytes().all(|b| b.is_ascii_digit()) {
        let port: u16 = port_alone
            .parse()
            .map_err(|_| err("the port is past 65535".into()))?;
        return Ok(SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), port));
    }
    if text.len() > 300 {
        return Err(err("longer than 300 bytes".into()));
    }
    let mut found = text.to_socket_addrs().map_err(|e| err(e.to_string()))?;
    found
        .next()
        .ok_or_else(|| err("it resolves to no address".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_alone_is_loopback_and_addresses_are_kept() {
        assert_eq!(
            listen_address("9464").unwrap().to_string(),
            "127.0.0.1:9464"
        );
        assert_eq!(listen_address(":0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(
            listen_address("0.0.0.0:9464").unwrap().to_string(),
            "0.0.0.0:9464"
        );
        assert_eq!(listen_address("[::1]:9").unwrap().to_string(), "[::1]:9");
        for bad in ["", "70000", "host", "1.2.3.4", "1.2.3.4:x", "[::1]"] {
            assert!(listen_address(bad).is_err(), "{bad}");
        }
    }
}
