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
//! Searches run beside the indexing: a searcher (a background `io.start`
//! job) reads 4 KiB at random over the segments written so far,
//! `searches_per_sec` of them (direct reads), and is reopened after every
//! refresh over the new set of segments, as Lucene reopens its reader.
//!
//! Reports documents indexed per second, bulk latency p50/p99, search
//! latency p50/p99/p99.9 over all the searchers, fsyncs per second, bytes
//! written per document (write amplification) and merge time.
//! The same scenario in Rhai is `scripts/es-indexing/`.
//!
//! Build: `cargo build --manifest-path examples/Cargo.toml --target wasm32-wasip2 --release`
//! Run:   `plumb run examples/target/wasm32-wasip2/release/es_indexing.wasm -p docs=20000`

wit_bindgen::generate!({ world: "scenario", path: "../../wit" });

use plumb::bench::fs::{self, File, OpenOptions};
use plumb::bench::io::{self, JobHandle, JobResult};
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
    size: u64,
}

/// A searcher over `segments`, reading at random within the first bytes of
/// each (as many as the smallest holds); none with nothing to search.
fn searcher(segments: &[Segment], rate: u64) -> Result<Option<JobHandle>, String> {
    let Some(smallest) = segments.iter().map(|s| s.size).min() else { return Ok(None) };
    if rate == 0 {
        return Ok(None);
    }
    let names: Vec<&str> = segments.iter().map(|s| s.name.as_str()).collect();
    let options = [
        ("name", "search".to_string()),
        ("filename", names.join(":")),
        ("rw", "randread".into()),
        ("bs", "4k".into()),
        ("iodepth", "1".into()),
        ("ioengine", "psync".into()),
        ("direct", "1".into()),
        ("size", (smallest * segments.len() as u64).to_string()),
        ("rate_iops", rate.to_string()),
        ("time_based", "1".into()),
        ("runtime", "24h".into()),
    ];
    let pairs: Vec<(String, String)> = options.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
    io::start(&pairs).map(Some).map_err(e)
}

/// A stopped searcher's latency distribution: its count and its percentile
/// grid (percent, ns).
struct Generation {
    n: u64,
    grid: [(f64, u64); 8],
}

impl From<JobResult> for Generation {
    fn from(r: JobResult) -> Self {
        let l = r.read.clat;
        Generation {
            n: r.read.total_ios,
            grid: [(0.0, l.min_ns), (50.0, l.p50_ns), (90.0, l.p90_ns), (95.0, l.p95_ns), (99.0, l.p99_ns), (99.9, l.p999_ns), (99.99, l.p9999_ns), (100.0, l.max_ns)],
        }
    }
}

/// The q-th percentile (ns) of the searchers together: the smallest grid
/// value below which q% of all searches fall, each searcher's distribution
/// read as a step function of its grid.
fn merged(gens: &[Generation], q: f64) -> u64 {
    let total: u64 = gens.iter().map(|g| g.n).sum();
    if total == 0 {
        return 0;
    }
    let mut values: Vec<u64> = gens.iter().flat_map(|g| g.grid.iter().map(|p| p.1)).collect();
    values.sort_unstable();
    for &v in &values {
        let c: f64 = gens
            .iter()
            .map(|g| g.grid.iter().filter(|p| p.1 <= v).map(|p| p.0 / 100.0).fold(0.0, f64::max) * g.n as f64)
            .sum();
        if c >= q / 100.0 * total as f64 {
            return v;
        }
    }
    values.last().copied().unwrap_or(0)
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
    searches_per_sec: u64,
    search: Option<JobHandle>,
    searched: Vec<Generation>,
}

fn writer() -> OpenOptions {
    OpenOptions { read: Some(true), write: Some(true), create: Some(true), truncate: Some(true), append: None, direct: None, pattern: None }
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
        let t = fs::write_file(&name, bytes, fs::WriteOptions { bs: None, direct: None, fsync: Some(true) }).map_err(e)?;
        self.bytes_written += t.bytes;
        self.fsyncs += 1;
        self.translog.truncate(0).map_err(e)?;
        self.segments.push(Segment { name, tier: 0, size: t.bytes });
        self.buffered_docs = 0;
        self.merge()?;
        // Reopen the searcher over the segments there are now.
        self.stop_searcher()?;
        self.search = searcher(&self.segments, self.searches_per_sec)?;
        Ok(())
    }

    /// Stops the searcher, keeping its latencies.
    fn stop_searcher(&mut self) -> Result<(), String> {
        if let Some(h) = self.search.take() {
            self.searched.push(h.stop().map_err(e)?.into());
        }
        Ok(())
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
                total += fs::read_file(&s.name, fs::ReadOptions { bs: None, direct: None }).map_err(e)?.bytes;
            }
            let name = format!("seg-{:06}.dat", self.next_segment);
            self.next_segment += 1;
            let t = fs::write_file(&name, total, fs::WriteOptions { bs: None, direct: None, fsync: Some(true) }).map_err(e)?;
            self.bytes_written += t.bytes;
            self.fsyncs += 1;
            for s in &victims {
                fs::remove(&s.name).map_err(e)?;
            }
            self.segments.push(Segment { name, tier: tier + 1, size: t.bytes });
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
        let searches_per_sec = param("searches_per_sec", 200.0)?.max(0.0) as u64;
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
            searches_per_sec,
            search: None,
            searched: Vec::new(),
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
            // Live on a dashboard with --metrics-listen:
            // plumb_script_documents_indexed_total.
            report::counter("documents_indexed", n as f64).map_err(e)?;
            if since_refresh >= refresh_every {
                index.refresh()?;
                since_refresh = 0;
            }
        }
        index.refresh()?;
        let seconds = time::now() - start;
        let cpu = sys::cpu_time() - cpu0;
        index.stop_searcher()?;
        latencies.sort_by(f64::total_cmp);
        let m = |name: &str, v: f64, unit: &str, better: &str| {
            let better = if better == "lower" { report::Better::LowerIsBetter } else { report::Better::HigherIsBetter };
            report::metric(name, v, unit, better, &[]).map_err(e)
        };
        m("docs_per_sec", docs as f64 / seconds, "docs/s", "higher")?;
        m("bulk_p50", percentile(&latencies, 50.0), "ms", "lower")?;
        m("bulk_p99", percentile(&latencies, 99.0), "ms", "lower")?;
        if searches_per_sec > 0 {
            let gens = &index.searched;
            m("search_p50", merged(gens, 50.0) as f64 / 1e6, "ms", "lower")?;
            m("search_p99", merged(gens, 99.0) as f64 / 1e6, "ms", "lower")?;
            m("search_p99_9", merged(gens, 99.9) as f64 / 1e6, "ms", "lower")?;
            m("searches", gens.iter().map(|g| g.n).sum::<u64>() as f64, "", "higher")?;
            m("searchers", gens.len() as f64, "", "higher")?;
        }
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
