//! `fleet net`: the network between two hosts, as iperf3 between two VMs
//! — `plumb serve` on the second host, listening where the first one
//! reaches it, the `fleet-net` pack run on the first against it,
//! then the server stopped. Pairs run one after another, so their
//! streams do not share links.

use super::inventory::Host;
use super::remote::{self, Binary, Payload, Server};
use super::run::Observer;
use super::ssh::Ssh;
use super::summary::{BinaryCopy, HostReport, Stage};
use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

/// What `fleet net` does.
#[derive(Debug, Clone)]
pub struct NetPlan {
    /// How to reach the hosts.
    pub ssh: Ssh,
    /// The plumb copied to them.
    pub binary: Binary,
    /// Client and server of each pair.
    pub pairs: Vec<(Host, Host)>,
    /// The port `plumb serve` listens on.
    pub port: u16,
    /// The `fleet-net` bundle.
    pub payload: Payload,
    /// The pack sent, as the driver knows it (see [`super::sent`]).
    pub sent: super::sent::SentPack,
    /// Arguments for `plumb run` on the client (`--sha256`, `-p seconds=…`).
    pub run_args: Vec<String>,
    /// The longest a server may run (a duration text).
    pub server_limit: String,
    /// The longest the client's run may take before plumb stops it.
    pub run_limit: std::time::Duration,
    /// Where `results/` goes.
    pub out: PathBuf,
}

/// A server whose address for other hosts cannot be told.
#[derive(Debug, thiserror::Error)]
pub enum AddressError {
    /// Its `net_address` does not resolve.
    #[error("net_address '{0}' does not resolve")]
    NetAddress(String),
    /// Its name does not resolve here.
    #[error("cannot tell which address other hosts reach {server} at ('{name}' does not resolve here): give it a net_address in the inventory")]
    Unresolved {
        /// The server's name.
        server: String,
        /// The name that does not resolve.
        name: String,
    },
}

/// The address `server` is reached at by other hosts: its `net_address`,
/// else its address (or its ssh alias's `HostName`) when that is an IP
/// address, else the first address its name resolves to here.
pub fn server_address(ssh: &Ssh, server: &Host) -> Result<IpAddr, AddressError> {
    if let Some(a) = &server.net_address {
        return resolve(a).ok_or_else(|| AddressError::NetAddress(a.clone()));
    }
    if let Ok(ip) = server.address.parse::<IpAddr>() {
        return Ok(ip);
    }
    let name = ssh
        .resolved_hostname(server)
        .unwrap_or_else(|| server.address.clone());
    resolve(&name).ok_or_else(|| AddressError::Unresolved {
        server: server.name.clone(),
        name,
    })
}

fn resolve(name: &str) -> Option<IpAddr> {
    use std::net::ToSocketAddrs;
    if let Ok(ip) = name.parse::<IpAddr>() {
        return Some(ip);
    }
    (name, 0).to_socket_addrs().ok()?.map(|a| a.ip()).next()
}

/// Runs every pair; one report per pair (named `A-B`), in order.
pub fn execute(plan: &NetPlan, observer: &dyn Observer, stop: &AtomicBool) -> Vec<HostReport> {
    plan.pairs
        .iter()
        .enumerate()
        .map(|(i, (a, b))| {
            let r = pair(plan, i, a, b, observer, stop);
            observer.done(i, &r);
            r
        })
        .collect()
}

fn pair(
    plan: &NetPlan,
    i: usize,
    a: &Host,
    b: &Host,
    observer: &dyn Observer,
    stop: &AtomicBool,
) -> HostReport {
    let start = Instant::now();
    let name = format!("{}-{}", a.name, b.name);
    let report = HostReport::new(&name, &format!("{} -> {}", a.address, b.address));
    let mut copied = false;
    for h in [a, b] {
        observer.stage(i, Stage::Check, &format!("checking {}", h.name));
        let probe = match remote::check(&plan.ssh, h, &plan.binary, 0, stop) {
            Ok(p) => p,
            Err(e) => return report.failed(Stage::Check, format!("{}: {e}", h.name), start),
        };
        if !probe.cached {
            observer.stage(i, Stage::Copy, &format!("copying plumb to {}", h.name));
            if let Err(e) = remote::copy_binary(&plan.ssh, h, &plan.binary, probe.packing, stop) {
                return report.failed(Stage::Copy, format!("{}: {e}", h.name), start);
            }
            copied = true;
        }
    }
    let mut report = report;
    report.binary = Some(if copied {
        BinaryCopy::Copied
    } else {
        BinaryCopy::Cached
    });
    let ip = match server_address(&plan.ssh, b) {
        Ok(ip) => ip,
        Err(e) => return report.failed(Stage::Run, e, start),
    };
    // The server listens on the net address it was given, else on every
    // address (the one ssh reaches may be a NAT's or a bastion's).
    let listen = match &b.net_address {
        Some(_) => SocketAddr::new(ip, plan.port),
        None if ip.is_ipv6() => {
            SocketAddr::new(IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED), plan.port)
        }
        None => SocketAddr::new(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED), plan.port),
    };
    let peer = SocketAddr::new(ip, plan.port).to_string();
    observer.stage(
        i,
        Stage::Run,
        &format!("starting plumb serve on {} at {listen}", b.name),
    );
    let server = match Server::start(&plan.ssh, b, &plan.binary, listen, &plan.server_limit, stop) {
        Ok(s) => s,
        Err(e) => {
            return report.failed(Stage::Run, format!("plumb serve on {}: {e}", b.name), start)
        }
    };
    observer.stage(i, Stage::Run, &format!("{} -> {} ({peer})", a.name, b.name));
    let mut args = plan.run_args.clone();
    args.extend(
        [
            "-p",
            &format!("peer={peer}"),
            "--allow-net",
            &peer,
            "--label",
            &name,
        ]
        .map(String::from),
    );
    let outcome = remote::run(
        &plan.ssh,
        a,
        &plan.binary,
        &plan.payload,
        &args,
        plan.run_limit,
        &plan.out.join("results"),
        &mut |l| observer.line(i, l),
        stop,
    );
    server.stop();
    let outcome = match outcome {
        Ok(o) => o,
        Err(e) => return report.failed(Stage::Run, format!("{}: {e}", a.name), start),
    };
    if let Some(doc) = &outcome.document {
        match super::run::save(&plan.out, &name, &a.labels, doc.path(), &plan.sent) {
            Ok(p) => report.result = Some(p),
            Err(e) => return report.failed(Stage::Run, format!("the result: {e}"), start),
        }
    }
    match super::run::verdict(&outcome, report.result.as_deref()) {
        None => report.done(start),
        Some(why) => report.failed(Stage::Run, why, start),
    }
}
