//! Network primitives: a `plumb serve` peer and the client measurements
//! (throughput like iperf3, TCP round trips, connect time like psping, and
//! the time until a port first accepts). The client never connects anywhere
//! by itself: the host API checks every address against the grants first.
//!
//! Client side: `throughput` (streams, with per-second `intervals` and the
//! sender's `tcp_info`), `probes` (round trips, connect
//! time, port wait) and `session` (opening a test with a peer, the error
//! type). Server side: [`server`]; the wire format both share: [`protocol`].

mod intervals;
mod local;
mod probes;
pub mod protocol;
pub mod server;
mod session;
mod tcp_info;
mod throughput;

pub use local::is_this_machine;
pub use probes::{connect_time, rtt, wait_for_port, ConnectTime, Latency, PortWait, RttResult};
pub use server::{ServeOptions, Server};
pub use session::NetError;
pub use throughput::{
    throughput, Direction, StreamResult, Throughput, ThroughputOptions, UnknownDirection,
};
