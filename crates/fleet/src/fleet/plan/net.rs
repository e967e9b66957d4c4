//! `fleet net`'s plan: the pairs of hosts, the stream counts and the
//! built-in `fleet-net` pack run on the first host of each pair against
//! `plumb serve` on the second.

use super::{duration, payload, results_dir, Connection, PlanError};
use crate::fleet::inventory::Host;
use crate::fleet::net::NetPlan;
use crate::fleet::remote::Binary;
use crate::scenario::bundle;
use crate::scenario::pack;
use crate::terminal::clean;
use std::path::PathBuf;
use std::time::Duration;

/// A `--pair` that is not two hosts of the fleet.
#[derive(Debug, thiserror::Error)]
pub enum PairError {
    /// No such host.
    #[error("--pair: no host named '{}'", clean(.0))]
    NoHost(String),
    /// Not `A:B`.
    #[error("--pair '{}': expected A:B", clean(.0))]
    NotAPair(String),
    /// `A:A`.
    #[error("--pair '{}': two different hosts", clean(.0))]
    SameHost(String),
    /// A pair whose result file another pair has.
    #[error("--pair '{}': given twice, or named like another pair (results/{x}-{y}.json)", clean(.pair))]
    Twice {
        /// The pair as given.
        pair: String,
        /// Its first host.
        x: String,
        /// Its second host.
        y: String,
    },
}

/// What `plumb fleet net` asks for, as its options give it.
#[derive(Debug, Clone, Default)]
pub struct NetRequest {
    /// Pairs `A:B` of host names.
    pub pair: Vec<String>,
    /// Which hosts, and how ssh reaches them.
    pub connection: Connection,
    /// The port `plumb serve` listens on.
    pub port: u16,
    /// How long each throughput test runs (a duration).
    pub seconds: String,
    /// Stream counts, comma-separated.
    pub streams: String,
    /// Where `results/` and `fleet.json` go.
    pub out: PathBuf,
}

/// A `fleet net` ready to go: its plan and the content hash of the pack.
pub struct NetRun {
    /// What each pair does.
    pub plan: NetPlan,
    /// The `fleet-net` pack's content hash.
    pub pack_sha256: String,
}

impl NetRequest {
    /// Checks the request and makes the plan; no host is reached (only
    /// `OUT/results` is made).
    pub fn plan(&self) -> Result<NetRun, PlanError> {
        let (hosts, ssh) = self.connection.connect()?;
        let pairs = pairs(&self.pair, &hosts)?;
        results_dir(&self.out)?;
        let seconds = duration("--seconds", &self.seconds)?;
        let streams: Vec<u32> = self
            .streams
            .split(',')
            .map(|s| {
                s.trim()
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=128).contains(n))
            })
            .collect::<Option<_>>()
            .ok_or_else(|| PlanError::Streams(self.streams.clone()))?;
        let pack = pack::builtin("fleet-net")
            .expect("built in")
            .map_err(PlanError::Builtin)?;
        let payload = payload(&pack, "fleet-net")?;
        // Each stream count runs both ways, then RTT and connect: the server
        // lives for all of it, with room to spare.
        let server_limit = seconds
            .saturating_mul(2 * streams.len() as u32)
            .saturating_add(Duration::from_secs(120));
        let streams: Vec<String> = streams.iter().map(u32::to_string).collect();
        let run_args = vec![
            "--sha256".to_string(),
            bundle::sha256_hex(&payload.bytes),
            "-p".into(),
            format!("seconds={}", self.seconds),
            "-p".into(),
            format!("streams={}", streams.join(",")),
        ];
        let binary = Binary::current().map_err(PlanError::Binary)?;
        let plan = NetPlan {
            ssh,
            binary,
            pairs,
            port: self.port,
            sent: crate::fleet::sent::SentPack::new(&pack, &payload),
            payload,
            run_args,
            server_limit: format!("{}s", server_limit.as_secs()),
            run_limit: server_limit,
            out: self.out.clone(),
        };
        Ok(NetRun {
            plan,
            pack_sha256: pack.sha256,
        })
    }
}

/// The pairs `A:B` of `hosts`, each two different hosts, no two with the
/// same result file.
fn pairs(given: &[String], hosts: &[Host]) -> Result<Vec<(Host, Host)>, PairError> {
    let find = |n: &str| {
        hosts
            .iter()
            .find(|h| h.name == n)
            .cloned()
            .ok_or_else(|| PairError::NoHost(n.to_string()))
    };
    let mut pairs: Vec<(Host, Host)> = Vec::new();
    for p in given {
        let (x, y) = p
            .split_once(':')
            .ok_or_else(|| PairError::NotAPair(p.clone()))?;
        if x == y {
            return Err(PairError::SameHost(p.clone()));
        }
        if pairs
            .iter()
            .any(|(p, q)| format!("{}-{}", p.name, q.name) == format!("{x}-{y}"))
        {
            return Err(PairError::Twice {
                pair: p.clone(),
                x: x.to_string(),
                y: y.to_string(),
            });
        }
        pairs.push((find(x)?, find(y)?));
    }
    Ok(pairs)
}
