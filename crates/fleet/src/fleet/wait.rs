//! `fleet wait`: how long until hosts first accept a TCP connection on a
//! port — a new machine's name resolved again on each attempt (it may not
//! resolve at first), then its port polled, every host in a thread.

use crate::halt::Halt;
use crate::net::{wait_for_port, NetError, PortWait};
use crate::terminal::clean;
use std::time::{Duration, Instant};

/// A host spec that is not `HOST`, `HOST:PORT` or `[ADDR]:PORT`.
#[derive(Debug, thiserror::Error)]
#[error("'{}' is not HOST, HOST:PORT or [ADDR]:PORT", clean(.0))]
pub struct NotAHost(pub String);

/// Why a host did not answer.
#[derive(Debug, thiserror::Error)]
pub enum WaitError {
    /// Its name did not resolve in time.
    #[error("'{host}' did not resolve within {seconds:.1} s")]
    Unresolved {
        /// The name.
        host: String,
        /// The time waited.
        seconds: f64,
    },
    /// Its port did not answer in time (or the wait was stopped).
    #[error(transparent)]
    Port(#[from] NetError),
    /// The thread that waited for it panicked.
    #[error("the waiting thread panicked")]
    Panicked,
}

/// `HOST`, `HOST:PORT` or `[V6]:PORT` as a host and a port (`port` when
/// the spec gives none).
pub fn target(spec: &str, port: u16) -> Result<(String, u16), NotAHost> {
    let fail = || NotAHost(spec.to_string());
    let (host, p) = if let Some(v6) = spec.strip_prefix('[') {
        let (h, rest) = v6.split_once(']').ok_or_else(fail)?;
        (h, rest.strip_prefix(':'))
    } else if spec.matches(':').count() > 1 {
        (spec, None)
    } else {
        match spec.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (spec, None),
        }
    };
    let port = match p {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(fail)?,
        None => port,
    };
    let ok = !host.is_empty()
        && host.len() <= 253
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '%'));
    if !ok {
        return Err(fail());
    }
    Ok((host.to_string(), port))
}

/// Waits for every target at once; each one shown as `HOST:PORT` (or
/// `[V6]:PORT`) with its outcome, in the order given.
pub fn all(
    targets: &[(String, u16)],
    timeout: Duration,
    interval: Duration,
    halt: &Halt,
) -> Vec<(String, Result<PortWait, WaitError>)> {
    std::thread::scope(|s| {
        let handles: Vec<_> = targets
            .iter()
            .map(|(host, port)| s.spawn(move || one(host, *port, timeout, interval, halt)))
            .collect();
        targets
            .iter()
            .zip(handles)
            .map(|((h, p), j)| {
                let shown = if h.contains(':') {
                    format!("[{h}]:{p}")
                } else {
                    format!("{h}:{p}")
                };
                (shown, j.join().unwrap_or(Err(WaitError::Panicked)))
            })
            .collect()
    })
}

/// Waits for one host: its name is resolved again on each attempt (a new
/// VM's name may not resolve at first), then its port polled.
pub fn one(
    host: &str,
    port: u16,
    timeout: Duration,
    interval: Duration,
    halt: &Halt,
) -> Result<PortWait, WaitError> {
    use std::net::ToSocketAddrs;
    let start = Instant::now();
    loop {
        let left = timeout.saturating_sub(start.elapsed());
        if let Some(addr) = (host, port)
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
        {
            let resolved = start.elapsed();
            let mut w = wait_for_port(addr, left.max(Duration::from_millis(10)), interval, halt)?;
            w.seconds += resolved.as_secs_f64();
            return Ok(w);
        }
        if start.elapsed() + interval >= timeout || halt.sleep(interval).is_err() {
            return Err(WaitError::Unresolved {
                host: host.to_string(),
                seconds: timeout.as_secs_f64(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_ports_and_v6_addresses_are_read_and_odd_specs_refused() {
        assert_eq!(target("db1", 22).unwrap(), ("db1".into(), 22));
        assert_eq!(target("db1:2222", 22).unwrap(), ("db1".into(), 2222));
        assert_eq!(target("[::1]:80", 22).unwrap(), ("::1".into(), 80));
        assert_eq!(target("fe80::1", 22).unwrap(), ("fe80::1".into(), 22));
        for bad in ["", "db1:0", "db1:x", "[::1", "a b", "db1;rm"] {
            assert!(target(bad, 22).is_err(), "{bad}");
        }
        assert_eq!(
            target("db1:0", 22).unwrap_err().to_string(),
            "'db1:0' is not HOST, HOST:PORT or [ADDR]:PORT"
        );
    }
}
