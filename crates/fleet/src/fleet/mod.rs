//! Fleets: the same pack on many machines over the system's OpenSSH, and
//! one comparison at the end (`plumb fleet run`, `fleet net`, `fleet wait`).
//!
//! - [`inventory`]: the machines, from a TOML inventory, a
//!   PerfKitBenchmarker static-machine file or `-H` specs, all checked;
//! - [`ssh`]: the transport (the system's `ssh`, quoting, one-line reasons);
//! - [`remote`]: each step on a host (check, copy plumb, run, serve, sweep);
//! - [`protocol`] and [`agent`]: the two ends of a session, the agent being
//!   the `plumb fleet agent` that runs on the host and cleans up after
//!   itself when the session ends;
//! - [`plan`]: the commands' requests checked and turned into plans,
//!   before any host is reached;
//! - [`run`] and [`net`]: the fleet commands' work, host by host in threads;
//! - [`wait`]: the time until hosts answer on a port;
//! - [`sent`]: the pack sent, and what a host's result may claim of it;
//! - [`summary`]: what they report (`fleet.json`).
//!
//! Nothing here prints: progress goes to an [`run::Observer`] the command
//! layer supplies.

pub mod agent;
pub mod inventory;
pub mod net;
pub mod plan;
pub mod protocol;
pub mod remote;
pub mod run;
pub mod sent;
pub mod ssh;
pub mod summary;
pub mod wait;
