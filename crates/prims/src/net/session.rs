//! Opening a test with a `plumb serve` peer, and the error every client
//! measurement returns. Every function takes an address that the caller has
//! already checked against the grants.

use super::protocol::{read_line, Opening, Request};
use super::throughput::Throughput;
use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long to wait for a connection or a silent peer.
pub(super) const TIMEOUT: Duration = Duration::from_secs(10);

/// A network measurement that did not run to its end.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    /// Its stop flag was set (its own stop, the scenario's end, a signal):
    /// the figures so far are the test's result.
    #[error("interrupted")]
    Interrupted {
        /// What was measured until the stop.
        partial: Box<Throughput>,
    },
    /// The test failed.
    #[error("{message}")]
    Failed {
        /// What went wrong, naming the peer.
        message: String,
        /// Figures gathered before the failure, when the test had started.
        partial: Option<Box<Throughput>>,
    },
}

/// A failure with no figures to show.
pub(super) fn fail(message: String) -> NetError {
    NetError::Failed {
        message,
        partial: None,
    }
}

/// Connects and opens a request; the peer must answer `OK`.
pub(super) fn open(
    addr: SocketAddr,
    session: u64,
    request: Request,
) -> Result<TcpStream, NetError> {
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

/// A random id that ties a test's connections together on the peer.
pub(super) fn new_session() -> u64 {
    rand::random()
}
