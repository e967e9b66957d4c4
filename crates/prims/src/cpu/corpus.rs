//! A deterministic, realistic corpus for the compression and JSON kernels:
//! JSON log records with words from a vocabulary, numbers, ids and
//! timestamps, so it compresses like real application data (≈ 3–5×), not
//! like zeros or random bytes.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

const WORDS: &[&str] = &[
    "request",
    "user",
    "session",
    "index",
    "shard",
    "replica",
    "segment",
    "merge",
    "flush",
    "refresh",
    "query",
    "cache",
    "timeout",
    "connection",
    "accepted",
    "rejected",
    "bulk",
    "document",
    "field",
    "mapping",
    "node",
    "cluster",
    "health",
    "green",
    "yellow",
    "red",
    "latency",
    "throughput",
    "disk",
    "memory",
    "thread",
    "pool",
    "queue",
    "retry",
    "error",
    "warning",
    "info",
    "debug",
    "started",
    "stopped",
    "completed",
    "failed",
    "the",
    "a",
    "of",
    "to",
    "in",
    "for",
    "on",
    "with",
    "from",
    "after",
    "before",
    "while",
];

/// One log record.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// Timestamp in milliseconds.
    pub ts: u64,
    /// Severity.
    pub level: String,
    /// Emitting service.
    pub service: String,
    /// Request id.
    pub request_id: String,
    /// Free text.
    pub message: String,
    /// Duration in milliseconds.
    pub took_ms: f64,
    /// Labels.
    pub tags: Vec<String>,
    /// HTTP-like status.
    pub status: u16,
}

/// Records whose JSON text is about `bytes` long (fixed seed: same every run).
pub fn records(bytes: u64) -> Vec<Record> {
    let mut rng = SmallRng::seed_from_u64(0x706c756d62);
    let mut out = Vec::new();
    let mut size = 0u64;
    let mut ts = 1_790_000_000_000u64;
    while size < bytes {
        ts += rng.random_range(0..50);
        let words = rng.random_range(4..16);
        let message = (0..words)
            .map(|_| WORDS[rng.random_range(0..WORDS.len())])
            .collect::<Vec<_>>()
            .join(" ");
        let r = Record {
            ts,
            level: ["INFO", "WARN", "DEBUG", "ERROR"][rng.random_range(0..4)].to_string(),
            service: format!("svc-{}", rng.random_range(0..12)),
            request_id: format!("{:016x}", rng.random::<u64>()),
            message,
            took_ms: (rng.random::<f64>() * 500.0 * 100.0).round() / 100.0,
            tags: (0..rng.random_range(0..4))
                .map(|_| WORDS[rng.random_range(0..WORDS.len())].to_string())
                .collect(),
            status: [200, 200, 200, 201, 404, 500][rng.random_range(0..6)],
        };
        size += serde_json::to_vec(&r).map_or(0, |v| v.len() as u64 + 1);
        out.push(r);
    }
    out
}

/// The corpus as newline-delimited JSON text of about `bytes`.
pub fn text(bytes: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes as usize + 512);
    for r in records(bytes) {
        serde_json::to_writer(&mut out, &r).expect("serialize to memory");
        out.push(b'\n');
    }
    out
}
