//! An Elasticsearch/Lucene-like indexing burst, as a plumb scenario.
//!
//! Documents arrive in bursts (`burst_on` seconds at `docs_per_sec`, then
//! `burst_off` seconds of quiet) and are indexed in bulk requests of
//! `bulk_size`: each document is routed to a shard and analysed (one token
//! per 8 bytes hashed into a term dictionary: the CPU part), then each bulk
//! appends to the translog and fsyncs it (the bulk's latency). Every `refresh_every` documents, a refresh writes the buffered
//! documents as a new immutable segment and fsyncs it, and the translog is
//! trimmed. A tiered merge policy merges `merge_factor` segments of a tier
//! into one of the next tier: it reads them sequentially, writes the merged
//! segment, fsyncs it and deletes the old ones.
//!
//! Reports documents indexed per second, bulk latency p50/p99, fsyncs per
//! second, bytes written per document (write amplification) and merge time.
//! The same scenario in Rhai is `scripts/es-indexing/`.
//!
//! Build: `cargo build --manifest-path examples/Cargo.toml --target wasm32-wasip2 --release`
//! Run:   `plumb run examples/target/wasm32-wasip2/release/es_indexing.wasm -p docs=20000`

wit_bindgen::generate!({ world: "scenario", path: "../../wit" });

use plumb::bench::fs::{self, File, OpenOptions};
use plumb::bench::types::Error;
use plumb::bench::{params, report, sys, time};

fn e(err: Error) -> String {
    format!("{err:?}")
}

/// A numeric parameter (plain integers or with a k/m/g suffix).
fn param(name: &str, default: f64) -> Result<f64, String> {
    let Some(text) = params::get(name) else {
        return Ok(default);
    };
    let t = text.trim().to_ascii_lowercase();
    let (num, mult) = match t.chars().last() {
        Some('k') => (&t[..t.len() - 1], 1024.0),
        Some('m') => (&t[..t.len() - 1], 1048576.0),
        Some('g') => (&t[..t.len() - 1], 1073741824.0),
        Some('s') => (&t[..t.len() - 1], 1.0),
        _ => (&t[..], 1.0),
    };
    num.parse::<f64>()
        .map(|v| v * mult)
        .map_err(|_| format!("parameter {name}: '{text}' is not a number"))
}

struct Segment {
    name: String,
    tier: u32,
}

struct Index {
    doc_size: u64,
    translog: File,
    segments: Vec<Segment>,
    next_segment: u64,
    buffered_docs: u64,
    bytes_written: u64,
    fsyncs: u64,
    merge_seconds: f64,
    merges: u64,
    merge_factor: usize,
}

fn writer() -> OpenOptions {
    OpenOptions { read: true, write: true, create: true, truncate: true, append: false, direct: false, pattern: fs::Pattern::Random }
}

impl Index {
    /// Appends a bulk to the translog and makes it durable.
    fn bulk(&mut self, docs: u64) -> Result<(), String> {
        let bytes = docs * self.doc_size;
        self.translog.append(bytes).map_err(e)?;
        self.translog.fdatasync().map_err(e)?;
        self.bytes_written += bytes;
        self.fsyncs += 1;
        self.buffered_docs += docs;
        Ok(())
    }

    /// Writes the buffered documents as a new segment, then merges.
    fn refresh(&mut self) -> Result<(), String> {
        if self.buffered_docs == 0 {
            return Ok(());
        }
        let bytes = self.buffered_docs * self.doc_size;
        let name = format!("seg-{:06}.dat", self.next_segment);
        self.next_segment += 1;
        let t = fs::write_file(&name, bytes, fs::WriteOptions { bs: None, direct: false, fsync: true }).map_err(e)?;
        self.bytes_written += t.bytes;
        self.fsyncs += 1;
        self.translog.truncate(0).map_err(e)?;
        self.segments.push(Segment { name, tier: 0 });
        self.buffered_docs = 0;
        self.merge()
    }

    /// Tiered merging: while some tier holds merge_factor segments, merge them.
    fn merge(&mut self) -> Result<(), String> {
        loop {
            let Some(tier) = (0..8).find(|t| self.segments.iter().filter(|s| s.tier == *t).count() >= self.merge_factor) else {
                return Ok(());
            };
            let t0 = time::now();
            let (victims, rest): (Vec<Segment>, Vec<Segment>) =
                std::mem::take(&mut self.segments).into_iter().partition(|s| s.tier == tier);
            self.segments = rest;
            let mut total = 0;
            for s in &victims {
                total += fs::read_file(&s.name, fs::ReadOptions { bs: None, direct: false }).map_err(e)?.bytes;
            }
            let name = format!("seg-{:06}.dat", self.next_segment);
            self.next_segment += 1;
            let t = fs::write_file(&name, total, fs::WriteOptions { bs: None, direct: false, fsync: true }).map_err(e)?;
            self.bytes_written += t.bytes;
            self.fsyncs += 1;
            for s in &victims {
                fs::remove(&s.name).map_err(e)?;
            }
            self.segments.push(Segment { name, tier: tier + 1 });
            self.merges += 1;
            self.merge_seconds += time::now() - t0;
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((p / 100.0) * (sorted.len() - 1) as f64).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

struct EsIndexing;

impl Guest for EsIndexing {
    fn run() -> Result<(), String> {
        let docs = param("docs", 20000.0)? as u64;
        let doc_size = param("doc_size", 1024.0)? as u64;
        let bulk_size = (param("bulk_size", 500.0)? as u64).max(1);
        let docs_per_sec = param("docs_per_sec", 5000.0)?;
        let burst_on = param("burst_on", 2.0)?;
        let burst_off = param("burst_off", 1.0)?;
        let refresh_every = (param("refresh_every", 5000.0)? as u64).max(1);
        let merge_factor = (param("merge_factor", 4.0)? as usize).max(2);
        let mut index = Index {
            doc_size,
            translog: fs::open("translog.dat", writer()).map_err(e)?,
            segments: Vec::new(),
            next_segment: 0,
            buffered_docs: 0,
            bytes_written: 0,
            fsyncs: 0,
            merge_seconds: 0.0,
            merges: 0,
            merge_factor,
        };
        let mut shard_docs = [0u64; 5];
        let mut terms = vec![0u64; 1024];
        let mut token: u64 = 42;
        let cpu0 = sys::cpu_time();
        let start = time::now();
        let mut latencies = Vec::new();
        let mut indexed = 0;
        let mut since_refresh = 0;
        while indexed < docs {
            let n = bulk_size.min(docs - indexed);
            // When the last document of this bulk arrives, counting quiet periods.
            let arrival = (indexed + n) as f64 / docs_per_sec;
            let bursts = (arrival / burst_on).ceil() - 1.0;
            let due = arrival + bursts.max(0.0) * burst_off;
            let wait = due - (time::now() - start);
            if wait > 0.0 {
                time::sleep(wait).map_err(e)?;
            }
            // Per document, the CPU work of indexing (outside the bulk
            // latency, which is the I/O): route it to a shard by the hash of
            // its id, as ES does, and analyse it: one token per 8 bytes,
            // each hashed into the term dictionary.
            for i in 0..n {
                let id = indexed + i;
                let shard = ((id * 2654435761) % 4294967296) % 5;
                shard_docs[shard as usize] += 1;
                for _ in 0..doc_size / 8 {
                    token = (token * 1103515245 + 12345) % 2147483648;
                    terms[((token / 65536) % 1024) as usize] += 1;
                }
            }
            let t0 = time::now();
            index.bulk(n)?;
            latencies.push((time::now() - t0) * 1000.0);
            indexed += n;
            since_refresh += n;
            if since_refresh >= refresh_every {
                index.refresh()?;
                since_refresh = 0;
            }
        }
        index.refresh()?;
        let seconds = time::now() - start;
        let cpu = sys::cpu_time() - cpu0;
        latencies.sort_by(f64::total_cmp);
        let m = |name: &str, v: f64, unit: &str, better: &str| {
            let better = if better == "lower" { report::Better::LowerIsBetter } else { report::Better::HigherIsBetter };
            report::metric(name, v, unit, better).map_err(e)
        };
        m("docs_per_sec", docs as f64 / seconds, "docs/s", "higher")?;
        m("bulk_p50", percentile(&latencies, 50.0), "ms", "lower")?;
        m("bulk_p99", percentile(&latencies, 99.0), "ms", "lower")?;
        m("fsyncs_per_sec", index.fsyncs as f64 / seconds, "fsyncs/s", "higher")?;
        m("write_amplification", index.bytes_written as f64 / (docs * doc_size) as f64, "x", "lower")?;
        m("bytes_per_doc", index.bytes_written as f64 / docs as f64, "B", "lower")?;
        m("merge_seconds", index.merge_seconds, "s", "lower")?;
        m("merges", index.merges as f64, "", "higher")?;
        m("segments", index.segments.len() as f64, "", "lower")?;
        m("seconds", seconds, "s", "lower")?;
        let skew = *shard_docs.iter().max().unwrap_or(&0) as f64 / (*shard_docs.iter().min().unwrap_or(&1)).max(1) as f64;
        m("shard_skew", skew, "x", "lower")?;
        m("tokens", terms.iter().sum::<u64>() as f64, "", "higher")?;
        m("distinct_terms", terms.iter().filter(|v| **v > 0).count() as f64, "", "higher")?;
        m("cpu_us_per_doc", cpu * 1e6 / docs as f64, "us", "lower")?;
        Ok(())
    }
}

export!(EsIndexing);
