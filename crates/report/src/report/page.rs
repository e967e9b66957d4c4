//! `plumb report`: results as one page to publish. HTML: a single file
//! that needs nothing else (charts inline as SVG, CSS inline, a content
//! security policy that forbids every request, readable without script;
//! a few lines of inline script sort tables). Markdown: the same sections,
//! the charts as SVG files beside it.
//!
//! The page is assembled from the renderers every command uses — the run
//! table, the comparison, the template's tables, titled tables, the
//! charts — in one more output format; every text from a result file is
//! escaped where it is written.

use crate::model::comparison::Comparison;
use crate::model::document::{RunDocument, ScenarioResult};
use crate::report::charts::svg::esc;
use crate::report::charts::{Chart, Kind};
use crate::report::results::Layout;
use crate::report::run_table::{self, scenario_name, Format};
use crate::report::tables::{self, Titled};
use crate::report::{comparison, made_tables, results};
use crate::terminal::cleaned;

/// What a page shows.
#[derive(Debug, Clone, Copy)]
pub struct Page<'a> {
    /// The runs, the first the baseline.
    pub docs: &'a [RunDocument],
    /// The files they were read from, as given.
    pub files: &'a [String],
    /// Their comparison (titles of runs in `runs`).
    pub c: &'a Comparison,
    /// The pack's comparison template's tables, when there are some.
    pub layouts: &'a [Layout],
    /// Every chart.
    pub charts: &'a [Chart],
}

/// The content security policy: nothing is fetched, inline styles and the
/// inline sort script run.
pub const CSP: &str =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'unsafe-inline'";

const STYLE: &str = r#"
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; color: #222; margin: 0; background: #fafafa; }
main { max-width: 1080px; margin: 0 auto; padding: 24px 28px 60px; background: #fff; }
h1 { font-size: 26px; margin: 8px 0 4px; }
h2 { font-size: 20px; border-bottom: 2px solid #dde3ea; padding-bottom: 4px; margin-top: 36px; }
h3 { font-size: 16px; margin-top: 26px; }
h4 { font-size: 14px; margin: 18px 0 6px; }
p.lead { color: #555; margin-top: 0; }
p.note { color: #555; font-size: 13px; margin: 6px 0; }
nav ol { columns: 2; font-size: 14px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 12px; }
th, td { border: 1px solid #d8dee4; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f0f3f6; cursor: pointer; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.better { background: #e6f4ea; }
td.worse { background: #fbe9e7; }
td.noise { color: #555; }
td.apart { color: #888; font-style: italic; }
td.hash { font-family: "DejaVu Sans Mono", monospace; font-size: 11px; word-break: break-all; min-width: 16em; }
div.wide { overflow-x: auto; max-width: 100%; }
figure { margin: 18px 0; }
figure svg { max-width: 100%; height: auto; border: 1px solid #e6e9ed; }
figcaption { font-size: 13px; color: #555; }
.marks dt { font-weight: bold; }
"#;

const SORT: &str = r#"
document.querySelectorAll("table.sortable th").forEach(function (th, i) {
  th.addEventListener("click", function () {
    var table = th.closest("table"), body = table.tBodies[0];
    var col = Array.prototype.indexOf.call(th.parentNode.children, th);
    var rows = Array.prototype.slice.call(body.rows);
    var up = th.getAttribute("data-up") !== "1";
    var key = function (r) { var t = r.cells[col] ? r.cells[col].textContent : ""; var n = parseFloat(t); return isNaN(n) ? t : n; };
    rows.sort(function (a, b) { var x = key(a), y = key(b); var c = (typeof x === typeof y) ? (x < y ? -1 : x > y ? 1 : 0) : (typeof x === "number" ? -1 : 1); return up ? c : -c; });
    th.setAttribute("data-up", up ? "1" : "0");
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"#;

/// The scenarios of the runs by name (`PACK/NAME`), in first-seen order, each
/// with its result in every run that has it.
fn scenarios(docs: &[RunDocument]) -> Vec<(String, Vec<(usize, &ScenarioResult)>)> {
    let mut out: Vec<(String, Vec<(usize, &ScenarioResult)>)> = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        for s in &d.scenarios {
            let name = run_table::shown_name(s);
            match out.iter_mut().find(|(n, _)| *n == name) {
                Some((_, v)) => v.push((i, s)),
                None => out.push((name, vec![(i, s)])),
            }
        }
    }
    out
}

/// The page's title: the packs and the runs.
fn title(p: &Page) -> String {
    let mut packs: Vec<String> = Vec::new();
    for d in p.docs {
        for s in &d.scenarios {
            let name = s.pack.clone().unwrap_or_else(|| s.name.clone());
            if !packs.contains(&name) {
                packs.push(name);
            }
        }
    }
    packs.truncate(4);
    let runs = p.c.runs.join(" vs ");
    format!("{}: {runs}", packs.join(", "))
}

/// An RFC 3339 time as a person reads it: to the second, with its offset
/// (`2026-12-06 02:06:16 +00:00`).
fn when(t: &str) -> String {
    let day: String = t.chars().take(19).collect::<String>().replace('T', " ");
    let offset = t
        .rfind(['+', '-'])
        .filter(|i| *i >= 19)
        .map(|i| &t[i..])
        .or_else(|| t.ends_with('Z').then_some("UTC"))
        .unwrap_or("");
    format!("{day} {offset}").trim_end().to_string()
}

/// One row per run: its title, machine, times, plumb version, target, file.
fn runs_grid(p: &Page) -> (Vec<String>, Vec<Vec<String>>) {
    let header = [
        "run", "host", "started", "finished", "plumb", "target", "file",
    ]
    .map(String::from)
    .to_vec();
    let rows = p
        .docs
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let target = d
                .target
                .as_ref()
                .map(|t| format!("{} ({})", t.path, t.fs_type))
                .unwrap_or_else(|| "-".into());
            let mut run = p.c.runs.get(i).cloned().unwrap_or_default();
            if i == 0 && p.docs.len() > 1 {
                run.push_str(" (baseline)");
            }
            vec![
                run,
                d.host.hostname.clone(),
                when(&d.started),
                when(&d.finished),
                d.plumb_version.clone(),
                target,
                p.files.get(i).cloned().unwrap_or_default(),
            ]
            .into_iter()
            .map(|s| cleaned(&s))
            .collect()
        })
        .collect();
    (header, rows)
}

/// The packs each run ran, once each: version, SHA-256 of the whole pack,
/// where it came from, who signed it.
fn packs_grid(p: &Page) -> (Vec<String>, Vec<Vec<String>>) {
    let header = ["pack", "run", "version", "sha256", "origin", "signer"]
        .map(String::from)
        .to_vec();
    let mut rows: Vec<Vec<String>> = Vec::new();
    for (i, d) in p.docs.iter().enumerate() {
        for s in &d.scenarios {
            let opt = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
            let row: Vec<String> = vec![
                s.pack.clone().unwrap_or_else(|| s.name.clone()),
                p.c.runs.get(i).cloned().unwrap_or_default(),
                opt(&s.pack_version),
                opt(&s.pack_sha256),
                opt(&s.pack_origin),
                opt(&s.pack_signer),
            ]
            .into_iter()
            .map(|t| cleaned(&t))
            .collect();
            if !rows.contains(&row) {
                rows.push(row);
            }
        }
    }
    (header, rows)
}

/// What each scenario measured in each run: the parameters it read, how
/// many runs, and whether it failed.
fn measured_grid(p: &Page) -> (Vec<String>, Vec<Vec<String>>) {
    let header = ["scenario", "run", "parameters", "runs", "status"]
        .map(String::from)
        .to_vec();
    let mut rows = Vec::new();
    for (_, runs) in scenarios(p.docs) {
        for (i, s) in runs {
            let params: Vec<String> = s
                .params
                .iter()
                .filter(|(k, _)| s.params_read.as_ref().is_none_or(|r| r.contains(*k)))
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            let status = match (&s.error, s.error_kind.as_deref()) {
                (None, _) => "ok".to_string(),
                (Some(_), Some("interrupted")) => "stopped: figures partial".into(),
                (Some(e), _) => format!("failed: {}", e.lines().next().unwrap_or_default()),
            };
            rows.push(
                vec![
                    scenario_name(s),
                    p.c.runs.get(i).cloned().unwrap_or_default(),
                    if params.is_empty() {
                        "-".into()
                    } else {
                        params.join(", ")
                    },
                    s.repeat.to_string(),
                    status,
                ]
                .into_iter()
                .map(|t| cleaned(&t))
                .collect(),
            );
        }
    }
    (header, rows)
}

/// What the marks beside figures mean.
const MARKS: [(&str, &str); 3] = [
    (
        "loopback",
        "the network peer was this machine: the kernel's loopback path, not a network",
    ),
    (
        "cached",
        "a buffered read found the file in the page cache: memory, not the device",
    ),
    (
        "partial",
        "the run was stopped while the figure was measured: it covers the time until then",
    ),
];

/// A chart as a figure: the SVG inline, its title under it.
fn figure(c: &Chart) -> String {
    format!(
        "<figure class=\"chart\" data-kind=\"{}\" id=\"{}\">\n{}<figcaption>{}</figcaption>\n</figure>\n",
        kind_name(c.kind),
        esc(&c.file),
        c.svg,
        esc(&c.title)
    )
}

/// A chart kind's name in the page (`data-kind`).
pub fn kind_name(k: Kind) -> &'static str {
    match k {
        Kind::Change => "change",
        Kind::Values => "values",
        Kind::Latency => "latency",
        Kind::Timeline => "timeline",
        Kind::Jobs => "jobs",
        Kind::Series => "series",
    }
}

/// A scenario's tables of every run, titled with the run when several.
fn scenario_tables(p: &Page, runs: &[(usize, &ScenarioResult)]) -> String {
    let named: Vec<(String, &crate::model::document::Table)> = runs
        .iter()
        .flat_map(|(i, s)| {
            s.tables.iter().map(move |t| {
                let title = if p.docs.len() > 1 {
                    format!(
                        "{} — {}",
                        p.c.runs.get(*i).map_or("", String::as_str),
                        t.title
                    )
                } else {
                    t.title.clone()
                };
                (title, t)
            })
        })
        .collect();
    let titled: Vec<Titled> = named
        .iter()
        .map(|(title, t)| Titled {
            title,
            header: &t.header,
            rows: &t.rows,
            notes: &[],
        })
        .collect();
    tables::html(&titled)
}

/// The page as one self-contained HTML file.
pub fn html(p: &Page) -> String {
    let title = title(p);
    let mut body = String::new();
    let several = p.docs.len() > 1;
    body.push_str(&format!("<h1>{}</h1>\n", esc(&title)));
    body.push_str(&format!(
        "<p class=\"lead\">{} run(s) of plumb result files{}; made by plumb {}. Every figure says what it measured: the parameters, the pack and its hash are under <a href=\"#measured\">What was measured</a>.</p>\n",
        p.docs.len(),
        if several {
            format!(", compared against {} (the baseline)", esc(&p.c.runs[0]))
        } else {
            String::new()
        },
        esc(env!("CARGO_PKG_VERSION"))
    ));
    // A scenario whose figures are all in the tables above (no notes,
    // error, tables or charts of its own) gets no section.
    let sc: Vec<_> = scenarios(p.docs)
        .into_iter()
        .filter(|(name, runs)| {
            runs.iter()
                .any(|(_, s)| s.error.is_some() || !s.notes.is_empty() || !s.tables.is_empty())
                || p.charts.iter().any(|c| c.scenario.as_deref() == Some(name))
        })
        .collect();
    body.push_str("<nav><ol>\n<li><a href=\"#runs\">Runs and machines</a></li>\n");
    if !p.layouts.is_empty() {
        body.push_str("<li><a href=\"#summary\">Summary</a></li>\n");
    }
    body.push_str(&format!(
        "<li><a href=\"#metrics\">{}</a></li>\n<li><a href=\"#measured\">What was measured</a></li>\n",
        if several { "Comparison" } else { "Metrics" }
    ));
    for (i, (name, _)) in sc.iter().enumerate() {
        body.push_str(&format!("<li><a href=\"#s{i}\">{}</a></li>\n", esc(name)));
    }
    body.push_str("</ol></nav>\n");

    body.push_str("<section id=\"runs\">\n<h2>Runs and machines</h2>\n");
    let (h, r) = runs_grid(p);
    body.push_str(&tables::html_grid(&h, &r, &|_, _| None));
    let (h, r) = comparison::machine_grid(p.c, p.docs);
    body.push_str(&tables::html_grid(&h, &r, &|_, _| None));
    body.push_str("</section>\n");

    if !p.layouts.is_empty() {
        body.push_str("<section id=\"summary\">\n<h2>Summary</h2>\n");
        for l in p.layouts {
            body.push_str(&format!(
                "<p class=\"note\">Laid out by the pack's comparison template {}.</p>\n",
                esc(&l.file)
            ));
            body.push_str(&made_tables::html(&l.tables, p.c));
        }
        body.push_str("</section>\n");
    }

    body.push_str(&format!(
        "<section id=\"metrics\">\n<h2>{}</h2>\n",
        if several { "Comparison" } else { "Metrics" }
    ));
    if several {
        body.push_str(&comparison::html(p.c));
    } else if let Some(d) = p.docs.first() {
        body.push_str(&run_table::html(d));
    }
    for c in p.charts.iter().filter(|c| c.scenario.is_none()) {
        body.push_str(&figure(c));
    }
    body.push_str("</section>\n");

    body.push_str("<section id=\"measured\">\n<h2>What was measured</h2>\n");
    let (h, r) = packs_grid(p);
    body.push_str(&tables::html_grid(&h, &r, &|_, i| {
        (i == 3).then_some("hash")
    }));
    let (h, r) = measured_grid(p);
    body.push_str(&tables::html_grid(&h, &r, &|_, _| None));
    body.push_str("<p class=\"note\">Marks beside a figure:</p>\n<dl class=\"marks\">\n");
    for (m, what) in MARKS {
        body.push_str(&format!("<dt>{m}</dt><dd>{what}</dd>\n"));
    }
    body.push_str("</dl>\n</section>\n");

    for (i, (name, runs)) in sc.iter().enumerate() {
        body.push_str(&format!(
            "<section id=\"s{i}\" class=\"scenario\">\n<h2>{}</h2>\n",
            esc(name)
        ));
        for (ri, s) in runs {
            let who = if several {
                format!("{}: ", p.c.runs.get(*ri).map_or("", String::as_str))
            } else {
                String::new()
            };
            if let Some(e) = &s.error {
                body.push_str(&format!(
                    "<p class=\"note\">{}{}</p>\n",
                    esc(&who),
                    esc(&format!("failed: {e}"))
                ));
            }
            for n in &s.notes {
                body.push_str(&format!(
                    "<p class=\"note\">{}note: {}</p>\n",
                    esc(&who),
                    esc(n)
                ));
            }
        }
        body.push_str(&scenario_tables(p, runs));
        for c in p
            .charts
            .iter()
            .filter(|c| c.scenario.as_deref() == Some(name))
        {
            body.push_str(&figure(c));
        }
        body.push_str("</section>\n");
    }
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"plumb {}\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n<script>{SORT}</script>\n</body>\n</html>\n",
        esc(env!("CARGO_PKG_VERSION")),
        esc(&title)
    )
}

/// `s` safe in Markdown that a blog renders: `&`, `<` and `>` as entities
/// (a result file's `<script>` stays text).
fn md_text(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// A Markdown table of `header` and `rows` (cells' `|` escaped).
fn md_table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut t = tables::grid(true);
    t.set_header(header.iter().map(|h| tables::cell_text(h, true)));
    for r in rows {
        t.add_row(r.iter().map(|c| tables::cell_text(c, true)));
    }
    format!("{t}\n")
}

/// The page in Markdown; its charts are linked as `dir/FILE.svg`.
pub fn markdown(p: &Page, dir: &str) -> String {
    let mut out = format!("# {}\n\n", title(p));
    let (h, r) = runs_grid(p);
    out.push_str("## Runs\n\n");
    out.push_str(&md_table(&h, &r));
    out.push_str("\n## What was measured\n\n");
    let (h, r) = packs_grid(p);
    out.push_str(&md_table(&h, &r));
    out.push('\n');
    let (h, r) = measured_grid(p);
    out.push_str(&md_table(&h, &r));
    out.push('\n');
    for (m, what) in MARKS {
        out.push_str(&format!("- **{m}**: {what}\n"));
    }
    out.push_str("\n## Results\n\n");
    let results = if p.docs.len() > 1 {
        results::compare(p.c, p.docs, p.layouts.first(), Format::Markdown)
    } else {
        let mut r = results::run(&p.docs[0], p.layouts, Format::Markdown);
        let (h, rows) = comparison::machine_grid(p.c, p.docs);
        r = format!("{}\n{r}", md_table(&h, &rows));
        r
    };
    out.push_str(&results);
    out.push_str("\n## Charts\n\n");
    for c in p.charts {
        let alt = tables::cell_text(&c.title, true).replace(['[', ']'], "");
        out.push_str(&format!(
            "### {}\n\n![{alt}]({dir}/{})\n\n",
            c.title, c.file
        ));
    }
    md_text(&out)
}
