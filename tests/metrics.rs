//! `--metrics-listen`: the live `/metrics` endpoint, scraped by Debian's
//! real Prometheus, linted by `promtool`, and attacked by hostile peers
//! while a job runs.

use crate::util::{doc, plumb_bin, require_tool, test_cache, workdir};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// A loopback port nobody listens on now (bound, then let go).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A plumb run in the background whose stderr is read by a thread: the
/// endpoint's address as plumb printed it, and every line for the end.
struct Running {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Running {
    /// Starts `plumb ARGS` in `dir` and waits (at most a minute) for its
    /// `plumb: metrics at http://ADDR/metrics` line.
    fn start(dir: &Path, args: &[&str]) -> (Running, SocketAddr) {
        let mut child = Command::new(plumb_bin())
            .args(args)
            .env("PLUMB_CACHE_DIR", test_cache())
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start plumb");
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut run = Running {
            child,
            lines: rx,
            seen: Vec::new(),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match run.lines.recv_timeout(left) {
                Ok(line) => {
                    let addr = line
                        .strip_prefix("plumb: metrics at http://")
                        .and_then(|a| a.strip_suffix("/metrics"))
                        .map(|a| a.parse().unwrap());
                    run.seen.push(line);
                    if let Some(addr) = addr {
                        return (run, addr);
                    }
                }
                Err(_) => panic!("no metrics address from plumb:\n{}", run.seen.join("\n")),
            }
        }
    }

    /// Waits for plumb to exit (at most `limit`); its exit code, stdout and
    /// stderr.
    fn wait(mut self, limit: Duration) -> (i32, String, String) {
        let start = Instant::now();
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                panic!("plumb still ran after {limit:?}:\n{}", self.seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        let mut out = String::new();
        self.child
            .stdout
            .take()
            .unwrap()
            .read_to_string(&mut out)
            .unwrap();
        while let Ok(l) = self.lines.recv_timeout(Duration::from_secs(1)) {
            self.seen.push(l);
        }
        (status.code().unwrap_or(-1), out, self.seen.join("\n"))
    }
}

/// One HTTP exchange on a fresh connection: the status line, the head and
/// the body, as far as the server sent them within `limit`.
fn exchange(addr: SocketAddr, request: &[u8], limit: Duration) -> (String, String, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(limit)).unwrap();
    // A server that closes early may refuse the rest of a long request.
    let _ = s.write_all(request);
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.lines().next().unwrap_or("").to_string();
    (status, head.to_string(), body.to_string())
}

/// `GET /metrics`, optionally asking for OpenMetrics as Prometheus does.
fn scrape(addr: SocketAddr, openmetrics: bool) -> (String, String, String) {
    let accept = if openmetrics {
        "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5\r\n"
    } else {
        ""
    };
    let req = format!("GET /metrics HTTP/1.1\r\nHost: plumb\r\n{accept}\r\n");
    exchange(addr, req.as_bytes(), Duration::from_secs(5))
}

/// Percent-encodes a query parameter.
fn encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Now, in Unix seconds.
fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs_f64()
}

/// Debian's Prometheus, scraping one target every second, with its data
/// in a temporary directory; killed when dropped.
struct Prometheus {
    child: Child,
    addr: SocketAddr,
}

impl Prometheus {
    fn start(dir: &Path, target: SocketAddr) -> Prometheus {
        require_tool("prometheus", "--version", "prometheus");
        let config = dir.join("prometheus.yml");
        std::fs::write(
            &config,
            format!(
                "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n\
                 scrape_configs:\n  - job_name: plumb\n    static_configs:\n      - targets: ['{target}']\n"
            ),
        )
        .unwrap();
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
        let child = Command::new("prometheus")
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("start prometheus");
        let p = Prometheus { child, addr };
        let deadline = Instant::now() + Duration::from_secs(60);
        while !scrape_path(addr, "/-/ready").0.contains("200") {
            assert!(
                Instant::now() < deadline,
                "prometheus was not ready within a minute:\n{}",
                std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        // Targets reach the scrape loop a few seconds after start (the
        // discovery manager batches its updates): wait for a first scrape
        // (of nothing yet, `up` 0) so the run is scraped from its start.
        while p.query(r#"up{job="plumb"}"#, now_secs()).is_empty() {
            assert!(
                Instant::now() < deadline,
                "prometheus did not scrape within a minute"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
        p
    }

    /// An instant query at `time` (Unix seconds): the result vector.
    fn query(&self, promql: &str, time: f64) -> Vec<serde_json::Value> {
        let path = format!("/api/v1/query?query={}&time={time:.3}", encode(promql));
        let (status, _, body) = scrape_path(self.addr, &path);
        assert!(status.contains("200"), "{promql}: {status}\n{body}");
        let v: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["status"], "success", "{promql}: {body}");
        v["data"]["result"].as_array().cloned().unwrap_or_default()
    }

    /// The one sample of an instant query, as a number.
    fn value(&self, promql: &str, time: f64) -> f64 {
        let r = self.query(promql, time);
        assert_eq!(r.len(), 1, "{promql}: {r:?}");
        r[0]["value"][1].as_str().unwrap().parse().unwrap()
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn scrape_path(addr: SocketAddr, path: &str) -> (String, String, String) {
    let req = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    match TcpStream::connect(addr) {
        Ok(_) => exchange(addr, req.as_bytes(), Duration::from_secs(10)),
        Err(e) => (e.to_string(), String::new(), String::new()),
    }
}

/// A scenario's 10 s job (held at 2,000 IOPS, so that it runs beside other
/// tests without taking a core) and its own series, scraped every second by
/// a real Prometheus: the rate of the I/O counter over the job is the job's IOPS,
/// the final scrape holds the job's exact count, and the scenario's counter
/// and gauge are there.
#[test]
fn prometheus_scrapes_a_ten_second_job_and_a_scenarios_own_series() {
    let dir = workdir();
    let port = free_port();
    let endpoint: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let prom = Prometheus::start(dir.path(), endpoint);
    std::fs::write(
        dir.path().join("soak.rhai"),
        r#"
        report::counter("documents_indexed", 40);
        report::gauge("queue_depth", 7);
        let j = io::job(#{ name: "soak", rw: "randread", size: "32M", bs: "4k",
                           ioengine: "psync", runtime: "10s", time_based: true,
                           rate_iops: 2000 });
        report::counter("documents_indexed", 2);
        report::gauge("queue_depth", 3);
        report::metric("iops", j.read.iops, "IOPS", "higher");
        report::metric("ios", j.read.total_ios, "", "higher");
        "#,
    )
    .unwrap();
    let target = dir.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let listen = endpoint.to_string();
    let (run, _) = Running::start(
        dir.path(),
        &[
            "run",
            "soak.rhai",
            "--target",
            target.to_str().unwrap(),
            "--label",
            "soak-test",
            "--json",
            "soak.json",
            "--metrics-listen",
            &listen,
            "--metrics-linger",
            "20s",
        ],
    );
    let (code, out, err) = run.wait(Duration::from_secs(120));
    assert_eq!(code, 0, "{out}\n{err}");
    let d = doc(&dir.path().join("soak.json"));
    let m = |n: &str| crate::util::metric(&d, "soak", n).unwrap();
    let (iops, ios) = (m("iops"), m("ios"));
    assert!(ios > 1000.0, "the job did I/O: {ios}");

    let now = now_secs();
    let sel = r#"plumb_io_operations_total{jobname="soak",direction="read",label="soak-test",scenario="soak"}"#;
    assert_eq!(
        prom.value(r#"up{job="plumb"}"#, now),
        1.0,
        "the scrapes succeeded"
    );
    // The raw samples, to find the scrapes taken while the job ran.
    let raw = prom.query(&format!("{sel}[5m]"), now);
    assert_eq!(raw.len(), 1, "one series for the job: {raw:?}");
    let samples: Vec<(f64, f64)> = raw[0]["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p[0].as_f64().unwrap(),
                p[1].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect();
    let last = samples.last().unwrap().1;
    assert_eq!(
        last, ios,
        "the last scrape holds the job's count: {samples:?}"
    );
    let during: Vec<&(f64, f64)> = samples
        .iter()
        .filter(|(_, v)| *v > 0.0 && *v < ios)
        .collect();
    assert!(
        during.len() >= 6,
        "scrapes while the 10 s job ran: {samples:?}"
    );
    let (first_t, last_t) = (during[0].0, during[during.len() - 1].0);
    // A window holding exactly those samples: Prometheus's rate is their
    // increase over their time apart (no extrapolation to speak of).
    let window = last_t - first_t + 0.001;
    let rate = prom.value(
        &format!("rate({sel}[{}ms])", (window * 1000.0) as u64),
        last_t,
    );
    let ratio = rate / iops;
    println!("Prometheus's rate {rate:.0}/s, the job's {iops:.0} IOPS: ×{ratio:.4}");
    assert!(
        (0.9..=1.1).contains(&ratio),
        "Prometheus's rate {rate:.0}/s against the job's {iops:.0} IOPS: ×{ratio:.3} (samples {samples:?})"
    );
    // The histogram counted every completion.
    let count = prom.value(
        r#"plumb_io_latency_seconds_count{jobname="soak",direction="read"}"#,
        now,
    );
    assert_eq!(count, ios);
    let inf = prom.value(
        r#"plumb_io_latency_seconds_bucket{jobname="soak",direction="read",le="+Inf"}"#,
        now,
    );
    assert_eq!(inf, ios);
    // The scenario's own series, with its final values.
    assert_eq!(
        prom.value(
            r#"plumb_script_documents_indexed_total{pack="soak",scenario="soak",label="soak-test"}"#,
            now
        ),
        42.0
    );
    assert_eq!(prom.value("plumb_script_queue_depth", now), 3.0);
    // The run's description and its end.
    let info = prom.query("plumb_run_info", now);
    assert_eq!(info.len(), 1, "{info:?}");
    assert_eq!(info[0]["metric"]["pack"], "soak");
    assert_eq!(info[0]["metric"]["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(
        info[0]["metric"]["pack_sha256"].as_str().unwrap().len(),
        64,
        "{info:?}"
    );
    assert_eq!(prom.value("plumb_run_progress_ratio", now), 1.0);
    assert_eq!(
        prom.value("plumb_run_running", now),
        0.0,
        "a scrape saw the end"
    );
    assert!(prom.value(r#"plumb_cpu_seconds_total{mode="user"}"#, now) > 0.0);
}

/// `promtool check metrics` accepts a scrape (Prometheus's classic text,
/// which a scrape that does not ask for OpenMetrics gets), and the
/// OpenMetrics answer is well formed: its content type, `# EOF` at the end.
#[test]
fn promtool_accepts_a_scrape_and_openmetrics_is_served_when_asked() {
    require_tool("promtool", "--version", "prometheus");
    let dir = workdir();
    let (run, addr) = Running::start(
        dir.path(),
        &[
            "fio",
            "--name=lint",
            "--rw=randrw",
            "--size=8M",
            "--bs=4k",
            "--ioengine=psync",
            "--runtime=3",
            "--time_based",
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-linger",
            "5s",
        ],
    );
    std::thread::sleep(Duration::from_millis(1500));
    let (status, head, body) = scrape(addr, false);
    assert!(status.contains("200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    assert!(
        body.contains(r#"plumb_io_operations_total{label="#),
        "{body}"
    );
    let mut lint = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    lint.stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let linted = lint.wait_with_output().unwrap();
    assert!(
        linted.status.success(),
        "promtool check metrics: {}{}\n{body}",
        String::from_utf8_lossy(&linted.stdout),
        String::from_utf8_lossy(&linted.stderr)
    );
    let (status, head, body) = scrape(addr, true);
    assert!(status.contains("200"), "{head}");
    assert!(
        head.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert!(body.contains("# TYPE plumb_run info\n"), "{body}");
    assert!(
        body.contains(r#"plumb_io_latency_seconds_bucket{le="0.000001024",label="#),
        "{body}"
    );
    // Both directions of a randrw job.
    for d in ["read", "write"] {
        let line = body
            .lines()
            .find(|l| {
                l.starts_with("plumb_io_bytes_total{") && l.contains(&format!("direction=\"{d}\""))
            })
            .unwrap_or_else(|| panic!("{d}: {body}"));
        let v: f64 = line.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(v > 0.0, "{line}");
    }
    let (code, out, err) = run.wait(Duration::from_secs(60));
    assert_eq!(code, 0, "{out}\n{err}");
}

/// Hostile peers while a job runs: garbage, a huge head, a slow head, a
/// flood of idle connections, a POST, another path — each answered or
/// closed within bounds, a real scrape still answered, and the run ends as
/// it should. The job is held at 2,000 IOPS: it goes on without taking a
/// core from the tests beside it.
#[test]
fn hostile_peers_are_answered_or_closed_within_bounds_while_the_run_goes_on() {
    let dir = workdir();
    let (run, addr) = Running::start(
        dir.path(),
        &[
            "fio",
            "--name=busy",
            "--rw=randread",
            "--size=8M",
            "--bs=4k",
            "--ioengine=psync",
            "--runtime=12",
            "--time_based",
            "--rate_iops=2000",
            "--metrics-listen",
            "127.0.0.1:0",
            "--metrics-linger",
            "5s",
        ],
    );
    let quick = Duration::from_secs(3);
    let timed = |what: &str, request: &[u8], want: &str| {
        let start = Instant::now();
        let (status, head, _) = exchange(addr, request, quick);
        assert!(status.contains(want), "{what}: {status:?}\n{head}");
        assert!(start.elapsed() < quick, "{what} took {:?}", start.elapsed());
    };
    timed("garbage", b"\x16\x03\x01\x00\xa5garbage\r\n\r\n", "400");
    timed(
        "an HTTP/2 preface",
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
        "400",
    );
    timed(
        "a POST",
        b"POST /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
        "405",
    );
    timed("a HEAD", b"HEAD /metrics HTTP/1.1\r\n\r\n", "405");
    timed("another path", b"GET /admin HTTP/1.1\r\n\r\n", "404");
    timed(
        "a path near /metrics",
        b"GET /metricsx HTTP/1.1\r\n\r\n",
        "404",
    );
    let mut huge = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
    huge.extend(std::iter::repeat_n(b'a', 64 << 10));
    huge.extend_from_slice(b"\r\n\r\n");
    timed("a 64 KiB header", &huge, "431");
    let mut many = b"GET /metrics HTTP/1.1\r\n".to_vec();
    for i in 0..100 {
        many.extend_from_slice(format!("X-{i}: y\r\n").as_bytes());
    }
    many.extend_from_slice(b"\r\n");
    timed("100 headers", &many, "431");

    // Slowloris: a byte of a header every 200 ms is closed after the
    // request deadline (2 s), whatever keeps coming.
    let mut s = TcpStream::connect(addr).unwrap();
    let start = Instant::now();
    let _ = s.write_all(b"GET /metrics HTTP/1.1\r\nX-Slow: ");
    s.set_read_timeout(Some(Duration::from_millis(1))).unwrap();
    while start.elapsed() < Duration::from_secs(10) {
        if s.write_all(b"a").is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
        let mut b = [0u8; 64];
        match s.read(&mut b) {
            Ok(0) => break,
            Err(e) if e.kind() != std::io::ErrorKind::WouldBlock => break,
            _ => {}
        }
    }
    let slow_for = start.elapsed();
    assert!(
        slow_for >= Duration::from_millis(1500) && slow_for < Duration::from_secs(4),
        "the slow head was closed after {slow_for:?}"
    );

    // A flood of idle connections: a scrape that comes after them is
    // still answered at once.
    let flood: Vec<TcpStream> = (0..400)
        .filter_map(|_| TcpStream::connect(addr).ok())
        .collect();
    assert!(flood.len() >= 300, "{} connections made", flood.len());
    let start = Instant::now();
    let (status, head, body) = scrape(addr, true);
    assert!(
        status.contains("200"),
        "a scrape behind 400 idle connections: {head}"
    );
    assert!(start.elapsed() < quick, "it took {:?}", start.elapsed());
    assert!(body.ends_with("# EOF\n"));
    // The idle ones are closed: evicted, or at the request deadline.
    let closed = Instant::now();
    for mut s in flood {
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut b = [0u8; 16];
        assert!(
            matches!(s.read(&mut b), Ok(0) | Err(_)),
            "an idle connection was answered"
        );
    }
    assert!(
        closed.elapsed() < Duration::from_secs(4),
        "{:?}",
        closed.elapsed()
    );

    // The job ran on: its counter still goes up, and it ends as asked.
    let count = |body: &str| -> f64 {
        let line = body
            .lines()
            .find(|l| l.starts_with("plumb_io_operations_total{") && l.contains("read"))
            .unwrap_or_else(|| panic!("{body}"));
        line.rsplit(' ').next().unwrap().parse().unwrap()
    };
    let before = count(&body);
    std::thread::sleep(Duration::from_millis(1000));
    let after = count(&scrape(addr, false).2);
    assert!(after > before, "the job goes on: {before} then {after}");
    let (code, out, err) = run.wait(Duration::from_secs(60));
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("busy"), "{out}");
}

/// An address plumb cannot listen on is refused before anything runs,
/// naming the flag; so is a linger without an endpoint.
#[test]
fn a_bad_metrics_address_is_refused_before_the_run() {
    let dir = workdir();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    for (args, want) in [
        (vec!["--metrics-listen", "70000"], "--metrics-listen"),
        (vec!["--metrics-listen", "nohost"], "--metrics-listen"),
        (vec!["--metrics-listen", &taken], "cannot listen"),
        (vec!["--metrics-linger", "3s"], "--metrics-listen"),
    ] {
        let mut fio = vec![
            "fio",
            "--name=x",
            "--rw=read",
            "--size=1M",
            "--ioengine=psync",
        ];
        fio.extend(&args);
        let r = crate::util::plumb(dir.path(), &fio);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
        assert!(!dir.path().join("x.0.0").exists(), "{args:?} ran the job");
        let target = dir.path().join("t");
        std::fs::create_dir_all(&target).unwrap();
        let mut run = vec!["run", "quick", "--target", target.to_str().unwrap()];
        run.extend(&args);
        let r = crate::util::plumb(dir.path(), &run);
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
    }
}

/// Scrapes `addr` every 200 ms until `run` ends; the last answer's body.
fn scrape_until_end(run: Running, addr: SocketAddr) -> (i32, String, String) {
    let mut last = String::new();
    let mut run = run;
    loop {
        let ended = run.child.try_wait().unwrap().is_some();
        if TcpStream::connect(addr).is_ok() {
            let (status, _, body) = scrape(addr, true);
            if status.contains("200") {
                last = body;
            }
        }
        if ended {
            let (code, _, err) = run.wait(Duration::from_secs(10));
            return (code, last, err);
        }
        std::thread::sleep(Duration::from_millis(200));
        run.seen.extend(run.lines.try_iter());
    }
}

/// The value of the first series of `body` whose line starts with `prefix`.
fn series_value(body: &str, prefix: &str) -> f64 {
    let line = body
        .lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or_else(|| panic!("no {prefix} in\n{body}"));
    line.rsplit(' ').next().unwrap().parse().unwrap()
}

/// The es-indexing scenario counts its documents with `report::counter`,
/// as a WebAssembly guest (through the WIT world) and as Rhai: the last
/// scrape of each holds every document.
#[test]
fn a_scenarios_own_counter_reaches_the_endpoint_from_wasm_and_rhai() {
    let dir = workdir();
    let target = dir.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let wasm = crate::wasm::guest("es_indexing");
    for (scenario, name) in [
        (wasm.as_str(), "es_indexing"),
        ("es-indexing", "es-indexing"),
    ] {
        let (run, addr) = Running::start(
            dir.path(),
            &[
                "run",
                scenario,
                "--target",
                target.to_str().unwrap(),
                "-p",
                "docs=3000",
                "-p",
                "doc_size=512",
                "-p",
                "bulk_size=100",
                "-p",
                "docs_per_sec=20000",
                "--metrics-listen",
                "127.0.0.1:0",
                "--metrics-linger",
                "10s",
            ],
        );
        let (code, body, err) = scrape_until_end(run, addr);
        assert_eq!(code, 0, "{name}: {err}");
        let docs = series_value(
            &body,
            &format!(
                "plumb_script_documents_indexed_total{{label=\"{}\",pack=",
                hostname()
            ),
        );
        assert_eq!(docs, 3000.0, "{name}: {body}");
        assert!(
            body.contains(&format!("scenario=\"{name}\"")),
            "{name}: {body}"
        );
        assert_eq!(series_value(&body, "plumb_run_running{"), 0.0, "{name}");
    }
}

/// This machine's name, the label of a run without `--label`.
fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .unwrap()
        .trim()
        .to_string()
}

/// Issue 46, item 9: the endpoint is an observer and never changes a run's
/// outcome. A pack of two scenarios publishing 200 gauges each (400
/// series; the endpoint keeps 256 per run) passes without the endpoint
/// and with it; the last scrape holds 256 of the series and counts the
/// 144 dropped in `plumb_series_dropped_total`, and plumb says so once on
/// stderr.
#[test]
fn an_endpoint_past_its_series_cap_drops_and_counts_and_the_run_passes() {
    let dir = workdir();
    let target = dir.path().join("target");
    std::fs::create_dir_all(&target).unwrap();
    let pack = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/hostile/fleet-hard/gauges_pack"
    );
    let base = ["run", pack, "--target", target.to_str().unwrap()];
    let r = crate::util::plumb(dir.path(), &base);
    assert_eq!(r.code, 0, "without the endpoint: {}", r.stderr);
    let mut args = base.to_vec();
    args.extend(["--metrics-listen", "127.0.0.1:0", "--metrics-linger", "10s"]);
    let (run, addr) = Running::start(dir.path(), &args);
    let (code, body, err) = scrape_until_end(run, addr);
    assert_eq!(code, 0, "with the endpoint: {err}");
    let kept = body
        .lines()
        .filter(|l| l.starts_with("plumb_script_g"))
        .count();
    assert_eq!(kept, 256, "{body}");
    assert_eq!(
        series_value(&body, "plumb_series_dropped_total{"),
        144.0,
        "{body}"
    );
    assert_eq!(
        err.matches("the metrics endpoint dropped").count(),
        1,
        "{err}"
    );
}
