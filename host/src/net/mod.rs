//! Network primitives: a `plumb serve` peer and the client measurements
//! (throughput like iperf3, TCP round trips, connect time like psping, and
//! the time until a port first accepts). The client never connects anywhere
//! by itself: the host API checks every address against the grants first.

pub mod client;
pub mod protocol;
pub mod server;

pub use client::{
    connect_time, rtt, throughput, wait_for_port, ConnectTime, Direction, Latency, NetError,
    PortWait, RttResult, StreamResult, Throughput, ThroughputOptions,
};
pub use server::{ServeOptions, Server};
