//! The page as one self-contained HTML file: its style, its sort script,
//! and its sections in order (runs and machines, the template's summary,
//! the metrics or comparison, what was measured, a section per scenario),
//! each written by the [`Html`] exporter or the page's own grids.

use super::{
    charts_by_scenario, left_out_line, measured_grid, packs_grid, runs_grid, scenarios, title,
    Page, MARKS,
};
use crate::model::document::ScenarioResult;
use crate::report::charts::svg::esc;
use crate::report::charts::{Chart, Kind};
use crate::report::comparison;
use crate::report::export::html::{grid, Html};
use crate::report::export::{Content, Exporter, Part};
use crate::report::made_tables;
use crate::report::tables::{Cells, Titled};
use std::collections::HashMap;

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

/// `parts` in HTML (a page's part: tables within its `cells`).
fn html_of(parts: Vec<Part>, cells: &mut Cells) -> String {
    Html.write_within(
        &Content {
            parts,
            machine: None,
        },
        cells,
    )
}

/// A scenario's tables of every run, titled with the run when several,
/// within the page's `cells`.
fn scenario_tables(p: &Page, runs: &[(usize, &ScenarioResult)], cells: &mut Cells) -> String {
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
    html_of(vec![Part::tables(titled)], cells)
}

/// The scenarios that get a section of their own: those whose figures are
/// not all in the tables above (notes, an error, tables or charts of their
/// own, `charts` by scenario).
fn scenario_sections<'a>(
    p: &Page<'a>,
    charts: &HashMap<&str, Vec<&Chart>>,
) -> Vec<(String, Vec<(usize, &'a ScenarioResult)>)> {
    scenarios(p.docs)
        .into_iter()
        .filter(|(name, runs)| {
            runs.iter()
                .any(|(_, s)| s.error.is_some() || !s.notes.is_empty() || !s.tables.is_empty())
                || charts.contains_key(name.as_str())
        })
        .collect()
}

/// Where a page stopped showing tables: the section's anchor and name.
type Cut = (String, String);

/// The heading, the lead paragraph (and how many tables the page left
/// out, `left_out`, from the section `cut` on) and the table of contents.
fn head(
    p: &Page,
    title: &str,
    sc: &[(String, Vec<(usize, &ScenarioResult)>)],
    left_out: usize,
    cut: Option<&Cut>,
) -> String {
    let several = p.docs.len() > 1;
    let mut body = format!("<h1>{}</h1>\n", esc(title));
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
    if let Some(line) = left_out_line(left_out) {
        let at = cut
            .map(|(id, name)| format!(" It stopped at <a href=\"#{id}\">{}</a>.", esc(name)))
            .unwrap_or_default();
        body.push_str(&format!("<p class=\"note\">{}{at}</p>\n", esc(&line)));
    }
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
    body
}

/// Runs and machines: a row per run, then the machines side by side.
fn runs_section(p: &Page) -> String {
    let mut body = String::from("<section id=\"runs\">\n<h2>Runs and machines</h2>\n");
    let (h, r) = runs_grid(p);
    body.push_str(&grid(&h, &r, &|_, _| None));
    let (h, r) = comparison::machine_grid(p.c, p.docs);
    body.push_str(&grid(&h, &r, &|_, _| None));
    body.push_str("</section>\n");
    body
}

/// The tables the pack's comparison template made, when it made some,
/// within the page's `cells`.
fn summary_section(p: &Page, cells: &mut Cells) -> String {
    if p.layouts.is_empty() {
        return String::new();
    }
    let mut body = String::from("<section id=\"summary\">\n<h2>Summary</h2>\n");
    for l in p.layouts {
        body.push_str(&format!(
            "<p class=\"note\">Laid out by the pack's comparison template {}.</p>\n",
            esc(&l.file)
        ));
        body.push_str(&Html.write_within(&made_tables::content(&l.tables, &l.file, p.c), cells));
    }
    body.push_str("</section>\n");
    body
}

/// The comparison (several runs) or the metric table (one), then the
/// charts that belong to no scenario.
fn metrics_section(p: &Page) -> String {
    let several = p.docs.len() > 1;
    let mut body = format!(
        "<section id=\"metrics\">\n<h2>{}</h2>\n",
        if several { "Comparison" } else { "Metrics" }
    );
    if several {
        body.push_str(&Html.write(&Content {
            parts: vec![Part::Comparison(p.c, p.docs)],
            machine: None,
        }));
    } else if let Some(d) = p.docs.first() {
        body.push_str(&Html.write(&Content {
            parts: vec![Part::Metrics(d)],
            machine: None,
        }));
    }
    for c in p.charts.iter().filter(|c| c.scenario.is_none()) {
        body.push_str(&figure(c));
    }
    body.push_str("</section>\n");
    body
}

/// What was measured: the packs, the parameters, what marks mean.
fn measured_section(p: &Page) -> String {
    let mut body = String::from("<section id=\"measured\">\n<h2>What was measured</h2>\n");
    let (h, r) = packs_grid(p);
    body.push_str(&grid(&h, &r, &|_, i| (i == 3).then_some("hash")));
    let (h, r) = measured_grid(p);
    body.push_str(&grid(&h, &r, &|_, _| None));
    body.push_str("<p class=\"note\">Marks beside a figure:</p>\n<dl class=\"marks\">\n");
    for (m, what) in MARKS {
        body.push_str(&format!("<dt>{m}</dt><dd>{what}</dd>\n"));
    }
    body.push_str("</dl>\n</section>\n");
    body
}

/// A scenario's section: its errors and notes in every run, its tables
/// (within the page's `cells`), its charts (`charts`).
fn scenario_section(
    p: &Page,
    i: usize,
    name: &str,
    runs: &[(usize, &ScenarioResult)],
    charts: &[&Chart],
    cells: &mut Cells,
) -> String {
    let several = p.docs.len() > 1;
    let mut body = format!(
        "<section id=\"s{i}\" class=\"scenario\">\n<h2>{}</h2>\n",
        esc(name)
    );
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
    body.push_str(&scenario_tables(p, runs, cells));
    for c in charts {
        body.push_str(&figure(c));
    }
    body.push_str("</section>\n");
    body
}

/// The page as one self-contained HTML file.
pub fn html(p: &Page) -> String {
    let title = title(p);
    let charts = charts_by_scenario(p.charts);
    let sc = scenario_sections(p, &charts);
    let mut cells = Cells::default();
    let mut cut: Option<Cut> = None;
    let mut sections = runs_section(p);
    sections.push_str(&summary_section(p, &mut cells));
    if cells.left_out() > 0 {
        cut = Some(("summary".into(), "Summary".into()));
    }
    sections.push_str(&metrics_section(p));
    sections.push_str(&measured_section(p));
    for (i, (name, runs)) in sc.iter().enumerate() {
        let own = charts.get(name.as_str()).map_or(&[][..], Vec::as_slice);
        sections.push_str(&scenario_section(p, i, name, runs, own, &mut cells));
        if cut.is_none() && cells.left_out() > 0 {
            cut = Some((format!("s{i}"), name.clone()));
        }
    }
    let body = head(p, &title, &sc, cells.left_out(), cut.as_ref()) + &sections;
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<meta name=\"generator\" content=\"plumb {}\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n{body}</main>\n<script>{SORT}</script>\n</body>\n</html>\n",
        esc(env!("CARGO_PKG_VERSION")),
        esc(&title)
    )
}
