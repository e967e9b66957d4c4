//! `plumb report` and the charts it shares with `--svg`: every job
//! instance charted under its own title, timelines that draw no drop the
//! data does not hold, hostile texts kept as text, and the page checked in
//! a real browser (headless Chromium).

use crate::util::{doc, plumb, require_tool, run_scripts, workdir};
use std::path::Path;
use std::process::Command;

/// The figures of a page: (kind, title) of each, in order.
fn figures(html: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for part in html.split("<figure class=\"chart\" data-kind=\"").skip(1) {
        let kind = part.split('"').next().unwrap().to_string();
        let caption = part
            .split("<figcaption>")
            .nth(1)
            .and_then(|c| c.split("</figcaption>").next())
            .unwrap_or_default()
            .to_string();
        out.push((kind, caption));
    }
    out
}

/// Every `<svg>…</svg>` of a page, each parsed as XML.
fn svgs(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for part in html.split("<svg xmlns=").skip(1) {
        let end = part.find("</svg>").expect("an SVG is closed") + "</svg>".len();
        let svg = format!("<svg xmlns={}", &part[..end]);
        roxmltree::Document::parse(&svg).unwrap_or_else(|e| panic!("an SVG is not XML: {e}"));
        out.push(svg);
    }
    out
}

/// The values each line of data of an SVG plots (`data-values`).
fn lines(svg: &str) -> Vec<Vec<f64>> {
    let xml = roxmltree::Document::parse(svg).unwrap();
    xml.descendants()
        .filter_map(|n| n.attribute("data-values"))
        .map(|v| v.split(' ').map(|x| x.parse().unwrap()).collect())
        .collect()
}

/// Writes the report of `files` (in `dir`) to `out`; returns the page.
fn report(dir: &Path, files: &[&str], out: &str) -> String {
    let mut args = vec!["report"];
    args.extend_from_slice(files);
    args.extend_from_slice(&["-o", out]);
    let r = plumb(dir, &args);
    assert_eq!(r.code, 0, "{}", r.stderr);
    std::fs::read_to_string(dir.join(out)).unwrap()
}

/// The jobs of a result document: (name, case, repeat).
fn jobs(d: &serde_json::Value) -> Vec<(String, Option<String>)> {
    d["scenarios"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|s| s["jobs"].as_array().unwrap().iter())
        .map(|j| {
            (
                j["name"].as_str().unwrap().to_string(),
                j["case"].as_str().map(str::to_string),
            )
        })
        .collect()
}

#[test]
fn every_job_instance_of_cloud_compare_and_interference_has_its_own_titled_charts() {
    let dir = workdir();
    let (r, _) = run_scripts(
        dir.path(),
        &[
            "cloud-compare/fio-random",
            "-p",
            "size=32M",
            "--json",
            "cc.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let (r, _) = run_scripts(
        dir.path(),
        &[
            "interference",
            "-p",
            "size=32M",
            "-p",
            "runtime=2s",
            "--json",
            "i.json",
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    for (file, cases) in [
        ("cc.json", &["randrw", "randread", "randwrite"][..]),
        (
            "i.json",
            &["quiet", "copy", "rand-writes", "fsync-stream"][..],
        ),
    ] {
        let d = doc(&dir.path().join(file));
        let jobs = jobs(&d);
        // Each case is recorded with its jobs, and every one has a case.
        for case in cases {
            assert!(
                jobs.iter().any(|(_, c)| c.as_deref() == Some(case)),
                "{file}: no job of case {case}: {jobs:?}"
            );
        }
        assert!(jobs.iter().all(|(_, c)| c.is_some()), "{jobs:?}");
        let phases = d["scenarios"][0]["phases"].as_array().unwrap();
        let names: Vec<&str> = phases.iter().map(|p| p["name"].as_str().unwrap()).collect();
        assert_eq!(names, cases, "{file}");
        let html = report(dir.path(), &[file], "r.html");
        let figs = figures(&html);
        for kind in ["latency", "timeline"] {
            let titles: Vec<&String> = figs.iter().filter(|f| f.0 == kind).map(|f| &f.1).collect();
            assert_eq!(
                titles.len(),
                jobs.len(),
                "{file}: {kind} charts {titles:?} for {jobs:?}"
            );
            for (name, case) in &jobs {
                let case = case.as_deref().unwrap();
                assert!(
                    titles
                        .iter()
                        .any(|t| t.contains(&format!("· {name} · {case}"))),
                    "{file}: no {kind} chart titled with {name} · {case}: {titles:?}"
                );
            }
        }
        // The same charts as files.
        let svg_dir = format!("{file}-svg");
        let c = plumb(dir.path(), &["compare", file, "--svg", &svg_dir]);
        assert_eq!(c.code, 0, "{}", c.stderr);
        let files = crate::util::entries(&dir.path().join(&svg_dir));
        for kind in ["latency-", "timeline-"] {
            assert_eq!(
                files.iter().filter(|f| f.starts_with(kind)).count(),
                jobs.len(),
                "{files:?}"
            );
        }
        // Every drawn timeline leaves out exactly the partial intervals
        // shorter than half the others.
        for svg in svgs(&html) {
            if !svg.contains("<title>Timeline: ") {
                continue;
            }
            for l in lines(&svg) {
                assert!(!l.is_empty(), "an empty line is drawn");
            }
        }
    }
    // The interference series chart marks the four cases as bands, and
    // the neighbour's write rate during the copy is not zero.
    let d = doc(&dir.path().join("i.json"));
    let series = d["scenarios"][0]["series"].as_array().unwrap();
    let phases = d["scenarios"][0]["phases"].as_array().unwrap();
    let copy = &phases[1];
    let (from, to) = (
        copy["started_s"].as_f64().unwrap(),
        copy["ended_s"].as_f64().unwrap(),
    );
    let during: Vec<f64> = series[1]["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p[0].as_f64().unwrap() > from && p[0].as_f64().unwrap() < to)
        .map(|p| p[1].as_f64().unwrap())
        .collect();
    assert!(
        during.iter().any(|v| *v > 0.0),
        "the copy neighbour's MiB/s during the copy case: {during:?}"
    );
    let html = report(dir.path(), &["i.json"], "i.html");
    let series_svg = svgs(&html)
        .into_iter()
        .find(|s| s.contains("<title>Series: "))
        .expect("a series chart");
    for case in ["quiet", "copy", "rand-writes", "fsync-stream"] {
        assert!(
            series_svg.contains(&format!(">{case}</text>")),
            "band {case}"
        );
    }
}

/// A result with one job whose timeline is given: three full seconds at
/// 72k IOPS and the points in `tail`.
fn with_timeline(dir: &Path, name: &str, tail: serde_json::Value) {
    let mut d = doc(&dir.join("base.json"));
    let mut points = vec![
        serde_json::json!({"t_ms": 0, "duration_ms": 1000, "read_ios": 72000, "read_bytes": 294912000u64, "write_ios": 0, "write_bytes": 0}),
        serde_json::json!({"t_ms": 1000, "duration_ms": 1000, "read_ios": 72000, "read_bytes": 294912000u64, "write_ios": 0, "write_bytes": 0}),
        serde_json::json!({"t_ms": 2000, "duration_ms": 1000, "read_ios": 72000, "read_bytes": 294912000u64, "write_ios": 0, "write_bytes": 0}),
    ];
    points.extend(tail.as_array().unwrap().iter().cloned());
    d["scenarios"][0]["jobs"][0]["timeline"] = serde_json::Value::Array(points);
    std::fs::write(dir.join(name), serde_json::to_string(&d).unwrap()).unwrap();
}

#[test]
fn a_partial_last_interval_draws_no_fall_that_did_not_happen() {
    let dir = workdir();
    let s = crate::util::script(
        dir.path(),
        "one.rhai",
        r#"io::job(#{ name: "j", rw: "randread", size: "1M", bs: "4k", ioengine: "psync", runtime: "300ms", time_based: true });"#,
    );
    let (r, _) = run_scripts(dir.path(), &[&s, "--json", "base.json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // A real run of 0.3 s: sampled every 10 ms, not one dot; its partial
    // last interval left out when shorter than half of one.
    let d = doc(&dir.path().join("base.json"));
    let timeline = d["scenarios"][0]["jobs"][0]["timeline"]
        .as_array()
        .unwrap()
        .clone();
    assert!(timeline.len() >= 20, "{timeline:?}");
    let full = timeline.iter().filter(|p| p["duration_ms"] == 10).count();
    let html = report(dir.path(), &["base.json"], "base.html");
    let drawn: Vec<Vec<f64>> = svgs(&html)
        .iter()
        .filter(|s| s.contains("<title>Timeline: "))
        .flat_map(|s| lines(s))
        .collect();
    assert_eq!(drawn.len(), 2, "IOPS and bandwidth of reads: {drawn:?}");
    let half_partial = timeline
        .iter()
        .filter(|p| p["partial"] == true && p["duration_ms"].as_u64().unwrap() >= 5)
        .count();
    assert_eq!(drawn[0].len(), full + half_partial, "{timeline:?}");

    // The JSON marks a partial last interval of 100 ms with a few I/Os (a
    // rate of 7k/s): a fall from 72k that did not happen is not drawn. One
    // of 600 ms at 71k/s is drawn, at its rate.
    with_timeline(
        dir.path(),
        "short.json",
        serde_json::json!([{"t_ms": 3000, "duration_ms": 100, "partial": true, "read_ios": 700, "read_bytes": 2867200, "write_ios": 0, "write_bytes": 0}]),
    );
    with_timeline(
        dir.path(),
        "long.json",
        serde_json::json!([{"t_ms": 3000, "duration_ms": 600, "partial": true, "read_ios": 42600, "read_bytes": 174489600, "write_ios": 0, "write_bytes": 0}]),
    );
    for (file, points) in [("short.json", 3), ("long.json", 4)] {
        let html = report(dir.path(), &[file], "t.html");
        let timeline = svgs(&html)
            .into_iter()
            .find(|s| s.contains("<title>Timeline: "))
            .unwrap();
        for l in lines(&timeline) {
            assert_eq!(l.len(), points, "{file}: {l:?}");
            let (last, before) = (l[l.len() - 1], l[l.len() - 2]);
            assert!(
                last >= before / 2.0,
                "{file}: the line ends in a fall from {before} to {last}"
            );
        }
    }
}

/// The hostile texts: markup that would end the SVG or run a script.
const HOSTILE: &str = "<script>alert(1)</script></svg><b>x</b>";

#[test]
fn markup_from_a_result_file_stays_text_in_the_page_and_its_charts() {
    let dir = workdir();
    let s = crate::util::script(
        dir.path(),
        "h.rhai",
        &format!(
            r#"let h = "{h}";
report::phase(h);
io::job(#{{ name: h, filename: "h.dat", rw: "randread", size: "1M", bs: "4k", ioengine: "psync", runtime: "0.2s", time_based: true }});
report::metric(h, 1.0, h, "higher");
report::note(h);
report::table(h, [h, "b"], [[h, "1"]]);
report::series(h, h, [[0.0, 1.0], [1.0, 2.0]]);"#,
            h = HOSTILE.replace('"', "\\\"")
        ),
    );
    for (file, label) in [("a.json", HOSTILE), ("b.json", "plain")] {
        let (r, _) = run_scripts(dir.path(), &[&s, "--label", label, "--json", file]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let html = report(dir.path(), &["a.json", "b.json"], "h.html");
    // One script (the page's sort), and as many SVG ends as SVGs.
    assert_eq!(html.matches("<script").count(), 1, "{html}");
    assert_eq!(html.matches("<svg").count(), html.matches("</svg>").count());
    assert!(
        html.matches("&lt;script&gt;alert(1)&lt;/script&gt;&lt;/svg&gt;")
            .count()
            > 10
    );
    assert!(!html.contains("<b>x</b>"));
    let charts = svgs(&html);
    assert!(charts.len() >= 4, "{}", charts.len());
    // Markdown keeps it as text too, and its charts beside it.
    let r = plumb(dir.path(), &["report", "a.json", "b.json", "-o", "h.md"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let md = std::fs::read_to_string(dir.path().join("h.md")).unwrap();
    // Read as a renderer reads it: the markup is text, never HTML.
    let mut text = String::new();
    for e in pulldown_cmark::Parser::new_ext(&md, pulldown_cmark::Options::ENABLE_TABLES) {
        match e {
            pulldown_cmark::Event::Html(h) | pulldown_cmark::Event::InlineHtml(h) => {
                panic!("raw HTML {h:?} in {md}")
            }
            pulldown_cmark::Event::Text(t) => text.push_str(&t),
            _ => {}
        }
    }
    assert!(text.contains("<script>alert(1)</script></svg>"), "{md}");
    let beside = crate::util::entries(&dir.path().join("h-charts"));
    assert_eq!(beside.len(), charts.len(), "{beside:?}");
    for f in &beside {
        assert!(md.contains(&format!("](h-charts/{f})")), "{f} not linked");
    }
    // In a browser: the DOM has the one script, and the text shows.
    let (dom, _) = chromium_dom(&dir.path().join("h.html"));
    assert_eq!(dom.matches("<script").count(), 1);
    assert!(dom.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    // An output that is neither HTML nor Markdown is refused.
    let r = plumb(dir.path(), &["report", "a.json", "-o", "h.pdf"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(r.stderr.contains(".html") && !dir.path().join("h.pdf").exists());
}

/// Chromium's DOM of `page` after it loaded, and what it logged.
fn chromium_dom(page: &Path) -> (String, String) {
    require_tool("chromium", "--version", "chromium");
    let out = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-logging=stderr",
            "--v=0",
            "--dump-dom",
        ])
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_two_machine_report_renders_in_chromium_whole_and_offline() {
    require_tool("chromium", "--version", "chromium");
    let dir = workdir();
    for (label, file) in [("machine-a", "a.json"), ("machine-b", "b.json")] {
        let (r, _) = run_scripts(
            dir.path(),
            &[
                "cloud-compare/fio-random",
                "cloud-compare/dd",
                "-p",
                "size=32M",
                "-p",
                "dd_size=16M",
                "-p",
                "dd_runs=1",
                "--label",
                label,
                "--json",
                file,
            ],
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let html = report(dir.path(), &["a.json", "b.json"], "report.html");
    let page = dir.path().join("report.html");
    // The page asks for nothing beyond itself.
    assert!(html.contains(&format!(
        "<meta http-equiv=\"Content-Security-Policy\" content=\"{}\">",
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'unsafe-inline'"
    )));
    for attr in ["src=", "href=\"http", "url(", "@import"] {
        assert!(!html.contains(attr), "the page refers to {attr}");
    }
    let (dom, log) = chromium_dom(&page);
    // No console message at all: no error, no blocked request.
    let console: Vec<&str> = log.lines().filter(|l| l.contains(":CONSOLE")).collect();
    assert!(console.is_empty(), "{console:?}");
    // Every chart and table the results call for is in the DOM.
    let figs = figures(&html);
    let a = doc(&dir.path().join("a.json"));
    let jobs = jobs(&a).len();
    let count = |k: &str| figs.iter().filter(|f| f.0 == k).count();
    assert_eq!(count("change"), 1);
    assert_eq!(count("latency"), jobs);
    assert_eq!(count("timeline"), jobs);
    assert_eq!(
        count("jobs"),
        2,
        "fio-random's jobs on its clock, per machine"
    );
    assert_eq!(dom.matches("<figure class=\"chart\"").count(), figs.len());
    assert_eq!(dom.matches("<svg").count(), figs.len());
    let tables = dom.matches("<table").count();
    // Runs, machines, metrics, what was measured, the template's summary,
    // and dd's table of each machine.
    assert!(tables >= 6, "{tables} tables");
    for text in [
        "machine-a",
        "machine-b",
        "What was measured",
        "randread",
        "4k random read IOPS",
    ] {
        assert!(dom.contains(text), "{text} not in the page");
    }
    // The screenshot is not blank: most of it white, a good share inked.
    let shot = dir.path().join("shot.png");
    let out = Command::new("chromium")
        .args([
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--window-size=1280,4000",
        ])
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = resvg::tiny_skia::Pixmap::load_png(&shot).expect("a PNG screenshot");
    assert_eq!((png.width(), png.height()), (1280, 4000));
    let pixels = png.pixels();
    let inked = pixels
        .iter()
        .filter(|p| (p.red(), p.green(), p.blue()) != (255, 255, 255) && p.red() < 240)
        .count() as f64
        / pixels.len() as f64;
    assert!(
        inked > 0.02,
        "only {:.2}% of the screenshot is drawn",
        inked * 100.0
    );
}
